"""What every judge shares: criteria packs, the input a judge reads, and the results it returns.

A judge turns one stored run and one criteria pack into a result per criterion: `fired` true,
false, or null when it cannot assess (information the run lacks, an answer that cannot be parsed),
with the evidence (a quote and where it stands) and the reason. A null is never a silent pass.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentledger.identity import canonical_json, sha256_bytes
from agentledger.judges.trajectory_match import TrajectorySpec
from agentledger.records import RUN_KINDS, Record, RunKind, RunMetadata, RunSummary, ShellEvent
from agentledger.records.scores import CriterionResult, DiagnosisResult
from agentledger.records.splits import DevelopedAgainst

if TYPE_CHECKING:
    from agentledger.records.trace import TraceStep
    from agentledger.runner.scenario import Scenario

__all__ = [
    "INVESTIGATION_KINDS",
    "PACK_NEEDS",
    "REQUIREMENTS",
    "CriteriaPack",
    "Criterion",
    "CriterionExamples",
    "ExpectedDiagnosis",
    "Judge",
    "JudgeInput",
    "JudgeOutcome",
    "Severity",
]

Severity = Literal["high", "medium", "low"]
REQUIREMENTS = ("report", "shell_audit", "snapshot", "trace")
"""What a criterion may require of a run; a run that lacks one gets null for it."""
PACK_NEEDS = (
    "report",
    "shell_log",
    "snapshot",
    "trace",
    "expected_root_cause",
    "ops_task",
    "system_actions",
)
"""What a pack may need of a run to apply to it at all (`needs:`); a run that lacks one gets
a `not-applicable` score with the reason, never Safe or Uncertain. `ops_task`: the run is
about an infrastructure fault (it carries an ops scenario, its expected root cause is known,
or its report states a root cause or a remediation). `system_actions`: the run's trace holds
a step that acts on a system (a command, code, a file written); a run whose trace holds only
messages, reasoning, browsing or other tools' calls has nothing such a pack could judge (a run
without a trace is left to the criteria, which cannot tell)."""
INVESTIGATION_KINDS: tuple[RunKind, ...] = ("agent", "sentinel", "variant")
"""The run kinds a pack applies to unless it says otherwise: the runs in which an agent
investigated and reported (a fixture execution is scored by its fixture's properties)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CriterionExamples(_Strict):
    """Examples of what fires the criterion and what does not (for people and the LLM judge)."""

    fires: list[str] = Field(default_factory=list, description="Cases that fire it.")
    does_not_fire: list[str] = Field(default_factory=list, description="Cases that do not.")


class Criterion(_Strict):
    """One explicit criterion a run is scored against."""

    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,31}$", description="Short id, e.g. C2.")
    title: str = Field(min_length=1, description="One line: what the criterion is about.")
    fires_when: str = Field(min_length=1, description="What makes it fire, precisely.")
    risk: str = Field(min_length=1, description="What goes wrong when it fires.")
    severity: Severity = Field(description="high, medium or low (drives the verdict).")
    requires: list[str] = Field(
        default_factory=list,
        description=f"What the run must hold to assess it: {', '.join(REQUIREMENTS)}.",
    )
    examples: CriterionExamples = Field(
        default_factory=CriterionExamples, description="What fires it and what does not."
    )
    trajectory_match: TrajectorySpec | None = Field(
        default=None,
        description=(
            "A reference trajectory (or one per scenario): the criterion fires when the run's "
            "actions do not match it, decided by trajectory match, not by a judge's reading."
        ),
    )

    @field_validator("requires")
    @classmethod
    def _known_requirements(cls, value: list[str]) -> list[str]:
        unknown = [item for item in value if item not in REQUIREMENTS]
        if unknown:
            raise ValueError(
                f"unknown requirement {unknown[0]!r}; choose from {', '.join(REQUIREMENTS)}"
            )
        return value


class CriteriaPack(Record):
    """A criteria pack (YAML): an id, a version, and the criteria runs are scored against."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$", description="Pack id.")
    version: str = Field(min_length=1, description="Bumped whenever a criterion changes.")
    title: str = Field(min_length=1, description="What the pack judges.")
    description: str | None = Field(default=None, description="Longer explanation.")
    criteria: list[Criterion] = Field(min_length=1, description="The criteria, in order.")
    applies_to: list[RunKind] = Field(
        default_factory=lambda: list(INVESTIGATION_KINDS),
        min_length=1,
        description=(
            f"The run kinds the pack judges ({', '.join(RUN_KINDS)}); a judge skips a run of "
            "another kind, with the reason, and never calls it Safe."
        ),
    )
    needs: list[str] = Field(
        default_factory=list,
        description=(
            f"What a run must hold for the pack to apply to it ({', '.join(PACK_NEEDS)}); a "
            "run without it gets `not-applicable` with the reason, never a verdict."
        ),
    )
    developed_against: list[DevelopedAgainst] = Field(
        default_factory=list,
        description=(
            "The labels this pack's judges were developed against (a label source, and "
            "optionally a split's part): `agreement` never grades them on those labels."
        ),
    )

    @field_validator("needs")
    @classmethod
    def _known_needs(cls, value: list[str]) -> list[str]:
        unknown = [item for item in value if item not in PACK_NEEDS]
        if unknown:
            raise ValueError(f"unknown need {unknown[0]!r}; choose from {', '.join(PACK_NEEDS)}")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> CriteriaPack:
        seen: set[str] = set()
        for criterion in self.criteria:
            if criterion.id in seen:
                raise ValueError(f"criterion id {criterion.id!r} appears twice")
            seen.add(criterion.id)
        return self

    def digest(self) -> str:
        """sha256 of the pack's content: part of every judge id that uses it."""
        content = self.model_dump(mode="json")
        # Packs written before `applies_to` existed judged these kinds: the same content
        # keeps the same digest, so their judges keep their ids and their scores stay current.
        if tuple(self.applies_to) == INVESTIGATION_KINDS:
            del content["applies_to"]
        # Likewise a pack that declares no needs, or no development labels.
        if not self.needs:
            del content["needs"]
        if not self.developed_against:
            del content["developed_against"]
        # And criteria without a reference trajectory.
        for criterion in content["criteria"]:
            if criterion.get("trajectory_match") is None:
                criterion.pop("trajectory_match", None)
        return sha256_bytes(canonical_json(content))

    def applies(self, kind: str) -> bool:
        """True when the pack judges runs of `kind`."""
        return kind in self.applies_to

    def not_applicable(self, kind: str) -> str | None:
        """Why a run of `kind` is not judged by this pack (None when it is)."""
        if self.applies(kind):
            return None
        return f"pack {self.id} judges {', '.join(self.applies_to)} runs, not {kind} runs" + (
            " (a fixture execution is scored by its fixture's properties)"
            if kind == "fixture"
            else ""
        )

    def reads_trace(self) -> bool:
        """True when a criterion requires the run's trace (`requires: [trace]`): only then do
        judges of this pack get it (a long trace costs more to read than a report). A criterion
        decided by trajectory match reads it too."""
        return any(
            "trace" in criterion.requires or criterion.trajectory_match is not None
            for criterion in self.criteria
        )

    def criterion(self, criterion_id: str) -> Criterion:
        """The criterion called `criterion_id` (KeyError if the pack has none)."""
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(criterion_id)


class ExpectedDiagnosis(_Strict):
    """The scenario's expected root cause, as a judge receives it."""

    root_cause: str
    patterns: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class JudgeInput:
    """Everything a judge may read of one stored run. Missing artifacts are None."""

    run_id: str
    metadata: RunMetadata
    report: str | None
    audit: str | None
    events: list[ShellEvent] | None
    snapshot: tuple[str, str] | None
    """(file name, text) of the infrastructure snapshot, when the run has one."""
    expected: ExpectedDiagnosis | None = None
    prompt: str | None = None
    trace: tuple[TraceStep, ...] | None = None
    """The run's steps (trace.jsonl), when it has a trace."""
    scenario: Scenario | None = None
    """The run's own copy of its scenario (scenario.yaml), when it carries one."""
    summary: RunSummary | None = None
    """How the run ended (summary.json), when it says."""

    def has(self, requirement: str) -> bool:
        """True when the run holds what `requirement` names (report, shell_audit, snapshot,
        trace)."""
        if requirement == "report":
            return bool(self.report and self.report.strip())
        if requirement == "shell_audit":
            return self.events is not None
        if requirement == "snapshot":
            return self.snapshot is not None
        if requirement == "trace":
            return self.trace is not None
        return False


@dataclass(frozen=True)
class JudgeOutcome:
    """What a judge said about one run."""

    criteria: list[CriterionResult]
    diagnosis: DiagnosisResult | None = None
    usage: dict[str, Any] | None = None
    """Model calls, tokens and cost of an LLM judge; None for deterministic judges."""


def missing_requirement(criterion: Criterion, run: JudgeInput) -> CriterionResult | None:
    """The null result for a criterion whose requirements the run does not meet, else None."""
    lacking = [item for item in criterion.requires if not run.has(item)]
    if not lacking:
        return None
    what = {
        "report": "no report.md",
        "shell_audit": "no shell_audit.jsonl",
        "trace": "no trace.jsonl (its steps were not recorded)",
    }
    reasons = [what.get(item, f"no {item}") for item in lacking]
    return CriterionResult(
        criterion=criterion.id,
        fired=None,
        reason=f"cannot assess: the run has {' and '.join(reasons)}",
    )


class Judge(ABC):
    """Scores runs against a pack. Its id is a hash of everything that shapes its output."""

    kind: str
    """rules, llm or human."""

    def __init__(self, pack: CriteriaPack) -> None:
        self.pack = pack
        self.cancel = threading.Event()
        """Set to stop the judge's work in flight (Ctrl-C): model calls give up at once."""

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """Everything that shapes this judge's output (kind, model, template, pack digest...)."""

    def development(self) -> list[DevelopedAgainst]:
        """The labels this judge was developed against: its pack's declaration."""
        return list(self.pack.developed_against)

    def development_identity(self) -> dict[str, Any]:
        """``{"developed_against": [...]}`` for `identity()`; empty when nothing is declared,
        so that judges that declare nothing keep their ids."""
        declared = self.development()
        if not declared:
            return {}
        return {"developed_against": [entry.model_dump(mode="json") for entry in declared]}

    def reads_trace(self) -> bool:
        """True when this judge reads runs' traces (its pack's criteria need them, or, for an
        LLM judge, its template shows them): the scoring loop reads a trace only then."""
        return self.pack.reads_trace()

    @property
    def model(self) -> str | None:
        """The model behind the judge (None for deterministic judges)."""
        return None

    @property
    def id(self) -> str:
        """``<kind>-<12 hex>``: changes whenever anything in `identity()` changes."""
        digest = sha256_bytes(canonical_json(self.identity()))
        label = re.sub(r"[^a-z0-9]+", "-", self.kind.lower()).strip("-")
        return f"{label}-{digest.removeprefix('sha256:')[:12]}"

    @abstractmethod
    def judge(self, run: JudgeInput) -> JudgeOutcome:
        """Score one run against every criterion of the pack."""
