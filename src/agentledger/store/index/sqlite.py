"""The index as one SQLite file: the engine's part of `SqlIndex` (the SQL is there).

What only SQLite has is here: the connection and its pragmas, a write transaction with its
statement journals in memory, refusing a damaged file, and `sql()`, a user's own read-only
query (`agentledger sql`), a feature of this engine alone.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from agentledger.errors import (
    IndexUnusableError,
    InputError,
    ReadOnlyQueryError,
    WriteFailedError,
)
from agentledger.store.crashpoints import crash_point
from agentledger.store.index.dialect import SQLITE
from agentledger.store.index.rows import QueryResult
from agentledger.store.index.sql import SqlIndex, Writer

__all__ = ["SQLiteIndex"]

T = TypeVar("T")

# Authorizer action codes that a read-only query may use.
_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}
_SQLITE_FULL = 13
_SQLITE_IOERR = 10
_SQLITE_READONLY = 8


def _writable(path: Path) -> bool:
    """Whether this process may write the index and the files SQLite keeps beside it (false on
    a read-only mount: access() says so even to root)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _refused_write(exc: sqlite3.Error) -> bool:
    """Whether `exc` is the disk refusing a write (full, I/O error, read-only)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (_SQLITE_FULL, _SQLITE_IOERR, _SQLITE_READONLY)


class SQLiteIndex(SqlIndex):
    """The index as one SQLite file (WAL mode, busy timeout), migrated forward when opened."""

    dialect = SQLITE
    ROW_ERRORS = (
        OverflowError,
        ValueError,
        sqlite3.InterfaceError,
        sqlite3.DataError,
        sqlite3.IntegrityError,
    )
    BUSY_TIMEOUT_MS = 60_000
    MMAP_BYTES = 1 << 30
    """Read up to this much of the file through a memory map rather than read() calls: the
    viewer's heavier runs pages (a common filter sorted by another column, with its count)
    took 1.5 to 2x as long without (bench/viewer.py's sweep). Writes still go through write(),
    so a full disk is reported as before."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)
        self.db = self._connect(path)
        try:
            self.migrate()
            self._check_tables()
        except BaseException:
            self.db.close()
            raise

    # The tables every query relies on: one dropped by hand makes the index unusable (and
    # `reindex` replaces it), rather than a traceback in the middle of a command.
    _TABLES = frozenset({"runs", "run_tags", "scores", "score_criteria"})

    def _check_tables(self) -> None:
        try:
            present = {
                str(row[0])
                for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            raise IndexUnusableError(f"{self.path}: not a usable SQLite index ({exc})") from None
        missing = sorted(self._TABLES - present)
        if missing:
            raise IndexUnusableError(
                f"{self.path}: the index has no table {missing[0]!r} (damaged by hand?); "
                "`agentledger reindex` builds a new one from the runs and scores, beside it, "
                "and swaps it in when complete"
            )

    def _connect(self, path: Path) -> sqlite3.Connection:
        if path.is_file() and not _writable(path):
            return self._connect_read_only(path)
        try:
            db = sqlite3.connect(
                path,
                isolation_level=None,
                timeout=self.BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
            )
            db.execute(f"PRAGMA busy_timeout = {self.BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA foreign_keys = ON")
            db.execute(f"PRAGMA mmap_size = {self.MMAP_BYTES}")
        except sqlite3.DatabaseError as exc:
            if _refused_write(exc):
                raise WriteFailedError(
                    f"{path}: the index cannot be opened, the disk refused a write ({exc}); "
                    "make room (or make the ledger writable) and run the command again"
                ) from None
            raise IndexUnusableError(
                f"{path}: not a usable SQLite index ({exc}); `agentledger reindex` builds a "
                "new one from the runs and scores (the files are never changed by it)"
            ) from None
        return db

    read_only = False
    """Opened read-only: the ledger is on a read-only mount or not the user's to write (`verify`,
    reports and queries still work; a write fails saying why)."""

    def _connect_read_only(self, path: Path) -> sqlite3.Connection:
        """A connection that writes nothing, not even WAL or lock files beside the index. With no
        write-ahead log beside it the file is the whole index and nobody can be writing it (no
        one may write there), so it is opened immutable; with one, read-only through the log."""
        wal = path.with_name(path.name + "-wal")
        mode = "mode=ro" if wal.exists() and wal.stat().st_size else "immutable=1"
        try:
            db = sqlite3.connect(
                f"{path.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False
            )
            db.execute("PRAGMA query_only = ON")
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise IndexUnusableError(
                f"{path}: the index cannot be read on this read-only ledger ({exc}); make the "
                "ledger writable and run `agentledger reindex`"
            ) from None
        self.read_only = True
        return db

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def _has_migrations_table(self) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
        ).fetchone()
        return row is not None

    @contextmanager
    def _migrating(self) -> Iterator[Writer]:
        if self.read_only:
            raise IndexUnusableError(
                f"{self.path}: the index was made by an older agentledger and cannot be brought "
                "up to date on this read-only ledger; make it writable and run any command"
            )
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction, with temporary storage in memory while it lasts.

        Statement journals in memory: an INSERT OR REPLACE inside a transaction keeps one per
        row, and on disk each row costs a dozen writes to a temporary file (about a third of
        the time of indexing a batch of sealed runs). Reads go back to the default: the
        reports' large GROUP BY sorts ran about 1.5x slower with temp_store = MEMORY.
        """
        try:
            self.db.execute("PRAGMA temp_store = MEMORY")
            try:
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    crash_point("index: before commit")
                    self.db.execute("COMMIT")
                    crash_point("index: committed")
                except BaseException:
                    if self.db.in_transaction:
                        with suppress(sqlite3.Error):
                            self.db.execute("ROLLBACK")
                    raise
            finally:
                with suppress(sqlite3.Error):
                    self.db.execute("PRAGMA temp_store = DEFAULT")
        except sqlite3.OperationalError as exc:
            if _refused_write(exc):
                raise WriteFailedError(
                    f"{self.path}: the disk refused the write ({exc}); the index was not "
                    "changed by it"
                ) from None
            raise

    def _transact(self, body: Callable[[Writer], T], *, serializable: bool = False) -> T:
        # One writer at a time (BEGIN IMMEDIATE): every transaction is serializable.
        with self._writing():
            return body(self.db)

    def _replace(self, tables: Sequence[str], body: Callable[[Writer], int]) -> int:
        with self._writing():
            for table in tables:
                self.db.execute(f"DELETE FROM {table}")
            return body(self.db)

    def seal_file(self) -> None:
        """Fold the write-ahead log into the file and stop using one, so that the file alone
        is the whole index (before it is renamed into place by a rebuild)."""
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.db.execute("PRAGMA journal_mode = DELETE")
        except sqlite3.OperationalError as exc:
            if _refused_write(exc):
                raise WriteFailedError(f"{self.path}: the disk refused the write ({exc})") from None
            raise

    def sql(self, query: str, params: Sequence[Any] = ()) -> QueryResult:
        """Run a user's read-only SQL query (`agentledger sql`): a feature of this backend only,
        over its tables as docs/cli.md shows them; anything that would write raises
        ReadOnlyQueryError."""
        uri = self.path.resolve().as_uri() + "?mode=ro"
        db = sqlite3.connect(uri, uri=True, timeout=self.BUSY_TIMEOUT_MS / 1000)
        try:
            db.execute("PRAGMA query_only = ON")

            def authorize(action: int, *_args: Any) -> int:
                return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY

            db.set_authorizer(authorize)
            try:
                cursor = db.execute(query, params)
                rows = cursor.fetchall()
            except sqlite3.DatabaseError as exc:
                message = str(exc)
                if "not authorized" in message or "readonly" in message:
                    raise ReadOnlyQueryError(
                        f"only read-only queries (SELECT, WITH ... SELECT) are allowed: {message}"
                    ) from None
                raise InputError(f"SQL error: {message}") from None
            columns = [d[0] for d in cursor.description or ()]
            return QueryResult(columns=columns, rows=rows)
        finally:
            db.close()

    def close(self) -> None:
        self.db.close()
