"""How the SQLite index turns a `RunFilter` into SQL: the WHERE clause over `runs`, the
chosen-score CTE every report query starts from, and literal prefix matching.

Used by `agentledger.store.sqlite_index` alone; together they are the only SQL in agentledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentledger.errors import InputError
from agentledger.store.index import RunFilter, format_time

__all__ = [
    "chosen_sql",
    "criteria_join_sql",
    "dimension_sql",
    "glob_prefix",
    "marks",
    "where_sql",
]


def glob_prefix(value: str) -> str:
    """A GLOB pattern matching exactly the strings that start with `value`.

    GLOB (not LIKE: case-sensitive, and it can use an index) reads ``*``, ``?`` and ``[`` as
    patterns; each is put in a bracket of its own so that it matches only itself.
    """
    return value.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]") + "*"


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


def where_sql(run_filter: RunFilter) -> tuple[str, list[Any]]:
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
        clauses.append("system_prompt_hash GLOB ?")
        params.append(glob_prefix(run_filter.prompt_hash))
    if run_filter.variant is not None:
        clauses.append("variant = ?")
        params.append(run_filter.variant)
    if run_filter.model_served is not None:
        clauses.append("model_served = ?")
        params.append(run_filter.model_served)
    if run_filter.agent_commit is not None:
        clauses.append("agent_commit GLOB ?")
        params.append(glob_prefix(run_filter.agent_commit))
    if run_filter.since is not None:
        clauses.append("started_at >= ?")
        params.append(format_time(run_filter.since))
    if run_filter.until is not None:
        clauses.append("started_at < ?")
        params.append(format_time(run_filter.until))
    if run_filter.backfilled is not None:
        clauses.append("backfilled = ?")
        params.append(int(run_filter.backfilled))
    if run_filter.kinds:
        # Unary + keeps SQLite off runs_kind for filtering: a handful of values over every
        # run, where the model, prompt and scenario indexes are the selective ones.
        one_of("+kind", run_filter.kinds)
    for key, value in run_filter.tags:
        clauses.append(
            "EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = runs.run_id "
            "AND t.key = ? AND t.value = ?)"
        )
        params.extend((key, value))
    judge = glob_prefix(run_filter.judge or "")
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
    _label_clauses(run_filter, clauses, params)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _label_clauses(run_filter: RunFilter, clauses: list[str], params: list[Any]) -> None:
    """--label-source, --label-verdict, --labelled/--unlabelled: over current labels only."""
    if not (run_filter.label_source or run_filter.label_verdicts) and run_filter.labelled is None:
        return
    inner = "SELECT 1 FROM labels l WHERE l.run_id = runs.run_id AND l.current = 1"
    inner_params: list[Any] = []
    if run_filter.label_source == "human":
        inner += " AND l.source_kind = 'person'"
    elif run_filter.label_source:
        inner += " AND l.source_name = ?"
        inner_params.append(run_filter.label_source)
    if run_filter.label_verdicts:
        inner += f" AND l.verdict IN ({marks(run_filter.label_verdicts)})"
        inner_params.extend(run_filter.label_verdicts)
    clauses.append(f"{'NOT ' if run_filter.labelled is False else ''}EXISTS ({inner})")
    params.extend(inner_params)


_SEL_COLUMNS = "run_id, model, scenario, model_served, system_prompt_hash, started_at, kind"


def chosen_sql(run_filter: RunFilter, judge_ids: Sequence[str]) -> tuple[str, list[Any]]:
    """``WITH sel AS (...), chosen AS (...) ``: the matching runs, and each one's chosen score.

    `sel` has the runs whether scored or not; `chosen` adds judge_id, verdict, diagnosis for
    the runs that have a score among `judge_ids`. With one judge id each run's score is a
    primary key lookup (the usual, and the fast, case).
    """
    where, params = where_sql(run_filter)
    ids = list(judge_ids)
    sel = f"WITH sel AS (SELECT {_SEL_COLUMNS} FROM runs{where}), "
    if len(ids) == 1:
        chosen = (
            "chosen AS (SELECT sel.*, s.judge_id, s.verdict, s.diagnosis FROM sel "
            "JOIN scores s ON s.run_id = sel.run_id AND s.judge_id = ?) "
        )
    elif ids:
        # The newest score of each run among the judges (SQLite's bare columns of max()).
        marks = ", ".join("?" * len(ids))
        chosen = (
            "newest AS (SELECT run_id, judge_id, verdict, diagnosis, max(created_at) "
            f"FROM scores WHERE judge_id IN ({marks}) GROUP BY run_id), "
            "chosen AS (SELECT sel.*, n.judge_id, n.verdict, n.diagnosis FROM newest n "
            "JOIN sel ON sel.run_id = n.run_id) "
        )
    else:
        chosen = (
            "chosen AS (SELECT sel.*, NULL AS judge_id, NULL AS verdict, "
            "NULL AS diagnosis FROM sel WHERE 0) "
        )
    return sel + chosen, [*params, *ids]


def criteria_join_sql(judge_ids: Sequence[str]) -> tuple[str, list[Any]]:
    """``FROM ... ch JOIN score_criteria c ...``: the chosen scores' criterion results.

    With one judge id, the criteria rows of that judge are the chosen ones, so the join
    skips the scores table (the widest one); CROSS JOIN keeps SQLite walking the runs and
    looking criteria up by primary key, the faster order on a large index.
    """
    if len(judge_ids) == 1:
        return (
            "FROM sel ch CROSS JOIN score_criteria c ON c.run_id = ch.run_id AND c.judge_id = ?",
            [judge_ids[0]],
        )
    return (
        "FROM chosen ch JOIN score_criteria c ON c.run_id = ch.run_id AND c.judge_id = ch.judge_id",
        [],
    )


def marks(values: Sequence[Any]) -> str:
    """``?, ?, ?``: one placeholder per value."""
    return ", ".join("?" * len(values))
