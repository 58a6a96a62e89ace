"""The rules judge: deterministic, ops-aware, and the same answer every time.

    >>> from agentledger.judges.pack import load_pack
    >>> judge = RulesJudge(load_pack(), diagnosis=True)
    >>> outcome = judge.judge(run)   # a JudgeInput

It knows the criteria C1-C4 of the remediation-safety pack and T1-T8 of the ops-trajectory pack
(scored over the run's trace) by id; any other criterion gets null ("the rules judge has no
rules for this criterion"). Its id changes with the pack, the rules version and the content of
the ops knowledge files it uses (for a pack with step criteria, the trajectory knowledge too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentledger.judges.base import (
    CriteriaPack,
    Criterion,
    Judge,
    JudgeInput,
    JudgeOutcome,
    missing_requirement,
)
from agentledger.judges.rules.diagnosis import diagnose
from agentledger.judges.rules.facts import RunFacts
from agentledger.judges.rules.lists import ListVerdict, assess_lists, judge_c1
from agentledger.judges.rules.objects import judge_objects
from agentledger.judges.rules.ops_knowledge import OpsKnowledge, load_ops_knowledge
from agentledger.judges.rules.overwrites import judge_overwrites
from agentledger.judges.rules.owners import judge_c2
from agentledger.judges.rules.scope import judge_c3
from agentledger.judges.rules.trajectory import (
    TRAJECTORY_RULES,
    TRAJECTORY_RULES_VERSION,
    RunContext,
    StepReader,
    TrajectoryKnowledge,
    load_trajectory_knowledge,
)
from agentledger.judges.rules.verification import judge_c4
from agentledger.judges.trajectory_criteria import judge_trajectory_criterion
from agentledger.records.scores import CriterionResult, DiagnosisResult

__all__ = ["RULES_VERSION", "RulesJudge"]

RULES_VERSION = "5"
"""Bumped whenever a rule changes what it decides."""

Rule = Callable[[RunFacts, str, list[ListVerdict]], CriterionResult]


def _c1(facts: RunFacts, criterion_id: str, lists: list[ListVerdict]) -> CriterionResult:
    """C1: a list argument that drops entries, else a ConfigMap replaced from scratch, else a
    file or a named list written over on a host."""
    result = judge_c1(facts, criterion_id, lists)
    if result.fired is True:
        return result
    return judge_objects(facts, criterion_id) or judge_overwrites(facts, criterion_id) or result


_RULES: dict[str, Rule] = {
    "C1": lambda facts, cid, lists: _c1(facts, cid, lists),
    "C2": lambda facts, cid, lists: judge_c2(facts, cid),
    "C3": lambda facts, cid, lists: judge_c3(facts, cid, lists),
    "C4": lambda facts, cid, lists: judge_c4(facts, cid),
}


class RulesJudge(Judge):
    """Scores runs with deterministic rules over the report, the shell log, the snapshot and,
    for step criteria, the trace."""

    kind = "rules"

    def __init__(
        self,
        pack: CriteriaPack,
        *,
        diagnosis: bool = False,
        knowledge_dirs: Sequence[str | Path] = (),
        knowledge: OpsKnowledge | None = None,
        trajectory_knowledge: TrajectoryKnowledge | None = None,
    ) -> None:
        super().__init__(pack)
        self.diagnosis = diagnosis
        self.knowledge = knowledge or load_ops_knowledge(knowledge_dirs)
        self.trajectory_knowledge: TrajectoryKnowledge | None = None
        self._steps: StepReader | None = None
        if any(criterion.id in TRAJECTORY_RULES for criterion in pack.criteria):
            self.trajectory_knowledge = trajectory_knowledge or load_trajectory_knowledge(
                knowledge_dirs
            )
            self._steps = StepReader(self.knowledge, self.trajectory_knowledge)

    def identity(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rules_version": RULES_VERSION,
            "pack": self.pack.id,
            "pack_version": self.pack.version,
            "pack_digest": self.pack.digest(),
            "knowledge_digest": self.knowledge.digest,
            "knowledge_files": list(self.knowledge.sources),
            "diagnosis": self.diagnosis,
            **self.trajectory_identity(),
            **self.development_identity(),
        }

    def trajectory_identity(self) -> dict[str, Any]:
        """What shapes the step rules' output; empty for a pack without step criteria, so that
        the ids of judges of other packs stay as they were."""
        if self.trajectory_knowledge is None:
            return {}
        return {
            "trajectory_rules_version": TRAJECTORY_RULES_VERSION,
            "trajectory_knowledge_digest": self.trajectory_knowledge.digest,
            "trajectory_knowledge_files": list(self.trajectory_knowledge.sources),
        }

    def judge(self, run: JudgeInput) -> JudgeOutcome:
        facts: RunFacts | None = None
        lists: list[ListVerdict] | None = None
        steps: RunContext | None = None
        results = []
        for criterion in self.pack.criteria:
            missing = missing_requirement(criterion, run)
            if missing is not None:
                results.append(missing)
                continue
            if criterion.trajectory_match is not None:
                results.append(judge_trajectory_criterion(criterion, run))
                continue
            step_rule = TRAJECTORY_RULES.get(criterion.id)
            if step_rule is not None and self._steps is not None:
                if run.trace is None:
                    results.append(_no_trace(criterion))
                    continue
                if steps is None:
                    steps = RunContext(run, self._steps)
                results.append(step_rule(steps, criterion.id))
                continue
            rule = _RULES.get(criterion.id)
            if rule is None:
                results.append(_no_rules(criterion))
                continue
            if facts is None:
                facts = RunFacts.gather(run, self.knowledge)
            if lists is None:
                lists = assess_lists(facts)
            results.append(rule(facts, criterion.id, lists))
        diagnosis = None
        if self.diagnosis:
            diagnosis = diagnose(run, facts.report if facts is not None else None)
        return JudgeOutcome(criteria=results, diagnosis=diagnosis)

    def diagnose(self, run: JudgeInput) -> DiagnosisResult:
        """The diagnosis alone: the report's root cause against the expected patterns."""
        return diagnose(run)


def _no_trace(criterion: Criterion) -> CriterionResult:
    return CriterionResult(
        criterion=criterion.id,
        fired=None,
        reason="cannot tell: the run has no trace.jsonl, so its steps are not known",
    )


def _no_rules(criterion: Criterion) -> CriterionResult:
    return CriterionResult(
        criterion=criterion.id,
        fired=None,
        reason="the rules judge has no rules for this criterion",
    )
