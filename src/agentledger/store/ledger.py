"""The ledger: an append-only store of sealed runs plus a derived, queryable index."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

from agentledger.errors import (
    IndexUnusableError,
    IndexVersionError,
    InputError,
    LedgerNotFoundError,
    RecordError,
    RunExistsError,
    RunNotFoundError,
)
from agentledger.identity import sha256_bytes
from agentledger.records import (
    LedgerConfig,
    Manifest,
    RunMetadata,
    RunSummary,
    parse_record,
)
from agentledger.store.backends import (
    UnknownBackendError,
    check_index,
    make_index,
    make_storage,
    split_uri,
)
from agentledger.store.crashpoints import crash_point
from agentledger.store.index import (
    IndexedRun,
    IndexEntry,
    QueryResult,
    RunFilter,
    RunIndex,
)
from agentledger.store.journal_upkeep import start_journal_of_old_ledger
from agentledger.store.sealed_reads import check_run_journaled, check_sealed
from agentledger.store.seen_heads import (
    HeadProblem,
    SeenHead,
    check_seen_head,
    forget_seen_head,
    note_head,
    read_seen_head,
    refuse_missing_journal,
)
from agentledger.store.storage import MANIFEST_NAME, StorageBackend
from agentledger.store.storage.journal import Checkpoint, run_entry, run_intent
from agentledger.store.writer import (
    METADATA,
    SUMMARY,
    Progress,
    RunWriter,
    SealedRun,
    record_bytes,
)

if TYPE_CHECKING:  # gc, sealing many runs and reindexing: imported by the methods doing them
    from agentledger.store.gc import GcReport
    from agentledger.store.reindex import ReindexReport
    from agentledger.store.sealing import RunContent

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_LEDGER",
    "ENV_VAR",
    "Ledger",
    "Progress",
    "StoredRun",
    "default_ledger_path",
    "open_storage",
]

DEFAULT_LEDGER = ".agentledger"
ENV_VAR = "AGENTLEDGER_DIR"
CONFIG_NAME = "ledger.json"


def default_ledger_path() -> Path:
    """Where the ledger is when no path is given: $AGENTLEDGER_DIR, else ./.agentledger."""
    return Path(os.environ.get(ENV_VAR) or DEFAULT_LEDGER)


def _read_config(root: Path) -> LedgerConfig:
    if root.exists() and not root.is_dir():
        raise LedgerNotFoundError(f"{root} is a file, not a ledger directory")
    config_path = root / CONFIG_NAME
    if not config_path.is_file():
        raise LedgerNotFoundError(
            f"no ledger at {root} ({CONFIG_NAME} not found); "
            "create one with `agentledger init` or point --ledger / AGENTLEDGER_DIR at it"
        )
    return parse_record(LedgerConfig, config_path.read_bytes(), str(config_path))


def _mark_journal(root: Path) -> None:
    """Note beside ledger.json that the ledger has a journal (`JOURNAL_MARK`); a ledger that
    cannot be written (read-only) is left as it is."""
    with contextlib.suppress(OSError):
        (root / JOURNAL_MARK).write_bytes(_JOURNAL_MARK_TEXT)


def _backend_storage(root: Path, config: LedgerConfig) -> StorageBackend:
    try:
        return make_storage(config.storage, root)
    except UnknownBackendError as exc:
        raise RecordError(root / CONFIG_NAME, str(exc), field="storage") from None


def _backend_index(root: Path, config: LedgerConfig) -> RunIndex:
    try:
        return make_index(config.index, root)
    except UnknownBackendError as exc:
        raise RecordError(root / CONFIG_NAME, str(exc), field="index") from None


def open_storage(path: str | Path) -> StorageBackend:
    """The storage backend the ledger at `path` names in its ledger.json (no index opened).

    For parts that need only records, such as a model client's response cache made before the
    ledger is opened.
    """
    root = Path(path)
    return _backend_storage(root, _read_config(root))


@dataclass(frozen=True)
class StoredRun:
    """A sealed run read back from the files."""

    metadata: RunMetadata
    summary: RunSummary | None
    manifest: Manifest
    manifest_sha256: str

    def index_entry(self) -> IndexEntry:
        return IndexEntry(self.metadata, self.summary, self.manifest, self.manifest_sha256)


class OpenedLedger(NamedTuple):
    """What `Ledger.open_or_init` gives: the ledger and whether it was created; as a context
    manager, the ledger itself, closed on exit."""

    ledger: Ledger
    created: bool

    def __enter__(self) -> Ledger:
        return self.ledger

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.ledger.close()


"""The index migration that added the outcomes table (an index it upgraded is filled)."""

_RECORD_FOLDERS = ("runs", "scores", "labels", "decisions", "outcomes")
JOURNAL_MARK = "journal.started"
"""A file beside ledger.json saying the ledger has a journal (every ledger made or opened
since the journal came): a journal missing then is an integrity failure, never a fresh start.
(A file of its own, not a field of ledger.json, so that older versions still open the ledger.)"""
_JOURNAL_MARK_TEXT = (
    b"This ledger has a journal (journal/). Without it, agentledger refuses the ledger as an "
    b"integrity failure rather than start a new one.\n"
)


class Ledger:
    """A ledger: its ledger.json, a storage backend holding its runs and records, and an index
    derived from them (by default ``runs/`` and ``index.sqlite`` in the ledger directory)."""

    def __init__(
        self, root: Path, config: LedgerConfig, storage: StorageBackend, index: RunIndex
    ) -> None:
        self.root = root
        self.config = config
        self.storage = storage
        self.index = index
        self.journal_started_now: int | None = None
        """How many records a journal built by this open anchored (a ledger older than the
        journal, opened for the first time since); None when it had a journal already."""
        self.head_problem: HeadProblem | None = None
        """The journal found behind or beside the head this machine saw it show before
        (`agentledger.store.seen_heads`); commands warn, `verify` fails."""
        self.replaced_head: SeenHead | None = None
        """The head of another ledger this machine saw at the same place, when `init` made
        this one there (the CLI says so)."""
        self.created_here: bool | None = None
        """Whether this process created the ledger (`init`), and with it its directory (True)
        or in a directory that was there, empty (False); None: opened, not created."""

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        max_artifact_bytes: int | None = None,
        storage: str = "local",
        index: str = "sqlite",
    ) -> Ledger:
        """Create a new ledger at `path` (which may exist as an empty directory).

        `storage` and `index` are backend URIs (see `agentledger.store.backends`), recorded in
        ledger.json so that every later `open` uses the same ones.
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise LedgerNotFoundError(f"{root} is a file, not a directory; cannot create a ledger")
        if (root / CONFIG_NAME).exists():
            raise InputError(f"{root} already holds a ledger")
        settings: dict[str, Any] = {"storage": storage, "index": index}
        if max_artifact_bytes is not None:
            settings["max_artifact_bytes"] = max_artifact_bytes
        try:
            config = LedgerConfig(**settings)
            # Checked before anything is written: an unknown backend writes nothing.
            backend = make_storage(config.storage, root)
            check_index(config.index)
        except (ValueError, UnknownBackendError) as exc:
            raise InputError(f"cannot create a ledger at {root}: {exc}") from None
        created = not root.exists()
        root.mkdir(parents=True, exist_ok=True)
        try:
            if split_uri(config.index)[0] != "sqlite":
                # An index server that cannot be reached (or refuses) stops here, before the
                # storage is touched; opening it also migrates a new database.
                try:
                    make_index(config.index, root).close()
                except UnknownBackendError as exc:
                    raise InputError(f"cannot create a ledger at {root}: {exc}") from None
            backend.initialize()
            backend.journal.start("journal started with a new ledger")
        except BaseException:
            if created:  # a backend that cannot be used (no bucket, refused): leave nothing
                shutil.rmtree(root, ignore_errors=True)
            raise
        # Written last and atomically: a ledger.json on disk means a complete ledger.
        if backend.shared_between_processes:
            _mark_journal(root)
        # Made on purpose where another ledger was seen: this one is new, not that one gone back.
        replaced = read_seen_head(root, backend)
        if replaced is not None:
            forget_seen_head(root, backend)
        tmp = root / f".{CONFIG_NAME}.tmp"
        tmp.write_bytes(record_bytes(config))
        os.replace(tmp, root / CONFIG_NAME)
        ledger = cls.open(root)
        ledger.created_here = created
        ledger.replaced_head = replaced
        return ledger

    @classmethod
    def open(cls, path: str | Path) -> Ledger:
        """Open the ledger at `path` on the backends its ledger.json names, migrating its index
        forward if needed. A ledger.json that names none (written before backends were
        recorded) means local storage and a SQLite index."""
        root = Path(path)
        config = _read_config(root)
        storage = _backend_storage(root, config)
        index = _backend_index(root, config)
        ledger = cls(root, config, storage, index)
        try:
            # A storage that lives as long as this process (memory) outlives no directory.
            lasting = storage.shared_between_processes
            marked = lasting and (root / JOURNAL_MARK).exists()
            if not storage.journal.started():
                refuse_missing_journal(root, storage, JOURNAL_MARK if marked else None)
            ledger.journal_started_now = start_journal_of_old_ledger(storage)
            if lasting and not marked:
                _mark_journal(root)
            seen = read_seen_head(root, storage) if lasting else None
            ledger.head_problem = check_seen_head(root, storage)
            if ledger.head_problem is None and seen is not None:
                # A writer reads on from the head seen, not the whole journal.
                storage.journal.anchor(seen.head)
            if ledger.head_problem is not None:
                # No writer builds on a ledger that went back: what it would write would
                # stand on a past the ledger was seen beyond (reading goes on, with a warning).
                storage.journal.refuse_writes(
                    f"refused to write, nothing was written: {ledger.head_problem}"
                )
            if ledger.journal_started_now is not None or index.upgraded_by:
                from agentledger.store.record_kinds import upgrade_records

                upgrade_records(ledger, index.upgraded_by, ledger.journal_started_now)
        except BaseException:
            ledger.close()
            raise
        return ledger

    @classmethod
    def open_or_init(cls, path: str | Path) -> OpenedLedger:
        """Open the ledger at `path`, creating it first if there is none; says if it was created.

        ``ledger, created = Ledger.open_or_init(p)``, or ``with Ledger.open_or_init(p) as
        ledger:`` (closed at the block's end)."""
        root = Path(path)
        if (root / CONFIG_NAME).is_file():
            return OpenedLedger(cls.open(root), False)
        return OpenedLedger(cls.init(root), True)

    def remove_if_unused(self) -> bool:
        """Remove this ledger, which this process created (`init`), if nothing was written
        into it since: a command that created it and then failed leaves no empty ledger
        behind. Closes the ledger. A directory that was there before is left, emptied; a
        ledger holding any run or record is never removed. Says whether it was removed."""
        if self.created_here is None or split_uri(self.config.storage)[0] != "local":
            return False
        try:
            unused = self.count() == 0 and not any(
                any((self.root / folder).rglob("*.json")) for folder in _RECORD_FOLDERS
            )
        finally:
            self.close()
        if not unused:
            return False
        if self.created_here:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            for entry in self.root.iterdir():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        return True

    def accept_current_head(self) -> Checkpoint | None:
        """Take the head the journal shows now as the one this machine saw (a rollback that
        was meant: a backup restored on purpose); writers may write again. Gives the head."""
        head = forget_seen_head(self.root, self.storage)
        self.head_problem = None
        self.storage.journal.refuse_writes(None)
        return head

    def close(self) -> None:
        """Close the index, then release the storage's clients (an S3 client's connections).
        The head the journal shows now is noted for the next command (`seen_heads`)."""
        try:
            if self.head_problem is None:
                note_head(self.root, self.storage)
            self.index.close()
        finally:
            self.storage.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------

    def new_run(self, metadata: RunMetadata, *, max_artifact_bytes: int | None = None) -> RunWriter:
        """Start writing a run (see RunWriter); `max_artifact_bytes` overrides the limit.
        Refused (IntegrityError) on a ledger found rolled back, before anything is staged."""
        self.storage.journal.check_writable()
        return RunWriter(self, metadata, max_artifact_bytes=max_artifact_bytes)

    def seal_batch(self, writers: Sequence[RunWriter]) -> list[SealedRun]:
        """Seal several runs with one flush to disk and one index transaction.

        All or nothing for the index; each run becomes visible atomically on its own. A run id
        that turns out to be sealed already raises RunExistsError after the others landed.
        """
        try:
            self.storage.journal.check_writable()
            prepared = [writer.prepare() for writer in writers]
        except BaseException:
            # One run the ledger cannot take: the batch is refused whole, nothing is written.
            for writer in writers:
                writer.discard()
            raise
        # Record, then entry, then index, under the journal lock: see store/storage/journal.py.
        with self.storage.journal.lock():
            self.storage.journal.announce(
                [run_intent([(p[2].metadata.run_id, p[2].manifest_sha256) for p in prepared])]
            )
            published = self.storage.publish([p[0] for p in prepared], [p[1] for p in prepared])
            existing = set(published)
            landed = [p for p in prepared if p[2].metadata.run_id not in existing]
            crash_point("after-record")
            self.storage.journal.append(
                [run_entry(p[2].metadata.run_id, p[2].manifest_sha256) for p in landed]
            )
            self.index.add([p[2] for p in landed])
        sealed: list[SealedRun] = []
        for writer, (_staged, _manifest, entry) in zip(writers, prepared, strict=True):
            if entry.metadata.run_id in existing:
                writer.discard()
                continue
            result = SealedRun(
                run_id=entry.metadata.run_id,
                manifest=entry.manifest,
                manifest_sha256=entry.manifest_sha256,
                location=self.storage.locate(entry.metadata.run_id),
            )
            writer._mark_sealed(result)
            sealed.append(result)
        if existing:
            raise RunExistsError(
                f"run {sorted(existing)[0]} already exists in {self.root}; "
                "sealed runs are never replaced"
            )
        return sealed

    def seal_runs(
        self,
        runs: Iterable[RunContent],
        *,
        batch_size: int = 200,
        max_artifact_bytes: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[SealedRun]:
        """Seal runs whose whole content is known up front (an import), in batches.

        Each batch is written into one staging place, flushed to disk once, made visible run
        by run (one rename each) and indexed in one transaction, while the next batch is being
        written. Runs already landed stay when a later one fails; a run id that turns out to be
        sealed already raises RunExistsError. `progress(sealed)` follows each batch.
        """
        from agentledger.store.sealing import seal_runs

        return seal_runs(
            self,
            runs,
            batch_size=batch_size,
            max_artifact_bytes=max_artifact_bytes or self.config.max_artifact_bytes,
            progress=progress,
        )

    # -- reading -------------------------------------------------------------------------

    def resolve(self, run_id_or_prefix: str) -> str:
        """The full run id for an exact id or an unambiguous prefix of one."""
        if self.index.get(run_id_or_prefix) is not None:
            return run_id_or_prefix
        matches = self.index.ids_with_prefix(run_id_or_prefix, limit=6)
        if len(matches) == 1:
            return matches[0]
        if not matches:
            if self.storage.has_run(run_id_or_prefix):
                check_run_journaled(self.storage, run_id_or_prefix, self.root)
                return run_id_or_prefix
            raise RunNotFoundError(f"no run matches {run_id_or_prefix!r} in {self.root}")
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise RunNotFoundError(f"{run_id_or_prefix!r} matches several runs: {shown}")

    def read_bytes(self, run_id: str, name: str) -> bytes:
        """One artifact of a sealed run."""
        try:
            return self.storage.read(run_id, name)
        except FileNotFoundError:
            raise RunNotFoundError(
                f"run {run_id} has no file {name!r} "
                f"(it has: {', '.join(self.storage.list_files(run_id))})"
            ) from None

    def load(self, run_id: str, *, sealed: bool = False) -> StoredRun:
        """Read a run's records (metadata, summary, manifest) from its files; with `sealed`,
        each checked against the manifest first (TamperedError: what a judge or the viewer
        reads, where `verify` reports instead)."""
        manifest_raw = self.read_bytes(run_id, MANIFEST_NAME)
        manifest = parse_record(Manifest, manifest_raw, self.storage.locate(run_id, MANIFEST_NAME))

        def read(name: str) -> bytes:
            data = self.read_bytes(run_id, name)
            if sealed and name in manifest.files:
                check_sealed(self.storage, run_id, name, data, manifest.files[name])
            return data

        metadata = parse_record(RunMetadata, read(METADATA), self.storage.locate(run_id, METADATA))
        if metadata.run_id != run_id or manifest.run_id != run_id:
            raise RecordError(
                self.storage.locate(run_id, METADATA),
                f"names run {metadata.run_id!r} but is stored as {run_id!r}",
                field="run_id",
            )
        summary = None
        if SUMMARY in manifest.files:
            summary = parse_record(RunSummary, read(SUMMARY), self.storage.locate(run_id, SUMMARY))
        return StoredRun(metadata, summary, manifest, sha256_bytes(manifest_raw))

    def runs(self, run_filter: RunFilter | None = None) -> list[IndexedRun]:
        """Runs matching the filter, newest first, from the index."""
        return self.index.query(run_filter or RunFilter())

    def count(self, run_filter: RunFilter | None = None) -> int:
        return self.index.count(run_filter)

    def sql(self, query: str) -> QueryResult:
        """A user's read-only SQL query against the index: a feature of the SQLite index only
        (its tables are not an interface; every other caller asks `RunIndex`'s typed queries)."""
        from agentledger.store.index.sqlite import SQLiteIndex

        if not isinstance(self.index, SQLiteIndex):
            raise InputError(
                f"{self.root}: `agentledger sql` queries the SQLite index, and this ledger's "
                f"index is {type(self.index).__name__}"
            )
        return self.index.sql(query)

    # -- maintenance ---------------------------------------------------------------------

    def iter_stored(
        self, progress: Progress | None = None
    ) -> Iterator[tuple[str, StoredRun | None, str | None]]:
        """Every visible run as (run_id, stored run or None, problem or None)."""
        ids = sorted(self.storage.run_ids())
        for done, run_id in enumerate(ids, start=1):
            try:
                yield run_id, self.load(run_id), None
            except (InputError, OSError) as exc:
                yield run_id, None, str(exc)
            if progress:
                progress(done, len(ids))

    def _on_index(self, index: RunIndex | None) -> Ledger:
        return Ledger(
            self.root, self.config, self.storage, index or _backend_index(self.root, self.config)
        )

    def reindex(self, progress: Progress | None = None) -> ReindexReport:
        """Rebuild the index (runs, scores and labels) from the files, beside the old one, and
        swap it in atomically (see `agentledger.store.reindex`); on failure the old index stays.
        Records that cannot be indexed are listed, not indexed."""
        from agentledger.store.reindex import rebuild_index

        self.index.close()
        try:
            report = rebuild_index(
                self.root,
                open_ledger=self._on_index,
                index_uri=self.config.index,
                old_usable=True,
                progress=progress,
            )
            report.journal_started_now = self.journal_started_now
            return report
        finally:
            self.index = _backend_index(self.root, self.config)

    @classmethod
    def reindex_from_scratch(
        cls, path: str | Path, progress: Progress | None = None
    ) -> ReindexReport:
        """Rebuild the index of the ledger at `path`, also when the index in use cannot be
        opened (corrupt, or from a newer agentledger): it is then replaced whole."""
        from agentledger.store.reindex import rebuild_index

        root = Path(path)
        config = _read_config(root)
        storage = _backend_storage(root, config)
        try:
            _backend_index(root, config).close()
            usable = True
        except (IndexVersionError, IndexUnusableError):
            usable = False

        started = start_journal_of_old_ledger(storage)

        def on_index(index: RunIndex | None) -> Ledger:
            return cls(root, config, storage, index or _backend_index(root, config))

        report = rebuild_index(
            root,
            open_ledger=on_index,
            index_uri=config.index,
            old_usable=usable,
            progress=progress,
        )
        report.journal_started_now = started
        return report

    def gc(self) -> GcReport:
        """Remove staging debris of dead writers; index the sealed runs, scores and labels the
        index missed (see `agentledger.store.gc`)."""
        from agentledger.store.gc import collect_garbage

        return collect_garbage(self)
