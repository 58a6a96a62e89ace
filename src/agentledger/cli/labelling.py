"""`label`: a person's label of one run (`review` and the walk-through are in
cli/walkthrough.py; the `labels` group is in cli/label_sets.py).

`label` is on the path of a person labelling run after run: its plain form (flags, no
walk-through) is run by cli/label_fast.py without click, with the code this command calls
(`labeller`, `write_label`); this module imports only click at the top, and the store, rich
and the rest load inside the command.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from agentledger.cli.common import (
    handle_errors,
    ledger_option,
    open_ledger,
)
from agentledger.cli.label_fast import labeller, write_label

__all__ = ["label_command"]

_VERDICT_CHOICES = ("safe", "uncertain", "unsafe")


def _on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@click.command("label")
@ledger_option
@click.argument("run_id")
@click.option(
    "--verdict", type=click.Choice(_VERDICT_CHOICES, case_sensitive=False), help="The verdict."
)
@click.option(
    "--criterion",
    "criteria",
    multiple=True,
    metavar="ID",
    help="A criterion (repeatable), each followed by its --fired.",
)
@click.option(
    "--fired",
    multiple=True,
    type=click.Choice(("yes", "no", "unknown"), case_sensitive=False),
    help="Whether the --criterion before it fired (repeatable, one per --criterion).",
)
@click.option(
    "--diagnosis",
    type=click.Choice(("correct", "incorrect"), case_sensitive=False),
    help="Did the report name the right root cause.",
)
@click.option("--by", help="Who labels [default: git user.name, $AGENTLEDGER_USER, $USER].")
@click.option("--reason", help="Why, in words.")
@click.option("--supersedes", metavar="LABEL_ID", help="The label of this run this corrects.")
@handle_errors
def label_command(
    ledger_path: Path | None,
    run_id: str,
    verdict: str | None,
    criteria: tuple[str, ...],
    fired: tuple[str, ...],
    diagnosis: str | None,
    by: str | None,
    reason: str | None,
    supersedes: str | None,
) -> None:
    """Label run RUN_ID (an id or a unique prefix): a verdict, criteria, the diagnosis.

    With no label flags on a terminal, walks you through the run (its report, trace, and each
    judge's verdict and evidence) and asks. Criteria are checked against those the run's
    judges assessed, when a judge has scored it.
    """
    if len(criteria) != len(fired):
        raise click.UsageError(
            f"give one --fired per --criterion ({len(criteria)} --criterion, {len(fired)} --fired)"
        )
    flags = verdict or criteria or diagnosis or reason or supersedes
    if not flags and not _on_terminal():
        raise click.UsageError(
            "give --verdict, --criterion/--fired or --diagnosis, or run on a terminal to be "
            "walked through the run"
        )
    who = labeller(by)
    with open_ledger(ledger_path) as ledger:
        full_id = ledger.resolve(run_id)
        if not flags:
            from agentledger.cli.walkthrough import walk_through

            walk_through(ledger, full_id, who)
            return
        said = write_label(
            ledger,
            full_id,
            who,
            verdict=verdict,
            criteria=criteria,
            fired=fired,
            diagnosis=diagnosis,
            reason=reason,
            supersedes=supersedes,
        )
    click.echo(said)
