"""The outcome store: outcomes written once through the storage backend, journaled, read back.

```
ledger/outcomes/<run_id>/<outcome_id>.json      Outcome (agentledger.records.outcomes)
```

Like scores, every outcome gets a journal entry as it is created, and is checked against it
when read and by `agentledger verify`. Outcomes are not indexed: reports read the files under
outcomes/ (as they read decisions), the newest outcome of each run standing for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from agentledger.errors import (
    InputError,
    IntegrityError,
    RecordError,
    RecordExistsError,
    RunNotFoundError,
)
from agentledger.identity import check_run_id, sha256_bytes
from agentledger.records import parse_record
from agentledger.records.outcomes import OUTCOMES_DIR, Outcome
from agentledger.store.writer import record_bytes

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["OutcomeStore", "latest_outcomes"]


class OutcomeStore:
    """A ledger's outcomes: write-once files under outcomes/, each journaled as it lands."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.storage = ledger.storage

    @staticmethod
    def key(run_id: str, outcome_id: str) -> str:
        """The storage key of outcome `outcome_id` of run `run_id`."""
        check_run_id(run_id)
        try:
            Outcome.check_id(outcome_id)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return f"{OUTCOMES_DIR}/{run_id}/{outcome_id}.json"

    def write(self, outcome: Outcome) -> str:
        """Write `outcome` once (its run must be in the ledger); where it went."""
        if not self.storage.has_run(outcome.run_id):
            raise RunNotFoundError(
                f"outcome {outcome.outcome_id}: run {outcome.run_id!r} is not in {self.ledger.root}"
            )
        key = self.key(outcome.run_id, outcome.outcome_id)
        try:
            self.storage.create(key, record_bytes(outcome))
        except RecordExistsError:
            raise RecordExistsError(
                f"{self.storage.describe(key)}: outcome {outcome.outcome_id} already exists"
            ) from None
        return self.storage.describe(key)

    def read(self, key: str, accepted: Mapping[str, str] | None = None) -> Outcome:
        """The outcome stored at `key`, checked against its place and its journal entry
        (`accepted`: the journal's keys and hashes, read once by callers reading many)."""
        where = self.storage.describe(key)
        raw = self.storage.get(key)
        outcome = parse_record(Outcome, raw, where)
        if key != self.key(outcome.run_id, outcome.outcome_id):
            raise RecordError(where, "the file's place does not match its run_id and outcome_id")
        expected = (self.storage.journal.accepted() if accepted is None else accepted).get(key)
        if expected is None:
            raise IntegrityError(f"{where}: the journal has no entry for this outcome")
        if sha256_bytes(raw) != expected:
            raise IntegrityError(
                f"{where}: changed since the journal accepted it (run `agentledger verify`)"
            )
        return outcome

    def of_run(self, run_id: str) -> list[Outcome]:
        """Every accepted outcome of `run_id`, oldest first."""
        accepted = self.storage.journal.accepted()
        keys = self.storage.keys(f"{OUTCOMES_DIR}/{check_run_id(run_id)}")
        found = [self.read(key, accepted) for key in keys if key in accepted]
        return sorted(found, key=lambda outcome: (outcome.created_at, outcome.outcome_id))

    def iter_outcomes(self) -> Iterator[Outcome]:
        """Every stored outcome the journal accepted, in a stable order.

        An outcome without an entry (its writer died before journaling it) is left out until
        `gc` settles it; one whose bytes changed raises IntegrityError.
        """
        accepted = self.storage.journal.accepted()
        for key in self.storage.keys(OUTCOMES_DIR):
            if key.endswith(".json") and key.count("/") == 2 and key in accepted:
                yield self.read(key, accepted)


def latest_outcomes(ledger: Ledger, run_ids: Iterable[str] | None = None) -> dict[str, Outcome]:
    """run_id -> the newest outcome of that run (of `run_ids`, or of every run)."""
    store = OutcomeStore(ledger)
    wanted = None if run_ids is None else set(run_ids)
    newest: dict[str, Outcome] = {}
    for outcome in store.iter_outcomes():
        if wanted is not None and outcome.run_id not in wanted:
            continue
        held = newest.get(outcome.run_id)
        if held is None or (outcome.created_at, outcome.outcome_id) > (
            held.created_at,
            held.outcome_id,
        ):
            newest[outcome.run_id] = outcome
    return newest
