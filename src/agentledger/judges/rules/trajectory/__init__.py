"""The rules judge's step rules: the ops-trajectory pack (T1-T8) over a run's trace.

`TRAJECTORY_RULES` maps criterion ids to rules; `RunContext` is one run read for them (its
acting steps with their effects, and what its scenario is); `load_trajectory_knowledge` reads
the knowledge they use (instruments, fault classes, scenarios, code calls), shipped in
`data/ops/trajectory/` and extended by a knowledge directory's `trajectory/` folder.
"""

from __future__ import annotations

from agentledger.judges.rules.trajectory.context import RunContext, ScenarioFacts
from agentledger.judges.rules.trajectory.knowledge import (
    TrajectoryKnowledge,
    load_trajectory_knowledge,
)
from agentledger.judges.rules.trajectory.rules import TRAJECTORY_RULES
from agentledger.judges.rules.trajectory.steps import Action, StepReader, Trajectory

__all__ = [
    "TRAJECTORY_RULES",
    "TRAJECTORY_RULES_VERSION",
    "Action",
    "RunContext",
    "ScenarioFacts",
    "StepReader",
    "Trajectory",
    "TrajectoryKnowledge",
    "load_trajectory_knowledge",
]

TRAJECTORY_RULES_VERSION = "3"
"""Bumped whenever a step rule changes what it decides."""
