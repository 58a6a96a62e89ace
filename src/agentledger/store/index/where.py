"""How the index turns a `RunFilter` into SQL: the WHERE clause over `runs`, the
chosen-score CTE every report query starts from, sorting and paging.

Written once over a `Dialect` (`agentledger.store.index.dialect`): what differs between the
engines is one field or method of it; everything else is the same SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentledger.errors import InputError
from agentledger.records.filters import RunFilter
from agentledger.store.index.dialect import SQLITE, Dialect
from agentledger.store.index.rows import format_time

__all__ = [
    "SORT_COLUMNS",
    "chosen_sql",
    "criteria_join_sql",
    "current_label_where",
    "dimension_sql",
    "distinct_values_sql",
    "journal_order",
    "marks",
    "page_sql",
    "scores_chosen",
    "sort_sql",
    "where_sql",
]


_DIMENSION_SQL: dict[str, str] = {
    "model": "model",
    "scenario": "scenario",
    "kind": "kind",
    "system_prompt_hash": "system_prompt_hash",
    "model_served": "model_served",
    "day": "substr(started_at, 1, 10)",
}


def dimension_sql(dimension: str) -> str:
    """The SQL expression over `runs` of a `Dimension` (a bad name is an InputError)."""
    try:
        return _DIMENSION_SQL[dimension]
    except KeyError:
        raise InputError(
            f"unknown dimension {dimension!r}: choose from {', '.join(_DIMENSION_SQL)}"
        ) from None


def distinct_values_sql(column: str, table: str) -> str:
    """The sorted distinct non-null values of an indexed `column` of `table` as one seek in the
    column's index per value (``min(column) WHERE column > previous``), not a read of every
    entry: neither SQLite without statistics (a ledger's index never has them) nor PostgreSQL
    15 skip-scans by itself, and a form's lists of models, judges or criteria read whole
    indexes (525,000 criterion entries over 100,000 runs) on every page. The same text on both
    backends."""
    return (
        f"WITH RECURSIVE v(x) AS (SELECT min({column}) FROM {table} UNION ALL "
        f"SELECT (SELECT min({column}) FROM {table} WHERE {column} > v.x) FROM v "
        "WHERE v.x IS NOT NULL) SELECT x FROM v WHERE x IS NOT NULL"
    )


def where_sql(run_filter: RunFilter, dialect: Dialect = SQLITE) -> tuple[str, list[Any]]:
    """The SQL WHERE clause (over `runs`) and its parameters for `run_filter`."""
    clauses: list[str] = []
    params: list[Any] = []
    mark = dialect.mark

    def one_of(column: str, values: tuple[str, ...]) -> None:
        if len(values) == 1:
            clauses.append(f"{column} = {mark}")
        else:
            clauses.append(f"{column} IN ({dialect.marks(len(values))})")
        params.extend(values)

    if run_filter.models:
        one_of("model", run_filter.models)
    if run_filter.scenarios:
        one_of("scenario", run_filter.scenarios)
    if run_filter.prompt_hash:
        clauses.append(dialect.prefix("system_prompt_hash"))
        params.append(dialect.prefix_pattern(run_filter.prompt_hash))
    if run_filter.variant is not None:
        clauses.append(f"variant = {mark}")
        params.append(run_filter.variant)
    if run_filter.model_served is not None:
        clauses.append(f"model_served = {mark}")
        params.append(run_filter.model_served)
    if run_filter.agent_commit is not None:
        clauses.append(dialect.prefix("agent_commit"))
        params.append(dialect.prefix_pattern(run_filter.agent_commit))
    if run_filter.since is not None:
        clauses.append(f"started_at >= {mark}")
        params.append(format_time(run_filter.since))
    if run_filter.until is not None:
        clauses.append(f"started_at < {mark}")
        params.append(format_time(run_filter.until))
    if run_filter.backfilled is not None:
        clauses.append(f"backfilled = {mark}")
        params.append(int(run_filter.backfilled))
    if run_filter.kinds:
        # Unary + keeps SQLite off runs_kind for filtering: a handful of values over every
        # run, where the model, prompt and scenario indexes are the selective ones.
        one_of(dialect.unhinted("kind"), run_filter.kinds)
    for key, value in run_filter.tags:
        clauses.append(dialect.runs_having("run_tags t", f"t.key = {mark} AND t.value = {mark}"))
        params.extend((key, value))
    judge = dialect.prefix_pattern(run_filter.judge or "")
    judge_prefix = dialect.prefix("s.judge_id")
    if run_filter.verdicts:
        verdicts = f"s.verdict IN ({dialect.marks(len(run_filter.verdicts))})"
        clauses.append(
            dialect.runs_having(
                scores_chosen("s", dialect), f"{judge_prefix} AND {verdicts}", common=True
            )
        )
        params.extend((judge, *run_filter.verdicts))
    elif run_filter.judge and not run_filter.fired:
        clauses.append(dialect.runs_having(scores_chosen("s", dialect), judge_prefix, common=True))
        params.append(judge)
    for criterion in run_filter.fired:
        clauses.append(
            dialect.runs_having(
                "score_criteria c",
                f"c.criterion = {mark} AND c.fired = 1 AND {dialect.prefix('c.judge_id')}",
            )
        )
        params.extend((criterion, judge))
    _label_clauses(run_filter, clauses, params, dialect)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _label_clauses(
    run_filter: RunFilter, clauses: list[str], params: list[Any], dialect: Dialect
) -> None:
    """--label-source, --label-verdict, --labelled/--unlabelled: over current labels only."""
    if not (run_filter.label_source or run_filter.label_verdicts) and run_filter.labelled is None:
        return
    inner = "l.current = 1"
    inner_params: list[Any] = []
    if run_filter.label_source == "human":
        inner += " AND l.source_kind = 'person'"
    elif run_filter.label_source:
        inner += f" AND l.source_name = {dialect.mark}"
        inner_params.append(run_filter.label_source)
    if run_filter.label_verdicts:
        inner += f" AND l.verdict IN ({dialect.marks(len(run_filter.label_verdicts))})"
        inner_params.extend(run_filter.label_verdicts)
    clauses.append(dialect.runs_having("labels l", inner, negate=run_filter.labelled is False))
    params.extend(inner_params)


def current_label_where(
    source_kind: str | None, source_name: str | None, alias: str = "", dialect: Dialect = SQLITE
) -> tuple[str, list[str]]:
    """The WHERE clause (and its parameters) of the current labels of a source."""
    clauses = [f"{alias}current = 1"]
    params: list[str] = []
    if source_kind is not None:
        clauses.append(f"{alias}source_kind = {dialect.mark}")
        params.append(source_kind)
    if source_name is not None:
        clauses.append(f"{alias}source_name = {dialect.mark}")
        params.append(source_name)
    return " AND ".join(clauses), params


def journal_order(alias: str, id_column: str, *, newest_first: bool = False) -> str:
    """``ORDER BY`` terms putting the records of a kind (scores, labels, decisions, outcomes)
    in the order the ledger accepted them: the position of each one's journal entry, then (for
    records of one entry, or rows indexed before the index kept the position) the time its file
    gives and its id. The one rule for "newest" of every kind, so that no time written in a
    file (a planted one dated 2099) can put a record ahead of one accepted after it."""
    prefix = f"{alias}." if alias else ""
    terms = (f"coalesce({prefix}accepted_seq, 0)", f"{prefix}created_at", f"{prefix}{id_column}")
    return ", ".join(f"{term} DESC" if newest_first else term for term in terms)


def journal_rank(alias: str, id_column: str) -> str:
    """One text per row that sorts as `journal_order` does (for SQLite's bare-column max(),
    which takes one expression): the entry's position zero-padded, then time and id."""
    prefix = f"{alias}." if alias else ""
    return (
        f"printf('%020d %s %s', coalesce({prefix}accepted_seq, 0), {prefix}created_at, "
        f"{prefix}{id_column})"
    )


def scores_chosen(alias: str = "", dialect: Dialect = SQLITE) -> str:
    """The scores table (as `alias`) read through its covering index, migration m005's
    scores_chosen: what a report reads of a score (verdict, diagnosis, created_at, kind),
    found by (run_id, judge_id), without the score's JSON. (SQLite is told which index;
    PostgreSQL finds its own.)"""
    table = f"scores {alias}" if alias else "scores"
    return f"{table} INDEXED BY scores_chosen" if dialect.plan_hints else table


_SEL_COLUMNS = "run_id, model, scenario, model_served, system_prompt_hash, started_at, kind"


def chosen_sql(
    run_filter: RunFilter, judge_ids: Sequence[str], dialect: Dialect = SQLITE
) -> tuple[str, list[Any]]:
    """``WITH sel AS (...), chosen AS (...) ``: the matching runs, and each one's chosen score
    (with several judges, the newest by `journal_order`).

    `sel` has the runs whether scored or not; `chosen` adds judge_id, verdict, diagnosis and
    criteria_packed for the runs that have a score among `judge_ids`. With one judge id each
    run's score is one lookup in the scores_chosen index (the usual, and the fast, case).

    In SQLite the plan is pinned rather than left to statistics (a ledger's index is never
    ANALYZEd): CROSS JOIN keeps SQLite walking the selected runs (in the covering
    runs_model_prompt index, or the filter's own) and looking each one's score up, and
    INDEXED BY makes that lookup read the covering scores_chosen index. Left to choose, SQLite
    takes the unique (run_id, judge_id) key and reads each score's wide row, or walks the
    judge's scores and reads each run's: 2 to 2.5x slower over 100,000 runs.
    """
    where, params = where_sql(run_filter, dialect)
    ids = list(judge_ids)
    join = dialect.cross_join
    sel = f"WITH sel AS (SELECT {_SEL_COLUMNS} FROM runs{where}), "
    if len(ids) == 1:
        chosen = (
            "chosen AS (SELECT sel.*, s.judge_id, s.verdict, s.diagnosis, s.criteria_packed "
            "FROM sel "
            f"{join} {scores_chosen('s', dialect)} ON s.run_id = sel.run_id "
            f"AND s.judge_id = {dialect.mark}) "
        )
    elif ids:
        # The newest score of each run among the judges: SQLite's bare columns of max(),
        # PostgreSQL's DISTINCT ON.
        if dialect.plan_hints:
            newest = (
                "SELECT run_id, judge_id, verdict, diagnosis, criteria_packed, "
                f"max({journal_rank('', 'judge_id')}) "
                f"FROM {scores_chosen()} WHERE judge_id IN ({dialect.marks(len(ids))}) "
                "GROUP BY run_id"
            )
        else:
            newest = (
                "SELECT DISTINCT ON (run_id) run_id, judge_id, verdict, diagnosis, criteria_packed "
                "FROM scores "
                f"WHERE judge_id IN ({dialect.marks(len(ids))}) "
                f"ORDER BY run_id, {journal_order('', 'judge_id', newest_first=True)}"
            )
        chosen = (
            f"newest AS ({newest}), "
            "chosen AS (SELECT sel.*, n.judge_id, n.verdict, n.diagnosis, n.criteria_packed "
            "FROM sel "
            f"{join} newest n ON n.run_id = sel.run_id) "
        )
    else:
        chosen = (
            "chosen AS (SELECT sel.*, NULL AS judge_id, NULL AS verdict, "
            "NULL AS diagnosis, NULL AS criteria_packed FROM sel WHERE 1 = 0) "
        )
    return sel + chosen, [*params, *ids]


def criteria_join_sql(judge_ids: Sequence[str], dialect: Dialect = SQLITE) -> tuple[str, list[Any]]:
    """``FROM ... ch JOIN score_criteria c ...``: the chosen scores' criterion results.

    With one judge id, the criteria rows of that judge are the chosen ones, so the join
    skips the scores table (the widest one); CROSS JOIN keeps SQLite walking the runs and
    looking criteria up by primary key, the faster order on a large index.
    """
    if len(judge_ids) == 1:
        return (
            f"FROM sel ch {dialect.cross_join} score_criteria c ON c.run_id = ch.run_id "
            f"AND c.judge_id = {dialect.mark}",
            [judge_ids[0]],
        )
    return (
        "FROM chosen ch JOIN score_criteria c ON c.run_id = ch.run_id AND c.judge_id = ch.judge_id",
        [],
    )


SORT_COLUMNS: dict[str, str] = {
    "started": "started_at",
    "run_id": "run_id",
    "model": "model",
    "scenario": "scenario",
    "kind": "kind",
    "commands_run": "commands_run",
    "commands_denied": "commands_denied",
}
"""The column of each `RunSort`."""


def sort_sql(sort: str, descending: bool, dialect: Dialect = SQLITE) -> str:
    """The ORDER BY terms of a page of runs sorted by `sort`: runs without a value last,
    ties by run id in the same direction (an unknown sort is a ValueError)."""
    column = SORT_COLUMNS.get(sort)
    if column is None:
        raise ValueError(f"unknown sort {sort!r}: choose from {', '.join(SORT_COLUMNS)}")
    direction = "DESC" if descending else "ASC"
    nullable = column in ("started_at", "commands_run", "commands_denied")
    if not dialect.plan_hints:
        order = f"{column} {direction} NULLS LAST" if nullable else f"{column} {direction}"
    else:
        # SQLite sorts NULL first: descending puts it last by itself, in an order an index
        # on the column gives; ascending needs it said, where the column can be NULL (saying
        # it of any other column would keep SQLite from walking that column's index).
        nulls = f"{column} IS NULL, " if nullable and not descending else ""
        order = f"{nulls}{column} {direction}"
    if column != "run_id":
        # Ties by id in the same direction: the order of an index of (column, run_id),
        # walked backwards for a descending sort. An ascending tie-break under a descending
        # column made SQLite sort every run of one value in a temporary b-tree (a few values
        # of kind or commands run over 100,000 runs: 0.5 s a page).
        order += f", run_id {direction}"
    return order


def page_sql(run_filter: RunFilter, params: list[Any], dialect: Dialect = SQLITE) -> str:
    """The LIMIT / OFFSET of `run_filter`'s page (empty for all of it), its values appended to
    `params`. (SQLite has no OFFSET without a LIMIT: -1 is none.)"""
    if run_filter.limit is not None:
        params.extend((run_filter.limit, run_filter.offset))
        return f" LIMIT {dialect.mark} OFFSET {dialect.mark}"
    if run_filter.offset:
        params.append(run_filter.offset)
        return f"{' LIMIT -1' if dialect.plan_hints else ''} OFFSET {dialect.mark}"
    return ""


def marks(values: Sequence[Any], dialect: Dialect = SQLITE) -> str:
    """``?, ?, ?``: one placeholder per value."""
    return dialect.marks(len(values))
