"""`RecordQueries`: the index's read queries of decisions and outcomes, over a `Dialect`.

A part of `queries.SqlQueries` kept apart so that each file stays readable: the newest of
each is chosen by the journal's order (`where.journal_order`), never by a time in the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentledger.store.index.dialect import Dialect
from agentledger.store.index.where import journal_order

__all__ = ["RecordQueries"]

CHUNK = 1000


class RecordQueries:
    """Decisions and outcomes as SQL in `dialect`; `_column` runs a query of one column."""

    dialect: Dialect

    def _column(self, sql: str, params: Sequence[Any] = ()) -> list[str]:
        raise NotImplementedError

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    # -- every kind --------------------------------------------------------------------------

    def record_positions(self) -> dict[str, int | None]:
        return dict(
            self._rows(
                "SELECT 'scores/' || run_id || '/' || judge_id || '.json', accepted_seq "
                "FROM scores UNION ALL "
                "SELECT 'labels/' || run_id || '/' || label_id || '.json', accepted_seq "
                "FROM labels UNION ALL "
                "SELECT 'decisions/' || decision_id || '/decision.json', accepted_seq "
                "FROM decisions UNION ALL "
                "SELECT 'outcomes/' || run_id || '/' || outcome_id || '.json', accepted_seq "
                "FROM outcomes"
            )
        )

    # -- decisions -----------------------------------------------------------------------------

    def decision_ids(self) -> set[str]:
        return set(self._column("SELECT decision_id FROM decisions"))

    def decisions(
        self, kind: str | None = None, subject: str | None = None, run_id: str | None = None
    ) -> list[str]:
        mark = self.dialect.mark
        clauses, params = [], []
        for column, value in (("kind", kind), ("subject", subject)):
            if value is not None:
                clauses.append(f"{column} = {mark}")
                params.append(value)
        if run_id is not None:
            clauses.append(
                "decision_id IN (SELECT r.decision_id FROM decision_runs r "
                f"WHERE r.run_id = {mark})"
            )
            params.append(run_id)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        return self._column(
            f"SELECT decision_json FROM decisions{where} "
            f"ORDER BY {journal_order('', 'decision_id')}",
            params,
        )

    # -- outcomes ------------------------------------------------------------------------------

    def outcome_ids(self) -> set[str]:
        return set(self._column("SELECT outcome_id FROM outcomes"))

    def outcomes(self, run_ids: Sequence[str] | None = None, *, latest: bool = False) -> list[str]:
        newest = (
            " AND NOT EXISTS (SELECT 1 FROM outcomes n WHERE n.run_id = o.run_id AND "
            f"({journal_order('n', 'outcome_id')}) > ({journal_order('o', 'outcome_id')}))"
            if latest
            else ""
        )
        query = "SELECT outcome_json FROM outcomes o WHERE {match}" + newest
        order = f" ORDER BY o.run_id, {journal_order('o', 'outcome_id')}"
        if run_ids is None:
            return self._column(query.format(match="1 = 1") + order)
        found: list[str] = []
        ids = sorted(set(run_ids))
        for chunk in (ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)):
            match, params = self.dialect.any_of("o.run_id", chunk)
            found += self._column(query.format(match=match) + order, params)
        return found
