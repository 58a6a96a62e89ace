"""Decision records: what a gate tested, what each model did, the rule, the outcome, and why.

```
ledger/decisions/<decision_id>/decision.json    the record (Decision)
ledger/decisions/<decision_id>/decision.md      the same, for people
```

The gates (gates/) make them and store them through `gates.decisions.DecisionStore`. A decision
is written once and never changed; a later decision may supersede an earlier one by naming it.
A decision holds the predicate results it rests on (`PredicateResult`), each with its evidence.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentledger.errors import InputError
from agentledger.identity import slug
from agentledger.records import HASH_PATTERN, Record, utc_now
from agentledger.records.scores import Evidence

__all__ = [
    "DECISIONS_DIR",
    "DECISION_ID_RE",
    "DECISION_JSON",
    "DECISION_MD",
    "KINDS",
    "KIND_OUTCOMES",
    "OUTCOMES",
    "PASSING_OUTCOMES",
    "AddonRef",
    "Decision",
    "DecisionItem",
    "DecisionKind",
    "ModelRecord",
    "Outcome",
    "PredicateResult",
    "SpecRef",
    "Tested",
    "Undecided",
    "check_decision_id",
    "new_decision_id",
    "superseded_by",
]


class Undecided(StrEnum):
    """Why a predicate could not be evaluated on a run (its `passed` is None).

    Callers decide on this code, never on the words of `reason`, which are for people.
    """

    NO_SHELL_LOG = "no-shell-log"
    """The run has no usable shell log."""
    NO_REPORT = "no-report"
    """The run has no report.md."""
    NOT_JUDGED = "not-judged"
    """No score of the named judge: `agentledger judge` makes one."""
    JUDGE_SKIPPED = "judge-skipped"
    """The judge scored the run as skipped (it does not apply, or refused self-judging)."""
    NOT_ASSESSED = "not-assessed"
    """The judge scored the run but not what the predicate reads (a criterion, the diagnosis)."""
    NO_REFERENCE = "no-reference"
    """A trajectory predicate has no reference trajectory for the run's scenario."""
    NO_OUTCOME = "no-outcome"
    """An outcome predicate's run has no measured outcome (or not the one it reads)."""


class PredicateResult(BaseModel):
    """The outcome of one predicate on one run, with the lines that decided it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    predicate: str = Field(description="Canonical one-line text, e.g. 'never_ran: iptables -F'.")
    id: str | None = Field(default=None, description="The predicate's id in its spec, if given.")
    run_id: str | None = Field(default=None, description="The run it was evaluated on.")
    passed: bool | None = Field(
        description="True held, False failed, None cannot evaluate (no shell log, not judged)."
    )
    reason: str = Field(description="Why, in plain words.")
    evidence: list[Evidence] = Field(
        default_factory=list,
        description=(
            "Lines of the run's files: shell_audit.jsonl, report.md, scores/<run>/<judge>.json."
        ),
    )
    detail: dict[str, Any] = Field(
        default_factory=dict,
        description="Machine-readable facts: the verdict and judge id, vacuous order, counts.",
    )
    undecided: Undecided | None = Field(
        default=None,
        exclude=True,
        description="Why `passed` is None, as a code (not stored: the reason says it in words).",
    )


DECISIONS_DIR = "decisions"


DECISION_JSON = "decision.json"


DECISION_MD = "decision.md"


DecisionKind = Literal["variant", "sentinel", "fixtures"]


Outcome = Literal["ACCEPTED", "REJECTED", "GO", "NO-GO", "REVIEW"]


KINDS: tuple[str, ...] = ("variant", "sentinel", "fixtures")


OUTCOMES: tuple[str, ...] = ("ACCEPTED", "REJECTED", "GO", "NO-GO", "REVIEW")


KIND_OUTCOMES = {
    "variant": {"ACCEPTED", "REJECTED", "REVIEW"},
    "sentinel": {"GO", "NO-GO", "REVIEW"},
    "fixtures": set(OUTCOMES),
}


PASSING_OUTCOMES = {"ACCEPTED", "GO"}


DECISION_ID_RE = re.compile(r"^(variant|sentinel|fixtures)_[A-Za-z0-9._-]+$")


ID_MAX = 200


def check_decision_id(decision_id: str) -> str:
    """`decision_id` if it is a well-formed decision id, safe as a directory name."""
    if (
        not isinstance(decision_id, str)
        or len(decision_id) > ID_MAX
        or ".." in decision_id
        or not DECISION_ID_RE.match(decision_id)
    ):
        raise InputError(
            f"decision id {decision_id!r} is not valid: expected <kind>_<subject>_<time>_<random> "
            "with kind variant, sentinel or fixtures, and letters, digits, '.', '_', '-' only"
        )
    return decision_id


def new_decision_id(kind: str, subject: str, when: datetime | None = None) -> str:
    """A readable, unique id: ``<kind>_<subject>_<UTC timestamp>_<short random>``."""
    if kind not in KINDS:
        raise InputError(f"unknown decision kind {kind!r}; choose from {', '.join(KINDS)}")
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    return check_decision_id(f"{kind}_{slug(subject)}_{stamp}_{secrets.token_hex(3)}")


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class SpecRef(_Part):
    """The spec file a decision applied, kept whole so the record stands on its own."""

    path: str = Field(description="Where the spec was read from.")
    sha256: str = Field(pattern=HASH_PATTERN, description="sha256 of the spec's exact bytes.")
    text: str = Field(description="The spec's text.")


class AddonRef(_Part):
    """The prompt addon a variant appends to the base system prompt."""

    name: str = Field(description="The addon's name (usually its file stem).")
    sha256: str = Field(pattern=HASH_PATTERN, description="sha256 of the addon's exact bytes.")
    path: str | None = Field(default=None, description="Where it was read from.")


class Tested(_Part):
    """What a decision was made on: prompts, addon, runs, judges, models, scenarios."""

    prompt_hashes: dict[str, str] = Field(
        default_factory=dict,
        description="Role -> system prompt hash, e.g. {'variant': ..., 'baseline': ...}.",
    )
    addon: AddonRef | None = Field(default=None, description="The variant's addon, if any.")
    baseline: str | None = Field(
        default=None, description="What was compared against, in words (a prompt hash, a model)."
    )
    candidate: str | None = Field(
        default=None, description="What was under test, in words (a model, a filter)."
    )
    models: list[str] = Field(default_factory=list, description="Models that took part.")
    scenarios: list[str] = Field(default_factory=list, description="Scenarios (or fixtures).")
    repeats: int | None = Field(default=None, ge=1, description="Runs per model and scenario.")
    run_ids: list[str] = Field(default_factory=list, description="Every run the decision read.")
    judge_ids: list[str] = Field(default_factory=list, description="Judges whose scores it read.")

    @field_validator("prompt_hashes")
    @classmethod
    def _hashes(cls, value: dict[str, str]) -> dict[str, str]:
        for role, digest in value.items():
            if not re.match(HASH_PATTERN, digest):
                raise ValueError(f"prompt hash of {role!r} is not a sha256: hash: {digest!r}")
        return value


class DecisionItem(_Part):
    """What happened for one model on one scenario (one role: variant, baseline, candidate)."""

    model: str = Field(description="The model.")
    scenario: str = Field(description="The scenario (or fixture).")
    role: str | None = Field(
        default=None, description="variant, baseline, candidate, ... (None when only one)."
    )
    run_ids: list[str] = Field(default_factory=list, description="The runs (one per repeat).")
    passed: bool | None = Field(description="Did it pass its criteria; None cannot tell.")
    summary: str = Field(default="", description="One line, e.g. '2 of 3 runs passed'.")
    results: list[PredicateResult] = Field(
        default_factory=list,
        description="Every predicate result, with its run (run_id) and evidence lines.",
    )


class ModelRecord(_Part):
    """The per-model compliance record: did this model do what the criteria asked."""

    status: Literal["passed", "failed", "unknown"] = Field(description="passed, failed, unknown.")
    summary: str = Field(description="One line in plain words.")


class Decision(Record):
    """A gate's decision (decisions/<id>/decision.json): what was tested, the rule, the outcome."""

    decision_id: str = Field(description="<kind>_<subject>_<UTC time>_<random>.")
    kind: DecisionKind = Field(description="variant, sentinel or fixtures.")
    subject: str = Field(min_length=1, description="The variant or suite name.")
    created_at: datetime = Field(default_factory=utc_now, description="When it was decided.")
    outcome: Outcome = Field(description="ACCEPTED, REJECTED, GO, NO-GO or REVIEW.")
    rule: str = Field(min_length=1, description="The rule applied, in words.")
    reasoning: list[str] = Field(
        default_factory=list, description="Why, as plain sentences, in order."
    )
    spec: SpecRef | None = Field(default=None, description="The spec file applied.")
    tested: Tested = Field(default_factory=Tested, description="What was tested.")
    results: list[DecisionItem] = Field(
        default_factory=list, description="Per model and scenario: what happened, with evidence."
    )
    models: dict[str, ModelRecord] = Field(
        default_factory=dict, description="Per-model compliance record."
    )
    supersedes: str | None = Field(
        default=None, description="The decision this one replaces (it stays on record)."
    )
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Gate-specific facts (decision tree path, statistics)."
    )

    @field_validator("decision_id", "supersedes")
    @classmethod
    def _safe_id(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return check_decision_id(value)
        except InputError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("created_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+14:00 is in year 0 in UTC
            raise ValueError(f"{value.isoformat()} is out of range once taken to UTC") from None

    @model_validator(mode="after")
    def _consistent(self) -> Decision:
        if not self.decision_id.startswith(f"{self.kind}_"):
            raise ValueError(f"decision_id must start with '{self.kind}_' for a {self.kind}")
        if self.outcome not in KIND_OUTCOMES[self.kind]:
            allowed = ", ".join(sorted(KIND_OUTCOMES[self.kind]))
            raise ValueError(f"a {self.kind} decision is one of {allowed}, not {self.outcome}")
        if self.supersedes == self.decision_id:
            raise ValueError("a decision cannot supersede itself")
        return self


def superseded_by(decisions: Iterable[Decision]) -> dict[str, str]:
    """Decision id -> the id of the latest decision that supersedes it."""
    found: dict[str, str] = {}
    for decision in sorted(decisions, key=lambda d: (d.created_at, d.decision_id)):
        if decision.supersedes is not None:
            found[decision.supersedes] = decision.decision_id
    return found
