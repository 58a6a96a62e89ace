"""`SqlQueries`: every read query of `RunIndex`, written once over a `Dialect`.

The engine gives it rows (`_rows`); `sql.SqlIndex` adds the writes and migrations.
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from agentledger.records.filters import RunFilter
from agentledger.store.index import RunIndex
from agentledger.store.index.dialect import Dialect
from agentledger.store.index.record_queries import RecordQueries
from agentledger.store.index.rows import (
    CriterionCell,
    CriterionFirst,
    Dimension,
    IndexedRun,
    JudgeTally,
    LabelResult,
    LabelRow,
    Ratings,
    RunColumns,
    RunFacets,
    RunSort,
    RunVerdict,
    ScoreRow,
    SkippedScore,
    VerdictCount,
    facets_of,
    label_rows_from,
    ratings_of,
    stored_flag,
    unpacked_criteria,
)
from agentledger.store.index.where import (
    chosen_sql,
    criteria_join_sql,
    current_label_where,
    dimension_sql,
    distinct_values_sql,
    journal_order,
    page_sql,
    scores_chosen,
    sort_sql,
    where_sql,
)

__all__ = ["CHUNK", "LABEL_FIELDS", "SCORE_FIELDS", "SqlQueries", "chunks"]

T = TypeVar("T")
CHUNK = 1000
"""Rows written per statement batch (and per transaction when rows are indexed one by one)."""

_COLUMNS = (
    "run_id, scenario, model, model_served, system_prompt_hash, variant, started_at, "
    "backfilled, commands_run, commands_denied, exit_status, sealed_at, manifest_sha256, "
    "metadata_json, summary_json, kind"
)


SCORE_FIELDS = (
    "run_id",
    "judge_id",
    "kind",
    "model",
    "pack",
    "verdict",
    "diagnosis",
    "skipped_reason",
    "created_at",
    "score_json",
    "criteria_packed",
    "accepted_seq",
)
"""The columns of a score's row, as written and read back (`ScoreRow` adds its criteria)."""

LABEL_FIELDS = (
    "label_id",
    "run_id",
    "source_kind",
    "source_name",
    "verdict",
    "diagnosis",
    "supersedes",
    "created_at",
    "label_json",
    "criteria_packed",
    "accepted_seq",
)
"""The columns of a label's row as written (the index derives ``current`` itself)."""

_LABEL_BRIEF = (
    "SELECT l.run_id, l.label_id, l.source_kind, l.source_name, l.verdict, l.created_at, "
    "l.criteria_packed FROM labels l WHERE "
)


def chunks(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last one shorter)."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _to_run(row: Sequence[Any]) -> IndexedRun:
    """A row of `_COLUMNS` (its fields in IndexedRun's order), backfilled as a bool."""
    values = list(row)
    values[7] = bool(values[7])
    return IndexedRun(*values)


def _label_results(rows: list[tuple[Any, ...]]) -> list[LabelResult]:
    """Rows of `_LABEL_BRIEF` as LabelResults, the criteria unpacked.

    Made column-wise, without a Python call per row (`tuple.__new__` of a named tuple class
    takes the values as they are): over 100,000 runs this is most of what reading them costs.
    """
    if not rows:
        return []
    columns = list(zip(*rows, strict=True))
    columns[-1] = tuple(map(unpacked_criteria, columns[-1]))
    return list(map(tuple.__new__, itertools.repeat(LabelResult), zip(*columns, strict=True)))


class SqlQueries(RecordQueries, RunIndex):
    """The read queries of the index as SQL in `dialect`; the engine gives the rows."""

    dialect: Dialect
    where: str
    """Where the index is, as shown in messages (a path, a URL without its password)."""

    @abstractmethod
    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a read-only query."""

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _column(self, sql: str, params: Sequence[Any] = ()) -> list[str]:
        return [str(row[0]) for row in self._rows(sql, params)]

    # -- runs ----------------------------------------------------------------------------------

    def query(self, run_filter: RunFilter) -> list[IndexedRun]:
        d = self.dialect
        where, params = where_sql(run_filter, d)
        sql = (
            f"SELECT {_COLUMNS} FROM runs{where} "
            "ORDER BY started_at IS NULL, started_at DESC, run_id"
        )
        sql += page_sql(run_filter, params, d)
        return [_to_run(row) for row in self._rows(sql, params)]

    def query_sorted(
        self, run_filter: RunFilter, sort: RunSort = "started", descending: bool = True
    ) -> list[IndexedRun]:
        d = self.dialect
        order = sort_sql(sort, descending, d)
        where, params = where_sql(run_filter, d)
        page = f"ORDER BY {order}{page_sql(run_filter, params, d)}"
        if d.plan_hints:
            # The page's rows are found by their rowids first, from an index where there is
            # one, and only those rows are read whole: a row holds kilobytes of JSON, and
            # reading every matching one to sort them took seconds over 100,000 runs.
            sql = (
                f"SELECT {_COLUMNS} FROM runs WHERE rowid IN "
                f"(SELECT rowid FROM runs{where} {page}) ORDER BY {order}"
            )
        else:
            sql = f"SELECT {_COLUMNS} FROM runs{where} {page}"
        return [_to_run(row) for row in self._rows(sql, params)]

    def count(self, run_filter: RunFilter | None = None) -> int:
        where, params = where_sql(run_filter or RunFilter(), self.dialect)
        row = self._one(f"SELECT count(*) FROM runs{where}", params)
        return int(row[0]) if row else 0

    def get(self, run_id: str) -> IndexedRun | None:
        row = self._one(f"SELECT {_COLUMNS} FROM runs WHERE run_id = {self.dialect.mark}", [run_id])
        return _to_run(row) if row else None

    def get_many(self, run_ids: Sequence[str]) -> dict[str, IndexedRun]:
        found: dict[str, IndexedRun] = {}
        for chunk in chunks(dict.fromkeys(run_ids), 5000):
            ids, params = self.dialect.any_of("run_id", chunk)
            rows = self._rows(f"SELECT {_COLUMNS} FROM runs WHERE {ids}", params)
            found.update((row[0], _to_run(row)) for row in rows)
        return found

    def ids_with_prefix(self, prefix: str, limit: int = 10) -> list[str]:
        d = self.dialect
        return self._column(
            f"SELECT run_id FROM runs WHERE {d.prefix('run_id')} ORDER BY run_id LIMIT {d.mark}",
            (d.prefix_pattern(prefix), limit),
        )

    def count_by(self, run_filter: RunFilter, dimension: Dimension) -> dict[str | None, int]:
        d = self.dialect
        column = dimension_sql(dimension)
        where, params = where_sql(run_filter, d)
        # With a filter, unary + keeps SQLite on the filter's index: grouping by walking the
        # dimension's own index (runs_kind) reads every run's row to test the filter.
        key = d.unhinted(column) if where else column
        rows = self._rows(
            f"SELECT {key}, count(*) FROM runs{where} GROUP BY 1 ORDER BY {d.nulls_first('1')}",
            params,
        )
        return {value: int(count) for value, count in rows}

    def overlap(self, a: RunFilter, b: RunFilter) -> int:
        where_a, params_a = where_sql(a, self.dialect)
        where_b, params_b = where_sql(b, self.dialect)
        clauses = [w.removeprefix(" WHERE ") for w in (where_a, where_b) if w]
        where = " WHERE " + " AND ".join(f"({clause})" for clause in clauses) if clauses else ""
        row = self._one(f"SELECT count(*) FROM runs{where}", [*params_a, *params_b])
        return int(row[0]) if row else 0

    def distinct(self, dimension: Dimension) -> list[str]:
        column = dimension_sql(dimension)
        if dimension != "day":
            # Each of these columns leads an index of its own: a seek per value.
            return self._column(distinct_values_sql(column, "runs"))
        return self._column(
            f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY 1"
        )

    def run_rows(self) -> dict[str, tuple[RunColumns, dict[str, str]]]:
        rows: dict[str, tuple[RunColumns, dict[str, str]]] = {
            row[0]: (RunColumns(*row), {})
            for row in self._rows(f"SELECT {', '.join(RunColumns._fields)} FROM runs")
        }
        for run_id, key, value in self._rows("SELECT run_id, key, value FROM run_tags"):
            if run_id in rows:
                rows[run_id][1][key] = value
        return rows

    def manifest_hashes(self) -> dict[str, str]:
        return {str(r): str(h) for r, h in self._rows("SELECT run_id, manifest_sha256 FROM runs")}

    def run_facets(self, run_filter: RunFilter) -> RunFacets:
        where, params = where_sql(run_filter, self.dialect)
        # Unary + keeps SQLite from walking the run_id key in order, which reads every run's
        # wide row: the covering runs_model_prompt index and a sort of its entries are a
        # third of that over 100,000 runs (agreement --by).
        order = self.dialect.unhinted("run_id")
        rows = self._rows(
            f"SELECT run_id, model, scenario, kind FROM runs{where} ORDER BY {order}", params
        )
        return facets_of(rows)

    # -- scores --------------------------------------------------------------------------------

    def score_keys(self) -> set[tuple[str, str]]:
        return {(str(r), str(j)) for r, j in self._rows("SELECT run_id, judge_id FROM scores")}

    def judge_ids(self) -> list[str]:
        return self._column(distinct_values_sql("judge_id", "scores"))

    def score_rows(self) -> list[ScoreRow]:
        criteria: dict[tuple[str, str], list[tuple[str, bool | None]]] = {}
        for run_id, judge_id, criterion, fired in self._rows(
            "SELECT run_id, judge_id, criterion, fired FROM score_criteria"
        ):
            criteria.setdefault((run_id, judge_id), []).append((criterion, stored_flag(fired)))
        return [
            ScoreRow(
                *[*row[:6], stored_flag(row[6]), *row[7:10]],
                *[tuple(criteria.get((row[0], row[1]), ())), *row[10:]],
            )
            for row in self._rows(
                f"SELECT {', '.join(SCORE_FIELDS)} FROM scores ORDER BY run_id, judge_id"
            )
        ]

    def judges_of(self, run_filter: RunFilter) -> list[JudgeTally]:
        where, params = where_sql(run_filter, self.dialect)
        rows = self._rows(
            f"WITH sel AS (SELECT run_id FROM runs{where}) SELECT s.judge_id, s.kind, "
            f"count(*), max(s.created_at), max(coalesce(s.accepted_seq, 0)) "
            f"FROM sel {self.dialect.cross_join} "
            f"{scores_chosen('s', self.dialect)} ON s.run_id = sel.run_id "
            "GROUP BY s.judge_id, s.kind",
            params,
        )
        tallies = [JudgeTally(str(j), str(k), int(n), str(t), int(q)) for j, k, n, t, q in rows]
        # Newest first by the journal's order (a judge's file times cannot put it ahead).
        return sorted(tallies, key=lambda t: (t.newest_seq, t.newest_at, t.judge_id), reverse=True)

    def newest_judge(self, run_filter: RunFilter, kind: str) -> str | None:
        d = self.dialect
        where, params = where_sql(run_filter, d)
        # The top score, with no GROUP BY: sorting every score to tally them was half of
        # judges_of's time over 100,000 runs.
        row = self._one(
            f"WITH sel AS (SELECT run_id FROM runs{where}) SELECT s.judge_id "
            f"FROM sel {d.cross_join} {scores_chosen('s', d)} ON s.run_id = sel.run_id "
            f"WHERE s.kind = {d.mark} "
            f"ORDER BY {journal_order('s', 'judge_id', newest_first=True)} LIMIT 1",
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
        d = self.dialect
        cte, params = chosen_sql(run_filter, judge_ids, d)
        keys = [dimension_sql(dimension) for dimension in by]
        columns = [*keys, "verdict", *(["diagnosis"] if diagnosis else [])]
        group = ", ".join(columns)
        order = ", ".join(map(d.nulls_first, columns))
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
        d = self.dialect
        cte, params = chosen_sql(run_filter, judge_ids, d)
        key = dimension_sql(by)
        # The newest run: the largest (started_at, run_id), a run without a start the oldest
        # (started_at is fixed width). SQLite takes `verdict` from the row of the max (a bare
        # column; unary + as in count_by), PostgreSQL from the first of DISTINCT ON.
        if d.plan_hints:
            sql = (
                f"{cte}SELECT +{key}, verdict, max(coalesce(started_at, '') || char(31) || "
                "run_id) FROM chosen WHERE verdict NOT IN ('skipped', 'not-applicable') GROUP BY 1"
            )
        else:
            sql = (
                f"{cte}SELECT DISTINCT ON (1) {key}, verdict FROM chosen "
                "WHERE verdict NOT IN ('skipped', 'not-applicable') "
                "ORDER BY 1, coalesce(started_at, '') DESC, run_id DESC"
            )
        return {row[0]: str(row[1]) for row in self._rows(sql, params)}

    def criterion_cells(
        self, run_filter: RunFilter, judge_ids: Sequence[str]
    ) -> list[CriterionCell]:
        if not judge_ids:
            return []
        d = self.dialect
        cte, params = chosen_sql(run_filter, judge_ids, d)
        join, join_params = criteria_join_sql(judge_ids, d)
        rows = self._rows(
            f"{cte}SELECT c.criterion, ch.model, ch.scenario, {d.count_if('c.fired = 1')}, "
            f"{d.count_if('c.fired IS NOT NULL')}, {d.count_if('c.fired IS NULL')} {join} "
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
        d = self.dialect
        cte, params = chosen_sql(run_filter, judge_ids, d)
        join, join_params = criteria_join_sql(judge_ids, d)
        # The earliest firing as one sortable string: started_at (fixed width), run id, prompt.
        sep = f"{d.char}(31)"
        rows = self._rows(
            f"{cte}SELECT ch.model, {d.count_if('c.fired IS NOT NULL')}, "
            f"{d.count_if('c.fired = 1')}, min(CASE WHEN c.fired = 1 THEN "
            f"(coalesce(ch.started_at, '') || {sep} || ch.run_id || {sep} || "
            f"coalesce(ch.system_prompt_hash, '')){d.bytewise} END) {join} "
            f"WHERE c.criterion = {d.mark} GROUP BY ch.model ORDER BY ch.model",
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
        d = self.dialect
        # Every criterion any judge rated (a seek each in score_criteria_fired), kept if one of
        # these judges rated it: a probe of that criterion's entries each.
        hint = " INDEXED BY score_criteria_fired" if d.plan_hints else ""
        judges, params = d.any_of("s.judge_id", judge_ids)
        return self._column(
            f"WITH c(criterion) AS ({distinct_values_sql('criterion', 'score_criteria')}) "
            f"SELECT criterion FROM c WHERE EXISTS (SELECT 1 FROM score_criteria s{hint} "
            f"WHERE s.criterion = c.criterion AND {judges}) ORDER BY criterion",
            params,
        )

    def packs_of(self, judge_ids: Sequence[str]) -> list[str]:
        # One score per judge: a judge id fixes its pack.
        sql = f"SELECT pack FROM scores WHERE judge_id = {self.dialect.mark} LIMIT 1"
        return sorted({row[0] for judge_id in judge_ids for row in self._rows(sql, [judge_id])})

    def score_ratings(self, run_filter: RunFilter, judge_ids: Sequence[str]) -> Ratings:
        if not judge_ids:
            return ratings_of([])
        cte, params = chosen_sql(run_filter, judge_ids, self.dialect)
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
        runs, params = self.dialect.any_of("run_id", ids)
        rows = self._rows(
            f"SELECT run_id, judge_id, kind, verdict FROM scores WHERE {runs} "
            f"ORDER BY run_id, {journal_order('', 'judge_id')}",
            params,
        )
        return [RunVerdict(*row) for row in rows]

    def scores_of(self, run_id: str) -> list[str]:
        return self._column(
            f"SELECT score_json FROM scores WHERE run_id = {self.dialect.mark} "
            f"ORDER BY {journal_order('', 'judge_id')}",
            [run_id],
        )

    def skipped_scores(self) -> list[SkippedScore]:
        rows = self._rows(
            "SELECT s.run_id, r.model, s.judge_id, s.model, s.skipped_reason "
            "FROM scores s JOIN runs r ON r.run_id = s.run_id "
            "WHERE s.verdict IN ('skipped', 'unscored') "
            "ORDER BY r.started_at IS NULL, r.started_at DESC, s.run_id, s.judge_id"
        )
        return [SkippedScore(*row) for row in rows]

    def disagreeing_runs(self) -> list[str]:
        return self._column(
            # Judges of one pack disagree; two packs judge different criteria.
            "WITH split AS (SELECT DISTINCT run_id FROM scores "
            "WHERE verdict NOT IN ('skipped', 'not-applicable') "
            "GROUP BY run_id, pack HAVING count(DISTINCT verdict) > 1) "
            "SELECT r.run_id FROM split JOIN runs r ON r.run_id = split.run_id "
            "ORDER BY r.started_at IS NULL, r.started_at DESC, r.run_id"
        )

    # -- labels --------------------------------------------------------------------------------

    def labels_of(self, run_id: str) -> list[str]:
        return self._column(
            f"SELECT label_json FROM labels WHERE run_id = {self.dialect.mark} "
            f"ORDER BY {journal_order('', 'label_id')}",
            [run_id],
        )

    def current_label_results(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[LabelResult]:
        where, params = current_label_where(source_kind, source_name, "l.", self.dialect)
        rows = self._rows(
            f"{_LABEL_BRIEF}{where} ORDER BY l.run_id, {journal_order('l', 'label_id')}", params
        )
        return _label_results(rows)

    def current_labels_of(self, run_ids: Sequence[str]) -> list[LabelResult]:
        ids = sorted(set(run_ids))
        if not ids:
            return []
        runs, params = self.dialect.any_of("l.run_id", ids)
        rows = self._rows(
            f"{_LABEL_BRIEF}l.current = 1 AND {runs} "
            f"ORDER BY l.run_id, {journal_order('l', 'label_id')}",
            params,
        )
        return _label_results(rows)

    def label_ratings(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> Ratings:
        where, params = current_label_where(source_kind, source_name, "l.", self.dialect)
        rows = self._rows(
            f"SELECT l.run_id, l.verdict, l.criteria_packed FROM labels l WHERE {where} "
            f"ORDER BY l.run_id, {journal_order('l', 'label_id')}",
            params,
        )
        return ratings_of(rows)

    def current_labels(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[str]:
        where, params = current_label_where(source_kind, source_name, "", self.dialect)
        return self._column(
            f"SELECT label_json FROM labels WHERE {where} "
            f"ORDER BY run_id, {journal_order('', 'label_id')}",
            params,
        )

    def label_rows(self) -> list[LabelRow]:
        return label_rows_from(
            self._rows(
                "SELECT label_id, run_id, source_kind, source_name, verdict, diagnosis, "
                "supersedes, created_at, label_json, current, criteria_packed, accepted_seq "
                "FROM labels ORDER BY label_id"
            ),
            self._rows(
                "SELECT label_id, criterion, fired FROM label_criteria ORDER BY label_id, criterion"
            ),
        )

    def label_ids(self) -> set[str]:
        return set(self._column("SELECT label_id FROM labels"))
