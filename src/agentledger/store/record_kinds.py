"""The kinds of the record store beside labels: scores, decisions, outcomes and label
splits, and `RECORD_KINDS`, every kind (what `reindex` and `gc` go through).

Kept apart from `record_store` (which holds `RecordStore` and `LabelRecords`) so that writing
a label (`agentledger label`, once per run a person reads) loads none of these records' models.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentledger.errors import InputError, RecordError, RunNotFoundError
from agentledger.records.decisions import (
    DECISION_ID_RE,
    DECISION_JSON,
    DECISIONS_DIR,
    Decision,
    check_decision_id,
)
from agentledger.records.outcomes import OUTCOMES_DIR, Outcome
from agentledger.records.scores import JUDGE_ID, SCORES_DIR, Score
from agentledger.records.splits import SPLIT_ID, SPLITS_DIR, Split
from agentledger.store.index import (
    DecisionRow,
    OutcomeRow,
    ScoreRow,
    decision_row,
    outcome_row,
    score_row,
)
from agentledger.store.record_store import LabelRecords, RecordStore

if TYPE_CHECKING:
    from agentledger.store.writer import LedgerParts

__all__ = [
    "RECORD_KINDS",
    "DecisionRecords",
    "OutcomeRecords",
    "ScoreRecords",
    "SplitRecords",
    "reposition_records",
    "unpositioned",
    "upgrade_records",
]

_JUDGE_ID = re.compile(JUDGE_ID)


def _check_judge_id(judge_id: str) -> None:
    if not _JUDGE_ID.match(judge_id):
        raise ValueError(f"judge id {judge_id!r} is not valid (expected <kind>-<12 hex>)")


class ScoreRecords(RecordStore[Score]):
    """Judges' scores: ``scores/<run_id>/<judge_id>.json``, one per (run, judge id)."""

    area = SCORES_DIR
    model = Score
    noun = "score"
    table = "scores"
    id_names = "run_id and judge_id"

    @classmethod
    def key(cls, *ids: str) -> str:
        run_id, judge_id = ids
        return cls.per_run_key(run_id, judge_id, _check_judge_id)

    @classmethod
    def ids_of(cls, record: Score) -> tuple[str, ...]:
        return (record.run_id, record.judge_id)

    def taken(self, record: Score) -> str:
        where = self.storage.describe(self.key_of(record))
        return f"{where}: this run is already scored by judge {record.judge_id}"

    def writer_of(self, record: Score) -> str:
        return f"judge {record.judge_id}"

    def row(self, record: Score, accepted_seq: int | None) -> ScoreRow:
        return score_row(record, accepted_seq)

    def indexed(self, keys: Sequence[str]) -> set[str]:
        held = self.ledger.index.score_keys()
        return {key for key in keys if tuple(key[:-5].split("/")[1:]) in held}


class DecisionRecords(RecordStore[Decision]):
    """Gate decisions: ``decisions/<decision_id>/`` holding decision.json and decision.md,
    which appear together (one group of the storage backend)."""

    area = DECISIONS_DIR
    model = Decision
    noun = "decision"
    table = "decisions"
    changed_note = "; its outcome cannot be trusted (run `agentledger verify`)"

    @classmethod
    def key(cls, *ids: str) -> str:
        (decision_id,) = ids
        return f"{DECISIONS_DIR}/{check_decision_id(decision_id)}"

    @classmethod
    def ids_of(cls, record: Decision) -> tuple[str, ...]:
        return (record.decision_id,)

    def misplaced(self, where: str, record: Decision) -> RecordError:
        return RecordError(where, f"names decision {record.decision_id!r}", field="decision_id")

    def is_key(self, key: str) -> bool:
        parts = key.split("/")
        return (
            len(parts) == 2 and parts[0] == DECISIONS_DIR and bool(DECISION_ID_RE.match(parts[1]))
        )

    def _record_key(self, key: str) -> str:
        return f"{key}/{DECISION_JSON}"

    def accepted_keys(self, accepted: Mapping[str, str] | None = None) -> list[str]:
        # The journal's keys, not a listing: a decision accepted and since removed is listed,
        # and reading it fails.
        accepted = self.storage.journal.accepted() if accepted is None else accepted
        return sorted(
            key.removesuffix(f"/{DECISION_JSON}")
            for key in list(accepted)
            if key.endswith(f"/{DECISION_JSON}")
            and self.is_key(key.removesuffix(f"/{DECISION_JSON}"))
        )

    def taken(self, record: Decision) -> str:
        where = self.storage.describe(self.key_of(record))
        return f"decision {record.decision_id} already exists at {where}"

    def writer_of(self, record: Decision) -> str:
        return f"gate {record.kind}"

    def row(self, record: Decision, accepted_seq: int | None) -> DecisionRow:
        return decision_row(record, accepted_seq)

    def indexed(self, keys: Sequence[str]) -> set[str]:
        held = self.ledger.index.decision_ids()
        return {key for key in keys if key.split("/")[1] in held}


class OutcomeRecords(RecordStore[Outcome]):
    """Measured outcomes of lab runs: ``outcomes/<run_id>/<outcome_id>.json``; a
    re-measurement is a new record beside the old one, and the newest stands for the run."""

    area = OUTCOMES_DIR
    model = Outcome
    noun = "outcome"
    table = "outcomes"
    id_names = "run_id and outcome_id"

    @classmethod
    def key(cls, *ids: str) -> str:
        run_id, outcome_id = ids
        return cls.per_run_key(run_id, outcome_id, Outcome.check_id)

    @classmethod
    def ids_of(cls, record: Outcome) -> tuple[str, ...]:
        return (record.run_id, record.outcome_id)

    def check(self, records: Sequence[Outcome]) -> None:
        for outcome in records:
            if not self.storage.has_run(outcome.run_id):
                raise RunNotFoundError(
                    f"outcome {outcome.outcome_id}: run {outcome.run_id!r} is not in "
                    f"{self.ledger.root}"
                )

    def row(self, record: Outcome, accepted_seq: int | None) -> OutcomeRow:
        return outcome_row(record, accepted_seq)

    def indexed(self, keys: Sequence[str]) -> set[str]:
        return self.ids_held(keys, self.ledger.index.outcome_ids())


_SPLIT_ID = re.compile(SPLIT_ID)


class SplitRecords(RecordStore[Split]):
    """Label splits: ``splits/<split_id>.json``, journaled like every record (a split planted
    beside the journal, or one whose bytes changed, is never read as one); the index holds
    none, and the newest of a source is the one the journal accepted last."""

    area = SPLITS_DIR
    model = Split
    noun = "split"

    @classmethod
    def key(cls, *ids: str) -> str:
        (split_id,) = ids
        if not _SPLIT_ID.match(split_id):
            raise InputError(f"split id {split_id!r} is not valid (expected split_<12 hex>)")
        return f"{SPLITS_DIR}/{split_id}.json"

    @classmethod
    def ids_of(cls, record: Split) -> tuple[str, ...]:
        return (record.split_id,)

    def is_key(self, key: str) -> bool:
        return key.startswith(f"{SPLITS_DIR}/") and key.endswith(".json") and key.count("/") == 1

    def misplaced(self, where: str, record: Split) -> RecordError:
        return RecordError(where, "the file's place does not match its split_id", field="split_id")

    def writer_of(self, record: Split) -> str:
        return f"split labels:{record.source}"

    def oldest_first(self) -> list[Split]:
        """Every accepted split, in the order the journal accepted them (never by the time
        written in the file: a split dated 2099 is not the newest for that)."""
        order = self.storage.journal.accepted_at()
        return sorted(
            self.iter_accepted(),
            key=lambda split: (order.get(self.key_of(split), 0), split.split_id),
        )


RECORD_KINDS: tuple[type[RecordStore[Any]], ...] = (
    ScoreRecords,
    LabelRecords,
    DecisionRecords,
    OutcomeRecords,
    SplitRecords,
)
"""Every kind of record beside the runs: what `reindex` and `gc` go through."""


def reposition_records(ledger: LedgerParts) -> list[tuple[str, str]]:
    """Index every record kind again with its position in the journal: after a journal was
    built for a ledger older than it, positions the index held (if any) are of no journal;
    after the index gained the column (m013, m015), rows indexed before have none. What could
    not be read, as (where, why): left out, as `reindex` does."""
    problems: list[tuple[str, str]] = []
    for kind in RECORD_KINDS:
        kind(ledger).reindex(problems)
    return problems


def unpositioned(ledger: LedgerParts) -> int:
    """How many indexed records hold no journal position (indexed before m013 / m015)."""
    return sum(1 for seq in ledger.index.record_positions().values() if seq is None)


_POSITIONS_MIGRATIONS = frozenset({"m013_label_order", "m015_record_order"})
"""The index migrations that added journal positions: rows indexed before have none."""
_OUTCOMES_MIGRATION = "m014_outcomes"


def upgrade_records(
    ledger: LedgerParts, upgraded_by: Sequence[str], journal_started_now: int | None
) -> None:
    """What opening a ledger does, once, after its journal was started for an older ledger
    or its index migrated: every record given its journal position (positions from before a
    journal are of no journal; rows indexed before the index kept them have none, and the
    newest record of a kind would be chosen by the time in its file), and the outcomes
    measured before outcomes were indexed indexed."""
    if journal_started_now is not None or _POSITIONS_MIGRATIONS & set(upgraded_by):
        reposition_records(ledger)
    elif _OUTCOMES_MIGRATION in upgraded_by:
        OutcomeRecords(ledger).index_missing()
