"""`sentinel run`: run a suite's scenarios for a candidate model, judge them, and evaluate.

Everything that can be checked is checked in `prepare_sentinel_run`, before anything runs (the
spec's suite, the agent and its system prompt against the baseline's, every judge); then
`run_sentinel` runs the baseline's missing scenarios and the candidate's, judges the runs the
check reads, and evaluates them with `evaluate_sentinel`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.gates.sentinels.evaluate import SentinelResult, evaluate_sentinel
from agentledger.gates.sentinels.select import SENTINEL_KINDS, baseline_filter, latest_runs
from agentledger.gates.sentinels.spec import LoadedSentinel
from agentledger.gates.unfinished import is_unfinished, unfinished_note

if TYPE_CHECKING:
    from agentledger.judges.base import Judge
    from agentledger.judges.scoring import ScoringReport, SelfJudgingCheck
    from agentledger.runner.agent_spec import LoadedAgent
    from agentledger.runner.run import PreparedSuite, RunOptions, RunOutcome
    from agentledger.runner.scenario import LoadedScenario
    from agentledger.store import IndexedRun, Ledger

__all__ = ["PreparedSentinelRun", "SentinelRunReport", "prepare_sentinel_run", "run_sentinel"]


@dataclass
class PreparedSentinelRun:
    """A `sentinel run` checked and ready: nothing has run or been written yet."""

    loaded: LoadedSentinel
    model: str
    agent: LoadedAgent
    scenarios: list[LoadedScenario]
    prepared: PreparedSuite
    judges: list[tuple[Judge, SelfJudgingCheck | None]]
    concurrency: int
    use_cache: bool

    @property
    def prompt_hash(self) -> str:
        """The candidate runs' system prompt hash (the agent's)."""
        return self.prepared.prompt.system_prompt_hash

    @property
    def scenario_ids(self) -> list[str]:
        return [s.id for s in self.loaded.spec.scenarios]


@dataclass
class SentinelRunReport:
    """What `run_sentinel` ran and judged, and the result (None when interrupted)."""

    runs: list[RunOutcome] = field(default_factory=list)
    judged: list[ScoringReport] = field(default_factory=list)
    interrupted: bool = False
    made: int = 0
    result: SentinelResult | None = None


def prepare_sentinel_run(
    loaded: LoadedSentinel,
    model: str,
    agent_file: Path,
    ledger_root: Path,
    *,
    concurrency: int = 1,
    use_cache: bool = True,
) -> PreparedSentinelRun:
    """Check everything `run_sentinel` needs; InputError (nothing written) when a part is bad.

    The agent's system prompt must be the baseline's when the spec names a prompt hash: a
    migration check compares models, not prompts. Every judge is made now, so that a missing
    SDK or key fails before anything runs.
    """
    from agentledger.judges.factory import make_judge, parse_judge_spec
    from agentledger.judges.pack import load_pack
    from agentledger.runner.agent_spec import load_agent
    from agentledger.runner.run import prepare_suite
    from agentledger.runner.scenario import load_suite

    suite_dir = loaded.suite_dir
    if suite_dir is None:
        raise InputError(f"{loaded.path}: `sentinel run` needs `suite` (the scenario directory)")
    scenario_ids = [s.id for s in loaded.spec.scenarios]
    agent = load_agent(agent_file)
    scenarios = load_suite(suite_dir, scenario_ids)
    pack = load_pack(loaded.spec.pack)
    judge_specs = [parse_judge_spec(name) for name in loaded.spec.judges]
    prepared = prepare_suite(
        ledger_root, agent, scenarios, _options(loaded, model, concurrency, use_cache)
    )
    prompt_hash = prepared.prompt.system_prompt_hash
    wanted = loaded.spec.baseline.prompt_hash
    if wanted is not None and not prompt_hash.startswith(wanted):
        raise InputError(
            f"{agent_file}: the agent's system prompt is {prompt_hash[:15]}, the spec's baseline "
            f"was recorded on {wanted[:15]}; a migration check compares models on the same prompt"
        )
    judges = [
        make_judge(
            judge_spec,
            pack,
            ledger_root=ledger_root,
            diagnosis=loaded.spec.diagnosis,
            use_cache=use_cache,
        )
        for judge_spec in judge_specs
    ]
    return PreparedSentinelRun(
        loaded, model, agent, scenarios, prepared, judges, concurrency, use_cache
    )


def _options(loaded: LoadedSentinel, model: str, concurrency: int, use_cache: bool) -> RunOptions:
    from agentledger.runner.run import RunOptions

    return RunOptions(
        models=(model,),
        repeat=loaded.spec.repeats,
        concurrency=concurrency,
        use_cache=use_cache,
        tags={"sentinel": loaded.spec.name},
        kind="sentinel",
    )


def missing_baseline(
    ledger: Ledger, loaded: LoadedSentinel, prompt_hash: str, scenarios: list[str]
) -> list[str]:
    """The scenarios the baseline model has fewer than `repeats` runs of on `prompt_hash`."""
    run_filter = replace(baseline_filter(loaded), prompt_hash=prompt_hash)
    found = latest_runs(ledger, run_filter, scenarios, loaded.spec.repeats)
    return [s for s in scenarios if len(found[s]) < loaded.spec.repeats]


def run_sentinel(
    ledger: Ledger,
    run: PreparedSentinelRun,
    *,
    on_note: Callable[[str], None] | None = None,
    on_run: Callable[[RunOutcome], None] | None = None,
    after_runs: Callable[[], None] | None = None,
) -> SentinelRunReport:
    """Run the baseline's missing scenarios and the candidate's, judge them, evaluate.

    `on_note` hears what is being done (a baseline that must run first, each judge's counts),
    `on_run` each run as it ends, `after_runs` once every run has ended, before the runs are
    judged and evaluated (where the outcomes of lab runs are measured: `outcome:` criteria).
    """
    from agentledger.judges.inputs import expectations_from_suite
    from agentledger.judges.scoring import score_runs
    from agentledger.runner.run import prepare_suite, run_suite
    from agentledger.store import RunFilter

    note = on_note or (lambda _text: None)
    loaded, model, scenario_ids = run.loaded, run.model, run.scenario_ids
    prompt_hash = run.prompt_hash
    report = SentinelRunReport()
    base_model = loaded.spec.baseline.model
    missing = missing_baseline(ledger, loaded, prompt_hash, scenario_ids)
    if missing and base_model != model:
        note(f"Baseline {base_model} has no runs of {', '.join(missing)}: running them.")
        options = _options(loaded, base_model, run.concurrency, run.use_cache)
        base_prepared = prepare_suite(
            ledger.root, run.agent, [s for s in run.scenarios if s.id in missing], options
        )
        base_report = run_suite(ledger, base_prepared, on_run=on_run)
        report.runs += base_report.runs
        if base_report.interrupted:
            report.interrupted = True
            return report
    candidate_report = run_suite(ledger, run.prepared, on_run=on_run)
    report.runs += candidate_report.runs
    if candidate_report.interrupted:
        report.interrupted = True
        return report
    if after_runs is not None:
        after_runs()
    made = {outcome.run_id for outcome in candidate_report.runs}
    report.made = len(made)
    candidate: dict[str, list[IndexedRun]] = defaultdict(list)
    made_filter = RunFilter(models=(model,), scenarios=tuple(scenario_ids), kinds=SENTINEL_KINDS)
    unfinished = []
    for stored in ledger.runs(made_filter):
        if stored.run_id in made:
            if is_unfinished(stored):
                unfinished.append(stored)  # not counted: the decision reports it missing
            else:
                candidate[stored.scenario].append(stored)
    note_text = unfinished_note(unfinished)
    if note_text is not None:
        note(note_text + "; the check reports their scenarios as missing runs.")
    baseline = latest_runs(
        ledger,
        RunFilter(models=(base_model,), prompt_hash=prompt_hash, kinds=SENTINEL_KINDS),
        scenario_ids,
        loaded.spec.repeats,
        exclude=frozenset(made),
    )
    suite_dir = loaded.suite_dir
    expectations = (
        expectations_from_suite(suite_dir) if loaded.spec.diagnosis and suite_dir else None
    )
    to_judge = sorted(
        {r.run_id for runs in (*candidate.values(), *baseline.values()) for r in runs}
    )
    for judge, self_judging in run.judges:
        scored = score_runs(
            ledger, judge, to_judge, expectations=expectations, self_judging=self_judging
        )
        report.judged.append(scored)
        if scored.interrupted:
            report.interrupted = True  # nothing is decided on a half-judged set of runs
            return report
        note(
            f"Judge {scored.judge_id}: scored {len(scored.scored)} runs; "
            f"{scored.already_scored} already scored."
        )
    report.result = evaluate_sentinel(
        ledger,
        loaded,
        {s: candidate.get(s, []) for s in scenario_ids},
        baseline,
        candidate_model=model,
        candidate_filter_text=f"model={model},prompt-hash={prompt_hash[7:15]} "
        f"(the {len(made)} runs just made)",
    )
    return report
