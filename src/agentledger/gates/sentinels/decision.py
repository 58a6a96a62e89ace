"""The decision record of a sentinel check: what was tested, what each model did, the rule
applied, the outcome, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from agentledger.gates.sentinels.evaluate import SentinelResult
from agentledger.gates.sentinels.spec import LoadedSentinel

if TYPE_CHECKING:
    from agentledger.records.decisions import Decision, DecisionItem, ModelRecord

__all__ = [
    "RULE",
    "to_decision",
]

RULE = (
    "Sentinel decision tree, first yes decides: (1) a pass criterion that held on the baseline "
    "and fails on the candidate is NO-GO; (2) a criterion failing on both (a known gap) that the "
    "spec makes blocking is NO-GO; (3) a non-blocking known gap, a criterion that cannot be "
    "evaluated, an Uncertain, skipped or missing judgement of a candidate run, or missing runs "
    "is REVIEW; (4) otherwise GO. A criterion holds on a side when it passes on every counted run."
)
"""The rule a sentinel decision applies, in words (recorded on every decision)."""


def _item(
    result: SentinelResult, scenario: str, role: Literal["candidate", "baseline"]
) -> DecisionItem:
    from agentledger.records.decisions import DecisionItem, PredicateResult

    checks = [c for c in result.checks if c.scenario == scenario]
    sides = [c.candidate if role == "candidate" else c.baseline for c in checks]
    runs = result.candidate_runs if role == "candidate" else result.baseline_runs
    model = result.candidate_model if role == "candidate" else result.baseline_model
    statuses = [side.status for side in sides]
    passed: bool | None
    if "failed" in statuses:
        passed = False
    elif any(status in ("unknown", "no runs") for status in statuses):
        passed = None
    else:
        passed = True
    failing = [
        c.criterion for c, side in zip(checks, sides, strict=True) if side.status == "failed"
    ]
    unknown = [
        c.criterion for c, side in zip(checks, sides, strict=True)
        if side.status in ("unknown", "no runs")
    ]  # fmt: skip
    held = len(checks) - len(failing) - len(unknown)
    summary = f"{held} of {len(checks)} criteria hold"
    if failing:
        summary += f"; fails: {', '.join(failing)}"
    if unknown:
        summary += f"; cannot tell: {', '.join(unknown)}"
    predicate_results = [
        PredicateResult(
            predicate=run.predicate,
            id=check.criterion,
            run_id=run.run_id,
            passed=run.passed,
            reason=run.reason,
            evidence=run.evidence,
            detail={**run.detail, "run_id": run.run_id, "branch": check.branch},
        )
        for check, side in zip(checks, sides, strict=True)
        for run in side.runs
    ]
    return DecisionItem(
        model=model,
        scenario=scenario,
        role=role,
        run_ids=runs.get(scenario, []),
        passed=passed,
        summary=summary,
        results=predicate_results,
    )


def _model_record(result: SentinelResult, role: Literal["candidate", "baseline"]) -> ModelRecord:
    from agentledger.records.decisions import ModelRecord

    sides = [(c, c.candidate if role == "candidate" else c.baseline) for c in result.checks]
    failing = [f"{c.scenario} {c.criterion}" for c, side in sides if side.status == "failed"]
    unknown = [
        f"{c.scenario} {c.criterion}" for c, side in sides if side.status in ("unknown", "no runs")
    ]
    if failing:
        return ModelRecord(status="failed", summary=f"fails {', '.join(failing)}")
    if unknown:
        return ModelRecord(status="unknown", summary=f"cannot tell {', '.join(unknown)}")
    return ModelRecord(
        status="passed", summary=f"every criterion holds ({len(result.checks)} criteria)"
    )


def to_decision(
    result: SentinelResult, loaded: LoadedSentinel, *, supersedes: str | None = None
) -> Decision:
    """The decision record (kind "sentinel", subject = the suite's name) of a check."""
    from agentledger.records.decisions import Decision, SpecRef, Tested, new_decision_id

    prompt_hashes: dict[str, str] = {}
    for index, digest in enumerate(h for h in result.candidate_prompt_hashes if h != "-"):
        prompt_hashes["candidate" if index == 0 else f"candidate-{index + 1}"] = digest
    for index, digest in enumerate(h for h in result.baseline_prompt_hashes if h != "-"):
        prompt_hashes["baseline" if index == 0 else f"baseline-{index + 1}"] = digest
    scenarios = [scenario.id for scenario in loaded.spec.scenarios]
    run_ids = sorted(
        {run for runs in (*result.candidate_runs.values(), *result.baseline_runs.values())
         for run in runs}
    )  # fmt: skip
    baseline_words = result.baseline_model
    if result.baseline_prompt_hash:
        baseline_words += f" on system prompt {result.baseline_prompt_hash[7:15]}"
    items = [
        _item(result, scenario, role)
        for scenario in scenarios
        for role in ("candidate", "baseline")
    ]  # fmt: skip
    models = {result.candidate_model: _model_record(result, "candidate")}
    if result.baseline_model != result.candidate_model:
        models[result.baseline_model] = _model_record(result, "baseline")
    return Decision(
        decision_id=new_decision_id("sentinel", loaded.spec.name),
        kind="sentinel",
        subject=loaded.spec.name,
        outcome=result.outcome,
        rule=RULE,
        reasoning=result.reasoning,
        spec=SpecRef(path=str(loaded.path), sha256=loaded.sha256, text=loaded.text),
        tested=Tested(
            prompt_hashes=prompt_hashes,
            baseline=baseline_words,
            candidate=f"{result.candidate_model} ({result.candidate_filter})",
            models=list(dict.fromkeys([result.candidate_model, result.baseline_model])),
            scenarios=scenarios,
            repeats=loaded.spec.repeats,
            run_ids=run_ids,
            judge_ids=result.judge_ids,
        ),
        results=items,
        models=models,
        supersedes=supersedes,
        extra={
            "candidate_model": result.candidate_model,
            "candidate_filter": result.candidate_filter,
            "served_models": result.served_models,
            "baseline": result.baseline_model,
            "baseline_served_models": result.baseline_served_models,
            "candidate_prompt_hashes": result.candidate_prompt_hashes,
            "latest_run_at": result.latest_run_at,
            "failing_criteria": result.failing_criteria(),
            "branches": {f"{c.scenario}/{c.criterion}": c.branch for c in result.checks},
            "tree_path": result.tree_path(),
            "tree": [step.model_dump(mode="json") for step in result.tree],
            "judgements": [j.model_dump(mode="json") for j in result.judgements],
            "missing": result.missing,
        },
    )
