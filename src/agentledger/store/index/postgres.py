"""The index in a PostgreSQL database, shared by every machine that writes to one ledger.

The engine's part of `SqlIndex` (every query is there, in the POSTGRES dialect, and
tests/test_index_contract.py holds this index and SQLite's to one behaviour): the connection,
transactions sent as pipelines, retries, locks. Where the database is: `postgres_url`.

Many writers at once: every write is one transaction, sent as one pipeline (one round trip
for a batch of runs); runs, tags and scores are upserts (``ON CONFLICT``) in key order, so
that two machines indexing the same record never fail or deadlock; labels, whose current flag
is read and written, are written SERIALIZABLE. A transaction that PostgreSQL aborts as a
serialization failure or a deadlock is retried, with a growing random pause.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors

from agentledger.errors import IndexUnusableError, WriteFailedError
from agentledger.store.crashpoints import crash_point
from agentledger.store.index.dialect import POSTGRES
from agentledger.store.index.postgres_url import shown_url
from agentledger.store.index.queries import chunks
from agentledger.store.index.rows import IndexEntry, ScoreRow
from agentledger.store.index.sql import SqlIndex, Writer, first_line

__all__ = ["MIGRATION_LOCK", "PostgresIndex"]

T = TypeVar("T")

MIGRATION_LOCK = 0x61676C65  # "agle": the advisory lock every migrating connection takes
"""The key of the transaction-level advisory lock held while migrating."""
# What PostgreSQL aborts a transaction with when another one got in its way: try again.
_RETRY_ERRORS = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)


class PostgresIndex(SqlIndex):
    """The index in a PostgreSQL database (psycopg 3), migrated forward when opened.

    `url` is a libpq connection string or URL ("" reads libpq's PG* environment variables);
    passwords come from PGPASSWORD or the password file, never from ledger.json.
    """

    dialect = POSTGRES
    ROW_ERRORS = (OverflowError, ValueError, psycopg.DataError, psycopg.IntegrityError)
    RETRIES = 8
    """How many times a transaction aborted by a concurrent one is tried again."""

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        self.url = url
        self.where = shown_url(url)
        self.connect_timeout = connect_timeout
        self.round_trips = 0
        """Requests sent to the server so far (a statement, or a pipeline of them): what
        bench/scale.py reports per run."""
        # One connection, used by one thread at a time (a pipeline must not interleave).
        self._lock = threading.RLock()
        self.db = self._connect()
        try:
            self.migrate()
        except BaseException:
            self.db.close()
            raise

    # -- connection and transactions ---------------------------------------------------------

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=self.connect_timeout)
        except psycopg.Error as exc:
            raise IndexUnusableError(
                f"{self.where}: cannot connect to the PostgreSQL index ({first_line(exc)})"
            ) from None

    def _reopened(self) -> bool:
        """Connect again when the connection broke (the server restarted, a network blip):
        whether there is a new one to try with."""
        if not self.db.broken:
            return False
        try:
            self.db = self._connect()
        except IndexUnusableError:
            return False
        return True

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            for again in (True, False):
                self.round_trips += 1
                try:
                    return self.db.execute(sql, params).fetchall()
                except psycopg.OperationalError as exc:
                    if again and self._reopened():
                        continue
                    raise IndexUnusableError(
                        f"{self.where}: the PostgreSQL index did not answer ({first_line(exc)})"
                    ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _transact(self, body: Callable[[Writer], T], *, serializable: bool = False) -> T:
        """Run `body` in one transaction, sent as one pipeline; retried when PostgreSQL
        aborts it for a concurrent transaction, or once on a new connection when the old one
        broke (so `body` must be safe to run again: every write here is an upsert)."""
        reconnected = False
        with self._lock:
            for attempt in range(self.RETRIES + 1):
                try:
                    with self.db.pipeline(), self.db.transaction(), self.db.cursor() as cursor:
                        if serializable:
                            cursor.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                        result = body(cursor)
                        crash_point("index: before commit")
                    self.round_trips += 1
                    crash_point("index: committed")
                    return result
                except _RETRY_ERRORS:
                    self.round_trips += 1
                    time.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311 (a pause)
                except psycopg.OperationalError as exc:
                    if not reconnected and self._reopened():
                        reconnected = True
                        continue
                    raise WriteFailedError(
                        f"{self.where}: the PostgreSQL index refused the write "
                        f"({first_line(exc)}); run the command again (or `agentledger gc`) "
                        "when it is back"
                    ) from None
        raise WriteFailedError(
            f"{self.where}: the write kept conflicting with other writers' transactions "
            f"({self.RETRIES + 1} tries); run the command again (or `agentledger gc`)"
        )

    def _has_migrations_table(self) -> bool:
        return self._one("SELECT to_regclass('_migrations')") not in (None, (None,))

    @contextmanager
    def _migrating(self) -> Iterator[Writer]:
        # Machines opening a new database at once: one applies each step, the others wait
        # on the lock, then find the step done.
        with self._lock, self.db.transaction(), self.db.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            yield cursor
        self.round_trips += 1

    def _replace(self, tables: Sequence[str], body: Callable[[Writer], int]) -> int:
        """Empty `tables` and refill them by `insert`, in one transaction that holds off other
        writers (readers go on reading the old rows until it commits). Not retried: its input
        is read once, and the lock taken first leaves no concurrent transaction to abort it."""
        try:
            with self._lock, self.db.transaction(), self.db.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {', '.join(tables)} IN SHARE ROW EXCLUSIVE MODE")
                for table in tables:
                    cursor.execute(f"DELETE FROM {table}")
                count = body(cursor)
                crash_point("index: before commit")
        except psycopg.OperationalError as exc:
            raise WriteFailedError(
                f"{self.where}: the PostgreSQL index refused the rebuild ({first_line(exc)}); "
                "the index was left as it was"
            ) from None
        self.round_trips += 1
        crash_point("index: committed")
        return count

    def _refill(
        self,
        cursor: Writer,
        items: Iterable[T],
        insert: Callable[[Writer, Sequence[T]], int],
        name: Callable[[T], str],
        left_out: list[tuple[str, str]],
    ) -> int:
        """Insert `items` inside a rebuild's transaction, a savepoint per chunk; a chunk with a
        row the index cannot take is inserted row by row, each refused row left out."""
        added = 0
        for chunk in chunks(items):
            try:
                with self.db.transaction():
                    added += insert(cursor, chunk)
                continue
            except self.ROW_ERRORS:
                pass
            for item in chunk:
                try:
                    with self.db.transaction():
                        added += insert(cursor, [item])
                except self.ROW_ERRORS as exc:
                    left_out.append((name(item), f"the index cannot take it: {first_line(exc)}"))
        return added

    def rebuild_each(self, entries: Iterable[IndexEntry]) -> tuple[int, list[tuple[str, str]]]:
        left_out: list[tuple[str, str]] = []

        def insert(cursor: Writer) -> int:
            return self._refill(
                cursor, entries, self._insert_runs, lambda e: e.metadata.run_id, left_out
            )

        return self._replace(("run_tags", "runs"), insert), left_out

    def rebuild_scores_each(self, rows: Iterable[ScoreRow]) -> tuple[int, list[tuple[str, str]]]:
        left_out: list[tuple[str, str]] = []

        def insert(cursor: Writer) -> int:
            return self._refill(
                cursor, rows, self._insert_scores, lambda r: f"{r.run_id}/{r.judge_id}", left_out
            )

        return self._replace(("score_criteria", "scores"), insert), left_out

    def close(self) -> None:
        self.db.close()
