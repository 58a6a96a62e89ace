"""The index as one SQLite file: with `sqlite_where`, the only SQL in agentledger.

Every typed query of `RunIndex` is one statement here. `sql()` runs a user's own read-only
query (`agentledger sql`), a feature of this backend alone.
"""

from __future__ import annotations

import functools
import itertools
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from agentledger.errors import (
    IndexUnusableError,
    IndexVersionError,
    InputError,
    ReadOnlyQueryError,
    WriteFailedError,
)
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
    QueryResult,
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
from agentledger.store.migrations import MIGRATIONS
from agentledger.store.sqlite_where import (
    chosen_sql,
    criteria_join_sql,
    current_label_where,
    dimension_sql,
    distinct_values_sql,
    glob_prefix,
    marks,
    page_sql,
    scores_chosen,
    sort_sql,
    where_sql,
)

T = TypeVar("T")

__all__ = ["SQLiteIndex"]


_COLUMNS = (
    "run_id, scenario, model, model_served, system_prompt_hash, variant, started_at, "
    "backfilled, commands_run, commands_denied, exit_status, sealed_at, manifest_sha256, "
    "metadata_json, summary_json, kind"
)

_INSERT = """
INSERT OR REPLACE INTO runs (
    run_id, scenario, model, model_served, provider, system_fingerprint, system_prompt_hash,
    base_prompt_hash, addon_name, addon_hash, variant, agent_name, agent_commit, agent_dirty,
    started_at, ended_at, silent_update_detectable, backfilled, commands_run, commands_denied,
    duration_s, tokens_in, tokens_out, cost_usd, exit_status, sealed_at, manifest_sha256,
    metadata_json, summary_json, kind
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

# Authorizer action codes that a read-only query may use.
_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}


def _row_values(entry: IndexEntry) -> tuple[Any, ...]:
    return run_columns(entry)


_FIRED_TEXT: dict[str, bool | None] = {"1": True, "0": False, "n": None}


@functools.lru_cache(maxsize=4096)
def _unpack(packed: str | None) -> Mapping[str, bool | None]:
    """The criterion results of a row's criteria_packed (index.py's `packed_criteria`): one
    shared, read-only mapping per distinct text, since runs repeat the same few combinations."""
    if not packed:
        return MappingProxyType({})
    out: dict[str, bool | None] = {}
    for item in packed.split("\x1e"):
        criterion, _, fired = item.rpartition("\x1f")
        out[criterion] = _FIRED_TEXT[fired]
    return MappingProxyType(out)


def _label_results(rows: list[tuple[Any, ...]]) -> list[LabelResult]:
    """Rows whose last column is criteria_packed as LabelResults, the criteria unpacked.

    Made column-wise, without a Python call per row (`tuple.__new__` of a named tuple class
    takes the values as they are): over 100,000 runs this is most of what reading them costs.
    """
    if not rows:
        return []
    columns = list(zip(*rows, strict=True))
    columns[-1] = tuple(map(_unpack, columns[-1]))
    return list(map(tuple.__new__, itertools.repeat(LabelResult), zip(*columns, strict=True)))


# What a row the index cannot take raises (a number beyond 64 bits, a string SQLite refuses):
# that row is left out and reported; any other error stops the write.
_ROW_ERRORS = (
    OverflowError,
    ValueError,
    sqlite3.InterfaceError,
    sqlite3.DataError,
    sqlite3.IntegrityError,
)
_SQLITE_FULL = 13
_SQLITE_IOERR = 10
_SQLITE_READONLY = 8


def _refused_write(exc: sqlite3.Error) -> bool:
    """Whether `exc` is the disk refusing a write (full, I/O error, read-only)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (_SQLITE_FULL, _SQLITE_IOERR, _SQLITE_READONLY)


def _chunks(entries: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for entry in entries:
        chunk.append(entry)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class SQLiteIndex(RunIndex):
    """The index as one SQLite file (WAL mode, busy timeout), migrated forward when opened."""

    BUSY_TIMEOUT_MS = 60_000
    MMAP_BYTES = 1 << 30
    """Read up to this much of the file through a memory map rather than read() calls: the
    viewer's heavier runs pages (a common filter sorted by another column, with its count)
    took 1.5 to 2x as long without (bench/viewer.py's sweep). Writes still go through write(),
    so a full disk is reported as before."""

    def __init__(self, path: Path) -> None:
        self.path = path
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

    def applied_migrations(self) -> list[str]:
        exists = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
        ).fetchone()
        if not exists:
            return []
        return [row[0] for row in self.db.execute("SELECT name FROM _migrations ORDER BY name")]

    def migrate(self) -> list[str]:
        """Apply every migration this index lacks; refuse an index from a newer agentledger."""
        known = [name for name, _ in MIGRATIONS]
        applied = self.applied_migrations()
        unknown = sorted(set(applied) - set(known))
        if unknown:
            raise IndexVersionError(
                f"{self.path}: this index was migrated by a newer agentledger "
                f"(unknown migration {unknown[0]}); upgrade agentledger, or build an index "
                "for this version from the files with `agentledger reindex` (the runs and "
                "records are not touched)"
            )
        if len(applied) == len(known):
            return []
        newly: list[str] = []
        for name, migration in MIGRATIONS:
            if name in applied:
                continue
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS _migrations "
                    "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
                done = self.db.execute(
                    "SELECT 1 FROM _migrations WHERE name = ?", (name,)
                ).fetchone()
                if not done:
                    migration(self.db)
                    self.db.execute(
                        "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                        (name, format_time(datetime.now(UTC))),
                    )
                    newly.append(name)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return newly

    def _insert(self, entries: Iterable[IndexEntry], *, fresh: bool = False) -> int:
        """Insert rows in chunks; `fresh` says the tables are empty (no old tags to drop)."""
        count = 0
        for chunk in _chunks(entries, 1000):
            if not fresh:
                self.db.executemany(
                    "DELETE FROM run_tags WHERE run_id = ?",
                    [(entry.metadata.run_id,) for entry in chunk],
                )
            self.db.executemany(_INSERT, [_row_values(entry) for entry in chunk])
            self.db.executemany(
                "INSERT INTO run_tags (run_id, key, value) VALUES (?, ?, ?)",
                [
                    (entry.metadata.run_id, key, value)
                    for entry in chunk
                    for key, value in entry.metadata.tags.items()
                ],
            )
            count += len(chunk)
        return count

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

    def add_each(self, entries: Iterable[IndexEntry]) -> tuple[int, list[tuple[str, str]]]:
        added, left_out = 0, []
        # Into an empty index (a rebuild), no old tags can be left to drop.
        fresh = self.db.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is None
        for chunk in _chunks(entries, 1000):
            try:
                with self._writing():
                    self._insert(chunk, fresh=fresh)
                added += len(chunk)
                continue
            except _ROW_ERRORS:
                pass  # one row the index cannot take: find it, index the others
            for entry in chunk:
                try:
                    with self._writing():
                        self._insert([entry])
                    added += 1
                except _ROW_ERRORS as exc:
                    left_out.append((entry.metadata.run_id, f"the index cannot take it: {exc}"))
        return added, left_out

    def add_scores_each(self, rows: Iterable[ScoreRow]) -> tuple[int, list[tuple[str, str]]]:
        added, left_out = 0, []
        for chunk in _chunks(rows, 1000):
            try:
                with self._writing():
                    self._insert_scores(chunk)
                added += len(chunk)
                continue
            except _ROW_ERRORS:
                pass
            for row in chunk:
                try:
                    with self._writing():
                        self._insert_scores([row])
                    added += 1
                except _ROW_ERRORS as exc:
                    left_out.append(
                        (f"{row.run_id}/{row.judge_id}", f"the index cannot take it: {exc}")
                    )
        return added, left_out

    def score_keys(self) -> set[tuple[str, str]]:
        return {(str(r), str(j)) for r, j in self.db.execute("SELECT run_id, judge_id FROM scores")}

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

    def add(self, entries: Sequence[IndexEntry]) -> None:
        if not entries:
            return
        with self._writing():
            self._insert(entries)

    def _insert_scores(self, rows: Iterable[ScoreRow]) -> int:
        count = 0
        for chunk in _chunks(rows, 1000):
            self.db.executemany(
                "DELETE FROM score_criteria WHERE run_id = ? AND judge_id = ?",
                [(row.run_id, row.judge_id) for row in chunk],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO scores (run_id, judge_id, kind, model, pack, verdict, "
                "diagnosis, skipped_reason, created_at, score_json, criteria_packed) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        row.run_id,
                        row.judge_id,
                        row.kind,
                        row.model,
                        row.pack,
                        row.verdict,
                        None if row.diagnosis is None else int(row.diagnosis),
                        row.skipped_reason,
                        row.created_at,
                        row.score_json,
                        packed_criteria(row.criteria),
                    )
                    for row in chunk
                ],
            )
            self.db.executemany(
                "INSERT INTO score_criteria (run_id, judge_id, criterion, fired) "
                "VALUES (?, ?, ?, ?)",
                [
                    (row.run_id, row.judge_id, criterion, None if fired is None else int(fired))
                    for row in chunk
                    for criterion, fired in row.criteria
                ],
            )
            count += len(chunk)
        return count

    def add_scores(self, rows: Sequence[ScoreRow]) -> None:
        if not rows:
            return
        with self._writing():
            self._insert_scores(rows)

    def rebuild_scores(self, rows: Iterable[ScoreRow]) -> int:
        with self._writing():
            self.db.execute("DELETE FROM score_criteria")
            self.db.execute("DELETE FROM scores")
            count = self._insert_scores(rows)
        return count

    def rebuild(self, entries: Iterable[IndexEntry]) -> int:
        with self._writing():
            self.db.execute("DELETE FROM run_tags")
            self.db.execute("DELETE FROM runs")
            count = self._insert(entries, fresh=True)
        return count

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
        where, params = where_sql(run_filter)
        sql = (
            f"SELECT {_COLUMNS} FROM runs{where} "
            "ORDER BY started_at IS NULL, started_at DESC, run_id"
        )
        sql += page_sql(run_filter, params)
        return [self._to_run(row) for row in self.db.execute(sql, params)]

    def query_sorted(
        self, run_filter: RunFilter, sort: RunSort = "started", descending: bool = True
    ) -> list[IndexedRun]:
        order = sort_sql(sort, descending)
        where, params = where_sql(run_filter)
        # The page's rows are found by their rowids first, from an index where there is one,
        # and only those rows are read whole: a row holds kilobytes of JSON, and reading every
        # matching one to sort them took seconds over 100,000 runs.
        page = f"SELECT rowid FROM runs{where} ORDER BY {order}"
        page += page_sql(run_filter, params)
        sql = f"SELECT {_COLUMNS} FROM runs WHERE rowid IN ({page}) ORDER BY {order}"
        return [self._to_run(row) for row in self.db.execute(sql, params)]

    def judge_ids(self) -> list[str]:
        return self._values("judge_id", "scores")

    def verdicts_of(self, run_ids: Sequence[str]) -> list[RunVerdict]:
        ids = sorted(set(run_ids))
        if not ids:
            return []
        rows = self.db.execute(
            "SELECT run_id, judge_id, kind, verdict FROM scores "
            f"WHERE run_id IN ({marks(ids)}) ORDER BY run_id, created_at, judge_id",
            ids,
        )
        return [RunVerdict(*row) for row in rows]

    def current_labels_of(self, run_ids: Sequence[str]) -> list[LabelResult]:
        ids = sorted(set(run_ids))
        if not ids:
            return []
        rows = self.db.execute(
            "SELECT l.run_id, l.label_id, l.source_kind, l.source_name, l.verdict, l.created_at, "
            f"l.criteria_packed FROM labels l WHERE l.current = 1 AND l.run_id IN ({marks(ids)}) "
            "ORDER BY l.run_id, l.created_at, l.label_id",
            ids,
        )
        return [
            LabelResult(run_id, label_id, kind, name, verdict, created_at, _unpack(packed))
            for run_id, label_id, kind, name, verdict, created_at, packed in rows
        ]

    def count(self, run_filter: RunFilter | None = None) -> int:
        where, params = where_sql(run_filter or RunFilter())
        row = self.db.execute(f"SELECT count(*) FROM runs{where}", params).fetchone()
        return int(row[0])

    def get(self, run_id: str) -> IndexedRun | None:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return self._to_run(row) if row else None

    def get_many(self, run_ids: Sequence[str]) -> dict[str, IndexedRun]:
        found: dict[str, IndexedRun] = {}
        for chunk in _chunks(dict.fromkeys(run_ids), 5000):
            rows = self.db.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE run_id IN ({marks(chunk)})", chunk
            )
            found.update((row[0], self._to_run(row)) for row in rows)
        return found

    def ids_with_prefix(self, prefix: str, limit: int = 10) -> list[str]:
        rows = self.db.execute(
            "SELECT run_id FROM runs WHERE run_id GLOB ? ORDER BY run_id LIMIT ?",
            (glob_prefix(prefix), limit),
        )
        return [row[0] for row in rows]

    def count_by(self, run_filter: RunFilter, dimension: Dimension) -> dict[str | None, int]:
        column = dimension_sql(dimension)
        where, params = where_sql(run_filter)
        # With a filter, unary + keeps SQLite on the filter's index: grouping by walking the
        # dimension's own index (runs_kind) reads every run's row to test the filter.
        key = f"+{column}" if where else column
        rows = self.db.execute(
            f"SELECT {key}, count(*) FROM runs{where} GROUP BY 1 ORDER BY 1", params
        )
        return {value: int(count) for value, count in rows}

    def overlap(self, a: RunFilter, b: RunFilter) -> int:
        where_a, params_a = where_sql(a)
        where_b, params_b = where_sql(b)
        clauses = [w.removeprefix(" WHERE ") for w in (where_a, where_b) if w]
        where = " WHERE " + " AND ".join(f"({clause})" for clause in clauses) if clauses else ""
        row = self.db.execute(f"SELECT count(*) FROM runs{where}", [*params_a, *params_b])
        return int(row.fetchone()[0])

    def _values(self, column: str, table: str) -> list[str]:
        """The distinct values of an indexed `column` of `table`, sorted, a seek each."""
        return [str(row[0]) for row in self.db.execute(distinct_values_sql(column, table))]

    def distinct(self, dimension: Dimension) -> list[str]:
        column = dimension_sql(dimension)
        if dimension != "day":
            # Each of these columns leads an index of its own.
            return self._values(column, "runs")
        rows = self.db.execute(
            f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY 1"
        )
        return [str(row[0]) for row in rows]

    def judges_of(self, run_filter: RunFilter) -> list[JudgeTally]:
        where, params = where_sql(run_filter)
        rows = self.db.execute(
            f"WITH sel AS (SELECT run_id FROM runs{where}) SELECT s.judge_id, s.kind, "
            f"count(*), max(s.created_at) FROM sel CROSS JOIN {scores_chosen('s')} "
            "ON s.run_id = sel.run_id "
            "GROUP BY s.judge_id, s.kind",
            params,
        )
        tallies = [JudgeTally(str(j), str(k), int(n), str(t)) for j, k, n, t in rows]
        return sorted(tallies, key=lambda t: (t.newest_at, t.judge_id), reverse=True)

    def newest_judge(self, run_filter: RunFilter, kind: str) -> str | None:
        where, params = where_sql(run_filter)
        # The top score, with no GROUP BY: sorting every score to tally them was half of
        # judges_of's time over 100,000 runs.
        row = self.db.execute(
            f"WITH sel AS (SELECT run_id FROM runs{where}) SELECT s.judge_id "
            f"FROM sel CROSS JOIN {scores_chosen('s')} ON s.run_id = sel.run_id "
            "WHERE s.kind = ? ORDER BY s.created_at DESC, s.judge_id DESC LIMIT 1",
            [*params, kind],
        ).fetchone()
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
        cte, params = chosen_sql(run_filter, judge_ids)
        keys = [dimension_sql(d) for d in by]
        group = ", ".join([*keys, "verdict", *(["diagnosis"] if diagnosis else [])])
        rows = self.db.execute(
            f"{cte}SELECT {group}, count(*), min(started_at) FROM chosen "
            f"GROUP BY {group} ORDER BY {group}",
            params,
        )
        width = len(keys)
        if not diagnosis:
            return [
                VerdictCount(row[:width], str(row[width]), None, int(row[-2]), row[-1])
                for row in rows
            ]
        return [
            VerdictCount(
                keys=tuple(row[:width]),
                verdict=str(row[width]),
                diagnosis=None if row[width + 1] is None else bool(row[width + 1]),
                runs=int(row[width + 2]),
                first_started_at=row[width + 3],
            )
            for row in rows
        ]

    def newest_verdicts(
        self, run_filter: RunFilter, judge_ids: Sequence[str], by: Dimension
    ) -> dict[str | None, str]:
        if not judge_ids:
            return {}
        cte, params = chosen_sql(run_filter, judge_ids)
        key = dimension_sql(by)
        # The newest run as the largest (started_at, run_id): started_at is fixed width, and
        # a run without one ('') is older than any with one. `verdict` is max()'s bare column
        # (SQLite takes it from the row of the max). Unary + as in count_by.
        rows = self.db.execute(
            f"{cte}SELECT +{key}, verdict, max(coalesce(started_at, '') || char(31) || run_id) "
            "FROM chosen WHERE verdict NOT IN ('skipped', 'not-applicable') GROUP BY 1",
            params,
        )
        return {key: str(verdict) for key, verdict, _newest in rows}

    def criterion_cells(
        self, run_filter: RunFilter, judge_ids: Sequence[str]
    ) -> list[CriterionCell]:
        if not judge_ids:
            return []
        cte, params = chosen_sql(run_filter, judge_ids)
        join, join_params = criteria_join_sql(judge_ids)
        rows = self.db.execute(
            f"{cte}SELECT c.criterion, ch.model, ch.scenario, sum(c.fired = 1), "
            f"sum(c.fired IS NOT NULL), sum(c.fired IS NULL) {join} "
            "GROUP BY c.criterion, ch.model, ch.scenario ORDER BY 1, 2, 3",
            [*params, *join_params],
        )
        return [
            CriterionCell(str(c), str(m), str(s), int(k or 0), int(n or 0), int(null or 0))
            for c, m, s, k, n, null in rows
        ]

    def criterion_firsts(
        self, run_filter: RunFilter, judge_ids: Sequence[str], criterion: str
    ) -> list[CriterionFirst]:
        if not judge_ids:
            return []
        cte, params = chosen_sql(run_filter, judge_ids)
        join, join_params = criteria_join_sql(judge_ids)
        # The earliest firing as one sortable string: started_at (fixed width), run id, prompt.
        rows = self.db.execute(
            f"{cte}SELECT ch.model, sum(c.fired IS NOT NULL), sum(c.fired = 1), "
            "min(CASE WHEN c.fired = 1 THEN coalesce(ch.started_at, '') || char(31) || "
            f"ch.run_id || char(31) || coalesce(ch.system_prompt_hash, '') END) {join} "
            "WHERE c.criterion = ? GROUP BY ch.model ORDER BY ch.model",
            [*params, *join_params, criterion],
        )
        out = []
        for model, n, k, earliest in rows:
            hit = earliest.split("\x1f") if earliest else None
            out.append(
                CriterionFirst(
                    model=str(model),
                    assessed=int(n or 0),
                    fired=int(k or 0),
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
        # of these judges rated it: the first such row, in that criterion's entries.
        return [
            criterion
            for criterion in self._values("criterion", "score_criteria")
            if self.db.execute(
                "SELECT 1 FROM score_criteria INDEXED BY score_criteria_fired "
                f"WHERE criterion = ? AND judge_id IN ({marks(judge_ids)}) LIMIT 1",
                [criterion, *judge_ids],
            ).fetchone()
        ]

    def packs_of(self, judge_ids: Sequence[str]) -> list[str]:
        packs: set[str] = set()
        for judge_id in judge_ids:
            # One score per judge: a judge id fixes its pack.
            row = self.db.execute(
                "SELECT pack FROM scores WHERE judge_id = ? LIMIT 1", (judge_id,)
            ).fetchone()
            if row:
                packs.add(str(row[0]))
        return sorted(packs)

    def run_facets(self, run_filter: RunFilter) -> RunFacets:
        where, params = where_sql(run_filter)
        # Unary + keeps SQLite from walking the run_id key in order, which reads every run's
        # wide row: the covering runs_model_prompt index and a sort of its entries are a
        # third of that over 100,000 runs (agreement --by).
        rows = self.db.execute(
            f"SELECT run_id, model, scenario, kind FROM runs{where} ORDER BY +run_id", params
        )
        return facets_of(rows.fetchall())

    def score_ratings(self, run_filter: RunFilter, judge_ids: Sequence[str]) -> Ratings:
        if not judge_ids:
            return ratings_of([])
        cte, params = chosen_sql(run_filter, judge_ids)
        rows = self.db.execute(
            f"{cte}SELECT ch.run_id, ch.verdict, ch.criteria_packed FROM chosen ch "
            "ORDER BY ch.run_id",
            params,
        )
        return ratings_of(rows.fetchall())

    def scores_of(self, run_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT score_json FROM scores WHERE run_id = ? ORDER BY created_at, judge_id",
            (run_id,),
        )
        return [str(row[0]) for row in rows]

    def skipped_scores(self) -> list[SkippedScore]:
        rows = self.db.execute(
            "SELECT s.run_id, r.model, s.judge_id, s.model, s.skipped_reason "
            "FROM scores s JOIN runs r ON r.run_id = s.run_id "
            "WHERE s.verdict IN ('skipped', 'unscored') "
            "ORDER BY r.started_at IS NULL, r.started_at DESC, s.run_id, s.judge_id"
        )
        return [SkippedScore(*row) for row in rows]

    def run_rows(self) -> dict[str, tuple[RunColumns, dict[str, str]]]:
        rows: dict[str, tuple[RunColumns, dict[str, str]]] = {
            row[0]: (RunColumns(*row), {})
            for row in self.db.execute(f"SELECT {', '.join(RunColumns._fields)} FROM runs")
        }
        for run_id, key, value in self.db.execute("SELECT run_id, key, value FROM run_tags"):
            if run_id in rows:
                rows[run_id][1][key] = value
        return rows

    def score_rows(self) -> list[ScoreRow]:
        criteria: dict[tuple[str, str], list[tuple[str, bool | None]]] = {}
        for run_id, judge_id, criterion, fired in self.db.execute(
            "SELECT run_id, judge_id, criterion, fired FROM score_criteria"
        ):
            found = criteria.setdefault((run_id, judge_id), [])
            found.append((criterion, stored_flag(fired)))
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
            for row in self.db.execute(
                "SELECT run_id, judge_id, kind, model, pack, verdict, diagnosis, "
                "skipped_reason, created_at, score_json, criteria_packed FROM scores "
                "ORDER BY run_id, judge_id"
            )
        ]

    def disagreeing_runs(self) -> list[str]:
        rows = self.db.execute(
            # Judges of one pack disagree; two packs judge different criteria.
            "WITH split AS (SELECT DISTINCT run_id FROM scores "
            "WHERE verdict NOT IN ('skipped', 'not-applicable') "
            "GROUP BY run_id, pack HAVING count(DISTINCT verdict) > 1) "
            "SELECT r.run_id FROM split JOIN runs r ON r.run_id = split.run_id "
            "ORDER BY r.started_at IS NULL, r.started_at DESC, r.run_id"
        )
        return [str(row[0]) for row in rows]

    def _insert_labels(self, rows: Iterable[LabelRow]) -> tuple[int, set[str]]:
        count = 0
        runs: set[str] = set()
        for chunk in _chunks(rows, 1000):
            self.db.executemany(
                "DELETE FROM label_criteria WHERE label_id = ?",
                [(row.label_id,) for row in chunk],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO labels (label_id, run_id, source_kind, source_name, "
                "verdict, diagnosis, supersedes, created_at, label_json, criteria_packed) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        row.label_id,
                        row.run_id,
                        row.source_kind,
                        row.source_name,
                        row.verdict,
                        None if row.diagnosis is None else int(row.diagnosis),
                        row.supersedes,
                        row.created_at,
                        row.label_json,
                        packed_criteria(row.criteria),
                    )
                    for row in chunk
                ],
            )
            self.db.executemany(
                "INSERT INTO label_criteria (label_id, criterion, fired) VALUES (?, ?, ?)",
                [
                    (row.label_id, criterion, None if fired is None else int(fired))
                    for row in chunk
                    for criterion, fired in row.criteria
                ],
            )
            runs.update(row.run_id for row in chunk)
            count += len(chunk)
        return count, runs

    # The current label of each (run, source): its newest, unless a label of the run
    # supersedes it (a source's newer label replaces its older ones; a correction by another
    # source leaves that source none).
    _CURRENT = (
        "UPDATE labels SET current = (label_id IN (SELECT label_id FROM (SELECT label_id, "
        "row_number() OVER (PARTITION BY run_id, source_kind, source_name "
        "ORDER BY created_at DESC, label_id DESC) AS rn FROM labels l {runs}) WHERE rn = 1) "
        "AND NOT EXISTS (SELECT 1 FROM labels x WHERE x.run_id = labels.run_id "
        "AND x.supersedes = labels.label_id)){where}"
    )

    def add_labels(self, rows: Sequence[LabelRow]) -> None:
        if not rows:
            return
        with self._writing():
            _count, runs = self._insert_labels(rows)
            self.db.executemany(
                self._CURRENT.format(runs="WHERE l.run_id = ?", where=" WHERE run_id = ?"),
                [(run_id, run_id) for run_id in sorted(runs)],
            )

    def rebuild_labels(self, rows: Iterable[LabelRow]) -> int:
        with self._writing():
            self.db.execute("DELETE FROM label_criteria")
            self.db.execute("DELETE FROM labels")
            count, _runs = self._insert_labels(rows)
            self.db.execute(self._CURRENT.format(runs="", where=""))
        return count

    def labels_of(self, run_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT label_json FROM labels WHERE run_id = ? ORDER BY created_at, label_id",
            (run_id,),
        )
        return [str(row[0]) for row in rows]

    def current_label_results(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[LabelResult]:
        where, params = current_label_where(source_kind, source_name, "l.")
        rows = self.db.execute(
            "SELECT l.run_id, l.label_id, l.source_kind, l.source_name, l.verdict, l.created_at, "
            f"l.criteria_packed FROM labels l WHERE {where} "
            "ORDER BY l.run_id, l.created_at, l.label_id",
            params,
        )
        return _label_results(rows.fetchall())

    def label_ratings(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> Ratings:
        where, params = current_label_where(source_kind, source_name, "l.")
        rows = self.db.execute(
            f"SELECT l.run_id, l.verdict, l.criteria_packed FROM labels l WHERE {where} "
            "ORDER BY l.run_id, l.created_at, l.label_id",
            params,
        )
        return ratings_of(rows.fetchall())

    def current_labels(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[str]:
        where, params = current_label_where(source_kind, source_name)
        rows = self.db.execute(
            f"SELECT label_json FROM labels WHERE {where} ORDER BY run_id, created_at, label_id",
            params,
        )
        return [str(row[0]) for row in rows]

    def label_rows(self) -> list[LabelRow]:
        return label_rows_from(
            self.db.execute(
                "SELECT label_id, run_id, source_kind, source_name, verdict, diagnosis, "
                "supersedes, created_at, label_json, current, criteria_packed FROM labels "
                "ORDER BY label_id"
            ),
            self.db.execute("SELECT label_id, criterion, fired FROM label_criteria"),
        )

    def label_ids(self) -> set[str]:
        return {str(row[0]) for row in self.db.execute("SELECT label_id FROM labels")}

    def manifest_hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT run_id, manifest_sha256 FROM runs"))

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
