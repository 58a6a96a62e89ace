"""The index queries the viewer's pages use: a sorted page of runs, the verdicts and the
current labels of the runs on a page; the SQLite queries and `RunIndex`'s defaults (what a
backend without its own answers) give the same answers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from agentledger.records.scores import Score
from agentledger.store.index import (
    IndexedRun,
    LabelResult,
    RunFilter,
    RunIndex,
    RunSort,
    RunVerdict,
    ScoreRow,
    score_row,
)
from agentledger.store.index.sqlite import SQLiteIndex
from agentledger.store.index.where import where_sql
from test_index_contract import T0, entry, ids, label

RULES = "rules-aaaaaaaaaaaa"
LLM = "llm-bbbbbbbbbbbb"


def score(
    run_id: str, judge_id: str, verdict: str, minutes: int = 0, *, unreadable: bool = False
) -> ScoreRow:
    """What the index keeps of a judge's score, made from the score record itself."""
    kind = judge_id.split("-", 1)[0]
    return score_row(
        Score.model_validate(
            {
                "run_id": run_id,
                "judge_id": judge_id,
                "judge": {
                    "kind": kind,
                    "pack": "remediation-safety",
                    "pack_version": "1",
                    "pack_digest": "sha256:" + "0" * 64,
                },
                "identity": {"kind": kind},
                "created_at": T0 + timedelta(days=1, minutes=minutes),
                "verdict": verdict,
                "criteria": [
                    {"criterion": "C1", "fired": None, "reason": "unscored: no JSON in the answer"}
                ]
                if unreadable
                else [],
            }
        )
    )


class DefaultsIndex(SQLiteIndex):
    """SQLite for everything else, `RunIndex`'s own defaults for the viewer's queries."""

    def query_sorted(
        self, run_filter: RunFilter, sort: RunSort = "started", descending: bool = True
    ) -> list[IndexedRun]:
        return RunIndex.query_sorted(self, run_filter, sort, descending)

    def verdicts_of(self, run_ids: Sequence[str]) -> list[RunVerdict]:
        return RunIndex.verdicts_of(self, run_ids)

    def judge_ids(self) -> list[str]:
        return RunIndex.judge_ids(self)

    def get_many(self, run_ids: Sequence[str]) -> dict[str, IndexedRun]:
        return RunIndex.get_many(self, run_ids)

    def current_labels_of(self, run_ids: Sequence[str]) -> list[LabelResult]:
        return RunIndex.current_labels_of(self, run_ids)


@pytest.fixture(params=["sqlite", "defaults", "postgresql"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunIndex]:
    opened: RunIndex
    if request.param == "postgresql":
        from agentledger.store.index.postgres import PostgresIndex

        opened = PostgresIndex(request.getfixturevalue("pg_url"))
    else:
        kind = SQLiteIndex if request.param == "sqlite" else DefaultsIndex
        opened = kind(tmp_path / "index.sqlite")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def filled(index: RunIndex) -> RunIndex:
    index.add(
        [
            entry("r1", 0, model="b-model", scenario="s2"),
            entry("r2", 10, model="a-model", scenario="s1"),
            entry("r3", None, model="c-model", scenario="s1"),
            entry("r4", 5, model="a-model", scenario="s3", kind="fixture"),
        ]
    )
    return index


@pytest.mark.parametrize(
    ("sort", "descending", "expected"),
    [
        ("started", True, ["r2", "r4", "r1", "r3"]),
        ("started", False, ["r1", "r4", "r2", "r3"]),
        ("model", False, ["r2", "r4", "r1", "r3"]),
        ("model", True, ["r3", "r1", "r4", "r2"]),
        ("scenario", False, ["r2", "r3", "r1", "r4"]),
        ("run_id", True, ["r4", "r3", "r2", "r1"]),
        ("kind", False, ["r1", "r2", "r3", "r4"]),
        ("kind", True, ["r4", "r3", "r2", "r1"]),
    ],
)
def test_a_page_of_runs_in_the_order_asked(
    filled: RunIndex, sort: RunSort, descending: bool, expected: list[str]
) -> None:
    assert ids(filled.query_sorted(RunFilter(), sort, descending)) == expected


def test_the_sorted_page_is_filtered_and_paged(filled: RunIndex) -> None:
    by_model = RunFilter(models=("a-model", "c-model"))
    assert ids(filled.query_sorted(by_model, "model")) == ["r3", "r4", "r2"]
    page = RunFilter(limit=2, offset=1)
    assert ids(filled.query_sorted(page, "run_id", descending=False)) == ["r2", "r3"]
    assert ids(filled.query_sorted(RunFilter(limit=2, offset=9), "model")) == []
    assert ids(filled.query_sorted(RunFilter(kinds=("fixture",)), "started")) == ["r4"]


def test_many_runs_by_id_in_one_call(filled: RunIndex) -> None:
    found = filled.get_many(["r3", "nope", "r1", "r3"])
    assert found == {"r3": filled.get("r3"), "r1": filled.get("r1")}
    assert filled.get_many([]) == {}


def test_an_unknown_sort_is_refused(filled: RunIndex) -> None:
    with pytest.raises(ValueError, match="unknown sort 'colour'"):
        filled.query_sorted(RunFilter(), "colour")  # type: ignore[arg-type]


def test_the_verdicts_of_the_runs_on_a_page(filled: RunIndex) -> None:
    filled.add_scores(
        [
            score("r1", RULES, "Unsafe", minutes=1),
            score("r1", LLM, "Safe", minutes=0),
            score("r2", RULES, "Safe"),
            score("r4", RULES, "Uncertain"),
            score("r3", LLM, "Uncertain", unreadable=True),
        ]
    )
    assert filled.verdicts_of(["r2", "r1", "r3"]) == [
        RunVerdict("r1", LLM, "llm", "Safe"),
        RunVerdict("r1", RULES, "rules", "Unsafe"),
        RunVerdict("r2", RULES, "rules", "Safe"),
        RunVerdict("r3", LLM, "llm", "unscored"),  # counted apart, as the reports do
    ]
    assert filled.verdicts_of([]) == []
    assert filled.judge_ids() == [LLM, RULES]


def test_the_current_labels_of_the_runs_on_a_page(filled: RunIndex) -> None:
    filled.add_labels(
        [
            label("l1", "r1", "alice", "Safe", minutes=0),
            label("l2", "r1", "alice", "Unsafe", minutes=1, criteria=(("C2", True),)),
            label("l3", "r2", "bob", "Safe"),
            label("l4", "r4", "osworld", None, kind="external"),
        ]
    )
    found = filled.current_labels_of(["r1", "r4", "r3"])
    assert [(item.run_id, item.label_id, item.verdict) for item in found] == [
        ("r1", "l2", "Unsafe"),
        ("r4", "l4", None),
    ]
    assert dict(found[0].criteria) == {"C2": True}
    assert filled.current_labels_of([]) == []


def test_a_page_in_start_order_is_found_in_the_start_index_alone(tmp_path: Path) -> None:
    """The rows of a page are read whole only once found: the walk to them (and a filter's
    test of each run, by its id) reads the covering runs_started index (migration m008)."""
    index = SQLiteIndex(tmp_path / "index.sqlite")
    try:
        captured: list[str] = []
        index.db.set_trace_callback(captured.append)
        index.query_sorted(RunFilter(limit=50, offset=75_000, verdicts=("Unsafe",)))
        index.db.set_trace_callback(None)
        (sql,) = [text for text in captured if text.startswith("SELECT")]
        plan = " | ".join(row[-1] for row in index.db.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "SCAN runs USING COVERING INDEX runs_started" in plan, plan
        assert "SCAN runs |" not in f"{plan} |", plan
    finally:
        index.close()


def _page_plan(index: SQLiteIndex, run_filter: RunFilter, sort: RunSort, descending: bool) -> str:
    captured: list[str] = []
    index.db.set_trace_callback(captured.append)
    index.query_sorted(run_filter, sort, descending)
    index.db.set_trace_callback(None)
    (sql,) = [text for text in captured if text.startswith("SELECT")]
    return " | ".join(row[-1] for row in index.db.execute(f"EXPLAIN QUERY PLAN {sql}"))


@pytest.mark.parametrize(
    ("sort", "walked"),
    [
        ("kind", "runs_kind"),
        ("commands_run", "runs_commands_run"),
        ("commands_denied", "runs_commands_denied"),
        ("started", "runs_started"),
        ("scenario", "runs_scenario_sort"),
    ],
)
def test_a_descending_sort_walks_its_column_index_without_sorting(
    tmp_path: Path, sort: RunSort, walked: str
) -> None:
    """Migrations m009 and m010, and ties by id in the sort's direction: a page sorted by kind,
    scenario or the commands a run ran (or was denied) is the next entries of an index of (column,
    run_id), walked with no sort of the matches, even filtered by a score (tested by id)."""
    index = SQLiteIndex(tmp_path / "index.sqlite")
    try:
        plan = _page_plan(index, RunFilter(limit=50, offset=9_950, judge="rules"), sort, True)
        assert f"COVERING INDEX {walked}" in plan, plan
        # One sort only: the outer query's, of the page's 50 rows read whole.
        assert plan.count("TEMP B-TREE") == 1, plan
    finally:
        index.close()


@pytest.mark.parametrize(
    "run_filter",
    [
        RunFilter(fired=("C1", "C3")),
        RunFilter(fired=("C2",), verdicts=("Unsafe",), judge="rules"),
        RunFilter(tags=(("team", "net"),)),
        RunFilter(label_source="human", label_verdicts=("Unsafe",)),
        RunFilter(labelled=False, kinds=("agent",)),
    ],
)
def test_a_filter_on_scores_tags_or_labels_is_one_subquery_not_one_per_run(
    tmp_path: Path, run_filter: RunFilter
) -> None:
    """A filter on what a run rarely has (a firing, a tag, a label) is a subquery run once,
    never one correlated to each run: correlated, SQLite with no statistics read the
    filter's index from its start for every run (minutes over 100,000 runs). A score's is
    correlated, and a seek by the run's id."""
    index = SQLiteIndex(tmp_path / "index.sqlite")
    try:
        for plan in (
            _page_plan(index, replace(run_filter, limit=50), "started", True),
            " | ".join(
                row[-1]
                for row in index.db.execute(
                    "EXPLAIN QUERY PLAN SELECT count(*) FROM runs" + where_sql(run_filter)[0],
                    where_sql(run_filter)[1],
                )
            ),
        ):
            assert "LIST SUBQUERY" in plan, plan
            # A score (which nearly every run has) is one seek by run id per run, never a
            # read of the verdict's or the judge's whole index.
            for step in plan.split(" | "):
                if step.startswith("SEARCH s "):
                    assert "COVERING INDEX scores_chosen (run_id=?" in step, plan
                assert not step.startswith("SEARCH c ") or "criterion=?" in step, plan
            assert "CORRELATED" not in plan or run_filter.verdicts, plan
    finally:
        index.close()
