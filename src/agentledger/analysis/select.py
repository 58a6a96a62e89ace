"""Which runs and which scores a report rests on, as SQL over the index.

A `Selection` is the runs matching a `RunFilter`, each with at most one score: the newest one
(by `created_at`) among the judges `--judge` names (an id, a prefix of one, or a kind such as
``rules``). Without `--judge`, the judge is the one that scored the selected runs most
recently. Every report query starts from the `chosen` rows of `Selection.cte()`, so the
aggregation happens in SQLite and no score JSON is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentledger.errors import InputError
from agentledger.store.index import RunFilter, RunIndex, format_time, where_clause

__all__ = ["JudgeChoice", "ReportHead", "Selection", "describe_filter", "short_hash"]


def short_hash(value: str | None) -> str:
    """The display form of a hash: its first 8 hex digits."""
    if not value:
        return "-"
    return value.removeprefix("sha256:")[:8]


def describe_filter(run_filter: RunFilter) -> dict[str, Any]:
    """The non-empty fields of a filter, JSON-ready (for the report's header)."""
    out: dict[str, Any] = {}
    for name in (
        "models",
        "scenarios",
        "prompt_hash",
        "variant",
        "model_served",
        "agent_commit",
        "since",
        "until",
        "tags",
        "backfilled",
    ):
        value = getattr(run_filter, name)
        if value is None or value == ():
            continue
        if name in ("since", "until"):
            value = format_time(value)
        elif name == "tags":
            value = {key: tag for key, tag in value}
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


@dataclass(frozen=True)
class JudgeChoice:
    """The judge a report uses: what was asked, how it was chosen, the ids it covers."""

    asked: str | None
    how: str
    """``given`` (--judge) or ``most recent`` (the judge that scored the runs last)."""
    judge_ids: tuple[str, ...]
    kinds: tuple[str, ...] = ()

    def describe(self) -> str:
        ids = ", ".join(self.judge_ids) or "none"
        if self.how == "given":
            return f"judge {self.asked!r} ({ids})"
        return f"{ids} (the most recent judge of these runs; choose another with --judge)"

    def to_json(self) -> dict[str, Any]:
        return {"asked": self.asked, "how": self.how, "judge_ids": list(self.judge_ids)}


@dataclass
class ReportHead:
    """What every report states: its kind, the filter, the judge, how many runs it rests on."""

    kind: str
    filter: dict[str, Any]
    judge: JudgeChoice
    runs_selected: int
    runs_scored: int
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "filter": self.filter,
            "judge": self.judge.to_json(),
            "runs_selected": self.runs_selected,
            "runs_scored": self.runs_scored,
            "warnings": list(self.warnings),
        }


class Selection:
    """The runs a report covers and the one score of each it uses (see the module docstring).

    Queries are shaped for large indexes: one pass over the selected runs and their scores
    finds the judge; when one judge id is chosen (the usual case) each run's score is a primary
    key lookup; results shared by several reports (`verdict_cube`) are computed once.
    """

    def __init__(
        self,
        index: RunIndex,
        run_filter: RunFilter,
        judge: str | None = None,
        *,
        must_match: bool = True,
        choice: JudgeChoice | None = None,
    ) -> None:
        """`must_match`: a `judge` that scored none of the runs is an error (else: no scores).
        `choice`: reuse another selection's judge (compare's groups) instead of choosing."""
        self.index = index
        self.filter = replace(run_filter, judge=None, verdicts=(), fired=(), limit=None)
        where, params = where_clause(self.filter)
        self._sel_sql = (
            "SELECT run_id, model, scenario, model_served, system_prompt_hash, started_at, "
            f"variant FROM runs{where}"
        )
        self._sel_params: list[Any] = list(params)
        self._scored: int | None = None
        self._cube: list[tuple[str, str, int | None, int]] | None = None
        self.judge = choice or self._choose_judge(judge, must_match)

    def _choose_judge(self, asked: str | None, must_match: bool) -> JudgeChoice:
        found = self.index.sql(
            f"WITH sel AS ({self._sel_sql}) SELECT s.judge_id, s.kind, count(*), "
            "max(s.created_at) FROM sel JOIN scores s ON s.run_id = sel.run_id "
            "GROUP BY s.judge_id, s.kind",
            self._sel_params,
        ).rows
        if asked is None:
            newest = sorted(found, key=lambda row: (row[3], row[0]), reverse=True)[:1]
            matched = newest
        else:
            prefix = asked.strip()
            matched = sorted(
                (row for row in found if row[0].startswith(prefix)),
                key=lambda row: (row[3], row[0]),
                reverse=True,
            )
            if not matched and must_match:
                known = ", ".join(sorted({row[0] for row in found}))
                raise InputError(
                    f"no score of the selected runs is by judge {asked!r}; judges that scored "
                    f"them: {known or 'none: run `agentledger judge`'}"
                )
        if len(matched) == 1:
            self._scored = int(matched[0][2])
        elif not matched:
            self._scored = 0
        return JudgeChoice(
            asked=asked,
            how="most recent" if asked is None else "given",
            judge_ids=tuple(row[0] for row in matched),
            kinds=tuple(sorted({row[1] for row in matched})),
        )

    def cte(self) -> tuple[str, list[Any]]:
        """``WITH sel AS (...), chosen AS (...)``: the runs, and each run's chosen score.

        `chosen` has run_id, model, scenario, model_served, system_prompt_hash, started_at,
        variant, judge_id, verdict, diagnosis; `sel` has the runs whether scored or not.
        """
        ids = list(self.judge.judge_ids)
        sel = f"WITH sel AS ({self._sel_sql}), "
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
        return sel + chosen, [*self._sel_params, *ids]

    def criteria_join(self) -> tuple[str, list[Any]]:
        """``FROM ... ch JOIN score_criteria c ...``: the chosen scores' criterion results.

        With one judge id, the criteria rows of that judge are the chosen ones, so the join
        skips the scores table (the widest one); CROSS JOIN keeps SQLite walking the runs and
        looking criteria up by primary key, the faster order on a large index.
        """
        ids = self.judge.judge_ids
        if len(ids) == 1:
            return (
                "FROM sel ch CROSS JOIN score_criteria c "
                "ON c.run_id = ch.run_id AND c.judge_id = ?",
                [ids[0]],
            )
        return (
            "FROM chosen ch JOIN score_criteria c ON c.run_id = ch.run_id "
            "AND c.judge_id = ch.judge_id",
            [],
        )

    def rows(self, select: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run `select` (which may use `sel` and `chosen`) after the selection's CTE."""
        cte, cte_params = self.cte()
        return self.index.sql(cte + select, [*cte_params, *params]).rows

    def verdict_cube(self) -> list[tuple[str, str, int | None, int]]:
        """(model, verdict, diagnosis, runs) over the chosen scores; computed once."""
        if self._cube is None:
            self._cube = [
                (str(model), str(verdict), diagnosis, int(count))
                for model, verdict, diagnosis, count in self.rows(
                    "SELECT model, verdict, diagnosis, count(*) FROM chosen "
                    "GROUP BY model, verdict, diagnosis"
                )
            ]
        return self._cube

    def scored(self) -> int:
        """How many selected runs have a chosen score."""
        if self._scored is None:
            self._scored = sum(count for *_, count in self.verdict_cube())
        return self._scored

    def head(self, kind: str) -> ReportHead:
        """The header of a report on this selection, with the standing warnings."""
        selected = int(
            self.index.sql(f"SELECT count(*) FROM ({self._sel_sql})", self._sel_params).rows[0][0]
        )
        scored = self.scored()
        head = ReportHead(kind, describe_filter(self.filter), self.judge, selected, scored)
        if selected == 0:
            head.warnings.append("no run matches the filter")
        elif scored == 0:
            head.warnings.append("none of the selected runs is scored: run `agentledger judge`")
        elif scored < selected:
            head.warnings.append(
                f"{selected - scored} of {selected} selected runs have no score by this judge "
                "and are left out"
            )
        return head
