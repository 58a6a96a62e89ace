"""The queryable index of runs, behind a small interface.

The index is a cache of the files: everything in it is derived from sealed runs, and
`Ledger.reindex()` rebuilds it. `SQLiteIndex` is the local implementation; a PostgreSQL one is
a new module implementing `RunIndex`.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from agentledger.errors import (
    IndexUnusableError,
    IndexVersionError,
    InputError,
    ReadOnlyQueryError,
)
from agentledger.records import Manifest, RunMetadata, RunSummary
from agentledger.store.migrations import MIGRATIONS

T = TypeVar("T")

__all__ = [
    "IndexEntry",
    "IndexedRun",
    "QueryResult",
    "RunFilter",
    "RunIndex",
    "SQLiteIndex",
    "ScoreRow",
    "format_time",
    "where_clause",
]


def format_time(moment: datetime | None) -> str | None:
    """Fixed-width UTC ISO 8601, so that text order is time order in the index."""
    if moment is None:
        return None
    moment = moment.astimezone(UTC)
    if moment.year < 1000:  # strftime does not pad the year to four digits
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # What the strftime above gives, about ten times faster.
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


@dataclass(frozen=True)
class RunFilter:
    """What `runs` and every report select on. Empty means everything."""

    models: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    prompt_hash: str | None = None
    variant: str | None = None
    model_served: str | None = None
    agent_commit: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    tags: tuple[tuple[str, str], ...] = ()
    backfilled: bool | None = None
    judge: str | None = None
    """Judge id, a prefix of one, or a kind (rules, llm): the scores the next two look at."""
    verdicts: tuple[str, ...] = ()
    fired: tuple[str, ...] = ()
    limit: int | None = None


@dataclass(frozen=True)
class ScoreRow:
    """What the index keeps of one score (the file under scores/ is the truth)."""

    run_id: str
    judge_id: str
    kind: str
    model: str | None
    pack: str
    verdict: str
    diagnosis: bool | None
    skipped_reason: str | None
    created_at: str
    score_json: str
    criteria: tuple[tuple[str, bool | None], ...]


@dataclass(frozen=True)
class IndexEntry:
    """Everything the index keeps about one sealed run."""

    metadata: RunMetadata
    summary: RunSummary | None
    manifest: Manifest
    manifest_sha256: str


@dataclass(frozen=True)
class IndexedRun:
    """One run as the index knows it."""

    run_id: str
    scenario: str
    model: str
    model_served: str | None
    system_prompt_hash: str | None
    variant: str | None
    started_at: str | None
    backfilled: bool
    commands_run: int | None
    commands_denied: int | None
    exit_status: str | None
    sealed_at: str
    manifest_sha256: str
    metadata_json: str = field(repr=False)
    summary_json: str | None = field(repr=False, default=None)

    @property
    def metadata(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.metadata_json)
        return value

    @property
    def summary(self) -> dict[str, Any] | None:
        return json.loads(self.summary_json) if self.summary_json else None


@dataclass(frozen=True)
class QueryResult:
    """Columns and rows of a read-only SQL query."""

    columns: list[str]
    rows: list[tuple[Any, ...]]


class RunIndex(ABC):
    """The operations callers need from an index, whatever the database."""

    @abstractmethod
    def add(self, entries: Sequence[IndexEntry]) -> None:
        """Record sealed runs; an id already present is replaced by the new entry."""

    @abstractmethod
    def query(self, run_filter: RunFilter) -> list[IndexedRun]:
        """Runs matching `run_filter`, newest first."""

    @abstractmethod
    def count(self, run_filter: RunFilter | None = None) -> int:
        """How many runs match (all when no filter)."""

    @abstractmethod
    def get(self, run_id: str) -> IndexedRun | None:
        """One run by exact id."""

    @abstractmethod
    def ids_with_prefix(self, prefix: str, limit: int = 10) -> list[str]:
        """Run ids starting with `prefix` (for unambiguous short ids)."""

    @abstractmethod
    def manifest_hashes(self) -> dict[str, str]:
        """run_id -> sha256 of its MANIFEST.json, for every indexed run."""

    @abstractmethod
    def add_scores(self, rows: Sequence[ScoreRow]) -> None:
        """Index judges' scores (a score already indexed is replaced by the same one)."""

    @abstractmethod
    def rebuild_scores(self, rows: Iterable[ScoreRow]) -> int:
        """Replace every indexed score with `rows` (reindex); return how many."""

    @abstractmethod
    def rebuild(self, entries: Iterable[IndexEntry]) -> int:
        """Replace the whole index with `entries` in one transaction; returns the count."""

    @abstractmethod
    def sql(self, query: str, params: Sequence[Any] = ()) -> QueryResult:
        """Run a read-only query; anything that would write raises ReadOnlyQueryError."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""


_COLUMNS = (
    "run_id, scenario, model, model_served, system_prompt_hash, variant, started_at, "
    "backfilled, commands_run, commands_denied, exit_status, sealed_at, manifest_sha256, "
    "metadata_json, summary_json"
)

_INSERT = """
INSERT OR REPLACE INTO runs (
    run_id, scenario, model, model_served, provider, system_fingerprint, system_prompt_hash,
    base_prompt_hash, addon_name, addon_hash, variant, agent_name, agent_commit, agent_dirty,
    started_at, ended_at, silent_update_detectable, backfilled, commands_run, commands_denied,
    duration_s, tokens_in, tokens_out, cost_usd, exit_status, sealed_at, manifest_sha256,
    metadata_json, summary_json
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

# Authorizer action codes that a read-only query may use.
_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}


def _row_values(entry: IndexEntry) -> tuple[Any, ...]:
    meta = entry.metadata
    summary = entry.summary
    addon = meta.prompt_addon
    return (
        meta.run_id,
        meta.scenario,
        meta.model,
        meta.model_served,
        meta.provider,
        meta.system_fingerprint,
        meta.system_prompt_hash,
        meta.base_prompt_hash,
        addon.name if addon else None,
        addon.hash if addon else None,
        meta.variant,
        meta.agent.name,
        meta.agent.commit,
        None if meta.agent.dirty is None else int(meta.agent.dirty),
        format_time(meta.started_at),
        format_time(meta.ended_at),
        int(meta.silent_update_detectable),
        int(meta.backfilled),
        summary.commands_run if summary else None,
        summary.commands_denied if summary else None,
        summary.duration_s if summary else None,
        summary.tokens_in if summary else None,
        summary.tokens_out if summary else None,
        summary.cost_usd if summary else None,
        summary.exit_status if summary else None,
        format_time(entry.manifest.sealed_at),
        entry.manifest_sha256,
        meta.model_dump_json(),
        summary.model_dump_json() if summary else None,
    )


def _chunks(entries: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for entry in entries:
        chunk.append(entry)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def where_clause(run_filter: RunFilter) -> tuple[str, list[Any]]:
    """The SQL WHERE clause (over `runs`) and its parameters for `run_filter`."""
    clauses: list[str] = []
    params: list[Any] = []

    def one_of(column: str, values: tuple[str, ...]) -> None:
        if len(values) == 1:
            clauses.append(f"{column} = ?")
        else:
            clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
        params.extend(values)

    if run_filter.models:
        one_of("model", run_filter.models)
    if run_filter.scenarios:
        one_of("scenario", run_filter.scenarios)
    if run_filter.prompt_hash:
        # GLOB is case-sensitive and can use the index; the prefix is validated hex.
        clauses.append("system_prompt_hash GLOB ?")
        params.append(run_filter.prompt_hash + "*")
    if run_filter.variant is not None:
        clauses.append("variant = ?")
        params.append(run_filter.variant)
    if run_filter.model_served is not None:
        clauses.append("model_served = ?")
        params.append(run_filter.model_served)
    if run_filter.agent_commit is not None:
        clauses.append("agent_commit GLOB ?")
        params.append(run_filter.agent_commit + "*")
    if run_filter.since is not None:
        clauses.append("started_at >= ?")
        params.append(format_time(run_filter.since))
    if run_filter.until is not None:
        clauses.append("started_at < ?")
        params.append(format_time(run_filter.until))
    if run_filter.backfilled is not None:
        clauses.append("backfilled = ?")
        params.append(int(run_filter.backfilled))
    for key, value in run_filter.tags:
        clauses.append(
            "EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = runs.run_id "
            "AND t.key = ? AND t.value = ?)"
        )
        params.extend((key, value))
    judge = (run_filter.judge or "") + "*"
    if run_filter.verdicts:
        marks = ", ".join("?" * len(run_filter.verdicts))
        clauses.append(
            "EXISTS (SELECT 1 FROM scores s WHERE s.run_id = runs.run_id "
            f"AND s.judge_id GLOB ? AND s.verdict IN ({marks}))"
        )
        params.extend((judge, *run_filter.verdicts))
    elif run_filter.judge and not run_filter.fired:
        clauses.append(
            "EXISTS (SELECT 1 FROM scores s WHERE s.run_id = runs.run_id AND s.judge_id GLOB ?)"
        )
        params.append(judge)
    for criterion in run_filter.fired:
        clauses.append(
            "EXISTS (SELECT 1 FROM score_criteria c WHERE c.run_id = runs.run_id "
            "AND c.judge_id GLOB ? AND c.criterion = ? AND c.fired = 1)"
        )
        params.extend((judge, criterion))
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


class SQLiteIndex(RunIndex):
    """The index as one SQLite file (WAL mode, busy timeout), migrated forward when opened."""

    BUSY_TIMEOUT_MS = 60_000

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = self._connect(path)
        try:
            self.migrate()
        except BaseException:
            self.db.close()
            raise

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
            # Statement journals in memory: an INSERT OR REPLACE inside a transaction keeps
            # one per row, and on disk each row costs a dozen writes to a temporary file
            # (about a third of the time of indexing a batch of sealed runs).
            db.execute("PRAGMA temp_store = MEMORY")
        except sqlite3.DatabaseError as exc:
            raise IndexUnusableError(
                f"{path}: not a usable SQLite index ({exc}); "
                "rebuild it from the runs with `agentledger reindex`"
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
                f"(unknown migration {unknown[0]}); upgrade agentledger, or rebuild the index "
                "for this version with `agentledger reindex`"
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

    def add(self, entries: Sequence[IndexEntry]) -> None:
        if not entries:
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self._insert(entries)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _insert_scores(self, rows: Iterable[ScoreRow]) -> int:
        count = 0
        for chunk in _chunks(rows, 1000):
            self.db.executemany(
                "DELETE FROM score_criteria WHERE run_id = ? AND judge_id = ?",
                [(row.run_id, row.judge_id) for row in chunk],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO scores (run_id, judge_id, kind, model, pack, verdict, "
                "diagnosis, skipped_reason, created_at, score_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self._insert_scores(rows)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def rebuild_scores(self, rows: Iterable[ScoreRow]) -> int:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM score_criteria")
            self.db.execute("DELETE FROM scores")
            count = self._insert_scores(rows)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return count

    def rebuild(self, entries: Iterable[IndexEntry]) -> int:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM run_tags")
            self.db.execute("DELETE FROM runs")
            count = self._insert(entries, fresh=True)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
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
        )

    def query(self, run_filter: RunFilter) -> list[IndexedRun]:
        where, params = where_clause(run_filter)
        sql = (
            f"SELECT {_COLUMNS} FROM runs{where} "
            "ORDER BY started_at IS NULL, started_at DESC, run_id"
        )
        if run_filter.limit is not None:
            sql += " LIMIT ?"
            params.append(run_filter.limit)
        return [self._to_run(row) for row in self.db.execute(sql, params)]

    def count(self, run_filter: RunFilter | None = None) -> int:
        where, params = where_clause(run_filter or RunFilter())
        row = self.db.execute(f"SELECT count(*) FROM runs{where}", params).fetchone()
        return int(row[0])

    def get(self, run_id: str) -> IndexedRun | None:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return self._to_run(row) if row else None

    def ids_with_prefix(self, prefix: str, limit: int = 10) -> list[str]:
        escaped = prefix.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")
        rows = self.db.execute(
            "SELECT run_id FROM runs WHERE run_id GLOB ? ORDER BY run_id LIMIT ?",
            (escaped + "*", limit),
        )
        return [row[0] for row in rows]

    def manifest_hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT run_id, manifest_sha256 FROM runs"))

    def sql(self, query: str, params: Sequence[Any] = ()) -> QueryResult:
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
