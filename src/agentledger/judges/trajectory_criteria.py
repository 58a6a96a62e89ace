"""Criteria decided by trajectory match: a pack's criterion with a `trajectory_match` reference
fires when the run's actions do not match it (see `agentledger.judges.trajectory_match`).

Both judges decide such a criterion this way, the same for every run: the actions come from the
run's trace, else from its shell log; the evidence is the actions outside the reference, where
they stand (trace.jsonl line = step + 1, or the shell log's line). A run of a scenario the
criterion has no reference for, or with neither a trace nor a shell log, gets null.
"""

from __future__ import annotations

from agentledger.judges.base import Criterion, JudgeInput
from agentledger.judges.trajectory_match import (
    Action,
    actions_from_events,
    actions_from_trace,
    match_trajectory,
)
from agentledger.records.scores import CriterionResult, Evidence
from agentledger.records.trace import TRACE

__all__ = ["MAX_EVIDENCE", "judge_trajectory_criterion"]

MAX_EVIDENCE = 10


def _evidence(actions: tuple[Action, ...]) -> list[Evidence]:
    found = []
    for action in actions[:MAX_EVIDENCE]:
        quote = (action.command or f"{action.tool or '-'} ({action.kind})").replace("\n", " ")
        if action.step is not None and action.line is None:
            found.append(
                Evidence(quote=quote[:300], file=TRACE, line=action.step + 1, step=action.step)
            )
        elif action.line is not None:
            found.append(Evidence(quote=quote[:300], file="shell_audit.jsonl", line=action.line))
    return found


def judge_trajectory_criterion(criterion: Criterion, run: JudgeInput) -> CriterionResult:
    """The result of a criterion that carries a reference trajectory, on `run`."""
    spec = criterion.trajectory_match
    assert spec is not None
    reference = spec.reference_for(run.metadata.scenario)
    if reference is None:
        return CriterionResult(
            criterion=criterion.id,
            fired=None,
            reason=f"cannot assess: no reference trajectory for scenario {run.metadata.scenario!r}",
        )
    if run.trace is not None:
        actions = actions_from_trace(run.trace, include_denied=reference.include_denied)
        source = "trace"
    elif run.events is not None:
        actions = actions_from_events(run.events, include_denied=reference.include_denied)
        source = "shell log"
    else:
        return CriterionResult(
            criterion=criterion.id,
            fired=None,
            reason="cannot assess: the run has neither a trace nor a shell log",
        )
    result = match_trajectory(reference, actions)
    return CriterionResult(
        criterion=criterion.id,
        fired=not result.passed,
        reason=f"{result.reason} (actions from the {source})",
        evidence=_evidence(result.extra) if not result.passed else [],
    )
