"""`agentledger sentinel`: go/no-go for a model migration from a fixed suite of scenarios."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentledger.cli.common import (
    concurrency_option,
    handle_errors,
    ledger_location,
    ledger_option,
    open_ledger,
    stacked,
)
from agentledger.cli.output import print_rows, terminal_safe, write_text_output

if TYPE_CHECKING:
    from agentledger.gates.sentinels.evaluate import SentinelResult
    from agentledger.gates.sentinels.spec import LoadedSentinel
    from agentledger.store import Ledger

__all__ = ["sentinel_group"]

_OUTCOME_COLOURS = {"GO": "green", "NO-GO": "red", "REVIEW": "yellow"}


def _spec_argument(func: Any) -> Any:
    return click.argument("spec", type=click.Path(path_type=Path), metavar="SPEC")(func)


_decide_options = stacked(
    click.option(
        "--review-ok", is_flag=True, help="Exit 0 on REVIEW (after a human looked at it)."
    ),
    click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
    click.option("--dry-run", is_flag=True, help="Decide and print; write no decision."),
    click.option(
        "--supersedes",
        metavar="DECISION",
        help="The earlier decision this one replaces (it stays on record).",
    ),
)


@click.group("sentinel")
def sentinel_group() -> None:
    """Sentinel suites: a fixed set of scenarios with pass criteria, for model migrations.

    Before a migration (and on a monthly cadence), the suite's scenarios are run by the
    candidate model and every pass criterion is checked on the candidate's and the baseline
    model's runs. The decision tree, printed with the result: a criterion that held on the
    baseline and fails on the candidate is NO-GO; one that fails on both is a known gap
    (REVIEW unless the spec makes it block); a criterion that cannot be evaluated, an
    Uncertain, skipped or missing judgement, or missing runs are REVIEW; otherwise GO. Each
    check is written as a decision record (`agentledger decisions`). Exit status: 0 GO, 1 NO-GO,
    1 REVIEW unless --review-ok, 2 bad input.
    """


def _load(spec: Path) -> LoadedSentinel:
    from agentledger.gates.sentinels.spec import load_sentinel

    return load_sentinel(spec)


def _evidence_lines(result: SentinelResult) -> list[str]:
    lines: list[str] = []
    for check in result.checks:
        if check.branch not in ("regression", "known-gap-blocking", "known-gap", "review"):
            continue
        for run in check.candidate.runs:
            if run.passed is True:
                continue
            lines.append(
                f"  {check.scenario} {check.criterion} on {run.run_id}: {terminal_safe(run.reason)}"
            )
            for ev in run.evidence:
                where = f"{ev.file}:{ev.line}" if ev.line else ev.file
                lines.append(f"      {where}  {terminal_safe(ev.quote)}")
    return lines


def _print_result(result: SentinelResult, decision_id: str | None, review_ok: bool) -> None:
    from agentledger.gates.sentinels.select import SENTINEL_KINDS

    colour = _OUTCOME_COLOURS[result.outcome]
    click.echo(
        f"Sentinel {terminal_safe(result.suite)}: {terminal_safe(result.candidate_model)} "
        f"against the baseline {terminal_safe(result.baseline_model)}: "
        + click.style(result.outcome, fg=colour, bold=True)
    )
    click.echo(
        f"  candidate runs: {terminal_safe(result.candidate_filter)}; served: "
        f"{terminal_safe(', '.join(result.served_models) or '-')}; "
        f"counting {' and '.join(SENTINEL_KINDS)} runs only"
    )
    for scenario, run_ids in result.candidate_runs.items():
        baseline = ", ".join(result.baseline_runs.get(scenario, [])) or "none"
        click.echo(
            f"  {scenario}: {terminal_safe(', '.join(run_ids) or 'no runs')} "
            f"(baseline {terminal_safe(baseline)})"
        )
    rows = []
    for check in result.checks:
        rows.append(
            (
                check.scenario,
                check.criterion,
                " ".join((check.description or check.predicate).split()),
                check.baseline.status,
                check.candidate.status,
                check.branch,
            )
        )
    click.echo("")
    print_rows(["scenario", "criterion", "description", "baseline", "candidate", "branch"], rows)
    click.echo("\nDecision tree:")
    for step in result.tree:
        mark = click.style(f"  <- {step.if_yes}", fg=colour, bold=True) if step.fired else ""
        click.echo(f"  {step.question} {'yes' if step.answer else 'no'}{mark}")
        if step.answer and step.if_yes != "GO":
            for item in step.items:
                click.echo(f"      - {terminal_safe(item)}")
    click.echo(f"  => {result.outcome}")
    evidence = _evidence_lines(result)
    if evidence:
        click.echo("\nEvidence (candidate runs):")
        for line in evidence:
            click.echo(line)
    if decision_id is not None:
        click.echo(f"\nDecision {decision_id} written; agentledger decisions show {decision_id}")
    else:
        click.echo("\nDry run: no decision written.")
    if result.outcome == "REVIEW" and review_ok:
        click.echo("REVIEW accepted by --review-ok: exit 0.")


def _finish(
    ledger: Ledger,
    loaded: LoadedSentinel,
    result: SentinelResult,
    *,
    review_ok: bool,
    as_json: bool,
    dry_run: bool,
    supersedes: str | None,
) -> None:
    from agentledger.gates.decisions import DecisionStore, exit_code
    from agentledger.gates.sentinels.decision import to_decision

    store = DecisionStore(ledger)
    if supersedes is not None:
        supersedes = store.check_supersedes("sentinel", supersedes)
    decision = to_decision(result, loaded, supersedes=supersedes)
    decision_id = None
    if not dry_run:
        store.write([decision])
        decision_id = decision.decision_id
    if as_json:
        payload = {
            "decision_id": decision_id,
            "written": not dry_run,
            "outcome": result.outcome,
            "tree_path": result.tree_path(),
            "result": result.model_dump(mode="json"),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        _print_result(result, decision_id, review_ok)
    code = exit_code(result.outcome, review_ok=review_ok)
    if code:
        sys.exit(code)


@sentinel_group.command("check")
@_spec_argument
@click.option(
    "--candidate",
    "candidates",
    multiple=True,
    required=True,
    metavar="FILTER",
    help="The candidate's runs: model=X plus optional prompt-hash=H, since=DATE, until=DATE, "
    "tag:K=V, served=S, commit=C, variant=V (comma-separated, or the option repeated).",
)
@ledger_option
@_decide_options
@handle_errors
def sentinel_check(
    spec: Path,
    candidates: tuple[str, ...],
    ledger_path: Path | None,
    review_ok: bool,
    as_json: bool,
    dry_run: bool,
    supersedes: str | None,
) -> None:
    """Decide GO / NO-GO / REVIEW from runs already in the ledger.

    Per scenario the newest `repeats` runs of each side count: the candidate's (selected by
    --candidate; the baseline's prompt hash unless prompt-hash= is given) and the baseline
    model's. Judge the runs first (`agentledger judge`): an unjudged candidate run is REVIEW.
    """
    from agentledger.gates.sentinels.evaluate import check_sentinel
    from agentledger.gates.specerrors import unknown_names

    loaded = _load(spec)
    text = ",".join(part.strip() for part in candidates if part.strip())
    with open_ledger(ledger_path) as ledger:
        result = check_sentinel(ledger, loaded, text)
        notes = [
            *unknown_names(ledger, "model", [result.candidate_model, result.baseline_model]),
            *unknown_names(ledger, "scenario", [s.id for s in loaded.spec.scenarios]),
        ]
        cand_prompts = set(result.candidate_prompt_hashes) - {"-"}
        base_prompts = set(result.baseline_prompt_hashes) - {"-"}
        if cand_prompts and base_prompts and cand_prompts != base_prompts:
            notes.append(
                "the candidate runs used system prompt "
                f"{', '.join(sorted(h[7:15] for h in cand_prompts))}, the baseline runs "
                f"{', '.join(sorted(h[7:15] for h in base_prompts))}: this check compares "
                "prompts as well as models"
            )
        for note in notes:
            click.echo(f"Note: {terminal_safe(note)}", err=True)
        _finish(
            ledger, loaded, result,
            review_ok=review_ok, as_json=as_json, dry_run=dry_run, supersedes=supersedes,
        )  # fmt: skip


@sentinel_group.command("run")
@_spec_argument
@click.option("--model", "model", required=True, metavar="CANDIDATE", help="The candidate model.")
@click.option(
    "--agent",
    "agent_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The agent file (TOML) that runs the scenarios.",
)
@ledger_option
@concurrency_option("Runs at the same time.")
@click.option("--no-cache", is_flag=True, help="Call the model even when a cached answer exists.")
@_decide_options
@handle_errors
def sentinel_run(
    spec: Path,
    model: str,
    agent_file: Path,
    ledger_path: Path | None,
    concurrency: int,
    no_cache: bool,
    review_ok: bool,
    as_json: bool,
    dry_run: bool,
    supersedes: str | None,
) -> None:
    """Run the suite's scenarios for CANDIDATE, judge them, and decide.

    The baseline model runs too, for the scenarios it has no runs of on the agent's system
    prompt. The agent's system prompt must be the baseline's (when the spec names a prompt
    hash): a migration check compares models, not prompts. Every run is tagged
    sentinel=<suite name>. Each new run of a lab scenario has its outcome measured, as
    `agentledger run` does. --dry-run still runs and judges; it only writes no decision.
    """
    from agentledger.cli.run import LabOutcomes
    from agentledger.gates.sentinels.run import prepare_sentinel_run, run_sentinel
    from agentledger.runner.run import RunOutcome
    from agentledger.store import Ledger

    loaded = _load(spec)
    root = ledger_location(ledger_path)
    prepared = prepare_sentinel_run(
        loaded, model, agent_file, root, concurrency=concurrency, use_cache=not no_cache
    )
    if supersedes is not None:  # a bad --supersedes is bad input: refused before any run
        from agentledger.gates.decisions import DecisionStore

        with open_ledger(root) as existing:
            DecisionStore(existing).check_supersedes("sentinel", supersedes)
    progress = sys.stderr if as_json else sys.stdout
    ledger, created = Ledger.open_or_init(root)
    try:
        if created:
            click.echo(f"Created a ledger at {terminal_safe(str(root))}", err=True)
        outcomes = LabOutcomes(ledger, concurrency)  # `outcome:` criteria read them

        def on_run(item: RunOutcome) -> None:
            click.echo(f"{item.run_id}  {item.status}", file=progress)
            outcomes.submit(item)

        try:
            report = run_sentinel(
                ledger,
                prepared,
                on_note=lambda text: click.echo(terminal_safe(text), file=progress),
                on_run=on_run,
                after_runs=lambda: outcomes.finish(False, False, err=as_json),
            )
        except KeyboardInterrupt:
            click.echo("Interrupted: no decision made.", err=True)
            sys.exit(130)
        finally:
            outcomes.pool.shutdown(wait=True, cancel_futures=True)
        for scored in report.judged:
            for run_id, error in scored.failed:
                click.echo(f"Error: {run_id}: {terminal_safe(error)}", err=True)
        if report.interrupted or report.result is None:
            scores = sum(len(scored.scored) for scored in report.judged)
            click.echo(
                f"Interrupted: {len(report.runs)} run(s) sealed and {scores} score(s) written, "
                "each complete; no decision made. Run the same command again: interrupted "
                "runs are made again.",
                err=True,
            )
            sys.exit(130)
        _finish(
            ledger, loaded, report.result,
            review_ok=review_ok, as_json=as_json, dry_run=dry_run, supersedes=supersedes,
        )  # fmt: skip
    finally:
        ledger.close()


@sentinel_group.command("protocol")
@_spec_argument
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "html"]),
    default="md",
    show_default=True,
    help="Markdown, or a self-contained HTML page.",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file."
)
@handle_errors
def sentinel_protocol(spec: Path, fmt: str, output: Path | None) -> None:
    """The protocol document: purpose, when to run, the cases and why each is in the suite,
    the pass criteria in words, the decision tree, what to do on each outcome, how to rerun."""
    from agentledger.gates.sentinels.protocol import render_protocol

    loaded = _load(spec)
    text = render_protocol(loaded, "html" if fmt == "html" else "md")
    write_text_output(text, output)


@sentinel_group.command("history")
@click.argument("spec", metavar="SPEC")
@ledger_option
@click.option("--json", "as_json", is_flag=True, help="Print the history as JSON.")
@handle_errors
def sentinel_history_command(spec: str, ledger_path: Path | None, as_json: bool) -> None:
    """Every past check of the suite, per candidate model, in the order the runs were made.

    SPEC is the spec file, or the suite's name. A change of outcome while the requested model
    id stayed the same is flagged as consistent with a silent backend update (it cannot be
    attributed with certainty); when the served model, the prompt or the spec changed too,
    the change is attributable and the flag says to what.
    """
    from agentledger.gates.decisions import indexed_decisions
    from agentledger.gates.sentinels.history import sentinel_history

    path = Path(spec)
    name = _load(path).spec.name if path.is_file() else spec
    with open_ledger(ledger_path) as ledger:
        decisions = indexed_decisions(ledger, kind="sentinel", subject=name)
    groups, flags = sentinel_history(decisions)
    if as_json:
        payload = {
            "suite": name,
            "models": {
                model: [entry.__dict__ for entry in entries] for model, entries in groups.items()
            },
            "flags": [
                {
                    "candidate_model": flag.candidate_model,
                    "before": flag.before.decision_id,
                    "after": flag.after.decision_id,
                    "attributable": flag.attributable,
                    "message": flag.message,
                }
                for flag in flags
            ],
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=list))
        return
    if not decisions:
        click.echo(f"No sentinel decisions for {terminal_safe(name)} in this ledger.")
        return
    total = sum(len(entries) for entries in groups.values())
    click.echo(f"Sentinel history of {terminal_safe(name)}: {total} checks")
    for model, entries in groups.items():
        click.echo(f"\n{terminal_safe(model)}")
        print_rows(
            ["runs_up_to", "decided", "outcome", "failing", "served", "decision"],
            [
                (
                    (entry.runs_at or "-")[:10],
                    entry.decided_at[:16].replace("T", " "),
                    entry.outcome,
                    ", ".join(entry.failing) or "-",
                    ", ".join(entry.served) or "-",
                    entry.decision_id,
                )
                for entry in entries
            ],
        )
        for flag in (f for f in flags if f.candidate_model == model):
            mark = "note" if flag.attributable else "FLAG"
            click.echo(
                f"  {mark}: {(flag.before.runs_at or '?')[:10]} -> "
                f"{(flag.after.runs_at or '?')[:10]}: {terminal_safe(flag.message)}"
            )
