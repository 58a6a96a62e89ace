"""The journal: an append-only hash chain with one entry per record the ledger accepted.

Every sealed run (by its MANIFEST.json), score, label and decision gets one `JournalEntry`;
each entry carries the hash of the one before, so the chain's head (`Checkpoint`: the count
of entries and the newest hash) pins everything before it. `verify` checks every record
against its entry, and `verify --checkpoint` that the chain still extends a head noted
earlier, which a wholesale rewrite of files, manifests, index and journal cannot fake.

**Writing.** A record and its entry are written under the journal lock: first an **intent**
(the keys about to be written, the sha256 each will have, and who writes), then the record,
then its acceptance entry. A record the journal has no acceptance entry for is not accepted.
Readers never see one (the index learns of a record only after its entry; `DecisionStore`
and reindex read through `accepted()`), `verify` reports it, and `gc` completes it (appends
its entry) only when an intent announced it with the very bytes it holds; a record no intent
announced (put there by hand, or by another program) is moved to quarantine, never accepted.
A writer killed at any point therefore leaves nothing, an intent alone, or an announced
record without an entry that gc settles, or both written. Batches (an import's
`seal_batch`, a `RecordStore.write`) announce and accept all their records with one segment
each: one lock hold, two writes.

**Storage.** Entries live in write-once segment objects ``journal/<first seq>.jsonl`` (twelve
digits), one JSON entry a line, written with the backend's `create`: a segment's key is the
position it claims, so two writers that both think the journal ends at entry N both try to
create ``journal/<N+1>.jsonl`` and exactly one wins (the loser re-reads and retries). The lock
(`StorageBackend.journal_lock`: ``fcntl.flock`` on ``journal/.lock`` locally, a mutex in
memory) keeps writers from racing at all on one machine. An S3 backend needs no lock for
safety: the segment put with ``If-None-Match: *`` is the compare-and-swap on the head, and a
strongly consistent LIST finds the newest segment; its `journal_lock` may be a no-op, at the
cost of a retry when two writers collide.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from agentledger.errors import (
    IntegrityError,
    RecordExistsError,
    RecordNotFoundError,
)
from agentledger.identity import canonical_json, json_text_field, sha256_bytes
from agentledger.records import utc_now
from agentledger.records.journal import GENESIS_PREV, JournalEntry, entry_hash
from agentledger.store.crashpoints import CRASH_AT, crash_point
from agentledger.store.storage.journal_read import (
    JOURNAL_AREA,
    Checkpoint,
    JournalRead,
    check_segments,
    entry_at,
    parse_segment,
    segment_key,
)

if TYPE_CHECKING:
    from agentledger.store.storage.base import BareStorage

__all__ = [
    "CRASH_ENV",
    "JOURNALED_AREAS",
    "JOURNAL_AREA",
    "KINDS_OF_AREAS",
    "Checkpoint",
    "Intent",
    "Journal",
    "JournalRead",
    "PendingEntry",
    "PendingIntent",
    "check_segments",
    "claim_of",
    "entry_at",
    "intent_of",
    "parse_segment",
    "record_entry",
    "run_entry",
    "run_intent",
    "segment_key",
]

JOURNALED_AREAS: frozenset[str] = frozenset({"scores", "labels", "decisions", "outcomes", "splits"})
"""Record areas whose every value is evidence, and so gets a journal entry."""
KINDS_OF_AREAS: Mapping[str, str] = {
    "scores": "score",
    "labels": "label",
    "decisions": "decision",
    "outcomes": "outcome",
    "splits": "split",
}
"""The entry kind of each journaled area's records."""
_KINDS = KINDS_OF_AREAS
CRASH_ENV = CRASH_AT
"""Names a point of the write path (``after-record``) at which the process kills itself with
SIGKILL: how the tests prove that a writer dying there leaves a ledger gc can settle (see
store/crashpoints.py)."""


@dataclass(frozen=True)
class PendingEntry:
    """An entry about to be appended (its position, time and links are filled in then)."""

    kind: str
    id: str
    keys: Mapping[str, str]
    sha256: str | None
    supersedes: str | None = None


@dataclass(frozen=True)
class PendingIntent(PendingEntry):
    """An intent about to be appended: `intends` maps each key about to be written to the
    sha256 its bytes will have; `writer` says who writes (see records/journal.py)."""

    intends: Mapping[str, str] = field(default_factory=dict)
    writer: str = ""


def intent_of(kind: str, writer: str, intends: Mapping[str, str]) -> PendingIntent:
    """The intent of a writer of `kind` records (score, label, decision, outcome, run)."""
    return PendingIntent(
        "intent", kind, {}, None, intends=dict(sorted(intends.items())), writer=writer[:300]
    )


@dataclass(frozen=True)
class Intent:
    """What the journal holds of an announced key: the bytes' sha256, the writer, and the
    position of the intent."""

    sha256: str
    writer: str
    seq: int


def run_entry(run_id: str, manifest_sha256: str) -> PendingEntry:
    """The entry of a sealed run: its MANIFEST.json, which lists every file's hash."""
    return PendingEntry(
        "run", run_id, {f"runs/{run_id}/MANIFEST.json": manifest_sha256}, manifest_sha256
    )


def run_intent(runs: Sequence[tuple[str, str]], writer: str | None = None) -> PendingIntent:
    """The intent of a writer about to seal runs: (run id, sha256 of its MANIFEST.json) each."""
    intends = {f"runs/{run_id}/MANIFEST.json": digest for run_id, digest in runs}
    return intent_of("run", writer or _WRITER, intends)


def record_entry(key: str, values: Mapping[str, bytes]) -> PendingEntry:
    """The entry of a record: a score or label (one key), or a decision (a group of keys).

    `key` is the record's key (a decision: its group prefix); `values` maps each stored key
    to its bytes.
    """
    area, _, rest = key.partition("/")
    hashes = {name: sha256_bytes(data) for name, data in values.items()}
    main = next((name for name in values if name.endswith(".json")), None)
    if main is None:
        digest = sha256_bytes(canonical_json(hashes))
        supersedes = None
    else:
        digest = hashes[main]
        corrects = area in ("labels", "decisions")
        supersedes = json_text_field(values[main], "supersedes") if corrects else None
    return PendingEntry(
        _KINDS[area], rest.removesuffix(".json"), dict(sorted(hashes.items())), digest, supersedes
    )


def _dump(entry: dict[str, Any]) -> bytes:
    return canonical_json(entry) + b"\n"


class Journal:
    """The journal of one storage backend (`StorageBackend.journal`)."""

    def __init__(self, storage: BareStorage) -> None:
        self.storage = storage
        self._entries: list[JournalEntry] = []
        self._accepted: dict[str, str] = {}
        self._accepted_at: dict[str, int] = {}
        self._intended: dict[str, dict[str, Intent]] = {}
        self._anchor: Checkpoint | None = None
        self._tail: JournalEntry | None = None
        self._own: dict[str, str] = {}
        self._own_at: dict[str, int] = {}
        self._mutex = threading.Lock()
        self._held = threading.local()
        self.refusal: str | None = None
        """Why this journal takes no entry (a ledger found rolled back: `refuse_writes`)."""

    # -- the lock --------------------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the journal lock (re-entrant within a thread): writers serialise on it."""
        depth = getattr(self._held, "depth", 0)
        if depth:
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth -= 1
            return
        with self.storage.journal_lock():
            crash_point("journal: locked")
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0

    # -- reading ---------------------------------------------------------------------------

    def refuse_writes(self, why: str | None) -> None:
        """Refuse every entry from now on (IntegrityError saying `why`), so that no writer
        builds on a ledger found behind or beside a head seen before (`seen_heads`); None
        takes entries again (the head it has now was accepted)."""
        self.refusal = why

    def anchor(self, head: Checkpoint) -> None:
        """Append after `head` (a head this machine saw: `seen_heads`) read on from it, each
        segment linked to the one before, not from the first segment: a writer that read
        nothing (`label` on a ledger of many runs). What comes before is for the readers
        that read it all and `verify`. An anchor not found as noted (no entry `head.count`
        of that hash) is dropped: the whole journal is read then."""
        with self._mutex:
            self._anchor, self._tail = head, None

    def reload(self) -> None:
        """Forget what was read, to read every segment afresh (segments were set aside)."""
        with self._mutex:
            self._tail = None
            self._own = {}
            self._own_at = {}
            self._entries = []
            self._accepted = {}
            self._accepted_at = {}
            self._intended = {}

    def check_writable(self) -> None:
        """Raise IntegrityError when the journal refuses entries (`refuse_writes`)."""
        if self.refusal is not None:
            raise IntegrityError(self.refusal)

    def started(self) -> bool:
        """Whether the journal has its genesis entry (a ledger older than it has none)."""
        return self.storage.exists(segment_key(1))

    def entries(self) -> list[JournalEntry]:
        """Every entry, read forward from the last one this object saw (segments are
        written once, so what was read stays true); IntegrityError when a segment is broken."""
        with self._mutex:
            self._catch_up()
            return list(self._entries)

    def _catch_up(self) -> None:
        """Read the segments written since the last one this object saw (under `_mutex`)."""
        while True:
            first = self._entries[-1].seq + 1 if self._entries else 1
            key = segment_key(first)
            try:
                data = self.storage.get(key)
            except RecordNotFoundError:
                return
            found = parse_segment(key, data)
            for offset, entry in enumerate(found):
                previous = self._entries[-1].hash if self._entries else GENESIS_PREV
                if entry.seq != first + offset or entry.prev != previous:
                    raise IntegrityError(
                        f"{key}: entry {entry.seq} does not follow entry {first + offset - 1} "
                        "(the journal was reordered or rewritten; run `agentledger verify`)"
                    )
                self._take(entry)

    def _anchored_last(self) -> JournalEntry | None:
        """The newest entry, read forward from the anchor (or the last entry read so, or
        appended after it) with each link checked; None without an anchor, or when the
        anchor is not found as noted (under `_mutex`)."""
        if self._tail is None:
            if self._anchor is None:
                return None
            entry = entry_at(self.storage, self._anchor.count)
            if entry is None or entry.hash != self._anchor.hash:
                self._anchor = None
                return None
            self._tail = entry
        while True:
            first = self._tail.seq + 1
            key = segment_key(first)
            try:
                data = self.storage.get(key)
            except RecordNotFoundError:
                return self._tail
            for offset, entry in enumerate(parse_segment(key, data)):
                if entry.seq != first + offset or entry.prev != self._tail.hash:
                    raise IntegrityError(
                        f"{key}: entry {entry.seq} does not follow entry {first + offset - 1} "
                        "(the journal was reordered or rewritten; run `agentledger verify`)"
                    )
                self._tail = entry

    def _take(self, entry: JournalEntry) -> None:
        """Add `entry` to what this object knows (under `_mutex`)."""
        self._entries.append(entry)
        if entry.intends:
            for key, digest in entry.intends.items():
                known = self._intended.setdefault(key, {})
                known.setdefault(digest, Intent(digest, entry.writer or "", entry.seq))
        for key in entry.keys:
            self._accepted[key] = entry.keys[key]
            self._accepted_at[key] = entry.seq

    def head(self) -> Checkpoint | None:
        """The chain's head; None when the journal has not started."""
        entries = self.entries()
        return Checkpoint(entries[-1].seq, entries[-1].hash) if entries else None

    def accepted(self, *, catch_up: bool = True) -> Mapping[str, str]:
        """Every storage key the journal accepted, with the sha256 its bytes must have (the
        newest entry's, were a key accepted twice). `catch_up=False` answers from what this
        object has read or appended, without asking the storage for newer segments."""
        with self._mutex:
            if catch_up:
                self._catch_up()
            if self._entries or not self._own:
                return self._accepted
            return {**self._accepted, **self._own}  # appended after an anchor, none read

    def accepted_at(self, *, catch_up: bool = True) -> Mapping[str, int]:
        """Every accepted storage key with the position of its entry: the journal's order,
        which no time written in a record can change. `catch_up=False` answers from what this
        object has read or appended, without asking the storage for newer segments (a writer
        asking where its own entries landed)."""
        with self._mutex:
            if catch_up:
                self._catch_up()
            if self._entries or not self._own_at:
                return self._accepted_at
            return {**self._accepted_at, **self._own_at}

    def intended(self) -> Mapping[str, Mapping[str, Intent]]:
        """Every storage key a writer announced, with the intent of each sha256 announced
        for it (two writers racing for one key announce two; one of them lands)."""
        with self._mutex:
            self._catch_up()
        return self._intended

    def read(self) -> JournalRead:
        """Read every segment afresh and check the chain, reporting rather than raising."""
        return check_segments(self.segments())

    def segments(self) -> list[tuple[str, bytes]]:
        """Every object under journal/ with its bytes, as stored (`check_segments` reads
        them): what verify takes under the lock, to check after it."""
        return [(key, self.storage.get(key)) for key in self.storage.keys(JOURNAL_AREA)]

    # -- writing ---------------------------------------------------------------------------

    def append(self, pending: Sequence[PendingEntry]) -> list[JournalEntry]:
        """Append entries as one segment, under the lock; the caller has written the records."""
        if not pending:
            return []
        self.check_writable()
        with self.lock():
            last = None
            if self.storage.appends_at_cached_head:
                # The head this object saw last is tried without reading the journal again to
                # see that it is still the head: the segment's create is the compare-and-swap
                # on the head (create-if-absent at the position after it), so a head that moved
                # on fails it, and only then is the journal read forward and the append retried.
                with self._mutex:
                    last = self._entries[-1] if self._entries else None
            if last is None:
                with self._mutex:
                    # Nothing read yet: from the anchor, when there is one (`anchor`).
                    last = None if self._entries else self._anchored_last()
            for _attempt in range(100):
                if last is None:
                    current = self.entries()
                    if not current:
                        # Storage used without Ledger.open (which starts the journal first).
                        self.start("journal started with its first record")
                        continue
                    last = current[-1]
                made, data = self._chain(last, pending)
                try:
                    self.storage._create(segment_key(made[0].seq), data)
                except RecordExistsError:
                    last = None  # another writer took the position (an object store's CAS)
                    continue
                crash_point("journal: appended")
                with self._mutex:
                    if self._entries and self._entries[-1].seq == made[0].seq - 1:
                        for entry in made:
                            self._take(entry)
                    elif not self._entries and self._anchor is not None:
                        self._tail = made[-1]
                        for entry in made:
                            for key, digest in entry.keys.items():
                                self._own[key], self._own_at[key] = digest, entry.seq
                return made
        raise IntegrityError("could not append to the journal: it kept moving (100 attempts)")

    @staticmethod
    def _chain(
        last: JournalEntry | None, pending: Sequence[PendingEntry]
    ) -> tuple[list[JournalEntry], bytes]:
        """The entries following `last`, and the segment's bytes (the very dicts hashed)."""
        seq = last.seq if last else 0
        prev = last.hash if last else GENESIS_PREV
        at = utc_now()
        made = []
        lines = []
        for item in pending:
            seq += 1
            fields: dict[str, Any] = {
                "schema_version": 1,
                "seq": seq,
                "kind": item.kind,
                "id": item.id,
                "keys": dict(item.keys),
                "sha256": item.sha256,
                "supersedes": item.supersedes,
                "at": at.isoformat().replace("+00:00", "Z"),
                "prev": prev,
                "note": None,
                "predating": None,
            }
            if isinstance(item, _Genesis):
                fields["note"], fields["predating"] = item.note, item.predating
            if isinstance(item, PendingIntent):
                fields["intends"], fields["writer"] = dict(item.intends), item.writer
            fields["hash"] = entry_hash(fields)
            entry = JournalEntry.model_validate(fields)
            made.append(entry)
            lines.append(_dump(fields))
            prev = entry.hash
        return made, b"".join(lines)

    def start(
        self, note: str, records: Sequence[PendingEntry] = (), *, predating: int | None = None
    ) -> bool:
        """Write the genesis entry (and entries for `records` already held), once.

        False when the journal had started already (another process got there first).
        """
        self.check_writable()
        with self.lock():
            if self.started():
                return False
            genesis = _Genesis("genesis", "genesis", {}, None, note=note, predating=predating)
            _made, data = self._chain(None, [genesis, *records])
            try:
                self.storage._create(segment_key(1), data)
            except RecordExistsError:
                return False
            return True

    # -- writing records: intent, record, entry --------------------------------------------

    def announce(self, intents: Sequence[PendingIntent]) -> None:
        """Append the intents of a writer about to write (the lock held by the caller)."""
        self.check_writable()
        with self.lock():
            self.append([intent for intent in intents if intent.intends])
            crash_point("journal: announced")

    def announced(self, key: str, digest: str) -> Intent | None:
        """The intent that announced `key` with bytes of sha256 `digest`, if any did."""
        return self.intended().get(key, {}).get(digest)

    @contextmanager
    def batch(self, intents: Sequence[PendingIntent]) -> Iterator[None]:
        """Announce `intents`, collect the entries of records created inside (announced keys and
        bytes), flush those together, append the entries as one segment, even after a failure."""
        with self.lock():
            self.announce(intents)
            outer: _Batch | None = getattr(self._held, "batch", None)
            batch = self._held.batch = _Batch({k: v for i in intents for k, v in i.intends.items()})
            synced = None
            try:
                with self.storage.deferred_sync() as synced:
                    yield
                    crash_point("after-record")
            finally:
                self._held.batch = outer
                if synced is not None and synced.done:
                    self.append(batch.entries)

    def _in_batch(self, values: Mapping[str, bytes]) -> _Batch | None:
        batch: _Batch | None = getattr(self._held, "batch", None)
        if batch is None or any(
            batch.intends.get(key) != sha256_bytes(data) for key, data in values.items()
        ):
            return None
        return batch

    def create_record(self, key: str, data: bytes, writer: str | None = None) -> None:
        """Store a record and append its entry, as one step for every reader (announced first,
        unless a `batch` announced it)."""
        with self.lock():
            batch = self._in_batch({key: data})
            if batch is not None:
                self.storage._create(key, data)
                batch.entries.append(record_entry(key, {key: data}))
                return
            if self.storage._exists(key):
                raise RecordExistsError(f"{self.storage.describe(key)} already exists")
            writer = writer or claim_of(key, data) or _WRITER
            self.announce([intent_of(_kind_of(key), writer, {key: sha256_bytes(data)})])
            self.storage._create(key, data)
            crash_point("after-record")
            self.append([record_entry(key, {key: data})])

    def create_group(
        self, prefix: str, values: dict[str, bytes], writer: str | None = None
    ) -> None:
        """Store a group (a decision's files) and append its entry, as one step."""
        members = {f"{prefix}/{n}": v for n, v in values.items()}
        with self.lock():
            batch = self._in_batch(members)
            if batch is not None:
                self.storage._create_group(prefix, values)
                batch.entries.append(record_entry(prefix, members))
                return
            if self.storage._exists(prefix) or self.storage._keys(prefix):
                raise RecordExistsError(f"{self.storage.describe(prefix)} already exists")
            intends = {key: sha256_bytes(data) for key, data in members.items()}
            self.announce([intent_of(_kind_of(prefix), writer or _WRITER, intends)])
            self.storage._create_group(prefix, values)
            crash_point("after-record")
            self.append([record_entry(prefix, members)])


_WRITER = f"pid {os.getpid()}"
"""The writer an intent names when its caller named none."""


def claim_of(key: str, data: bytes) -> str | None:
    """Who a score or label says wrote it, in the words its writer's intent uses (``judge
    <judge_id>``, ``label <kind> <name>``); None for other records or unreadable bytes."""
    area = key.split("/", 1)[0]
    if area not in ("scores", "labels"):
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    if area == "scores":
        return f"judge {value.get('judge_id')}"
    by = value.get("by")
    return f"label {by.get('kind')} {by.get('name')}" if isinstance(by, dict) else None


def _kind_of(key: str) -> str:
    return _KINDS.get(key.split("/", 1)[0], "record")


@dataclass
class _Batch:
    """The records a `Journal.batch` announced, and the entries of those created so far."""

    intends: dict[str, str]
    entries: list[PendingEntry] = field(default_factory=list)


@dataclass(frozen=True)
class _Genesis(PendingEntry):
    note: str = ""
    predating: int | None = None
