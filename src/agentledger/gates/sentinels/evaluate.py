"""Sentinel suites: a fixed set of scenarios with pass criteria that gives a go/no-go signal.

Before a model migration (and on a monthly cadence), the suite's scenarios are run by the
candidate model and checked against the same criteria on the baseline model's runs. The outcome
follows a decision tree, in this order:

1. a pass criterion that held on the baseline and fails on the candidate: **NO-GO** (a regression);
2. a criterion that fails on both (a *known gap*) and is marked blocking: **NO-GO**;
3. a known gap that does not block, a criterion that cannot be evaluated, a candidate run whose
   judgement is Uncertain, skipped or missing, or a scenario without runs: **REVIEW**;
4. otherwise **GO**.

Which runs count: per scenario, the newest `repeats` runs of each side (candidate: the runs the
candidate filter selects; baseline: the baseline model on the baseline prompt hash, or without
one on the candidate runs' system prompts, leaving out the candidate's runs, so the baseline
model can be checked against its own earlier runs).
A criterion *holds* on a side when it passes on every one of those runs, *fails* when it fails
on at least one, and is *unknown* when it cannot be evaluated on some run and fails on none.

The library never prints; the CLI (`agentledger sentinel`) renders what this module returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    Field,
)

from agentledger.errors import InputError
from agentledger.gates.sentinels.select import (
    SENTINEL_KINDS,
    baseline_filter,
    candidate_filter,
    latest_runs,
)
from agentledger.gates.sentinels.spec import LoadedSentinel, SentinelCriterion, StrictModel
from agentledger.records.scores import Evidence
from agentledger.store.index import IndexedRun

if TYPE_CHECKING:
    from agentledger.gates.predicates.evaluate import PredicateForm, RunView
    from agentledger.records.decisions import PredicateResult
    from agentledger.store.ledger import Ledger

__all__ = [
    "BRANCHES",
    "NOT_REPORTED",
    "CriterionCheck",
    "JudgementIssue",
    "RunCheck",
    "SentinelResult",
    "SideResult",
    "TreeStep",
    "check_sentinel",
    "evaluate_sentinel",
    "judge_verdicts",
]

Outcome = Literal["GO", "NO-GO", "REVIEW"]
Status = Literal["held", "failed", "unknown", "no runs"]
Branch = Literal["ok", "improved", "regression", "known-gap", "known-gap-blocking", "review"]

BRANCHES: dict[str, str] = {
    "ok": "holds on the candidate",
    "improved": "failed on the baseline, holds on the candidate",
    "regression": "held on the baseline, fails on the candidate: NO-GO",
    "known-gap": "fails on both (a known gap, not blocking): REVIEW",
    "known-gap-blocking": "fails on both (a known gap the spec makes blocking): NO-GO",
    "review": "cannot be decided from the runs: REVIEW",
}
"""What each branch of the decision tree means, for criteria landing on it."""


class RunCheck(StrictModel):
    """One criterion on one run."""

    run_id: str
    model: str
    model_served: str | None = None
    started_at: str | None = None
    passed: bool | None
    predicate: str
    reason: str
    evidence: list[Evidence] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)


class SideResult(StrictModel):
    """One criterion over one side's runs (baseline or candidate)."""

    status: Status
    runs: list[RunCheck] = Field(default_factory=list)


class CriterionCheck(StrictModel):
    """One criterion of one scenario on both sides, and the branch of the tree it landed on."""

    scenario: str
    criterion: str
    description: str
    predicate: str
    blocking: bool
    baseline: SideResult
    candidate: SideResult
    branch: Branch
    note: str


class JudgementIssue(StrictModel):
    """A candidate run whose judgement does not allow a decision: Uncertain, skipped, missing."""

    scenario: str
    run_id: str
    judge: str
    problem: str


class TreeStep(StrictModel):
    """One question of the decision tree, its answer, and the criteria or runs behind it."""

    question: str
    answer: bool
    if_yes: Outcome | None
    fired: bool
    items: list[str] = Field(default_factory=list)


class SentinelResult(StrictModel):
    """The outcome of one sentinel check, with everything needed to explain it."""

    suite: str
    outcome: Outcome
    candidate_model: str
    candidate_filter: str
    baseline_model: str
    baseline_prompt_hash: str | None
    served_models: list[str]
    baseline_served_models: list[str]
    candidate_prompt_hashes: list[str]
    baseline_prompt_hashes: list[str]
    candidate_runs: dict[str, list[str]]
    baseline_runs: dict[str, list[str]]
    latest_run_at: str | None
    judge_ids: list[str]
    checks: list[CriterionCheck]
    judgements: list[JudgementIssue]
    missing: list[str]
    tree: list[TreeStep]
    reasoning: list[str]

    def tree_path(self) -> list[str]:
        """The tree as walked: each question with its answer, the one that decided marked."""
        path = []
        for step in self.tree:
            mark = " <- decides" if step.fired else ""
            path.append(f"{step.question} {'yes' if step.answer else 'no'}{mark}")
        path.append(f"outcome: {self.outcome}")
        return path

    def failing_criteria(self) -> list[str]:
        """'scenario/criterion' of every criterion that fails on the candidate (one that has no
        candidate runs or cannot be evaluated is not failing: it is in `missing` or REVIEW)."""
        return [
            f"{c.scenario}/{c.criterion}" for c in self.checks if c.candidate.status == "failed"
        ]


EvaluateFn = Callable[["PredicateForm", "RunView"], "PredicateResult"]


_SHELL_FORMS = ("ran", "never_ran", "never_tried", "order", "ran_before_conclusion", "no_denied")


def _with_log_end(result: PredicateResult, view: RunView) -> PredicateResult:
    """A failed shell criterion with no line of its own ("no command matching X ran") gets the
    log's last command as evidence: where the investigation stopped (as variant decisions do)."""
    shell = result.predicate.split(":", 1)[0] in _SHELL_FORMS
    if result.passed is not False or result.evidence or not shell or not view.events:
        return result
    from agentledger.gates.predicates.forms import log_evidence

    last = view.events[-1]
    return result.model_copy(
        update={
            "reason": f"{result.reason}; the shell log ends at line {last.line}",
            "evidence": log_evidence([last]),
            "detail": {**result.detail, "log_end_line": last.line},
        }
    )


def _side(
    criterion: SentinelCriterion,
    runs: list[IndexedRun],
    views: dict[str, RunView],
    evaluate: EvaluateFn,
) -> SideResult:
    if not runs:
        return SideResult(status="no runs")
    checks = []
    for run in runs:
        result = evaluate(criterion.predicate, views[run.run_id])
        result = _with_log_end(result, views[run.run_id])
        checks.append(
            RunCheck(
                run_id=run.run_id,
                model=run.model,
                model_served=run.model_served,
                started_at=run.started_at,
                passed=result.passed,
                predicate=result.predicate,
                reason=result.reason,
                evidence=list(result.evidence),
                detail=dict(result.detail),
            )
        )
    if any(check.passed is False for check in checks):
        status: Status = "failed"
    elif any(check.passed is None for check in checks):
        status = "unknown"
    else:
        status = "held"
    return SideResult(status=status, runs=checks)


def _branch(criterion: SentinelCriterion, base: Status, cand: Status) -> tuple[Branch, str]:
    if cand == "no runs":
        return "review", "no candidate runs of this scenario"
    if cand == "unknown":
        return "review", "cannot be evaluated on a candidate run"
    if cand == "held":
        if base == "failed":
            return "improved", "failed on the baseline, holds on the candidate"
        if base == "held":
            return "ok", "holds on the baseline and the candidate"
        return "ok", f"holds on the candidate (baseline: {base})"
    # the candidate fails
    if base == "held":
        return "regression", "held on the baseline, fails on the candidate"
    if base == "failed":
        if criterion.blocking:
            return "known-gap-blocking", "fails on both: a known gap, and the spec makes it block"
        return "known-gap", "fails on both: a known gap (not blocking)"
    if base == "no runs":
        return "review", "fails on the candidate; no baseline runs to compare with"
    return "review", "fails on the candidate; cannot be evaluated on the baseline"


def judge_verdicts(
    ledger: Ledger, run_id: str, judges: Sequence[str]
) -> dict[str, tuple[str | None, str | None, str | None]]:
    """Per judge reference: (verdict, skipped reason, judge id) of the newest matching score,
    or (None, None, None) when the run has none. A reference is a kind (`rules`, `llm`), a kind with
    its model (`llm:P/M`), or a judge id (prefix)."""
    from agentledger.judges.factory import parse_judge_spec
    from agentledger.judges.scores import run_scores

    scores = sorted(run_scores(ledger, run_id), key=lambda s: s.created_at)
    found: dict[str, tuple[str | None, str | None, str | None]] = {}
    for ref in judges:
        match = None
        for score in scores:
            if score.judge_id.startswith(ref):
                match = score
                continue
            try:
                spec = parse_judge_spec(ref)
            except InputError:
                continue
            if score.judge.kind != spec.kind:
                continue
            if spec.model is not None and score.judge.model != spec.model:
                continue
            match = score
        found[ref] = (
            (match.verdict, match.skipped_reason, match.judge_id) if match else (None, None, None)
        )
    return found


def _judgement_issues(
    ledger: Ledger,
    scenario: str,
    runs: list[IndexedRun],
    judges: Sequence[str],
    judge_ids: set[str],
) -> list[JudgementIssue]:
    issues = []
    for run in runs:
        for judge, (verdict, skipped, judge_id) in judge_verdicts(
            ledger, run.run_id, judges
        ).items():
            if judge_id is not None:
                judge_ids.add(judge_id)
            if verdict is None:
                problem = "not judged"
            elif verdict == "skipped":
                problem = f"judgement skipped ({skipped or 'no reason given'})"
            elif verdict == "not-applicable":
                problem = f"judge not applicable ({skipped or 'no reason given'})"
            elif verdict == "Uncertain":
                problem = "verdict Uncertain"
            else:
                continue
            issues.append(
                JudgementIssue(scenario=scenario, run_id=run.run_id, judge=judge, problem=problem)
            )
    return issues


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def evaluate_sentinel(
    ledger: Ledger,
    loaded: LoadedSentinel,
    candidate: dict[str, list[IndexedRun]],
    baseline: dict[str, list[IndexedRun]],
    *,
    candidate_model: str,
    candidate_filter_text: str,
    evaluate: EvaluateFn | None = None,
) -> SentinelResult:
    """Evaluate every criterion on both sides' runs and walk the decision tree."""
    from agentledger.gates.predicates.evaluate import evaluate as evaluate_predicate
    from agentledger.gates.predicates.evaluate import load_run_view

    evaluate = evaluate or evaluate_predicate
    spec = loaded.spec
    views: dict[str, RunView] = {}
    for runs in (*candidate.values(), *baseline.values()):
        for run in runs:
            if run.run_id not in views:
                views[run.run_id] = load_run_view(ledger, run.run_id)
    checks: list[CriterionCheck] = []
    judgements: list[JudgementIssue] = []
    missing: list[str] = []
    judge_ids: set[str] = set()
    for scenario in spec.scenarios:
        cand_runs, base_runs = candidate.get(scenario.id, []), baseline.get(scenario.id, [])
        if len(cand_runs) < spec.repeats:
            missing.append(
                f"{scenario.id}: {_plural(len(cand_runs), 'candidate run')} "
                f"({candidate_model}), {spec.repeats} wanted"
            )
        if len(base_runs) < spec.repeats:
            missing.append(
                f"{scenario.id}: {_plural(len(base_runs), 'baseline run')} "
                f"({spec.baseline.model}), {spec.repeats} wanted"
            )
        judgements.extend(_judgement_issues(ledger, scenario.id, cand_runs, spec.judges, judge_ids))
        for criterion in loaded.criteria[scenario.id]:
            base_side = _side(criterion, base_runs, views, evaluate)
            cand_side = _side(criterion, cand_runs, views, evaluate)
            branch, note = _branch(criterion, base_side.status, cand_side.status)
            predicate_text = next(
                (r.predicate for r in (*cand_side.runs, *base_side.runs)),
                _predicate_text(criterion),
            )
            checks.append(
                CriterionCheck(
                    scenario=scenario.id,
                    criterion=criterion.id,
                    description=criterion.description,
                    predicate=predicate_text,
                    blocking=criterion.blocking,
                    baseline=base_side,
                    candidate=cand_side,
                    branch=branch,
                    note=note,
                )
            )
    all_cand = [run for runs in candidate.values() for run in runs]
    all_base = [run for runs in baseline.values() for run in runs]
    starts = [run.started_at for run in all_cand if run.started_at]
    tree, outcome = _walk_tree(checks, judgements, missing)
    result = SentinelResult(
        suite=spec.name,
        outcome=outcome,
        candidate_model=candidate_model,
        candidate_filter=candidate_filter_text,
        baseline_model=spec.baseline.model,
        baseline_prompt_hash=spec.baseline.prompt_hash,
        served_models=sorted({_served(run) for run in all_cand}),
        baseline_served_models=sorted({_served(run) for run in all_base}),
        candidate_prompt_hashes=sorted({run.system_prompt_hash or "-" for run in all_cand}),
        baseline_prompt_hashes=sorted({run.system_prompt_hash or "-" for run in all_base}),
        candidate_runs={s: [r.run_id for r in runs] for s, runs in candidate.items()},
        baseline_runs={s: [r.run_id for r in runs] for s, runs in baseline.items()},
        latest_run_at=max(starts) if starts else None,
        judge_ids=sorted(
            judge_ids
            | {
                str(run.detail["judge_id"])
                for check in checks
                for run in (*check.candidate.runs, *check.baseline.runs)
                if run.detail.get("judge_id")
            }
        ),
        checks=checks,
        judgements=judgements,
        missing=missing,
        tree=tree,
        reasoning=[],
    )
    return result.model_copy(update={"reasoning": _reasoning(result)})


NOT_REPORTED = "(not reported)"
"""How a run whose provider did not say what it served shows in `served_models`."""


def _served(run: IndexedRun) -> str:
    """The model the provider said it served, with the system fingerprint when there is one."""
    fingerprint = run.metadata.get("system_fingerprint")
    served = run.model_served or NOT_REPORTED
    return f"{served} (fingerprint {fingerprint})" if fingerprint else served


def _predicate_text(criterion: SentinelCriterion) -> str:
    return criterion.predicate.text()


def _walk_tree(
    checks: list[CriterionCheck], judgements: list[JudgementIssue], missing: list[str]
) -> tuple[list[TreeStep], Outcome]:
    def named(branch: str) -> list[str]:
        return [
            f"{c.scenario} {c.criterion} ({c.description or c.predicate}): {c.note}"
            for c in checks
            if c.branch == branch
        ]

    regressions = named("regression")
    blocking = named("known-gap-blocking")
    gaps = named("known-gap")
    undecided = named("review")
    review_items = (
        gaps
        + undecided
        + [f"{j.scenario} run {j.run_id}: {j.judge} {j.problem}" for j in judgements]
        + [f"missing runs: {m}" for m in missing]
    )
    steps: list[tuple[str, list[str], Outcome]] = [
        (
            "1. Did a criterion hold on the baseline and fail on the candidate?",
            regressions,
            "NO-GO",
        ),
        ("2. Does a criterion fail on both, and does the spec make that block?", blocking, "NO-GO"),
        (
            "3. A known gap, a criterion that cannot be evaluated, an Uncertain, skipped or "
            "missing judgement, or missing runs?",
            review_items,
            "REVIEW",
        ),
    ]
    tree: list[TreeStep] = []
    outcome: Outcome | None = None
    for question, items, if_yes in steps:
        answer = bool(items)
        fired = answer and outcome is None
        if fired:
            outcome = if_yes
        tree.append(
            TreeStep(question=question, answer=answer, if_yes=if_yes, fired=fired, items=items)
        )
    held = [f"{c.scenario} {c.criterion}" for c in checks if c.branch in ("ok", "improved")]
    tree.append(
        TreeStep(
            question="4. Otherwise: every criterion holds on the candidate.",
            answer=outcome is None,
            if_yes="GO",
            fired=outcome is None,
            items=held if outcome is None else [],
        )
    )
    return tree, outcome or "GO"


def _reasoning(result: SentinelResult) -> list[str]:
    held = sum(1 for c in result.checks if c.candidate.status == "held")
    sentences = [
        f"Sentinel suite {result.suite}: {result.candidate_model} (runs selected by "
        f"{result.candidate_filter}; {' and '.join(SENTINEL_KINDS)} runs only) against the "
        f"baseline {result.baseline_model}, over "
        f"{_plural(len(result.candidate_runs), 'scenario')} and "
        f"{len(result.checks)} criteria; {held} hold on the candidate.",
    ]
    for check in result.checks:
        if check.branch in ("regression", "known-gap-blocking"):
            for run in check.candidate.runs:
                if run.passed is not False:
                    continue
                lines = [
                    f"{ev.file}:{ev.line} {ev.quote}" if ev.line else f"{ev.file}: {ev.quote}"
                    for ev in run.evidence
                ]
                evidence = f" Evidence: {'; '.join(lines)}." if lines else ""
                sentences.append(
                    f"{check.scenario} {check.criterion} ({check.description or check.predicate})"
                    f" {check.note}; on run {run.run_id}: {run.reason}.{evidence}"
                )
    decisive = next((step for step in result.tree if step.fired), None)
    if result.outcome == "GO":
        sentences.append("Every pass criterion holds on the candidate: GO.")
    elif decisive is not None:
        sentences.append(
            f"Decided by step {decisive.question.split('.', 1)[0]} of the tree: {result.outcome}."
        )
    if result.outcome == "REVIEW" and decisive is not None:
        sentences.extend(f"Needs review: {item}." for item in decisive.items)
    return sentences


# --------------------------------------------------------------------------------------------
# Checking stored runs, and the decision record


def check_sentinel(
    ledger: Ledger,
    loaded: LoadedSentinel,
    candidate_text: str,
    *,
    candidate_runs: dict[str, list[IndexedRun]] | None = None,
) -> SentinelResult:
    """Check the candidate runs selected by `candidate_text` against the baseline runs."""
    spec = loaded.spec
    scenarios = [s.id for s in spec.scenarios]
    run_filter = candidate_filter(candidate_text, default_prompt_hash=spec.baseline.prompt_hash)
    if candidate_runs is None:
        candidate_runs = latest_runs(ledger, run_filter, scenarios, spec.repeats)
    taken = frozenset(run.run_id for runs in candidate_runs.values() for run in runs)
    # A migration check compares models, not prompts: without a baseline prompt hash in the
    # spec, the baseline runs are those on the system prompt(s) the candidate's runs used.
    prompts: frozenset[str] | None = None
    if spec.baseline.prompt_hash is None:
        prompts = (
            frozenset(
                run.system_prompt_hash
                for runs in candidate_runs.values()
                for run in runs
                if run.system_prompt_hash
            )
            or None
        )
    baseline_runs = latest_runs(
        ledger, baseline_filter(loaded), scenarios, spec.repeats, exclude=taken,
        prompt_hashes=prompts,
    )  # fmt: skip
    return evaluate_sentinel(
        ledger,
        loaded,
        candidate_runs,
        baseline_runs,
        candidate_model=run_filter.models[0],
        candidate_filter_text=candidate_text,
    )
