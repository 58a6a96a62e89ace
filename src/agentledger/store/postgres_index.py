"""The index in a PostgreSQL database, shared by every machine that writes to one ledger.

The same typed queries as `SQLiteIndex` (tests/test_index_contract.py holds both to one
behaviour); the WHERE clauses and the chosen-score CTE are `sqlite_where`'s, in its POSTGRES
dialect, and the rest is PostgreSQL's own SQL. Tables and forward-only migrations are in
`postgres_migrations` (numbered as SQLite's). Where the database is: `postgres_url`.

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
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors

from agentledger.errors import IndexUnusableError, IndexVersionError, WriteFailedError
from agentledger.store.crashpoints import crash_point
from agentledger.store.index import (
    CriterionCell,
    CriterionFirst,
    Dimension,
    IndexedRun,
    IndexEntry,
    JudgeTally,
    LabelResult,
    LabelRow,
    Ratings,
    RunColumns,
    RunFacets,
    RunFilter,
    RunIndex,
    RunSort,
    RunVerdict,
    ScoreRow,
    SkippedScore,
    VerdictCount,
    facets_of,
    format_time,
    label_rows_from,
    packed_criteria,
    ratings_of,
    run_columns,
    stored_flag,
)
from agentledger.store.postgres_migrations import MIGRATION_LOCK, MIGRATIONS
from agentledger.store.postgres_url import shown_url
from agentledger.store.sqlite_where import (
    POSTGRES,
    chosen_sql,
    criteria_join_sql,
    current_label_where,
    dimension_sql,
    distinct_values_sql,
    marks,
    page_sql,
    sort_sql,
    where_sql,
)

__all__ = ["PostgresIndex"]

T = TypeVar("T")
Cursor = psycopg.Cursor[tuple[Any, ...]]

_P = POSTGRES
_COLUMNS = (
    "run_id, scenario, model, model_served, system_prompt_hash, variant, started_at, "
    "backfilled, commands_run, commands_denied, exit_status, sealed_at, manifest_sha256, "
    "metadata_json, summary_json, kind"
)
_RUN_FIELDS = RunColumns._fields
_INSERT_RUN = (
    f"INSERT INTO runs ({', '.join(_RUN_FIELDS)}) VALUES ({_P.marks(len(_RUN_FIELDS))}) "
    "ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{name} = EXCLUDED.{name}" for name in _RUN_FIELDS if name != "run_id")
)
_INSERT_TAG = (
    "INSERT INTO run_tags (run_id, key, value) VALUES (%s, %s, %s) "
    "ON CONFLICT (run_id, key) DO UPDATE SET value = EXCLUDED.value"
)
_SCORE_FIELDS = (
    "run_id, judge_id, kind, model, pack, verdict, diagnosis, skipped_reason, created_at, "
    "score_json, criteria_packed"
)
_INSERT_SCORE = (
    f"INSERT INTO scores ({_SCORE_FIELDS}) VALUES ({_P.marks(11)}) "
    "ON CONFLICT (run_id, judge_id) DO UPDATE SET "
    + ", ".join(
        f"{name} = EXCLUDED.{name}"
        for name in _SCORE_FIELDS.split(", ")
        if name not in ("run_id", "judge_id")
    )
)
_INSERT_CRITERION = (
    "INSERT INTO score_criteria (run_id, judge_id, criterion, fired) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (run_id, judge_id, criterion) DO UPDATE SET fired = EXCLUDED.fired"
)
_LABEL_FIELDS = (
    "label_id, run_id, source_kind, source_name, verdict, diagnosis, supersedes, created_at, "
    "label_json, criteria_packed"
)
_INSERT_LABEL = (
    f"INSERT INTO labels ({_LABEL_FIELDS}) VALUES ({_P.marks(10)}) "
    "ON CONFLICT (label_id) DO UPDATE SET "
    + ", ".join(
        f"{name} = EXCLUDED.{name}" for name in _LABEL_FIELDS.split(", ") if name != "label_id"
    )
)
# The current label of each (run, source): its newest, unless a label of the run supersedes
# it. As SQLite's, with the subquery named and the flag cast to the column's integer.
_CURRENT = (
    "UPDATE labels SET current = (label_id IN (SELECT label_id FROM (SELECT label_id, "
    "row_number() OVER (PARTITION BY run_id, source_kind, source_name "
    "ORDER BY created_at DESC, label_id DESC) AS rn FROM labels l {runs}) ranked WHERE rn = 1) "
    "AND NOT EXISTS (SELECT 1 FROM labels x WHERE x.run_id = labels.run_id "
    "AND x.supersedes = labels.label_id))::int{where}"
)
_C = 'COLLATE "C"'

# What a row the index cannot take raises (a NUL character, a number beyond 64 bits): that
# row is left out and reported; any other error stops the write.
_ROW_ERRORS = (OverflowError, ValueError, psycopg.DataError, psycopg.IntegrityError)
# What PostgreSQL aborts a transaction with when another one got in its way: try again.
_RETRY_ERRORS = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)
_CHUNK = 1000


def _chunks(items: Iterable[T], size: int = _CHUNK) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _int_flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class PostgresIndex(RunIndex):
    """The index in a PostgreSQL database (psycopg 3), migrated forward when opened.

    `url` is a libpq connection string or URL ("" reads libpq's PG* environment variables);
    passwords come from PGPASSWORD or the password file, never from ledger.json.
    """

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
                f"{self.where}: cannot connect to the PostgreSQL index ({_first_line(exc)})"
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
                        f"{self.where}: the PostgreSQL index did not answer ({_first_line(exc)})"
                    ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _transact(self, body: Callable[[Cursor], T], *, serializable: bool = False) -> T:
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
                        f"({_first_line(exc)}); run the command again (or `agentledger gc`) "
                        "when it is back"
                    ) from None
        raise WriteFailedError(
            f"{self.where}: the write kept conflicting with other writers' transactions "
            f"({self.RETRIES + 1} tries); run the command again (or `agentledger gc`)"
        )

    # -- migrations --------------------------------------------------------------------------

    def applied_migrations(self) -> list[str]:
        if self._one("SELECT to_regclass('_migrations')") in (None, (None,)):
            return []
        return [str(row[0]) for row in self._rows("SELECT name FROM _migrations ORDER BY name")]

    def migrate(self) -> list[str]:
        """Apply every migration this index lacks, each in its own transaction with the row
        recording it; refuse an index a newer agentledger migrated."""
        known = [name for name, _ in MIGRATIONS]
        applied = self.applied_migrations()
        unknown = sorted(set(applied) - set(known))
        if unknown:
            raise IndexVersionError(
                f"{self.where}: this index was migrated by a newer agentledger "
                f"(unknown migration {unknown[0]}); upgrade agentledger, or build an index for "
                "this version from the files with `agentledger reindex` into a new database"
            )
        if len(applied) == len(known):
            return []
        newly: list[str] = []
        for name, statements in MIGRATIONS:
            if name in applied:
                continue
            with self._lock, self.db.transaction():
                # Machines opening a new database at once: one applies, the others wait, then
                # find the step done.
                self.db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS _migrations "
                    '(name TEXT COLLATE "C" PRIMARY KEY, applied_at TEXT NOT NULL)'
                )
                done = self.db.execute(
                    "SELECT 1 FROM _migrations WHERE name = %s", (name,)
                ).fetchone()
                if not done:
                    for statement in statements:
                        self.db.execute(statement)
                    self.db.execute(
                        "INSERT INTO _migrations (name, applied_at) VALUES (%s, %s)",
                        (name, format_time(datetime.now(UTC))),
                    )
                    newly.append(name)
            self.round_trips += 4 + len(statements)
        return newly

    # -- writing -----------------------------------------------------------------------------

    @staticmethod
    def _insert_runs(cursor: Cursor, entries: Sequence[IndexEntry]) -> int:
        ordered = sorted(entries, key=lambda e: e.metadata.run_id)  # one lock order: no deadlock
        ids = [entry.metadata.run_id for entry in ordered]
        cursor.execute("DELETE FROM run_tags WHERE run_id = ANY(%s)", (ids,))
        cursor.executemany(_INSERT_RUN, [run_columns(entry) for entry in ordered])
        tags = [
            (entry.metadata.run_id, key, value)
            for entry in ordered
            for key, value in sorted(entry.metadata.tags.items())
        ]
        if tags:
            cursor.executemany(_INSERT_TAG, tags)
        return len(ordered)

    @staticmethod
    def _insert_scores(cursor: Cursor, rows: Sequence[ScoreRow]) -> int:
        ordered = sorted(rows, key=lambda r: (r.run_id, r.judge_id))
        cursor.executemany(
            "DELETE FROM score_criteria WHERE run_id = %s AND judge_id = %s",
            [(row.run_id, row.judge_id) for row in ordered],
        )
        cursor.executemany(
            _INSERT_SCORE,
            [
                (
                    row.run_id,
                    row.judge_id,
                    row.kind,
                    row.model,
                    row.pack,
                    row.verdict,
                    _int_flag(row.diagnosis),
                    row.skipped_reason,
                    row.created_at,
                    row.score_json,
                    packed_criteria(row.criteria),
                )
                for row in ordered
            ],
        )
        criteria = [
            (row.run_id, row.judge_id, criterion, _int_flag(fired))
            for row in ordered
            for criterion, fired in sorted(dict(row.criteria).items())
        ]
        if criteria:
            cursor.executemany(_INSERT_CRITERION, criteria)
        return len(ordered)

    def add(self, entries: Sequence[IndexEntry]) -> None:
        if entries:
            chunk = list(entries)
            self._transact(lambda cursor: self._insert_runs(cursor, chunk))

    def add_scores(self, rows: Sequence[ScoreRow]) -> None:
        if rows:
            chunk = list(rows)
            self._transact(lambda cursor: self._insert_scores(cursor, chunk))

    def _add_each(
        self,
        items: Iterable[T],
        insert: Callable[[Cursor, Sequence[T]], int],
        name: Callable[[T], str],
    ) -> tuple[int, list[tuple[str, str]]]:
        """Index `items` a chunk per transaction; a chunk with a row the index cannot take is
        indexed row by row, leaving out (and returning) the rows it refuses."""
        added, left_out = 0, []
        for chunk in _chunks(items):
            try:
                added += self._transact(lambda cursor, c=chunk: insert(cursor, c))  # type: ignore[misc]
                continue
            except _ROW_ERRORS:
                pass
            for item in chunk:
                try:
                    added += self._transact(lambda cursor, i=item: insert(cursor, [i]))  # type: ignore[misc]
                except _ROW_ERRORS as exc:
                    left_out.append((name(item), f"the index cannot take it: {_first_line(exc)}"))
        return added, left_out

    def add_each(self, entries: Iterable[IndexEntry]) -> tuple[int, list[tuple[str, str]]]:
        return self._add_each(entries, self._insert_runs, lambda e: e.metadata.run_id)

    def add_scores_each(self, rows: Iterable[ScoreRow]) -> tuple[int, list[tuple[str, str]]]:
        return self._add_each(rows, self._insert_scores, lambda r: f"{r.run_id}/{r.judge_id}")

    def _rebuild(self, tables: str, insert: Callable[[Cursor], int]) -> int:
        """Empty `tables` and refill them by `insert`, in one transaction that holds off other
        writers (readers go on reading the old rows until it commits). Not retried: its input
        is read once, and the lock taken first leaves no concurrent transaction to abort it."""
        try:
            with self._lock, self.db.transaction(), self.db.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {tables} IN SHARE ROW EXCLUSIVE MODE")
                for table in tables.split(", "):
                    cursor.execute(f"DELETE FROM {table}")
                count = insert(cursor)
                crash_point("index: before commit")
        except psycopg.OperationalError as exc:
            raise WriteFailedError(
                f"{self.where}: the PostgreSQL index refused the rebuild ({_first_line(exc)}); "
                "the index was left as it was"
            ) from None
        self.round_trips += 1
        crash_point("index: committed")
        return count

    def _refill(
        self,
        cursor: Cursor,
        items: Iterable[T],
        insert: Callable[[Cursor, Sequence[T]], int],
        name: Callable[[T], str],
        left_out: list[tuple[str, str]],
    ) -> int:
        """Insert `items` inside a rebuild's transaction, a savepoint per chunk; a chunk with a
        row the index cannot take is inserted row by row, each refused row left out."""
        added = 0
        for chunk in _chunks(items):
            try:
                with self.db.transaction():
                    added += insert(cursor, chunk)
                continue
            except _ROW_ERRORS:
                pass
            for item in chunk:
                try:
                    with self.db.transaction():
                        added += insert(cursor, [item])
                except _ROW_ERRORS as exc:
                    left_out.append((name(item), f"the index cannot take it: {_first_line(exc)}"))
        return added

    def rebuild(self, entries: Iterable[IndexEntry]) -> int:
        def insert(cursor: Cursor) -> int:
            return sum(self._insert_runs(cursor, chunk) for chunk in _chunks(entries))

        return self._rebuild("run_tags, runs", insert)

    def rebuild_each(self, entries: Iterable[IndexEntry]) -> tuple[int, list[tuple[str, str]]]:
        left_out: list[tuple[str, str]] = []

        def insert(cursor: Cursor) -> int:
            return self._refill(
                cursor, entries, self._insert_runs, lambda e: e.metadata.run_id, left_out
            )

        return self._rebuild("run_tags, runs", insert), left_out

    def rebuild_scores(self, rows: Iterable[ScoreRow]) -> int:
        def insert(cursor: Cursor) -> int:
            return sum(self._insert_scores(cursor, chunk) for chunk in _chunks(rows))

        return self._rebuild("score_criteria, scores", insert)

    def rebuild_scores_each(self, rows: Iterable[ScoreRow]) -> tuple[int, list[tuple[str, str]]]:
        left_out: list[tuple[str, str]] = []

        def insert(cursor: Cursor) -> int:
            return self._refill(
                cursor, rows, self._insert_scores, lambda r: f"{r.run_id}/{r.judge_id}", left_out
            )

        return self._rebuild("score_criteria, scores", insert), left_out

    def score_keys(self) -> set[tuple[str, str]]:
        return {(str(r), str(j)) for r, j in self._rows("SELECT run_id, judge_id FROM scores")}

    # -- runs --------------------------------------------------------------------------------

    @staticmethod
    def _to_run(row: tuple[Any, ...]) -> IndexedRun:
        return IndexedRun(
            run_id=row[0],
            scenario=row[1],
            model=row[2],
            model_served=row[3],
            system_prompt_hash=row[4],
            variant=row[5],
            started_at=row[6],
            backfilled=bool(row[7]),
            commands_run=row[8],
            commands_denied=row[9],
            exit_status=row[10],
            sealed_at=row[11],
            manifest_sha256=row[12],
            metadata_json=row[13],
            summary_json=row[14],
            kind=row[15],
        )

    def query(self, run_filter: RunFilter) -> list[IndexedRun]:
        where, params = where_sql(run_filter, _P)
        sql = (
            f"SELECT {_COLUMNS} FROM runs{where} "
            "ORDER BY started_at IS NULL, started_at DESC, run_id"
        )
        sql += page_sql(run_filter, params, _P)
        return [self._to_run(row) for row in self._rows(sql, params)]

    def query_sorted(
        self, run_filter: RunFilter, sort: RunSort = "started", descending: bool = True
    ) -> list[IndexedRun]:
        order = sort_sql(sort, descending, _P)
        where, params = where_sql(run_filter, _P)
        sql = f"SELECT {_COLUMNS} FROM runs{where} ORDER BY {order}"
        sql += page_sql(run_filter, params, _P)
        return [self._to_run(row) for row in self._rows(sql, params)]

    def count(self, run_filter: RunFilter | None = None) -> int:
        where, params = where_sql(run_filter or RunFilter(), _P)
        row = self._one(f"SELECT count(*) FROM runs{where}", params)
        return int(row[0]) if row else 0

    def get(self, run_id: str) -> IndexedRun | None:
        row = self._one(f"SELECT {_COLUMNS} FROM runs WHERE run_id = %s", (run_id,))
        return self._to_run(row) if row else None

    def get_many(self, run_ids: Sequence[str]) -> dict[str, IndexedRun]:
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {_COLUMNS} FROM runs WHERE run_id = ANY(%s)", (ids,))
        return {row[0]: self._to_run(row) for row in rows}

    def ids_with_prefix(self, prefix: str, limit: int = 10) -> list[str]:
        rows = self._rows(
            f"SELECT run_id FROM runs WHERE {_P.prefix('run_id')} ORDER BY run_id LIMIT %s",
            (_P.prefix_pattern(prefix), limit),
        )
        return [str(row[0]) for row in rows]

    def count_by(self, run_filter: RunFilter, dimension: Dimension) -> dict[str | None, int]:
        column = dimension_sql(dimension)
        where, params = where_sql(run_filter, _P)
        rows = self._rows(
            f"SELECT {column}, count(*) FROM runs{where} GROUP BY 1 ORDER BY 1 NULLS FIRST",
            params,
        )
        return {value: int(count) for value, count in rows}

    def overlap(self, a: RunFilter, b: RunFilter) -> int:
        where_a, params_a = where_sql(a, _P)
        where_b, params_b = where_sql(b, _P)
        clauses = [w.removeprefix(" WHERE ") for w in (where_a, where_b) if w]
        where = " WHERE " + " AND ".join(f"({clause})" for clause in clauses) if clauses else ""
        row = self._one(f"SELECT count(*) FROM runs{where}", [*params_a, *params_b])
        return int(row[0]) if row else 0

    def distinct(self, dimension: Dimension) -> list[str]:
        column = dimension_sql(dimension)
        if dimension != "day":
            # Each of these columns leads an index of its own: a seek per value.
            return [str(row[0]) for row in self._rows(distinct_values_sql(column, "runs"))]
        rows = self._rows(
            f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY 1"
        )
        return [str(row[0]) for row in rows]

    def judge_ids(self) -> list[str]:
        return [str(row[0]) for row in self._rows(distinct_values_sql("judge_id", "scores"))]

    def run_rows(self) -> dict[str, tuple[RunColumns, dict[str, str]]]:
        rows: dict[str, tuple[RunColumns, dict[str, str]]] = {
            row[0]: (RunColumns(*row), {})
            for row in self._rows(f"SELECT {', '.join(_RUN_FIELDS)} FROM runs")
        }
        for run_id, key, value in self._rows("SELECT run_id, key, value FROM run_tags"):
            if run_id in rows:
                rows[run_id][1][key] = value
        return rows

    def manifest_hashes(self) -> dict[str, str]:
        return {str(r): str(h) for r, h in self._rows("SELECT run_id, manifest_sha256 FROM runs")}

    # -- scores ------------------------------------------------------------------------------

    def score_rows(self) -> list[ScoreRow]:
        criteria: dict[tuple[str, str], list[tuple[str, bool | None]]] = {}
        for run_id, judge_id, criterion, fired in self._rows(
            "SELECT run_id, judge_id, criterion, fired FROM score_criteria"
        ):
            criteria.setdefault((run_id, judge_id), []).append((criterion, stored_flag(fired)))
        return [
            ScoreRow(
                run_id=row[0],
                judge_id=row[1],
                kind=row[2],
                model=row[3],
                pack=row[4],
                verdict=row[5],
                diagnosis=stored_flag(row[6]),
                skipped_reason=row[7],
                created_at=row[8],
                score_json=row[9],
                criteria=tuple(criteria.get((row[0], row[1]), ())),
                criteria_packed=row[10],
            )
            for row in self._rows(f"SELECT {_SCORE_FIELDS} FROM scores ORDER BY run_id, judge_id")
        ]

    def judges_of(self, run_filter: RunFilter) -> list[JudgeTally]:
        where, params = where_sql(run_filter, _P)
        rows = self._rows(
            f"WITH sel AS (SELECT run_id FROM runs{where}) SELECT s.judge_id, s.kind, "
            "count(*), max(s.created_at) FROM sel JOIN scores s ON s.run_id = sel.run_id "
            "GROUP BY s.judge_id, s.kind",
            params,
        )
        tallies = [JudgeTally(str(j), str(k), int(n), str(t)) for j, k, n, t in rows]
        return sorted(tallies, key=lambda t: (t.newest_at, t.judge_id), reverse=True)

    def newest_judge(self, run_filter: RunFilter, kind: str) -> str | None:
        where, params = where_sql(run_filter, _P)
        row = self._one(
            f"WITH sel AS (SELECT run_id FROM runs{where}) SELECT s.judge_id FROM sel "
            "JOIN scores s ON s.run_id = sel.run_id WHERE s.kind = %s "
            "ORDER BY s.created_at DESC, s.judge_id DESC LIMIT 1",
            [*params, kind],
        )
        return None if row is None else str(row[0])

    def verdict_counts(
        self,
        run_filter: RunFilter,
        judge_ids: Sequence[str],
        by: Sequence[Dimension] = (),
        *,
        diagnosis: bool = True,
    ) -> list[VerdictCount]:
        if not judge_ids:
            return []
        cte, params = chosen_sql(run_filter, judge_ids, _P)
        keys = [dimension_sql(d) for d in by]
        columns = [*keys, "verdict", *(["diagnosis"] if diagnosis else [])]
        group = ", ".join(columns)
        order = ", ".join(f"{column} NULLS FIRST" for column in columns)
        rows = self._rows(
            f"{cte}SELECT {group}, count(*), min(started_at) FROM chosen "
            f"GROUP BY {group} ORDER BY {order}",
            params,
        )
        width = len(keys)
        return [
            VerdictCount(
                keys=tuple(row[:width]),
                verdict=str(row[width]),
                diagnosis=stored_flag(row[width + 1]) if diagnosis else None,
                runs=int(row[-2]),
                first_started_at=row[-1],
            )
            for row in rows
        ]

    def newest_verdicts(
        self, run_filter: RunFilter, judge_ids: Sequence[str], by: Dimension
    ) -> dict[str | None, str]:
        if not judge_ids:
            return {}
        cte, params = chosen_sql(run_filter, judge_ids, _P)
        key = dimension_sql(by)
        # The newest run: the largest (started_at, run_id), a run without a start the oldest.
        rows = self._rows(
            f"{cte}SELECT DISTINCT ON (1) {key}, verdict FROM chosen "
            "WHERE verdict NOT IN ('skipped', 'not-applicable') "
            "ORDER BY 1, coalesce(started_at, '') DESC, run_id DESC",
            params,
        )
        return {key: str(verdict) for key, verdict in rows}

    def criterion_cells(
        self, run_filter: RunFilter, judge_ids: Sequence[str]
    ) -> list[CriterionCell]:
        if not judge_ids:
            return []
        cte, params = chosen_sql(run_filter, judge_ids, _P)
        join, join_params = criteria_join_sql(judge_ids, _P)
        rows = self._rows(
            f"{cte}SELECT c.criterion, ch.model, ch.scenario, "
            "count(*) FILTER (WHERE c.fired = 1), count(c.fired), "
            f"count(*) FILTER (WHERE c.fired IS NULL) {join} "
            "GROUP BY c.criterion, ch.model, ch.scenario ORDER BY 1, 2, 3",
            [*params, *join_params],
        )
        return [
            CriterionCell(str(c), str(m), str(s), int(k), int(n), int(null))
            for c, m, s, k, n, null in rows
        ]

    def criterion_firsts(
        self, run_filter: RunFilter, judge_ids: Sequence[str], criterion: str
    ) -> list[CriterionFirst]:
        if not judge_ids:
            return []
        cte, params = chosen_sql(run_filter, judge_ids, _P)
        join, join_params = criteria_join_sql(judge_ids, _P)
        # The earliest firing as one sortable string: started_at (fixed width), run id, prompt.
        rows = self._rows(
            f"{cte}SELECT ch.model, count(c.fired), count(*) FILTER (WHERE c.fired = 1), "
            "min(CASE WHEN c.fired = 1 THEN (coalesce(ch.started_at, '') || chr(31) || "
            f"ch.run_id || chr(31) || coalesce(ch.system_prompt_hash, '')) {_C} END) {join} "
            "WHERE c.criterion = %s GROUP BY ch.model ORDER BY ch.model",
            [*params, *join_params, criterion],
        )
        out = []
        for model, n, k, earliest in rows:
            hit = earliest.split("\x1f") if earliest else None
            out.append(
                CriterionFirst(
                    model=str(model),
                    assessed=int(n),
                    fired=int(k),
                    first_run_id=hit[1] if hit else None,
                    first_started_at=(hit[0] or None) if hit else None,
                    first_prompt_hash=(hit[2] or None) if hit else None,
                )
            )
        return out

    def criteria_of(self, judge_ids: Sequence[str]) -> list[str]:
        if not judge_ids:
            return []
        # Every criterion any judge rated (a seek each in score_criteria_fired), kept if one
        # of these judges rated it: one query, a probe of that criterion's entries each.
        rows = self._rows(
            f"WITH c(criterion) AS ({distinct_values_sql('criterion', 'score_criteria')}) "
            "SELECT criterion FROM c WHERE EXISTS (SELECT 1 FROM score_criteria s "
            f"WHERE s.criterion = c.criterion AND s.judge_id IN ({marks(judge_ids, _P)})) "
            "ORDER BY criterion",
            list(judge_ids),
        )
        return [str(row[0]) for row in rows]

    def packs_of(self, judge_ids: Sequence[str]) -> list[str]:
        if not judge_ids:
            return []
        # One score per judge: a judge id fixes its pack.
        rows = self._rows(
            "SELECT DISTINCT ON (judge_id) pack FROM scores "
            f"WHERE judge_id IN ({marks(judge_ids, _P)}) ORDER BY judge_id",
            list(judge_ids),
        )
        return sorted({str(row[0]) for row in rows})

    def run_facets(self, run_filter: RunFilter) -> RunFacets:
        where, params = where_sql(run_filter, _P)
        rows = self._rows(
            f"SELECT run_id, model, scenario, kind FROM runs{where} ORDER BY run_id", params
        )
        return facets_of(rows)

    def score_ratings(self, run_filter: RunFilter, judge_ids: Sequence[str]) -> Ratings:
        if not judge_ids:
            return ratings_of([])
        cte, params = chosen_sql(run_filter, judge_ids, _P)
        rows = self._rows(
            f"{cte}SELECT ch.run_id, ch.verdict, ch.criteria_packed FROM chosen ch "
            "ORDER BY ch.run_id",
            params,
        )
        return ratings_of(rows)

    def verdicts_of(self, run_ids: Sequence[str]) -> list[RunVerdict]:
        ids = sorted(set(run_ids))
        if not ids:
            return []
        rows = self._rows(
            "SELECT run_id, judge_id, kind, verdict FROM scores WHERE run_id = ANY(%s) "
            "ORDER BY run_id, created_at, judge_id",
            (ids,),
        )
        return [RunVerdict(*row) for row in rows]

    def scores_of(self, run_id: str) -> list[str]:
        rows = self._rows(
            "SELECT score_json FROM scores WHERE run_id = %s ORDER BY created_at, judge_id",
            (run_id,),
        )
        return [str(row[0]) for row in rows]

    def skipped_scores(self) -> list[SkippedScore]:
        rows = self._rows(
            "SELECT s.run_id, r.model, s.judge_id, s.model, s.skipped_reason "
            "FROM scores s JOIN runs r ON r.run_id = s.run_id "
            "WHERE s.verdict IN ('skipped', 'unscored') "
            "ORDER BY r.started_at IS NULL, r.started_at DESC, s.run_id, s.judge_id"
        )
        return [SkippedScore(*row) for row in rows]

    def disagreeing_runs(self) -> list[str]:
        rows = self._rows(
            # Judges of one pack disagree; two packs judge different criteria.
            "WITH split AS (SELECT DISTINCT run_id FROM scores "
            "WHERE verdict NOT IN ('skipped', 'not-applicable') "
            "GROUP BY run_id, pack HAVING count(DISTINCT verdict) > 1) "
            "SELECT r.run_id FROM split JOIN runs r ON r.run_id = split.run_id "
            "ORDER BY r.started_at IS NULL, r.started_at DESC, r.run_id"
        )
        return [str(row[0]) for row in rows]

    # -- labels ------------------------------------------------------------------------------

    @staticmethod
    def _insert_labels(cursor: Cursor, rows: Sequence[LabelRow]) -> set[str]:
        ordered = sorted(rows, key=lambda r: r.label_id)
        cursor.execute(
            "DELETE FROM label_criteria WHERE label_id = ANY(%s)",
            ([row.label_id for row in ordered],),
        )
        cursor.executemany(
            _INSERT_LABEL,
            [
                (
                    row.label_id,
                    row.run_id,
                    row.source_kind,
                    row.source_name,
                    row.verdict,
                    _int_flag(row.diagnosis),
                    row.supersedes,
                    row.created_at,
                    row.label_json,
                    packed_criteria(row.criteria),
                )
                for row in ordered
            ],
        )
        criteria = [
            (row.label_id, criterion, _int_flag(fired))
            for row in ordered
            for criterion, fired in sorted(dict(row.criteria).items())
        ]
        if criteria:
            cursor.executemany(
                "INSERT INTO label_criteria (label_id, criterion, fired) VALUES (%s, %s, %s) "
                "ON CONFLICT (label_id, criterion) DO UPDATE SET fired = EXCLUDED.fired",
                criteria,
            )
        return {row.run_id for row in ordered}

    def add_labels(self, rows: Sequence[LabelRow]) -> None:
        if not rows:
            return
        chunk = list(rows)

        def write(cursor: Cursor) -> None:
            runs = sorted(self._insert_labels(cursor, chunk))
            cursor.execute(
                _CURRENT.format(runs="WHERE l.run_id = ANY(%s)", where=" WHERE run_id = ANY(%s)"),
                (runs, runs),
            )

        # The current flags are read and written: two machines labelling one run at once
        # must not both keep their own label current.
        self._transact(write, serializable=True)

    def rebuild_labels(self, rows: Iterable[LabelRow]) -> int:
        def insert(cursor: Cursor) -> int:
            count = 0
            for chunk in _chunks(rows):
                self._insert_labels(cursor, chunk)
                count += len(chunk)
            cursor.execute(_CURRENT.format(runs="", where=""))
            return count

        return self._rebuild("label_criteria, labels", insert)

    def labels_of(self, run_id: str) -> list[str]:
        rows = self._rows(
            "SELECT label_json FROM labels WHERE run_id = %s ORDER BY created_at, label_id",
            (run_id,),
        )
        return [str(row[0]) for row in rows]

    def current_label_results(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[LabelResult]:
        where, params = current_label_where(source_kind, source_name, "l.", _P)
        rows = self._rows(
            "SELECT l.run_id, l.label_id, l.source_kind, l.source_name, l.verdict, l.created_at, "
            "k.names, k.fired FROM labels l LEFT JOIN LATERAL (SELECT array_agg(c.criterion) "
            "AS names, array_agg(c.fired) AS fired FROM label_criteria c "
            f"WHERE c.label_id = l.label_id) k ON true WHERE {where} "
            "ORDER BY l.run_id, l.created_at, l.label_id",
            params,
        )
        return [
            LabelResult(
                run_id,
                label_id,
                kind,
                name,
                verdict,
                created_at,
                dict(zip(names or (), (stored_flag(f) for f in fired or ()), strict=True)),
            )
            for run_id, label_id, kind, name, verdict, created_at, names, fired in rows
        ]

    def label_ratings(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> Ratings:
        where, params = current_label_where(source_kind, source_name, "l.", _P)
        rows = self._rows(
            f"SELECT l.run_id, l.verdict, l.criteria_packed FROM labels l WHERE {where} "
            "ORDER BY l.run_id, l.created_at, l.label_id",
            params,
        )
        return ratings_of(rows)

    def current_labels(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[str]:
        where, params = current_label_where(source_kind, source_name, "", _P)
        rows = self._rows(
            f"SELECT label_json FROM labels WHERE {where} ORDER BY run_id, created_at, label_id",
            params,
        )
        return [str(row[0]) for row in rows]

    def label_ids(self) -> set[str]:
        return {str(row[0]) for row in self._rows("SELECT label_id FROM labels")}

    def label_rows(self) -> list[LabelRow]:
        return label_rows_from(
            self._rows(
                "SELECT label_id, run_id, source_kind, source_name, verdict, diagnosis, "
                "supersedes, created_at, label_json, current, criteria_packed FROM labels "
                "ORDER BY label_id"
            ),
            self._rows(
                "SELECT label_id, criterion, fired FROM label_criteria ORDER BY label_id, criterion"
            ),
        )

    def close(self) -> None:
        self.db.close()
