"""`agentledger variant`: accept or reject a prompt variant against its spec, with a record."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentledger.cli.common import (
    INTERRUPTED,
    concurrency_option,
    handle_errors,
    ledger_location,
    ledger_option,
    open_ledger,
    stacked,
)
from agentledger.cli.output import emit, terminal_safe

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentledger.gates.variants.spec import VariantEvaluation
    from agentledger.records.decisions import Decision
    from agentledger.store import Ledger

__all__ = ["variant_group"]

_COLOURS = {"ACCEPTED": "green", "REJECTED": "red", "REVIEW": "yellow"}
_STATUS = {"passed": "passed", "failed": "FAILED", "unknown": "unknown"}


def _spec_argument(func: Any) -> Any:
    return click.argument(
        "spec", type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="SPEC"
    )(func)


_decision_options = stacked(
    click.option("--dry-run", is_flag=True, help="Decide and print, but write no decision record."),
    click.option(
        "--supersedes",
        metavar="ID",
        help="The decision this one replaces (an id or unique prefix; it stays on record).",
    ),
    click.option("--review-ok", is_flag=True, help="Exit 0 on REVIEW (runs missing or undecided)."),
    click.option("--json", "as_json", is_flag=True, help="Output the decision as JSON."),
)


@click.group("variant")
def variant_group() -> None:
    """Accept or reject a prompt variant (a prompt addon) by its spec's rule, with a record.

    A variant spec (YAML) names the addon file, the scenarios, the models, the repeats, the
    baseline, the predicates every run must pass and the acceptance rule (all_models,
    at_least k of n, or statistical). The outcome is a decision record in the ledger
    (decisions/<id>/): what was tested, per model and scenario what happened with the evidence
    lines, the rule, ACCEPTED, REJECTED or REVIEW, and why. Exit status 0 ACCEPTED, 1 REJECTED,
    1 REVIEW unless --review-ok, 2 bad input.
    """


def _models_table(decision: Decision, evaluation: VariantEvaluation) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in ("MODEL", "STATUS", "VARIANT", "BASELINE", "SUMMARY"):
        table.add_column(name, no_wrap=name != "SUMMARY", overflow="fold")
    for model, record in decision.models.items():
        cells = [
            evaluation.variant_cells[(m, s)] for (m, s) in evaluation.variant_cells if m == model
        ]
        base = [c for (m, _), c in evaluation.baseline_cells.items() if m == model]
        status = Text(
            _STATUS[record.status],
            style={"passed": "green", "failed": "red"}.get(record.status, "yellow"),
        )
        table.add_row(
            Text(terminal_safe(model)),
            status,
            Text(f"{sum(c.passed for c in cells)}/{sum(c.runs for c in cells)}"),
            Text(f"{sum(c.passed for c in base)}/{sum(c.runs for c in base)}" if base else "-"),
            Text(terminal_safe(record.summary)),
        )
    return table


def _print_summary(
    decision: Decision, evaluation: VariantEvaluation, written: str | None, notes: list[str]
) -> None:
    from rich.text import Text

    outcome = Text(decision.outcome, style=f"bold {_COLOURS[decision.outcome]}")
    head = Text.assemble(outcome, f"  variant {terminal_safe(decision.subject)}")
    emit(head, Text(f"Rule: {decision.rule}"), Text(""), _models_table(decision, evaluation))
    lines = [Text(""), Text("Reasoning:", style="bold")]
    lines += [Text(f"  - {terminal_safe(sentence)}") for sentence in decision.reasoning]
    lines += [Text(f"Note: {terminal_safe(note)}", style="yellow") for note in notes]
    lines.append(Text(""))
    if written is not None:
        lines.append(Text(f"Decision {decision.decision_id} written to {written}"))
    else:
        lines.append(Text(f"Decision {decision.decision_id} not written (--dry-run)"))
    emit(*lines)


def _interrupted(made: int, stage: str) -> None:
    """Ctrl-C during `variant run`: say what was written, write no decision, exit 130."""
    click.echo(
        f"Interrupted during {stage}: {made} run(s) were sealed, each complete; no decision "
        "was written. Run the same command again: interrupted runs are made again, and runs "
        "already scored are not judged twice.",
        err=True,
    )
    sys.exit(INTERRUPTED)


def _decide(
    ledger: Ledger,
    evaluation: VariantEvaluation,
    *,
    supersedes: str | None,
    dry_run: bool,
    as_json: bool,
    review_ok: bool,
    notes: list[str],
) -> None:
    from agentledger.gates.decisions import DecisionStore, exit_code
    from agentledger.gates.variants.decision import build_decision

    store = DecisionStore(ledger)
    previous = store.check_supersedes("variant", supersedes) if supersedes else None
    decision = build_decision(evaluation, supersedes=previous)
    written = None if dry_run else store.write([decision])[0]
    if as_json:
        data = decision.model_dump(mode="json")
        data["path"] = str(written) if written else None
        data["notes"] = notes
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print_summary(decision, evaluation, written, notes)
    sys.exit(exit_code(decision.outcome, review_ok=review_ok))


@variant_group.command("evaluate")
@_spec_argument
@ledger_option
@_decision_options
@handle_errors
def variant_evaluate(
    spec: Path,
    ledger_path: Path | None,
    dry_run: bool,
    supersedes: str | None,
    review_ok: bool,
    as_json: bool,
) -> None:
    """Evaluate the runs stored for SPEC and decide; runs nothing.

    Variant runs are the stored runs whose prompt addon hash is the sha256 of the spec's addon
    file; baseline runs those without an addon on the base prompt (or the spec's prompt
    hash). Every predicate is evaluated on every run; a model without runs, or with runs
    that cannot be evaluated, is not decided (REVIEW when it could change the outcome).
    """
    from agentledger.gates.specerrors import unknown_names
    from agentledger.gates.variants.spec import evaluate_variant, load_variant_spec
    from agentledger.records.decisions import Undecided

    loaded = load_variant_spec(spec)
    with open_ledger(ledger_path) as ledger:
        evaluation = evaluate_variant(ledger, loaded)
        notes = []
        if evaluation.missing("variant"):
            notes.append(
                f"runs are missing; `agentledger variant run {spec} --agent AGENT.toml` makes them"
            )
        unjudged = [
            result
            for run in evaluation.runs
            for result in run.results
            if result.undecided is Undecided.NOT_JUDGED
        ]
        if unjudged:
            notes.append(
                f"{len(unjudged)} predicate result(s) need a judge's score: "
                "`agentledger judge` (or `variant run`) scores the runs"
            )
        notes += unknown_names(ledger, "model", loaded.spec.models)
        notes += unknown_names(ledger, "scenario", loaded.spec.scenarios)
        _decide(
            ledger,
            evaluation,
            supersedes=supersedes,
            dry_run=dry_run,
            as_json=as_json,
            review_ok=review_ok,
            notes=notes,
        )


@variant_group.command("run")
@_spec_argument
@click.option(
    "--agent",
    "agent_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The agent file (TOML) to run the scenarios with.",
)
@ledger_option
@click.option(
    "--suite",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Scenario suite directory [default: the spec's 'suite'].",
)
@concurrency_option("Runs at the same time.")
@click.option("--no-cache", is_flag=True, help="Call the model even when a cached answer exists.")
@click.option(
    "--plan",
    is_flag=True,
    help="Only print the runs that are missing; run nothing, create no ledger.",
)
@_decision_options
@handle_errors
def variant_run(
    spec: Path,
    agent_file: Path,
    ledger_path: Path | None,
    suite: Path | None,
    concurrency: int,
    no_cache: bool,
    plan: bool,
    dry_run: bool,
    supersedes: str | None,
    review_ok: bool,
    as_json: bool,
) -> None:
    """Run what SPEC still lacks (variant and baseline), judge it, then evaluate and decide.

    Per model and scenario, the spec's repeats minus the runs already stored are run through
    the runner: with the addon for the variant, without it for the baseline. Runs no judge
    the predicates read has scored are judged (the rules judge, or the spec's `judges`).
    Each new run of a lab scenario has its outcome measured, as `agentledger run` does.
    A second call with nothing missing runs and judges nothing.
    """
    from agentledger.gates.variants.run import (
        agent_base_hash,
        judge_runs,
        plan_missing,
        prepare_judges,
    )
    from agentledger.gates.variants.spec import evaluate_variant, load_variant_spec
    from agentledger.runner.agent_spec import load_agent
    from agentledger.runner.scenario import load_suite
    from agentledger.store import Ledger

    loaded = load_variant_spec(spec)
    agent = load_agent(agent_file)
    suite_dir = loaded.suite_dir(suite)
    load_suite(suite_dir, list(loaded.spec.scenarios))  # every scenario exists: checked now
    root = ledger_location(ledger_path)
    judges, notes = prepare_judges(loaded, root, use_cache=not no_cache)
    if supersedes and not plan:  # a bad --supersedes is bad input: refused before any run
        from agentledger.gates.decisions import DecisionStore

        with open_ledger(root) as existing:
            DecisionStore(existing).check_supersedes("variant", supersedes)
    if plan:
        _print_plan(root, lambda ledger: plan_missing(ledger, loaded, agent))
        return
    ledger, created = Ledger.open_or_init(root)
    try:
        if created:
            click.echo(f"Created a ledger at {terminal_safe(str(root))}", err=True)

        report = _run_measured(
            ledger, loaded, agent, suite_dir, concurrency, use_cache=not no_cache, quiet=as_json
        )
        if report.interrupted:
            _interrupted(len(report.runs), "the runs")
        notes += report.notes
        evaluation = evaluate_variant(ledger, loaded, base_hashes=[agent_base_hash(agent)])
        run_ids = [run.run_id for run in evaluation.runs]
        try:
            scored = judge_runs(ledger, judges, run_ids, suite=suite_dir)
        except KeyboardInterrupt:
            scored = []
            _interrupted(len(report.runs), "the judging")
        if any(r.interrupted for r in scored):
            _interrupted(len(report.runs), "the judging")
        if scored:  # the new scores change what the score predicates say
            evaluation = evaluate_variant(ledger, loaded, base_hashes=[agent_base_hash(agent)])
        made = len(report.runs)
        notes.insert(
            0,
            f"{made} run(s) made ({len(report.failed)} did not end ok), "
            f"{sum(len(r.scored) for r in scored)} run(s) judged",
        )
        _decide(
            ledger,
            evaluation,
            supersedes=supersedes,
            dry_run=dry_run,
            as_json=as_json,
            review_ok=review_ok,
            notes=notes,
        )
    except KeyboardInterrupt:
        # Between the steps above (an evaluation, the decision being made): nothing decided.
        _interrupted(0, "the evaluation")
    finally:
        ledger.close()


def _run_measured(
    ledger: Any,
    loaded: Any,
    agent: Any,
    suite_dir: Path,
    concurrency: int,
    *,
    use_cache: bool,
    quiet: bool,
) -> Any:
    """The runs the spec still lacks, each new run of a lab scenario with its outcome measured
    (the `outcome:` predicates read them), as `agentledger run` does; the runner's report."""
    from agentledger.cli.run import LabOutcomes
    from agentledger.gates.variants.run import run_missing

    outcomes = LabOutcomes(ledger, concurrency)

    def on_run(run: Any) -> None:
        if not quiet:
            click.echo(f"ran {run.run_id}  {run.status}", err=True)
        outcomes.submit(run)

    try:
        report = run_missing(
            ledger,
            loaded,
            agent,
            suite_dir,
            concurrency=concurrency,
            use_cache=use_cache,
            on_run=on_run,
        )
        outcomes.finish(report.interrupted, quiet, err=True)
    finally:
        outcomes.pool.shutdown(wait=True, cancel_futures=True)
    return report


def _print_plan(root: Path, missing_in: Callable[[Ledger], tuple[list[Any], list[str]]]) -> None:
    """Print the runs a variant run would make; a ledger that does not exist yet is not
    created (every run is missing: planned against an empty ledger in a temporary folder)."""
    import tempfile

    from agentledger.errors import LedgerNotFoundError
    from agentledger.store import Ledger

    try:
        ledger = Ledger.open(root)
    except LedgerNotFoundError:
        click.echo(
            f"No ledger at {terminal_safe(str(root))} yet (none is created): every run is missing.",
            err=True,
        )
        with (
            tempfile.TemporaryDirectory(prefix="agentledger-plan-") as scratch,
            Ledger.init(Path(scratch) / "ledger") as empty,
        ):
            missing, notes = missing_in(empty)
    else:
        with ledger:
            missing, notes = missing_in(ledger)
    for item in missing:
        click.echo(f"{item.role}  {item.model}  {item.scenario}  {item.count} run(s)")
    if not missing:
        click.echo("Nothing is missing.")
    for note in notes:
        click.echo(f"Note: {terminal_safe(note)}", err=True)
