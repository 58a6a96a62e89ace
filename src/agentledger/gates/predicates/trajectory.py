"""The `trajectory_match` predicate: a stored run's actions against a reference trajectory.

The actions come from the run's trace (trace.jsonl) when it has one, else from its shell log;
the matching is `agentledger.judges.trajectory_match`, the same as the fixture property and
criteria packs use. One reference for every run, or one per scenario (`by_scenario`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from agentledger.gates.predicates.forms import MAX_EVIDENCE, MAX_QUOTE, PredicateForm
from agentledger.gates.predicates.run_view import RunView
from agentledger.judges.trajectory_match import (
    Action,
    TrajectorySpec,
    actions_from_events,
    actions_from_trace,
    match_trajectory,
)
from agentledger.records.decisions import PredicateResult, Undecided
from agentledger.records.scores import Evidence
from agentledger.records.trace import TRACE
from agentledger.store.writer import SHELL_AUDIT

__all__ = ["TrajectoryMatchForm", "TrajectoryMatchSpec", "action_evidence"]


TrajectoryMatchSpec = TrajectorySpec
"""The predicate's value (`agentledger.judges.trajectory_match.TrajectorySpec`)."""


def action_evidence(actions: list[Action]) -> list[Evidence]:
    """Evidence quoting actions where they stand: the trace's line (step + 1) or the log's."""
    found = []
    for action in actions[:MAX_EVIDENCE]:
        text = action.command or f"{action.tool or '-'} ({action.kind})"
        text = text.replace("\n", " ")
        quote = text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 3] + "..."
        if action.step is not None and action.line is None:
            found.append(Evidence(quote=quote, file=TRACE, line=action.step + 1, step=action.step))
        elif action.line is not None:
            found.append(Evidence(quote=quote, file=SHELL_AUDIT, line=action.line))
    return found


class TrajectoryMatchForm(PredicateForm):
    """`trajectory_match: {mode, steps, ...}` or `{by_scenario: {SCENARIO: {...}}}`."""

    key: ClassVar[str] = "trajectory_match"
    trajectory_match: TrajectoryMatchSpec = Field(description="The reference trajectory.")

    def text(self) -> str:
        return f"trajectory_match: {self.trajectory_match.text()}"

    def check(self, run: RunView) -> PredicateResult:
        reference = self.trajectory_match.reference_for(run.metadata.scenario)
        if reference is None:
            return self.result(
                None,
                f"cannot evaluate: no reference trajectory for scenario {run.metadata.scenario!r}",
                undecided=Undecided.NO_REFERENCE,
            )
        trace = run.trace
        if trace.steps is not None:
            actions = actions_from_trace(trace.steps, include_denied=reference.include_denied)
            source = "trace"
        elif run.events is not None:
            events = [item.event for item in run.events]
            actions = actions_from_events(events, include_denied=reference.include_denied)
            source = "shell log"
        else:
            return self.no_log(run)
        result = match_trajectory(reference, actions)
        shown = list(result.extra) or [
            action for action in result.actions if action.step is not None or action.line
        ]
        return self.result(
            result.passed,
            f"{result.reason} (actions from the {source})",
            action_evidence(shown),
            **result.as_dict(),
        )
