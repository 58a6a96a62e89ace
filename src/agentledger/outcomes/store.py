"""The outcome store: outcomes written once through the record store, journaled, indexed.

```
ledger/outcomes/<run_id>/<outcome_id>.json      Outcome (agentledger.records.outcomes)
```

Outcomes are a kind of the record store (`agentledger.store.record_kinds.OutcomeRecords`):
each is journaled as it is created, checked against its entry when read and by `agentledger
verify`, settled by `gc` when its writer died between the steps, and indexed (the index's
`outcomes` table, rebuilt by `reindex`). Reports, the viewer's findings and the `outcome:`
predicate read the index: the newest outcome of a run stands for it. A run's own page reads
its few files, each checked against the journal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from agentledger.records import parse_record
from agentledger.records.outcomes import Outcome
from agentledger.store.record_kinds import OutcomeRecords

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["OutcomeStore", "latest_outcomes"]


class OutcomeStore(OutcomeRecords):
    """A ledger's outcomes: write-once files under outcomes/, journaled and indexed."""

    def write_one(self, outcome: Outcome) -> str:
        """Write `outcome` once (its run must be in the ledger) and index it; where it went."""
        (where,) = self.write([outcome])
        return where

    def of_run(self, run_id: str) -> list[Outcome]:
        """Every indexed outcome of `run_id`, oldest first, each read from its file and checked
        against the journal (IntegrityError for one changed since). One whose writer died
        before indexing it is left out until `gc` indexes it."""
        accepted = self.storage.journal.accepted()
        indexed = (_parsed(raw) for raw in self.ledger.index.outcomes([run_id]))
        return [self.read(self.key_of(outcome), accepted) for outcome in indexed]


def latest_outcomes(ledger: Ledger, run_ids: Iterable[str] | None = None) -> dict[str, Outcome]:
    """run_id -> the newest indexed outcome of that run (of `run_ids`, or of every run)."""
    wanted = None if run_ids is None else list(run_ids)
    rows = ledger.index.outcomes(wanted, latest=True)
    newest: dict[str, Outcome] = {}
    for raw in rows:
        outcome = _parsed(raw)
        newest[outcome.run_id] = outcome
    return newest


def _parsed(raw: str) -> Outcome:
    return parse_record(Outcome, raw.encode(), "the index's outcomes (`agentledger reindex`)")
