"""`SqlIndex`: the index written once over a `Dialect`: its writes and migrations here, its
read queries in `queries.SqlQueries`.

An engine (`sqlite.SQLiteIndex`, `postgres.PostgresIndex`) subclasses it with what only it
knows: how to connect, read rows (`_rows`), run a write transaction (`_transact`), empty and
refill tables in one (`_replace`), hold off other machines while migrating (`_migrating`),
and which errors mean "this row cannot be indexed" (`ROW_ERRORS`). The SQL is here.

Writes run in key order (runs by id, scores by (run, judge), labels by id) so that two
machines writing the same records take their row locks in one order and never deadlock.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from agentledger.errors import IndexVersionError
from agentledger.store.index.migrations import MIGRATIONS
from agentledger.store.index.queries import LABEL_FIELDS, SCORE_FIELDS, SqlQueries, chunks
from agentledger.store.index.rows import (
    DecisionRow,
    IndexEntry,
    LabelRow,
    OutcomeRow,
    RunColumns,
    ScoreRow,
    format_time,
    packed_criteria,
    run_columns,
)

__all__ = ["SqlIndex", "Writer", "first_line"]

T = TypeVar("T")
R = TypeVar("R")
_DECISION_FIELDS = (
    "decision_id",
    "kind",
    "subject",
    "outcome",
    "supersedes",
    "created_at",
    "decision_json",
    "accepted_seq",
)


_OUTCOME_FIELDS = (
    "outcome_id",
    "run_id",
    "scenario",
    "created_at",
    "fixed",
    "durable",
    "collateral",
    "verified",
    "outcome_json",
    "accepted_seq",
)


class Writer(Protocol):
    """What a write transaction is given: an sqlite3 connection or a psycopg cursor."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...

    def executemany(self, sql: Any, params: Any, /) -> Any: ...


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (PostgreSQL adds detail lines)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


class SqlIndex(SqlQueries):
    """Every typed query and write of the index as SQL in `dialect`; the engine's part is
    abstract."""

    ROW_ERRORS: tuple[type[BaseException], ...] = (OverflowError, ValueError)
    """What a row the index cannot take raises (a number beyond 64 bits, a string the
    database refuses): that row is left out and reported; any other error stops the write."""

    # -- the engine's part ---------------------------------------------------------------------

    @abstractmethod
    def _transact(self, body: Callable[[Writer], T], *, serializable: bool = False) -> T:
        """`body` in one write transaction (`serializable` where it reads what it writes)."""

    @abstractmethod
    def _replace(self, tables: Sequence[str], body: Callable[[Writer], int]) -> int:
        """Empty `tables` and refill them by `body`, in one transaction."""

    @abstractmethod
    def _migrating(self) -> AbstractContextManager[Writer]:
        """One migration's transaction, other machines held off until it ends."""

    @abstractmethod
    def _has_migrations_table(self) -> bool:
        """Whether the index records migrations yet (a new one does not)."""

    # -- migrations ----------------------------------------------------------------------------

    def applied_migrations(self) -> list[str]:
        if not self._has_migrations_table():
            return []
        return self._column("SELECT name FROM _migrations ORDER BY name")

    def migrate(self) -> list[str]:
        """Apply every migration this index lacks, each in its own transaction with the row
        recording it; refuse an index a newer agentledger migrated."""
        known = [step.name for step in MIGRATIONS]
        applied = self.applied_migrations()
        unknown = sorted(set(applied) - set(known))
        if unknown:
            raise IndexVersionError(
                f"{self.where}: this index was migrated by a newer agentledger "
                f"(unknown migration {unknown[0]}); upgrade agentledger, or build an index for "
                "this version from the files with `agentledger reindex` (the runs and records "
                "are not touched)"
            )
        if len(applied) == len(known):
            return []
        d = self.dialect
        newly: list[str] = []
        for step in MIGRATIONS:
            if step.name in applied:
                continue
            with self._migrating() as db:
                db.execute(
                    d.ddl(
                        "CREATE TABLE IF NOT EXISTS _migrations "
                        "(name {text} PRIMARY KEY, applied_at TEXT NOT NULL)"
                    )
                )
                mark = d.mark
                done = db.execute(f"SELECT 1 FROM _migrations WHERE name = {mark}", (step.name,))
                if not done.fetchone():
                    for statement in step.statements(d):
                        db.execute(statement)
                    db.execute(
                        f"INSERT INTO _migrations (name, applied_at) VALUES ({mark}, {mark})",
                        (step.name, format_time(datetime.now(UTC))),
                    )
                    newly.append(step.name)
        if applied:
            self.upgraded_by = tuple(newly)
        return newly

    # -- writing -------------------------------------------------------------------------------

    def _insert_runs(self, db: Writer, entries: Sequence[IndexEntry], fresh: bool = False) -> int:
        """Upsert runs and replace their tags; `fresh`: the tables are empty, no tag to drop."""
        d = self.dialect
        ordered = sorted(entries, key=lambda e: e.metadata.run_id)
        if not fresh:
            ids, params = d.any_of("run_id", [entry.metadata.run_id for entry in ordered])
            db.execute(f"DELETE FROM run_tags WHERE {ids}", params)
        db.executemany(
            d.upsert("runs", RunColumns._fields, ["run_id"]),
            [run_columns(entry) for entry in ordered],
        )
        tags = [
            (entry.metadata.run_id, key, value)
            for entry in ordered
            for key, value in sorted(entry.metadata.tags.items())
        ]
        if tags:
            db.executemany(
                d.upsert("run_tags", ("run_id", "key", "value"), ["run_id", "key"]), tags
            )
        return len(ordered)

    def _insert_scores(self, db: Writer, rows: Sequence[ScoreRow]) -> int:
        d = self.dialect
        ordered = sorted(rows, key=lambda r: (r.run_id, r.judge_id))
        db.executemany(
            f"DELETE FROM score_criteria WHERE run_id = {d.mark} AND judge_id = {d.mark}",
            [(row.run_id, row.judge_id) for row in ordered],
        )
        db.executemany(
            d.upsert("scores", SCORE_FIELDS, ["run_id", "judge_id"]),
            [
                (
                    row.run_id,
                    row.judge_id,
                    row.kind,
                    row.model,
                    row.pack,
                    row.verdict,
                    _flag(row.diagnosis),
                    row.skipped_reason,
                    row.created_at,
                    row.score_json,
                    packed_criteria(row.criteria),
                    row.accepted_seq,
                )
                for row in ordered
            ],
        )
        criteria = [
            (row.run_id, row.judge_id, criterion, _flag(fired))
            for row in ordered
            for criterion, fired in sorted(dict(row.criteria).items())
        ]
        if criteria:
            db.executemany(
                d.upsert(
                    "score_criteria",
                    ("run_id", "judge_id", "criterion", "fired"),
                    ["run_id", "judge_id", "criterion"],
                ),
                criteria,
            )
        return len(ordered)

    def _insert_labels(self, db: Writer, rows: Sequence[LabelRow]) -> set[str]:
        """Upsert labels and their criteria; the runs they are of."""
        d = self.dialect
        ordered = sorted(rows, key=lambda r: r.label_id)
        ids, params = d.any_of("label_id", [row.label_id for row in ordered])
        db.execute(f"DELETE FROM label_criteria WHERE {ids}", params)
        db.executemany(
            d.upsert("labels", LABEL_FIELDS, ["label_id"]),
            [
                (
                    row.label_id,
                    row.run_id,
                    row.source_kind,
                    row.source_name,
                    row.verdict,
                    _flag(row.diagnosis),
                    row.supersedes,
                    row.created_at,
                    row.label_json,
                    packed_criteria(row.criteria),
                    row.accepted_seq,
                )
                for row in ordered
            ],
        )
        criteria = [
            (row.label_id, criterion, _flag(fired))
            for row in ordered
            for criterion, fired in sorted(dict(row.criteria).items())
        ]
        if criteria:
            db.executemany(
                d.upsert(
                    "label_criteria", ("label_id", "criterion", "fired"), ["label_id", "criterion"]
                ),
                criteria,
            )
        return {row.run_id for row in ordered}

    def _mark_current(self, db: Writer, runs: Sequence[str] | None) -> None:
        """Set the current flag of the labels of `runs` (of every run when None): a
        (run, source)'s current label is its newest (by the journal's order, then time), unless
        a label of the run supersedes it
        (a source's newer label replaces its older ones; a correction by another source
        leaves that source none)."""
        ranked, where, params = "", "", list[Any]()
        if runs is not None:
            ranked, params = self.dialect.any_of("l.run_id", runs)
            ranked = f"WHERE {ranked}"
            where, more = self.dialect.any_of("run_id", runs)
            where = f" WHERE {where}"
            params += more
        db.execute(
            "UPDATE labels SET current = CAST((label_id IN (SELECT label_id FROM (SELECT "
            "label_id, row_number() OVER (PARTITION BY run_id, source_kind, source_name "
            "ORDER BY coalesce(accepted_seq, 0) DESC, created_at DESC, label_id DESC) AS rn "
            f"FROM labels l {ranked}) ranked "
            "WHERE rn = 1) AND NOT EXISTS (SELECT 1 FROM labels x WHERE x.run_id = "
            f"labels.run_id AND x.supersedes = labels.label_id)) AS INTEGER){where}",
            params,
        )

    def _add_each(
        self,
        items: Iterable[T],
        insert: Callable[[Writer, Sequence[T]], int],
        name: Callable[[T], str],
    ) -> tuple[int, list[tuple[str, str]]]:
        """Index `items` a chunk per transaction; a chunk with a row the index cannot take is
        indexed row by row, leaving out (and returning) the rows it refuses."""
        added, left_out = 0, []
        for chunk in chunks(items):
            try:
                added += self._transact(lambda db, c=chunk: insert(db, c))  # type: ignore[misc]
                continue
            except self.ROW_ERRORS:
                pass  # one row the index cannot take: find it, index the others
            for item in chunk:
                try:
                    added += self._transact(lambda db, i=item: insert(db, [i]))  # type: ignore[misc]
                except self.ROW_ERRORS as exc:
                    left_out.append((name(item), f"the index cannot take it: {first_line(exc)}"))
        return added, left_out

    def add(self, entries: Sequence[IndexEntry]) -> None:
        if entries:
            chunk = list(entries)
            self._transact(lambda db: self._insert_runs(db, chunk))

    def add_each(self, entries: Iterable[IndexEntry]) -> tuple[int, list[tuple[str, str]]]:
        # Into an empty index (a rebuild), no old tags can be left to drop.
        fresh = self._one("SELECT 1 FROM runs LIMIT 1") is None

        def insert(db: Writer, chunk: Sequence[IndexEntry]) -> int:
            return self._insert_runs(db, chunk, fresh)

        return self._add_each(entries, insert, lambda e: e.metadata.run_id)

    def _add(self, insert: Callable[[Writer, list[R]], int], rows: Sequence[R]) -> None:
        """Index `rows` by `insert`, in one transaction."""
        if rows:
            chunk = list(rows)
            self._transact(lambda db: insert(db, chunk))

    def _rebuild(
        self, tables: Sequence[str], insert: Callable[[Writer, list[R]], int], rows: Iterable[R]
    ) -> int:
        """Replace what `tables` hold with `rows`, indexed by `insert` a chunk at a time."""
        return self._replace(tables, lambda db: sum(insert(db, chunk) for chunk in chunks(rows)))

    def add_scores(self, rows: Sequence[ScoreRow]) -> None:
        self._add(self._insert_scores, rows)

    def add_scores_each(self, rows: Iterable[ScoreRow]) -> tuple[int, list[tuple[str, str]]]:
        return self._add_each(rows, self._insert_scores, lambda r: f"{r.run_id}/{r.judge_id}")

    def rebuild(self, entries: Iterable[IndexEntry]) -> int:
        def insert(db: Writer, chunk: list[IndexEntry]) -> int:
            return self._insert_runs(db, chunk, fresh=True)

        return self._rebuild(("run_tags", "runs"), insert, entries)

    def rebuild_scores(self, rows: Iterable[ScoreRow]) -> int:
        return self._rebuild(("score_criteria", "scores"), self._insert_scores, rows)

    def add_labels(self, rows: Sequence[LabelRow]) -> None:
        if not rows:
            return
        chunk = list(rows)

        def write(db: Writer) -> None:
            self._mark_current(db, sorted(self._insert_labels(db, chunk)))

        # The current flags are read and written: two machines labelling one run at once
        # must not both keep their own label current.
        self._transact(write, serializable=True)

    def rebuild_labels(self, rows: Iterable[LabelRow]) -> int:
        def insert(db: Writer) -> int:
            count = 0
            for chunk in chunks(rows):
                self._insert_labels(db, chunk)
                count += len(chunk)
            self._mark_current(db, None)
            return count

        return self._replace(("label_criteria", "labels"), insert)

    def _insert_decisions(self, db: Writer, rows: Sequence[DecisionRow]) -> int:
        d = self.dialect
        ordered = sorted(rows, key=lambda r: r.decision_id)
        ids, params = d.any_of("decision_id", [row.decision_id for row in ordered])
        db.execute(f"DELETE FROM decision_runs WHERE {ids}", params)
        db.executemany(
            d.upsert("decisions", _DECISION_FIELDS, ["decision_id"]),
            [tuple(getattr(row, name) for name in _DECISION_FIELDS) for row in ordered],
        )
        runs = [(row.decision_id, run_id) for row in ordered for run_id in row.run_ids]
        if runs:
            db.executemany(
                d.upsert("decision_runs", ("decision_id", "run_id"), ["decision_id", "run_id"]),
                runs,
            )
        return len(ordered)

    def add_decisions(self, rows: Sequence[DecisionRow]) -> None:
        self._add(self._insert_decisions, rows)

    def rebuild_decisions(self, rows: Iterable[DecisionRow]) -> int:
        return self._rebuild(("decision_runs", "decisions"), self._insert_decisions, rows)

    def _insert_outcomes(self, db: Writer, rows: Sequence[OutcomeRow]) -> int:
        ordered = sorted(rows, key=lambda r: r.outcome_id)
        db.executemany(
            self.dialect.upsert("outcomes", _OUTCOME_FIELDS, ["outcome_id"]),
            [tuple(getattr(row, name) for name in _OUTCOME_FIELDS) for row in ordered],
        )
        return len(ordered)

    def add_outcomes(self, rows: Sequence[OutcomeRow]) -> None:
        self._add(self._insert_outcomes, rows)

    def rebuild_outcomes(self, rows: Iterable[OutcomeRow]) -> int:
        return self._rebuild(("outcomes",), self._insert_outcomes, rows)
