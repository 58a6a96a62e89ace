"""The decision store: gate decisions (records.decisions), written once through storage.

Decision records: what a gate tested, what each model did, the rule, the outcome, and why.

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

from typing import TYPE_CHECKING

from agentledger.errors import (
    InputError,
    IntegrityError,
    RecordError,
    RecordExistsError,
    RecordNotFoundError,
)
from agentledger.gates.decision_markdown import render_markdown
from agentledger.identity import sha256_bytes
from agentledger.records import parse_record
from agentledger.records.decisions import (
    DECISION_ID_RE,
    DECISION_JSON,
    DECISION_MD,
    DECISIONS_DIR,
    OUTCOMES,
    PASSING_OUTCOMES,
    Decision,
    check_decision_id,
    superseded_by,
)
from agentledger.store.storage import StorageBackend
from agentledger.store.writer import record_bytes

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["DecisionStore", "exit_code"]


def exit_code(outcome: str, *, review_ok: bool = False) -> int:
    """The exit code for CI: 0 ACCEPTED/GO, 1 REJECTED/NO-GO, 1 REVIEW unless `review_ok`."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    if outcome in PASSING_OUTCOMES or (outcome == "REVIEW" and review_ok):
        return 0
    return 1


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
        expected = self.storage.journal.accepted().get(key)
        try:
            raw = self.storage.get(key)
        except RecordNotFoundError:
            if expected is not None:
                raise IntegrityError(
                    f"decision {decision_id} was accepted by the journal but "
                    f"{self.storage.describe(key)} is gone (run `agentledger verify`)"
                ) from None
            raise InputError(f"no decision {decision_id!r} in the ledger") from None
        where = self.storage.describe(key)
        if expected is None:
            raise InputError(f"no decision {decision_id!r} in the ledger")
        decision = parse_record(Decision, raw, where)
        if decision.decision_id != decision_id:
            raise RecordError(
                where, f"names decision {decision.decision_id!r}", field="decision_id"
            )
        if sha256_bytes(raw) != expected:
            raise IntegrityError(
                f"{where}: changed since the journal accepted it; its outcome cannot be "
                "trusted (run `agentledger verify`)"
            )
        return decision

    def ids(self) -> list[str]:
        """Every decision id the journal accepted, sorted by name.

        A decision written by a writer that died before journaling it is not listed (until
        `gc` settles it); one accepted and since removed is, and reading it fails.
        """
        found = []
        for key in list(self.storage.journal.accepted()):
            parts = key.split("/")
            if (
                len(parts) == 3
                and parts[0] == DECISIONS_DIR
                and parts[2] == DECISION_JSON
                and DECISION_ID_RE.match(parts[1])
            ):
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
