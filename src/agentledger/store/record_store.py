"""`RecordStore[T]`: one store for every kind of record kept beside the runs.

Scores, labels, decisions and outcomes are all records written once through the
storage backend, accepted by the journal, and cached in the index. What differs between kinds
is small, and a kind says it in a few lines: its area, its pydantic model, its key scheme, and
its index hook. Everything else is done here once, the same way for every kind:

- **key scheme**: `key(*ids)` (the ids checked) and `key_of(record)`;
- **create once**: `write(records)` is the one way records are written: `check` them all,
  create each one write-once (`RecordExistsError` names the record), then index them. (A rule
  every write of a kind must obey goes in `check`, or in `write` of the kind's store.)
- **journal-checked read**: `read(key)` refuses a record the journal never accepted, or whose
  bytes changed since (IntegrityError), or that does not sit where its ids say (RecordError);
- **iterate the accepted**: `iter_accepted()`, for reindexing, reporting what it cannot read;
- **settle after a kill**: `settle(keys)` journals (or removes) what a killed writer stored but
  did not journal, and indexes what it journaled but did not index; `index_missing()` does
  the same for every record of the kind (`gc`);
- **the index hook**: a kind's `row(record, accepted_seq)` and the `table` its rows are added
  to and rebuilt in; `index(records)` and `reindex()` give every row the position of its
  journal entry, which alone decides a kind's newest record (`journal_order` in the index), so
  that a time written in a file (a planted score dated 2099) cannot.

A kind is a subclass naming those parts (as outcomes do, below)::

    class OutcomeRecords(RecordStore[Outcome]):
        area, noun = OUTCOMES_DIR, "outcome"
        model = Outcome

        @classmethod
        def key(cls, *ids: str) -> str:
            run_id, outcome_id = ids
            return cls.per_run_key(run_id, outcome_id, Outcome.check_id)

        @classmethod
        def ids_of(cls, outcome: Outcome) -> tuple[str, ...]:
            return (outcome.run_id, outcome.outcome_id)

with `row`, `table` and `indexed` over the index's table of the kind,
and an entry in `RECORD_KINDS` so that `reindex` and `gc` include it.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from agentledger.errors import (
    InputError,
    IntegrityError,
    RecordError,
    RecordExistsError,
    RecordNotFoundError,
)
from agentledger.identity import check_run_id, sha256_bytes
from agentledger.records import Record, parse_record
from agentledger.records.labels import LABELS_DIR, Label
from agentledger.store.index import (
    LabelRow,
    label_row,
)
from agentledger.store.journal_upkeep import accept_records
from agentledger.store.storage.journal import intent_of
from agentledger.store.writer import record_bytes

if TYPE_CHECKING:
    from agentledger.store.writer import LedgerParts

__all__ = ["LabelRecords", "RecordStore"]

R = TypeVar("R", bound=Record)


class RecordStore(Generic[R]):
    """A ledger's records of one kind: written once, journal-checked when read, indexed."""

    area: ClassVar[str]
    """The storage area (top folder) of the kind."""
    model: type[R]
    noun: ClassVar[str]
    """What one record is called in messages."""
    id_names: ClassVar[str] = "ids"
    """What the ids of a record are called in messages (``run_id and judge_id``)."""
    changed_note: ClassVar[str] = " (run `agentledger verify`)"
    table: ClassVar[str | None] = None
    """The index's name for the kind's rows (``labels``: `RunIndex.add_labels` and
    `rebuild_labels`); None for a kind the index does not hold."""

    def __init__(self, ledger: LedgerParts) -> None:
        self.ledger = ledger
        self.storage = ledger.storage

    # -- the kind's part -----------------------------------------------------------------------

    @classmethod
    @abstractmethod
    def key(cls, *ids: str) -> str:
        """The storage key of the record with these ids (InputError for a malformed id)."""

    @classmethod
    @abstractmethod
    def ids_of(cls, record: R) -> tuple[str, ...]:
        """The ids the record names (what `key` takes)."""

    def row(self, record: R, accepted_seq: int | None) -> Any:
        """What the index keeps of `record`, whose journal entry is at `accepted_seq` (a kind
        the index does not hold: None)."""
        return None

    def _add_rows(self, rows: list[Any]) -> None:
        """Add (or replace) the kind's rows in the index (`RunIndex.add_<table>`)."""
        if self.table:
            getattr(self.ledger.index, f"add_{self.table}")(rows)

    def _rebuild_rows(self, rows: Iterator[Any]) -> int:
        """Replace every row of the kind in the index with `rows` (`RunIndex.rebuild_<table>`);
        how many."""
        return int(getattr(self.ledger.index, f"rebuild_{self.table}")(rows)) if self.table else 0

    def indexed(self, keys: Sequence[str]) -> set[str]:
        """Those of `keys` whose record the index holds."""
        return set(keys)

    def check(self, records: Sequence[R]) -> None:
        """Refuse (InputError) the whole of `records` if any one cannot be written."""

    def _values(self, key: str, record: R) -> dict[str, bytes]:
        """The bytes `record` is stored as, by storage key (a kind stored as a group of files
        gives each file under `key`, and overrides `_create`)."""
        return {key: record_bytes(record)}

    def _create(self, key: str, record: R) -> None:
        """Store `record` at `key`, write-once (a kind stored as several files overrides)."""
        self.storage.create(key, record_bytes(record), self.writer_of(record))

    def writer_of(self, record: R) -> str:
        """Who writes `record`, as its intent says (the judge, the label's source, the gate):
        what `verify` holds the record's own claim to."""
        return self.noun

    def _record_key(self, key: str) -> str:
        """The key whose bytes the journal holds for the record at `key`."""
        return key

    # -- the same for every kind ---------------------------------------------------------------

    def index(self, records: Sequence[R]) -> None:
        """Put `records` in the index, each with the position of its journal entry: the
        journal's order is what decides a kind's newest record (`journal_order`), for every
        kind alike, never a time written in the file."""
        if not records:
            return
        # Just written: this handle appended their entries and knows where they landed, so
        # the storage is asked for newer segments only when one is not known (on S3, a request).
        order = self.storage.journal.accepted_at(catch_up=False)
        if any(self.seq_of(record, order) is None for record in records):
            order = self.storage.journal.accepted_at()
        self._add_rows([self.row(record, self.seq_of(record, order)) for record in records])

    def reindex(self, problems: list[tuple[str, str]] | None = None) -> int:
        """Replace the index's records of this kind with the accepted ones; how many."""
        order = self.storage.journal.accepted_at()
        return self._rebuild_rows(
            self.row(record, self.seq_of(record, order)) for record in self.iter_accepted(problems)
        )

    def seq_of(self, record: R, order: Mapping[str, int]) -> int | None:
        """The position of `record`'s journal entry in `order` (`Journal.accepted_at`)."""
        return order.get(self._record_key(self.key_of(record)))

    @classmethod
    def per_run_key(cls, run_id: str, record_id: str, check_id: Callable[[str], object]) -> str:
        """``AREA/<run_id>/<record_id>.json``: the key of a kind kept per run, one file a record
        (scores, labels, outcomes), its ids checked: InputError if `check_run_id`, or `check_id`
        (which raises ValueError), refuses one."""
        check_run_id(run_id)
        try:
            check_id(record_id)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return f"{cls.area}/{run_id}/{record_id}.json"

    @staticmethod
    def ids_held(keys: Sequence[str], held: set[str]) -> set[str]:
        """Those of per-run `keys` (``AREA/<run_id>/<record_id>.json``) whose record id is in
        `held`, the ids the index holds."""
        return {key for key in keys if key.rsplit("/", 1)[-1].removesuffix(".json") in held}

    @classmethod
    def key_of(cls, record: R) -> str:
        return cls.key(*cls.ids_of(record))

    def misplaced(self, where: str, record: R) -> RecordError:
        """The error of a record stored where its ids do not put it."""
        return RecordError(where, f"the file's place does not match its {self.id_names}")

    def is_key(self, key: str) -> bool:
        """Whether `key` is where a record of this kind is stored."""
        return key.startswith(f"{self.area}/") and key.endswith(".json") and key.count("/") == 2

    def exists(self, *ids: str) -> bool:
        return self.storage.exists(self._record_key(self.key(*ids)))

    def write(self, records: Sequence[R]) -> list[str]:
        """Check every record, then create each one once and index them; where each went.

        Nothing is written when any record is refused; a record already stored is never
        replaced (RecordExistsError). The index follows the files; `settle` and `gc` index
        what a writer killed in between left unindexed.
        """
        if isinstance(records, BaseModel):
            raise TypeError(f"write takes a sequence of {self.noun}s, not one")
        self.check(records)
        keys = [self.key_of(record) for record in records]
        # One intent per writer for the whole batch, then the records, then their entries as
        # one segment (see `Journal.batch`).
        intends: dict[str, dict[str, str]] = {}
        for key, record in zip(keys, records, strict=True):
            for name, data in self._values(key, record).items():
                intends.setdefault(self.writer_of(record), {})[name] = sha256_bytes(data)
        places = []
        with self.storage.journal.batch(
            [intent_of(self.noun, writer, each) for writer, each in sorted(intends.items())]
        ):
            for key, record in zip(keys, records, strict=True):
                try:
                    self._create(key, record)
                except RecordExistsError:
                    raise RecordExistsError(self.taken(record)) from None
                places.append(self.storage.describe(key))
        self.index(records)
        return places

    def taken(self, record: R) -> str:
        """Why `record` cannot be written: one of its ids is stored already."""
        where = self.storage.describe(self.key_of(record))
        return f"{where}: {self.noun} {'/'.join(self.ids_of(record))} already exists"

    def read(self, key: str, accepted: Mapping[str, str] | None = None) -> R:
        """The record stored at `key`, checked against its journal entry (`accepted`: the
        journal's keys and hashes, read once by callers reading many) and its place."""
        stored = self._record_key(key)
        where = self.storage.describe(stored)
        expected = (self.storage.journal.accepted() if accepted is None else accepted).get(stored)
        try:
            raw = self.storage.get(stored)
        except RecordNotFoundError:
            if expected is not None:
                raise IntegrityError(
                    f"{where} was accepted by the journal but is gone (run `agentledger verify`)"
                ) from None
            raise
        record = parse_record(self.model, raw, where)
        if key != self.key_of(record):
            raise self.misplaced(where, record)
        if expected is None:
            raise IntegrityError(f"{where}: the journal has no entry for this {self.noun}")
        if sha256_bytes(raw) != expected:
            raise IntegrityError(
                f"{where}: changed since the journal accepted it{self.changed_note}"
            )
        return record

    def load(self, *ids: str) -> R:
        """The record with these ids (journal-checked)."""
        return self.read(self.key(*ids))

    def accepted_keys(self, accepted: Mapping[str, str] | None = None) -> list[str]:
        """The keys of every stored record of the kind the journal accepted, sorted (one
        stored without an entry, its writer killed before journaling it, is not listed)."""
        accepted = self.storage.journal.accepted() if accepted is None else accepted
        return sorted(
            key
            for key in self.storage.keys(self.area)
            if self.is_key(key) and self._record_key(key) in accepted
        )

    def iter_accepted(self, problems: list[tuple[str, str]] | None = None) -> Iterator[R]:
        """Every stored record the journal accepted, in key order. A record without an entry
        (its writer died before journaling it) is left out until `gc` settles it; one that
        cannot be read is added to `problems` as (where, why), or raises without it."""
        accepted = self.storage.journal.accepted()
        for key in self.accepted_keys(accepted):
            try:
                yield self.read(key, accepted)
            except (InputError, IntegrityError, OSError) as exc:
                if problems is None:
                    raise
                problems.append((self.storage.describe(key), str(exc)))

    def settle(self, keys: Sequence[str]) -> list[R]:
        """Finish what killed writers left of the records at `keys`: journal each one stored
        without an entry whose bytes check out (remove it otherwise, as `gc` would), then index
        the journaled ones the index lacks; those indexed. (For a kind stored as one file a
        record; a decision's group of files is settled by `gc`.)"""
        stored = [key for key in keys if self.storage.exists(self._record_key(key))]
        if not stored:
            return []
        accept_records(self.ledger, stored)
        accepted = self.storage.journal.accepted()
        held = self.indexed(stored)
        missing = [
            self.read(key, accepted)
            for key in stored
            if key not in held and self._record_key(key) in accepted
        ]
        self.index(missing)
        return missing

    def index_missing(self) -> tuple[list[str], list[tuple[str, str]]]:
        """Index every accepted, intact record the index lacks (its writer died before
        indexing it); (keys indexed, (key, why not) for those that could not be)."""
        accepted = self.storage.journal.accepted()
        keys = self.accepted_keys(accepted)
        held = self.indexed(keys)
        records, done, refused = [], [], []
        for key in keys:
            if key in held:
                continue
            try:
                records.append(self.read(key, accepted))
                done.append(key)
            except (InputError, IntegrityError, OSError) as exc:
                refused.append((key, str(exc)))
        self.index(records)
        return done, refused


class LabelRecords(RecordStore[Label]):
    """People's and outside sources' labels: ``labels/<run_id>/<label_id>.json``."""

    area = LABELS_DIR
    model = Label
    noun = "label"
    table = "labels"
    id_names = "run_id and label_id"

    @classmethod
    def key(cls, *ids: str) -> str:
        run_id, label_id = ids
        return cls.per_run_key(run_id, label_id, Label.check_id)

    @classmethod
    def ids_of(cls, record: Label) -> tuple[str, ...]:
        return (record.run_id, record.label_id)

    def taken(self, record: Label) -> str:
        where = self.storage.describe(self.key_of(record))
        return f"{where}: label {record.label_id} already exists"

    def writer_of(self, record: Label) -> str:
        return f"label {record.by.kind} {record.by.name}"

    def row(self, record: Label, accepted_seq: int | None) -> LabelRow:
        return label_row(record, accepted_seq)

    def indexed(self, keys: Sequence[str]) -> set[str]:
        return self.ids_held(keys, self.ledger.index.label_ids())
