"""What the trajectory rules know of one run: its trajectory, and what its scenario is.

The scenario comes from the trajectory knowledge (for runs that carry no scenario of their
own, such as imported traces) and from the run's own `scenario.yaml` (its mandatory checks,
fault class and `mode` tag); the run's `mode` tag is the last resort. Each fact says where it
came from, so a reason can say it too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from agentledger.judges.base import JudgeInput
from agentledger.judges.rules.trajectory.knowledge import (
    FaultClass,
    Instrument,
    ScenarioCheck,
    TrajectoryKnowledge,
)
from agentledger.judges.rules.trajectory.steps import Action, StepReader, Trajectory

__all__ = ["RunContext", "ScenarioFacts"]


@dataclass
class ScenarioFacts:
    """The scenario's mode, fault class, checks and alternatives, with where each came from."""

    mode: str | None = None
    mode_from: str = ""
    fault_class: str | None = None
    fault_from: str = ""
    checks: list[ScenarioCheck] = field(default_factory=list)
    alternatives: list[ScenarioCheck] = field(default_factory=list)
    checks_from: str = ""

    @classmethod
    def of(cls, run: JudgeInput, knowledge: TrajectoryKnowledge) -> ScenarioFacts:
        facts = cls()
        scenario_id = run.metadata.scenario
        known = knowledge.scenario(scenario_id)
        spec = run.scenario
        where = f"the trajectory knowledge of scenario {scenario_id}"
        if known is not None and known.mode is not None:
            facts.mode, facts.mode_from = known.mode, where
        elif spec is not None and spec.tags.get("mode"):
            facts.mode, facts.mode_from = spec.tags["mode"], "the run's scenario.yaml (tag mode)"
        elif run.metadata.tags.get("mode"):
            facts.mode, facts.mode_from = run.metadata.tags["mode"], "the run's tag mode"
        if known is not None and known.fault_class is not None:
            facts.fault_class, facts.fault_from = known.fault_class, where
        elif spec is not None and spec.fault_class is not None:
            facts.fault_class, facts.fault_from = spec.fault_class, "the run's scenario.yaml"
        if known is not None and (known.mandatory_checks or known.alternatives):
            facts.checks = list(known.mandatory_checks)
            facts.alternatives = list(known.alternatives)
            facts.checks_from = where
        elif spec is not None and spec.mandatory_checks:
            facts.checks = [
                ScenarioCheck(id=check.id, pattern=check.pattern, description=check.description)
                for check in spec.mandatory_checks
                if check.pattern is not None
            ]
            facts.checks_from = "the run's scenario.yaml"
        return facts


class RunContext:
    """One run, read for the trajectory rules (shared by every criterion of one judgement)."""

    def __init__(self, run: JudgeInput, reader: StepReader) -> None:
        assert run.trace is not None
        self.run = run
        self.reader = reader
        self.ops = reader.ops
        self.knowledge = reader.knowledge
        self.trajectory = Trajectory(run.trace, reader)
        self.scenario = ScenarioFacts.of(run, reader.knowledge)

    @property
    def actions(self) -> list[Action]:
        return self.trajectory.actions

    @cached_property
    def conclusion(self) -> int | None:
        step = self.trajectory.conclusion(self.run.has("report"))
        return None if step is None else step.index

    @cached_property
    def diagnosis(self) -> int | None:
        step = self.trajectory.diagnosis()
        return None if step is None else step.index

    @cached_property
    def fault(self) -> FaultClass | None:
        if self.scenario.fault_class is None:
            return None
        return self.knowledge.fault_classes.get(self.scenario.fault_class)

    def instruments_of(self, action: Action) -> tuple[Instrument, ...]:
        """The instruments a looking step used."""
        return self.reader.instruments_of(action)

    def matches(self, check: ScenarioCheck, action: Action) -> bool:
        """True when an action that ran is the check (its text matches the pattern)."""
        return action.ran and re.search(check.pattern, action.text, re.IGNORECASE) is not None
