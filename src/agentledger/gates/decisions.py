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

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentledger.errors import InputError, RecordExistsError, RecordNotFoundError
from agentledger.gates.decision_markdown import render_markdown
from agentledger.records.decisions import (
    DECISION_JSON,
    DECISION_MD,
    OUTCOMES,
    PASSING_OUTCOMES,
    Decision,
    superseded_by,
)
from agentledger.store.record_kinds import DecisionRecords
from agentledger.store.writer import record_bytes

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["DecisionStore", "exit_code", "indexed_decisions"]


def exit_code(outcome: str, *, review_ok: bool = False) -> int:
    """The exit code for CI: 0 ACCEPTED/GO, 1 REJECTED/NO-GO, 1 REVIEW unless `review_ok`."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    if outcome in PASSING_OUTCOMES or (outcome == "REVIEW" and review_ok):
        return 0
    return 1


class DecisionStore(DecisionRecords):
    """A ledger's decisions: write-once, a group of two files each, indexed as they land."""

    def location(self, decision_id: str) -> str:
        """Where decision `decision_id` is stored, for people."""
        return self.storage.describe(self.key(decision_id))

    def _files(self, record: Decision) -> dict[str, bytes]:
        return {
            DECISION_JSON: record_bytes(record),
            DECISION_MD: render_markdown(record).encode("utf-8"),
        }

    def _values(self, key: str, record: Decision) -> dict[str, bytes]:
        return {f"{key}/{name}": data for name, data in self._files(record).items()}

    def _create(self, key: str, record: Decision) -> None:
        self.storage.create_group(key, self._files(record), self.writer_of(record))

    def check(self, records: Sequence[Decision]) -> None:
        """Refuse an id that exists, and a `supersedes` that names no decision, or one of
        another kind, or one already superseded."""
        for decision in records:
            if self.exists(decision.decision_id):
                raise RecordExistsError(self.taken(decision))
            if decision.supersedes is not None:
                self._check_supersedes(decision)

    def markdown(self, decision_id: str) -> str | None:
        """The decision.md of decision `decision_id` as stored; None when it has none."""
        try:
            raw = self.storage.get(f"{self.key(decision_id)}/{DECISION_MD}")
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
        old = self.get_exact(old_id)
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

    def get_exact(self, decision_id: str) -> Decision:
        """The decision with exactly this id, checked against the journal."""
        key = self.key(decision_id)
        accepted = self.storage.journal.accepted()
        if f"{key}/{DECISION_JSON}" not in accepted:
            raise InputError(f"no decision {decision_id!r} in the ledger")
        return self.read(key, accepted)

    def ids(self) -> list[str]:
        """Every decision id the journal accepted, sorted by name.

        A decision written by a writer that died before journaling it is not listed (until
        `gc` settles it); one accepted and since removed is, and reading it fails.
        """
        return [key.split("/")[1] for key in self.accepted_keys()]

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
        return self.get_exact(self.resolve(decision_id_or_prefix))

    def list(self, kind: str | None = None, subject: str | None = None) -> list[Decision]:
        """Decisions (of a kind, about a subject), oldest first, from the files (each checked
        against the journal); `indexed` answers the same from the index, without reading
        every decision."""
        accepted = self.storage.journal.accepted()
        order = self.storage.journal.accepted_at()
        found = [
            decision
            for decision in (self.read(key, accepted) for key in self.accepted_keys(accepted))
            if (kind is None or decision.kind == kind)
            and (subject is None or decision.subject == subject)
        ]
        # In the journal's order, as the index gives them (`journal_order`): the newest is the
        # one accepted last, whatever time its file gives.
        return sorted(
            found, key=lambda d: (self.seq_of(d, order) or 0, d.created_at, d.decision_id)
        )

    def latest(self, kind: str, subject: str) -> Decision | None:
        """The newest decision of `kind` about `subject` (None when there is none)."""
        found = self.list(kind, subject)
        return found[-1] if found else None


def indexed_decisions(
    ledger: Ledger, kind: str | None = None, subject: str | None = None, run_id: str | None = None
) -> list[Decision]:
    """The decisions the index holds (of `kind`, about `subject`, that read run `run_id`),
    oldest first: one lookup, where `DecisionStore.list` reads every decision file."""
    return [
        Decision.model_validate_json(text)
        for text in ledger.index.decisions(kind=kind, subject=subject, run_id=run_id)
    ]
