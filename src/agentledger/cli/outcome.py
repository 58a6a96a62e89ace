"""`agentledger outcome`: measure stored runs of lab scenarios in fresh labs, and record it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from agentledger.cli.common import handle_errors, ledger_option, open_ledger
from agentledger.cli.output import terminal_safe

__all__ = ["outcome_command"]


def _word(value: bool | None) -> str:
    return "unknown" if value is None else "yes" if value else "no"


@click.command("outcome")
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN...")
@ledger_option
@click.option(
    "--lab",
    metavar="LAB",
    help="The lab (lab.yaml, scenario directory or packaged id) [default: the run's scenario].",
)
@click.option(
    "--cycles", type=click.IntRange(0, 20), default=2, show_default=True,
    help="Cycles each owner runs after the fix (on demand, no sleeping).",
)  # fmt: skip
@click.option(
    "--host", metavar="HOST", help="Host of commands that name none [default: the fault's]."
)
@click.option("--json", "as_json", is_flag=True, help="Print each outcome as JSON.")
@handle_errors
def outcome_command(
    run_ids: tuple[str, ...],
    ledger_path: Path | None,
    lab: str | None,
    cycles: int,
    host: str | None,
    as_json: bool,
) -> None:
    """Measure what each run's remediation really does: apply it in a fresh lab with the same
    fault and record fixed, durable, collateral and verified (and a label of source lab).

    The remediation is the commands the run executed that change state, or else those its
    report recommends; what cannot be applied is listed with the reason. Exit status: 0 every
    run measured, 2 bad input or a machine that cannot run labs.
    """
    from agentledger.outcomes.check import lab_of_run, lab_runs, measure_and_record

    with open_ledger(ledger_path) as ledger:
        resolved = [ledger.resolve(run_id) for run_id in run_ids]
        ran_in_labs = set(lab_runs(ledger, resolved))
        for run_id in resolved:  # a run without a lab: exit 2 before any lab starts
            if lab is not None or run_id not in ran_in_labs:
                lab_of_run(ledger, run_id, lab)
        measured = measure_and_record(ledger, resolved, lab=lab, cycles=cycles, default_host=host)
        for outcome in measured:
            run_id = outcome.run_id
            where = f"outcomes/{run_id}/{outcome.outcome_id}.json"
            if as_json:
                click.echo(json.dumps(outcome.model_dump(mode="json"), indent=2))
                continue
            click.echo(
                f"{terminal_safe(run_id)}: fixed {_word(outcome.fixed)}, durable "
                f"{_word(outcome.durable)}, collateral {_word(outcome.collateral)}, verified "
                f"{_word(outcome.verified)} ({outcome.remediation_source}, "
                f"{len(outcome.applied)} applied, {len(outcome.not_applied)} not applied)"
            )
            reasons = outcome.reasons
            for name in ("fixed", "durable", "collateral", "verified"):
                click.echo(f"  {name}: {terminal_safe(getattr(reasons, name))}")
            for skipped in outcome.not_applied:
                click.echo(
                    f"  not applied: {terminal_safe(skipped.command)}: "
                    f"{terminal_safe(skipped.reason)}"
                )
            click.echo(f"  stored {where}")
