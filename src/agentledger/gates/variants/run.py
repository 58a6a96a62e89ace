"""`agentledger variant run`: make the runs a variant spec still lacks, judge them, evaluate.

What is missing is counted the way `evaluate_variant` selects runs: per (model, scenario), the
spec's `repeats` minus the variant runs (addon hash) already stored, and the same for the
baseline (no addon, the agent's base prompt). A second call with nothing missing runs nothing.
Everything is checked (agent file, suite, scenarios, addon, judges) before the first run starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agentledger.errors import InputError
from agentledger.gates.variants.spec import LoadedVariant, Selection, select_runs
from agentledger.identity import sha256_bytes, short_hash
from agentledger.judges.verdict import VerdictPolicy
from agentledger.records.specfiles import read_text_file
from agentledger.runner.agent_spec import LoadedAgent
from agentledger.runner.run import PreparedSuite, RunOptions, RunOutcome, prepare_suite, run_suite
from agentledger.runner.scenario import load_suite

if TYPE_CHECKING:
    from agentledger.judges.base import Judge
    from agentledger.judges.scoring import ScoringReport, SelfJudgingCheck
    from agentledger.store.ledger import Ledger

__all__ = [
    "MissingRuns",
    "VariantRunReport",
    "agent_base_hash",
    "judge_runs",
    "plan_missing",
    "run_missing",
]

Role = Literal["variant", "baseline"]


@dataclass(frozen=True)
class MissingRuns:
    """Runs one (role, model, scenario) still needs."""

    role: Role
    model: str
    scenario: str
    count: int


@dataclass
class VariantRunReport:
    """What `run_missing` and `judge_runs` did."""

    planned: list[MissingRuns] = field(default_factory=list)
    runs: list[RunOutcome] = field(default_factory=list)
    judged: list[ScoringReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    """Ctrl-C stopped the runs: nothing is to be judged or decided on them."""

    @property
    def failed(self) -> list[RunOutcome]:
        return [run for run in self.runs if run.status != "ok"]


def agent_base_hash(agent: LoadedAgent) -> str:
    """sha256 of the agent's base system prompt, as the runner records it."""
    text = read_text_file(agent.resolve(agent.spec.system_prompt), what="system prompt file")
    return sha256_bytes(text.encode())


def _count(selection: Selection, role: Role, model: str, scenario: str) -> int:
    runs = selection.variant if role == "variant" else selection.baseline
    return sum(1 for run in runs if run.model == model and run.scenario == scenario)


def plan_missing(
    ledger: Ledger, loaded: LoadedVariant, agent: LoadedAgent
) -> tuple[list[MissingRuns], list[str]]:
    """Per (role, model, scenario), how many runs are still to be made; and notes.

    Baseline runs are made only when the baseline is the agent's base prompt: a baseline named
    by another prompt hash cannot be reproduced with this agent file (a note says so).
    """
    base = agent_base_hash(agent)
    selection = select_runs(ledger, loaded, base_hashes=[base])
    notes = list(selection.warnings)
    spec = loaded.spec
    roles: list[Role] = ["variant"]
    wanted = spec.baseline.prompt_hash
    if wanted is None or base.startswith(wanted):
        roles.append("baseline")
    else:
        notes.append(
            f"the baseline is prompt {short_hash(wanted)}, not this agent's base prompt "
            f"{short_hash(base)}: baseline runs are not made, only evaluated"
        )
    missing = [
        MissingRuns(role, model, scenario, spec.repeats - have)
        for role in roles
        for scenario in spec.scenarios
        for model in spec.models
        if (have := _count(selection, role, model, scenario)) < spec.repeats
    ]
    return missing, notes


def _prepare(
    ledger_root: Path,
    loaded: LoadedVariant,
    agent: LoadedAgent,
    suite: Path,
    missing: Sequence[MissingRuns],
    *,
    concurrency: int,
    use_cache: bool,
) -> list[PreparedSuite]:
    scenarios = {s.id: s for s in load_suite(suite, list(loaded.spec.scenarios))}
    prepared = []
    for item in missing:
        variant = item.role == "variant"
        options = RunOptions(
            models=(item.model,),
            prompt_addon=loaded.addon_path if variant else None,
            variant=loaded.spec.name if variant else None,
            repeat=item.count,
            concurrency=concurrency,
            use_cache=use_cache,
            tags={"variant_spec": loaded.spec.name, "variant_role": item.role},
            kind="variant",
        )
        suite_run = prepare_suite(ledger_root, agent, [scenarios[item.scenario]], options)
        if variant and suite_run.prompt.addon_hash != loaded.addon_hash:
            raise InputError(
                f"{loaded.addon_path}: the runner hashed the addon as "
                f"{suite_run.prompt.addon_hash}, not {loaded.addon_hash}"
            )
        prepared.append(suite_run)
    return prepared


def run_missing(
    ledger: Ledger,
    loaded: LoadedVariant,
    agent: LoadedAgent,
    suite: Path,
    *,
    concurrency: int = 1,
    use_cache: bool = True,
    on_run: Callable[[RunOutcome], None] | None = None,
) -> VariantRunReport:
    """Run every missing variant and baseline run through the runner; nothing when complete."""
    missing, notes = plan_missing(ledger, loaded, agent)
    report = VariantRunReport(planned=missing, notes=notes)
    prepared = _prepare(
        ledger.root, loaded, agent, suite, missing, concurrency=concurrency, use_cache=use_cache
    )  # every group is checked before the first run starts
    for suite_run in prepared:
        done = run_suite(ledger, suite_run, on_run=on_run)
        report.runs.extend(done.runs)
        if done.interrupted:
            report.interrupted = True
            report.notes.append("interrupted: the runs not started were skipped")
            break
    return report


def _default_judges(loaded: LoadedVariant) -> list[str]:
    if loaded.spec.judges is not None:
        return list(loaded.spec.judges)
    return ["rules"] if any(ref.startswith("rules") for ref in loaded.judge_refs()) else []


@dataclass(frozen=True)
class PreparedJudge:
    """A judge `variant run` may score runs with, and the predicate references it satisfies."""

    name: str
    judge: Judge
    judge_id: str
    refs: list[str]
    self_judging: SelfJudgingCheck | None


def prepare_judges(
    loaded: LoadedVariant, ledger_root: Path, *, use_cache: bool = True
) -> tuple[list[PreparedJudge], list[str]]:
    """Make the spec's judges now (a missing SDK or key fails before any run); and notes.

    The judges are the spec's `judges` (default: the rules judge, scoring the diagnosis too,
    when a predicate reads a rules judge). A judge no predicate reads is not used; a predicate
    reading a judge `variant run` cannot make (an id prefix, an LLM judge the spec does not
    name) is noted: runs that judge has not scored cannot be evaluated.
    """
    from agentledger.judges.factory import make_judge, parse_judge_spec
    from agentledger.judges.pack import load_pack
    from agentledger.judges.scoring import score_identity

    refs = loaded.judge_refs()
    prepared: list[PreparedJudge] = []
    notes: list[str] = []
    covered: set[str] = set()
    for name in _default_judges(loaded) if refs else []:
        judge, self_judging = make_judge(
            parse_judge_spec(name),
            load_pack(),
            ledger_root=ledger_root,
            diagnosis=True,
            use_cache=use_cache,
        )
        judge_id, _ = score_identity(judge, VerdictPolicy())
        mine = [ref for ref in refs if judge_id.startswith(ref)]
        if not mine:
            notes.append(f"judge {name} ({judge_id}) is read by no predicate; not used")
            continue
        covered.update(mine)
        prepared.append(PreparedJudge(name, judge, judge_id, mine, self_judging))
    for ref in refs:
        if ref not in covered:
            notes.append(
                f"predicates read judge {ref!r}, which this spec does not let `variant run` make; "
                "runs it has not scored cannot be evaluated (judge them with `agentledger judge`)"
            )
    return prepared, notes


def judge_runs(
    ledger: Ledger,
    judges: Sequence[PreparedJudge],
    run_ids: Sequence[str],
    *,
    suite: Path | None = None,
) -> list[ScoringReport]:
    """Score the runs that no judge matching a predicate's reference has scored yet.

    A run already scored by a judge the predicates accept (any `rules-...` for `rules`) is left
    alone, so a second call scores nothing. `suite` supplies expected root causes to runs that
    do not carry their scenario.
    """
    from agentledger.judges.inputs import expectations_from_suite
    from agentledger.judges.scores import run_scores
    from agentledger.judges.scoring import score_runs

    expectations = expectations_from_suite(suite) if suite is not None else None
    judged = {run_id: [s.judge_id for s in run_scores(ledger, run_id)] for run_id in run_ids}
    reports = []
    for prepared in judges:
        todo = [
            run_id
            for run_id in run_ids
            if any(not any(j.startswith(ref) for j in judged[run_id]) for ref in prepared.refs)
        ]
        if todo:
            reports.append(
                score_runs(
                    ledger,
                    prepared.judge,
                    todo,
                    policy=VerdictPolicy(),
                    expectations=expectations,
                    self_judging=prepared.self_judging,
                )
            )
    return reports
