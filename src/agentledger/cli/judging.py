"""`agentledger judge`, `review` and `criteria`: score stored runs against explicit criteria."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentledger.cli.common import (
    INTERRUPTED,
    concurrency_option,
    handle_errors,
    ledger_option,
    model_call_options,
    open_ledger,
    progress_bar,
)
from agentledger.cli.filters import build_filter, run_filter_options
from agentledger.cli.output import print_rows, terminal_safe
from agentledger.judges.pack import DEFAULT_PACK, load_pack, shipped_packs
from agentledger.judges.verdict import VerdictPolicy
from agentledger.records.scores import NOT_APPLICABLE, UNSCORED, VERDICTS
from agentledger.records.specfiles import load_yaml_record

if TYPE_CHECKING:
    from agentledger.judges.base import CriteriaPack
    from agentledger.judges.scoring import RunsToJudge, ScoringReport

__all__ = ["criteria_group", "judge_command"]


def _pack_option(func: Any) -> Any:
    return click.option(
        "--pack",
        default=DEFAULT_PACK,
        show_default=True,
        metavar="PACK",
        help=f"Criteria pack: a shipped one ({', '.join(shipped_packs())}) or a YAML file.",
    )(func)


@click.command("judge")
@ledger_option
@run_filter_options
@click.option(
    "--judge",
    "judge_name",
    default="rules",
    show_default=True,
    metavar="JUDGE",
    help="'rules' (deterministic, ops-aware) or 'llm:PROVIDER/MODEL'.",
)
@_pack_option
@click.option("--diagnosis", is_flag=True, help="Also score the diagnosis (root cause).")
@click.option(
    "--suite",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Scenario suite whose expected root causes apply to runs that do not carry theirs.",
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Verdict policy (YAML) [default: high fired -> Unsafe; medium or null -> Uncertain].",
)
@click.option(
    "--knowledge",
    "knowledge_dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Rules judge: a directory of extra ops knowledge files (YAML; repeatable).",
)
@click.option("--base-url", help="LLM judge: endpoint of an OpenAI-compatible server.")
@click.option(
    "--template",
    metavar="NAME|FILE",
    help="LLM judge: the prompt template, shipped (remediation-v1, trace-v1: the run's steps, "
    "for trajectory packs) or a .jinja file [default: remediation-v1].",
)
@click.option(
    "--families",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="LLM judge: YAML map of model ids to families (self-judging is refused).",
)
@concurrency_option("LLM judge: runs judged at the same time.", default=4)
@click.option("--no-cache", is_flag=True, help="LLM judge: ask the model again.")
@click.option(
    "--examples-from",
    metavar="labels:NAME",
    help="LLM judge: few-shot examples from this label source (needs --split dev).",
)
@click.option(
    "--split",
    "examples_split",
    type=click.Choice(("dev", "test")),
    help="With --examples-from: the split part they come from (dev only; test is held out).",
)
@click.option(
    "--examples",
    "examples_limit",
    type=int,
    default=4,
    show_default=True,
    help="With --examples-from: how many labelled runs to show.",
)
@model_call_options
@handle_errors
def judge_command(
    ledger_path: Path | None,
    judge_name: str,
    pack: str,
    diagnosis: bool,
    suite: Path | None,
    policy_file: Path | None,
    knowledge_dirs: tuple[Path, ...],
    base_url: str | None,
    template: str | None,
    families: Path | None,
    concurrency: int,
    no_cache: bool,
    examples_from: str | None,
    examples_split: str | None,
    examples_limit: int,
    request_timeout: float | None,
    retries: int | None,
    **filters: Any,
) -> None:
    """Score every matching run that this judge has not scored yet.

    A judge's id is a hash of everything that shapes its output (kind, model, template, pack,
    verdict policy); scores go to scores/<run_id>/<judge_id>.json and are never overwritten,
    so running the same command again scores nothing twice. Scoring old runs against a new
    pack is the same command with --pack.
    """
    from agentledger.judges.factory import make_judge, parse_judge_spec
    from agentledger.judges.inputs import expectations_from_suite
    from agentledger.judges.scoring import runs_to_judge, score_runs

    spec = parse_judge_spec(judge_name)
    criteria = load_pack(pack)
    policy = (
        load_yaml_record(VerdictPolicy, policy_file, what="verdict policy")
        if policy_file
        else VerdictPolicy()
    )
    expectations = expectations_from_suite(suite) if suite else None
    if examples_split is not None and examples_from is None:
        raise click.UsageError("--split needs --examples-from labels:NAME")
    with open_ledger(ledger_path) as ledger:
        few_shots = None
        if examples_from is not None:
            from agentledger.judges.llm.examples import load_examples

            few_shots = load_examples(ledger, examples_from, examples_split, examples_limit)
        judge, self_judging = make_judge(
            spec,
            criteria,
            ledger_root=ledger.root,
            diagnosis=diagnosis,
            use_cache=not no_cache,
            concurrency=concurrency,
            base_url=base_url,
            families_file=families,
            knowledge_dirs=knowledge_dirs,
            request_timeout=request_timeout,
            retries=retries,
            examples=few_shots,
            template=template,
        )
        chosen = runs_to_judge(ledger, build_filter(**filters), criteria)
        run_ids = chosen.run_ids
        with progress_bar(f"Judging ({spec.kind})") as progress:
            report = score_runs(
                ledger,
                judge,
                run_ids,
                policy=policy,
                expectations=expectations,
                self_judging=self_judging,
                concurrency=concurrency if spec.kind == "llm" else 1,
                progress=progress,
            )
    _echo_scored(report, chosen, criteria, diagnosis)
    for run_id, error in report.failed:
        click.echo(f"Error: {run_id}: {terminal_safe(error)}", err=True)
    if report.tampered:
        # Evidence changed since sealing: an integrity failure (exit 3), not a judge's.
        raise SystemExit(3)
    if report.failed:
        raise SystemExit(1)


def _echo_scored(
    report: ScoringReport, chosen: RunsToJudge, criteria: CriteriaPack, diagnosis: bool
) -> None:
    """What `judge` did: the runs it took, the scores by verdict and criterion, what is left
    (exit 130 when it was interrupted)."""
    counts = report.verdicts()
    if chosen.kinds_by_default:
        note = f"Judging {', '.join(chosen.kinds)} runs (the kinds {criteria.id} judges"
        if chosen.left_out:
            apart = ", ".join(f"{n} {kind}" for kind, n in sorted(chosen.left_out.items()))
            note += f"; left out: {apart} run(s)"
        click.echo(note + "; choose with --kind).")
    click.echo(
        f"Judge {report.judge_id} ({criteria.id} v{criteria.version}): scored "
        f"{len(report.scored)} runs; {report.already_scored} already scored by this judge."
    )
    if report.scored_elsewhere:
        click.echo(
            f"  {report.scored_elsewhere} run(s) skipped: scored by another run of this judge "
            "at the same time."
        )
    if report.indexed_late:
        click.echo(
            f"  {report.indexed_late} score(s) of this judge were written but not indexed (an "
            "earlier run was stopped in between): indexed now."
        )
    if report.interrupted:
        click.echo(
            f"Interrupted: {len(report.scored)} scores were written before the interrupt, each "
            f"complete; {report.not_reached} runs were not scored. Run the same command again "
            "to score them (runs already scored are skipped).",
            err=True,
        )
        sys.exit(INTERRUPTED)
    if report.scored:
        shown = [v for v in (*VERDICTS, UNSCORED) if v != NOT_APPLICABLE or counts.get(v)]
        click.echo("  " + "  ".join(f"{verdict} {counts.get(verdict, 0)}" for verdict in shown))
        fired = report.fired()
        if fired:
            click.echo("  fired: " + ", ".join(f"{c} {n}" for c, n in sorted(fired.items())))
        if diagnosis:
            found = report.diagnoses()
            click.echo(
                f"  diagnosis: {found[True]} correct, {found[False]} incorrect, "
                f"{found[None]} cannot tell"
            )
    _echo_skipped(report)
    unscored = [score for score in report.scored if score.unscored_reason()]
    if unscored:
        click.echo(
            f"  {len(unscored)} unscored: the judge's answer could not be read (first: "
            f"{terminal_safe(unscored[0].unscored_reason() or '')}); they are not Uncertain, "
            "and wait in `agentledger review`",
            err=True,
        )
    if report.not_applicable:
        reasons = sorted({reason for _run_id, reason in report.not_applicable})
        click.echo(
            f"  {len(report.not_applicable)} run(s) not judged, no verdict given: "
            + "; ".join(reasons)
        )
    _echo_outside(report)


def _echo_skipped(report: ScoringReport) -> None:
    """How many runs the judge skipped and why (the three commonest reasons)."""
    why = Counter(
        score.skipped_reason or "" for score in report.scored if score.verdict == "skipped"
    )
    if not why:
        return
    click.echo(f"  {why.total()} skipped (no verdict; they wait in `agentledger review`), because:")
    for reason, n in why.most_common(3):
        click.echo(f"    {n}: {terminal_safe(reason)}")
    if len(why) > 3:
        click.echo(f"    and {len(why) - 3} other reason(s): `agentledger show RUN` says each")


def _echo_outside(report: ScoringReport) -> None:
    """Why runs were not applicable, and the share of runs each criterion could judge."""
    outside = Counter(
        score.skipped_reason or "" for score in report.scored if score.verdict == NOT_APPLICABLE
    )
    for reason, n in outside.most_common():
        click.echo(f"  {n} not applicable (no verdict): {terminal_safe(reason)}")
    coverage = report.coverage()
    if not coverage:
        if report.scored:
            click.echo("  could judge: no criterion on any of these runs")
        return
    parts = []
    for criterion, told, judged, why in coverage:
        part = f"{criterion} {told}/{judged}"
        if told == 0:
            part += f" (never: {terminal_safe(why or 'cannot assess')})"
        parts.append(part)
    click.echo("  could judge: " + ", ".join(parts))


@click.group("criteria")
def criteria_group() -> None:
    """List and show criteria packs (the shipped ones, or a YAML file)."""


@criteria_group.command("list")
@_pack_option
@handle_errors
def criteria_list(pack: str) -> None:
    """The criteria of a pack: id, severity, what they need, title."""
    criteria = load_pack(pack)
    click.echo(f"{criteria.id} v{criteria.version}: {criteria.title}")
    print_rows(
        ["ID", "SEVERITY", "REQUIRES", "TITLE"],
        [(c.id, c.severity, ", ".join(c.requires) or "-", c.title) for c in criteria.criteria],
    )


@criteria_group.command("show")
@click.argument("criterion_id")
@_pack_option
@handle_errors
def criteria_show(criterion_id: str, pack: str) -> None:
    """One criterion in full: what fires it, the risk, examples."""
    criteria = load_pack(pack)
    try:
        criterion = criteria.criterion(criterion_id)
    except KeyError:
        known = ", ".join(c.id for c in criteria.criteria)
        raise click.BadParameter(
            f"pack {criteria.id} has no criterion {criterion_id!r} (it has {known})",
            param_hint="CRITERION_ID",
        ) from None
    click.echo(f"{criterion.id}  {criterion.title}  [{criterion.severity}]")
    click.echo(f"\nFires when: {criterion.fires_when.strip()}")
    click.echo(f"\nRisk: {criterion.risk.strip()}")
    if criterion.requires:
        click.echo(f"\nRequires: {', '.join(criterion.requires)}")
    for title, examples in (
        ("Fires on", criterion.examples.fires),
        ("Does not fire on", criterion.examples.does_not_fire),
    ):
        if examples:
            click.echo(f"\n{title}:")
            for example in examples:
                click.echo(f"  - {example}")
