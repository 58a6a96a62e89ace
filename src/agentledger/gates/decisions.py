"""Decision records: what a gate tested, what each model did, the rule, the outcome, and why.

```
ledger/decisions/<decision_id>/decision.json    the record (Decision)
ledger/decisions/<decision_id>/decision.md      the same, for people (render_markdown)
```

A decision is written once and never changed: both files appear together (one group of the
storage backend), read-only. A later decision may supersede an earlier one by naming it;
the earlier one stays, marked as superseded in listings. This is the answer to "why did we
reject Variant B?" six months later.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentledger.errors import InputError, RecordError, RecordExistsError, RecordNotFoundError
from agentledger.gates.decision_markdown import render_markdown
from agentledger.gates.predicates.evaluate import PredicateResult
from agentledger.identity import slug
from agentledger.records import HASH_PATTERN, Record, parse_record, utc_now
from agentledger.store.storage import StorageBackend
from agentledger.store.writer import record_bytes

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "DECISIONS_DIR",
    "KINDS",
    "OUTCOMES",
    "AddonRef",
    "Decision",
    "DecisionItem",
    "DecisionKind",
    "DecisionStore",
    "ModelRecord",
    "Outcome",
    "SpecRef",
    "Tested",
    "check_decision_id",
    "exit_code",
    "new_decision_id",
    "render_markdown",
    "superseded_by",
]

DECISIONS_DIR = "decisions"
DECISION_JSON = "decision.json"
DECISION_MD = "decision.md"

DecisionKind = Literal["variant", "sentinel", "fixtures"]
Outcome = Literal["ACCEPTED", "REJECTED", "GO", "NO-GO", "REVIEW"]
KINDS: tuple[str, ...] = ("variant", "sentinel", "fixtures")
OUTCOMES: tuple[str, ...] = ("ACCEPTED", "REJECTED", "GO", "NO-GO", "REVIEW")
_KIND_OUTCOMES = {
    "variant": {"ACCEPTED", "REJECTED", "REVIEW"},
    "sentinel": {"GO", "NO-GO", "REVIEW"},
    "fixtures": set(OUTCOMES),
}
_PASSING = {"ACCEPTED", "GO"}
_ID_RE = re.compile(r"^(variant|sentinel|fixtures)_[A-Za-z0-9._-]+$")
ID_MAX = 200


def check_decision_id(decision_id: str) -> str:
    """`decision_id` if it is a well-formed decision id, safe as a directory name."""
    if (
        not isinstance(decision_id, str)
        or len(decision_id) > ID_MAX
        or ".." in decision_id
        or not _ID_RE.match(decision_id)
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


def exit_code(outcome: str, *, review_ok: bool = False) -> int:
    """The exit code for CI: 0 ACCEPTED/GO, 1 REJECTED/NO-GO, 1 REVIEW unless `review_ok`."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    if outcome in _PASSING or (outcome == "REVIEW" and review_ok):
        return 0
    return 1


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _consistent(self) -> Decision:
        if not self.decision_id.startswith(f"{self.kind}_"):
            raise ValueError(f"decision_id must start with '{self.kind}_' for a {self.kind}")
        if self.outcome not in _KIND_OUTCOMES[self.kind]:
            allowed = ", ".join(sorted(_KIND_OUTCOMES[self.kind]))
            raise ValueError(f"a {self.kind} decision is one of {allowed}, not {self.outcome}")
        if self.supersedes == self.decision_id:
            raise ValueError("a decision cannot supersede itself")
        return self

    @property
    def passing(self) -> bool:
        """True for ACCEPTED and GO."""
        return self.outcome in _PASSING


def superseded_by(decisions: Iterable[Decision]) -> dict[str, str]:
    """Decision id -> the id of the latest decision that supersedes it."""
    found: dict[str, str] = {}
    for decision in sorted(decisions, key=lambda d: (d.created_at, d.decision_id)):
        if decision.supersedes is not None:
            found[decision.supersedes] = decision.decision_id
    return found


class DecisionStore:
    """A ledger's decisions, through its storage backend: write-once, a group of two each."""

    def __init__(self, ledger: Ledger | StorageBackend) -> None:
        self.storage = ledger if isinstance(ledger, StorageBackend) else ledger.storage

    @staticmethod
    def key(decision_id: str, name: str | None = None) -> str:
        """The storage key of decision `decision_id` (its group), or of one of its files."""
        group = f"{DECISIONS_DIR}/{check_decision_id(decision_id)}"
        return f"{group}/{name}" if name else group

    def location(self, decision_id: str) -> str:
        """Where decision `decision_id` is stored, for people."""
        return self.storage.describe(self.key(decision_id))

    def exists(self, decision_id: str) -> bool:
        return self.storage.exists(self.key(decision_id, DECISION_JSON))

    def write(self, decision: Decision) -> str:
        """Write `decision` once (decision.json and decision.md, appearing together); where.

        Refuses an id that exists and a `supersedes` that names no decision; writes nothing then.
        """
        where = self.location(decision.decision_id)
        taken = f"decision {decision.decision_id} already exists at {where}"
        if self.exists(decision.decision_id):
            raise RecordExistsError(taken)
        if decision.supersedes is not None:
            self._check_supersedes(decision)
        try:
            self.storage.create_group(
                self.key(decision.decision_id),
                {
                    DECISION_JSON: record_bytes(decision),
                    DECISION_MD: render_markdown(decision).encode("utf-8"),
                },
            )
        except RecordExistsError:
            raise RecordExistsError(taken) from None
        return where

    def markdown(self, decision_id: str) -> str | None:
        """The decision.md of decision `decision_id` as stored; None when it has none."""
        try:
            raw = self.storage.get(self.key(decision_id, DECISION_MD))
        except RecordNotFoundError:
            return None
        return raw.decode("utf-8", "replace")

    def check_supersedes(self, kind: str, decision_id_or_prefix: str) -> str:
        """The full id of the decision a new `kind` decision may supersede; InputError when it
        does not exist, is of another kind, or is already superseded. Gates call this before
        they run anything, so that a bad --supersedes costs nothing."""
        old_id = self.resolve(decision_id_or_prefix)
        self._check_old(kind, old_id)
        return old_id

    def _check_old(self, kind: str, old_id: str) -> None:
        old = self.read(old_id)
        if old.kind != kind:
            raise InputError(f"a {kind} decision cannot supersede {old_id}, a {old.kind} decision")
        newer = superseded_by(self.list()).get(old_id)
        if newer is not None:
            raise InputError(
                f"decision {old_id} is already superseded by {newer}; supersede that one instead"
            )

    def _check_supersedes(self, decision: Decision) -> None:
        """A decision supersedes an existing decision of its kind, and the latest of its line."""
        old_id = decision.supersedes
        assert old_id is not None
        if not self.exists(old_id):
            raise InputError(
                f"decision {decision.decision_id} supersedes {old_id!r}, "
                "which is not a decision in the ledger"
            )
        self._check_old(decision.kind, old_id)

    def read(self, decision_id: str) -> Decision:
        """The decision with exactly this id."""
        key = self.key(decision_id, DECISION_JSON)
        try:
            raw = self.storage.get(key)
        except RecordNotFoundError:
            raise InputError(f"no decision {decision_id!r} in the ledger") from None
        where = self.storage.describe(key)
        decision = parse_record(Decision, raw, where)
        if decision.decision_id != decision_id:
            raise RecordError(
                where, f"names decision {decision.decision_id!r}", field="decision_id"
            )
        return decision

    def ids(self) -> list[str]:
        """Every stored decision id, sorted by name."""
        found = []
        for key in self.storage.keys(DECISIONS_DIR):
            parts = key.split("/")
            if len(parts) == 3 and parts[2] == DECISION_JSON and _ID_RE.match(parts[1]):
                found.append(parts[1])
        return sorted(found)

    def resolve(self, decision_id_or_prefix: str) -> str:
        """The full id for an exact id or an unambiguous prefix of one."""
        ids = self.ids()
        if decision_id_or_prefix in ids:
            return decision_id_or_prefix
        matches = [item for item in ids if item.startswith(decision_id_or_prefix)]
        if len(matches) == 1 and decision_id_or_prefix:
            return matches[0]
        if not matches or not decision_id_or_prefix:
            raise InputError(f"no decision matches {decision_id_or_prefix!r} in the ledger")
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise InputError(f"{decision_id_or_prefix!r} matches several decisions: {shown}")

    def get(self, decision_id_or_prefix: str) -> Decision:
        """The decision with this id, or the only one whose id starts with it."""
        return self.read(self.resolve(decision_id_or_prefix))

    def list(self, kind: str | None = None, subject: str | None = None) -> list[Decision]:
        """Decisions (of a kind, about a subject), oldest first."""
        found = []
        for decision_id in self.ids():
            decision = self.read(decision_id)
            if kind is not None and decision.kind != kind:
                continue
            if subject is not None and decision.subject != subject:
                continue
            found.append(decision)
        return sorted(found, key=lambda d: (d.created_at, d.decision_id))

    def latest(self, kind: str, subject: str) -> Decision | None:
        """The newest decision of `kind` about `subject` (None when there is none)."""
        found = self.list(kind, subject)
        return found[-1] if found else None
