"""Reports: the figures equal counting by hand, the statistics equal scipy's."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from scipy.stats import binomtest, fisher_exact

from agentledger.analysis import (
    Selection,
    build_reports,
    compare_report,
    criteria_report,
    drift_report,
    gap_report,
    verdicts_report,
)
from agentledger.analysis.drift import iso_week
from agentledger.analysis.stats import fisher_test, intervals_disjoint, mcnemar_test, rate, wilson
from agentledger.errors import InputError
from agentledger.store import Ledger, RunFilter
from agentledger.store.index import ScoreRow
from conftest import WriteRun

JUDGE = "rules-aaaaaaaaaaaa"
OTHER = "rules-bbbbbbbbbbbb"
DAY0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday, ISO week 2026-W10


def add_score(
    ledger: Ledger,
    run_id: str,
    verdict: str,
    fired: Sequence[str] = (),
    *,
    criteria: Sequence[str] = ("C1", "C2", "C3", "C4"),
    nulls: Sequence[str] = (),
    diagnosis: bool | None = None,
    judge_id: str = JUDGE,
    created_at: str = "2026-04-01T00:00:00.000000Z",
) -> None:
    """Index a score of `run_id` directly (the index is what reports read)."""
    results = tuple(
        (c, None if c in nulls else c in fired) for c in ([] if verdict == "skipped" else criteria)
    )
    row = ScoreRow(
        run_id=run_id,
        judge_id=judge_id,
        kind=judge_id.split("-")[0],
        model=None,
        pack="remediation-safety",
        verdict=verdict,
        diagnosis=diagnosis,
        skipped_reason="self-judging refused" if verdict == "skipped" else None,
        created_at=created_at,
        score_json="{}",
        criteria=results,
    )
    ledger.index.add_scores([row])


# The seed's table: Gemini 2 / 2 / 7 of 11; Haiku 4 / 4 / 2 of 10 (+1 skipped); Sonnet not judged.
# C2 fires on 7 Gemini runs and 1 Haiku run; C4 on 5 Gemini and 4 Haiku (9 of 21: dominant);
# C3 on 5 Haiku and 2 Gemini. Diagnosis: 10 of 11 Gemini and 9 of 10 Haiku right.
GEMINI = [
    ("use_case_a", "Safe", ()),
    ("use_case_b", "Safe", ("C4",)),
    ("use_case_c", "Uncertain", ("C4",)),
    ("use_case_d", "Uncertain", ("C3",)),
    ("use_case_e", "Unsafe", ("C2", "C4")),
    ("use_case_f", "Unsafe", ("C2", "C1")),
    ("use_case_g", "Unsafe", ("C2", "C4")),
    ("use_case_h", "Unsafe", ("C2", "C3")),
    ("use_case_i", "Unsafe", ("C2", "C4")),
    ("use_case_j", "Unsafe", ("C2",)),
    ("use_case_k", "Unsafe", ("C2",)),
]
HAIKU = [
    ("use_case_a", "Safe", ()),
    ("use_case_b", "Safe", ()),
    ("use_case_c", "Safe", ()),
    ("use_case_d", "Unsafe", ("C2", "C3", "C4")),
    ("use_case_e", "Safe", ()),
    ("use_case_f", "Uncertain", ("C3", "C4")),
    ("use_case_g", "Uncertain", ("C3",)),
    ("use_case_h", "Uncertain", ("C3", "C4")),
    ("use_case_i", "Uncertain", ("C3", "C4")),
    ("use_case_j", "Unsafe", ("C1",)),
    ("use_case_k", "skipped", ()),
]


@pytest.fixture
def seed(ledger: Ledger, write_run: WriteRun) -> dict[str, list[str]]:
    runs: dict[str, list[str]] = {"gemini-2.5-flash": [], "claude-haiku-4-5": []}
    for model, table in (("gemini-2.5-flash", GEMINI), ("claude-haiku-4-5", HAIKU)):
        for i, (scenario, verdict, fired) in enumerate(table):
            run_id = write_run(scenario, model, started_at=DAY0 + timedelta(days=i))
            right = i != 0  # the first run of each model has the wrong diagnosis
            add_score(
                ledger, run_id, verdict, fired, diagnosis=None if verdict == "skipped" else right
            )
            runs[model].append(run_id)
    runs["claude-sonnet-4-6"] = [write_run("use_case_a", "claude-sonnet-4-6")]  # never scored
    return runs


def test_wilson_matches_scipy_and_the_edges() -> None:
    for k, n in ((7, 11), (2, 10), (9, 21), (1, 3), (50, 100)):
        expected = binomtest(k, n).proportion_ci(method="wilson")
        assert wilson(k, n) == pytest.approx((expected.low, expected.high), abs=1e-9)
    assert wilson(7, 11) == pytest.approx((0.3538, 0.8483), abs=1e-4)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)
    assert rate(7, 11).directional and not rate(500, 1000).directional
    assert rate(0, 5).percent() == "0% [0-43]"


def test_exact_tests_match_scipy() -> None:
    assert mcnemar_test(5, 1).p_value == pytest.approx(binomtest(5, 6, 0.5).pvalue)
    assert mcnemar_test(5, 1).p_value == pytest.approx(0.21875)
    assert mcnemar_test(0, 0).p_value == 1.0
    expected = fisher_exact([[7, 4], [2, 8]]).pvalue
    assert fisher_test(7, 11, 2, 10).p_value == pytest.approx(expected)
    assert not fisher_test(7, 11, 2, 10).significant
    assert intervals_disjoint(rate(0, 30), rate(30, 30))
    assert not intervals_disjoint(rate(2, 10), rate(7, 11))


def test_verdicts_by_model(ledger: Ledger, seed: dict[str, list[str]]) -> None:
    report = verdicts_report(Selection(ledger.index, RunFilter()))
    by = {entry.group: entry for entry in report.models}
    gemini, haiku, sonnet = (
        by["gemini-2.5-flash"],
        by["claude-haiku-4-5"],
        by["claude-sonnet-4-6"],
    )
    assert gemini.counts == {"Safe": 2, "Uncertain": 2, "Unsafe": 7, "skipped": 0}
    assert haiku.counts == {"Safe": 4, "Uncertain": 4, "Unsafe": 2, "skipped": 1}
    assert (haiku.judged, haiku.scored, sonnet.scored, sonnet.unscored) == (10, 11, 0, 1)
    unsafe = gemini.rate("Unsafe")
    assert (unsafe.k, unsafe.n) == (7, 11) and unsafe.share == pytest.approx(7 / 11)
    assert unsafe.interval == pytest.approx(wilson(7, 11))
    assert haiku.rate("skipped").k == 1 and haiku.rate("skipped").n == 11
    assert report.overall.judged == 21 and report.overall.counts["Unsafe"] == 9
    assert (report.head.runs_selected, report.head.runs_scored) == (23, 22)
    assert report.head.judge.judge_ids == (JUDGE,) and report.head.judge.how == "most recent"
    assert any("directional only" in w for w in report.head.warnings)
    assert any("1 of 23 selected runs have no score" in w for w in report.head.warnings)


def test_criteria_map_dominant_and_signatures(ledger: Ledger, seed: dict[str, list[str]]) -> None:
    report = criteria_report(Selection(ledger.index, RunFilter()))
    assert report.criteria == ["C1", "C2", "C3", "C4"]
    assert (report.overall["C4"].k, report.overall["C4"].n) == (9, 21)
    assert (report.overall["C2"].k, report.overall["C3"].k, report.overall["C1"].k) == (8, 7, 2)
    assert report.by_model["C2"]["gemini-2.5-flash"].k == 7
    assert report.by_model["C3"]["claude-haiku-4-5"].k == 5
    assert (report.by_scenario["C3"]["use_case_g"].k, report.by_scenario["C3"]["use_case_g"].n) == (
        1,
        2,
    )
    assert report.dominant == ["C4"]
    assert report.dominant_by_model == {"claude-haiku-4-5": ["C3"], "gemini-2.5-flash": ["C2"]}
    # C2: 7 of 8 firings on Gemini (87%) is a signature; C3: 5 of 7 (71%) is not
    assert [(s.criterion, s.model, s.firings_on_model, s.firings) for s in report.signatures] == [
        ("C2", "gemini-2.5-flash", 7, 8)
    ]
    signature = report.signatures[0]
    assert signature.test.p_value == pytest.approx(fisher_exact([[7, 4], [1, 9]]).pvalue)
    assert report.info["C2"].severity == "high"
    assert ("use_case_j", "claude-haiku-4-5", 1) in report.fires_on["C1"]


def test_a_null_criterion_is_counted_apart(ledger: Ledger, write_run: WriteRun) -> None:
    add_score(ledger, write_run("use_case_f"), "Uncertain", (), nulls=("C1",))
    add_score(ledger, write_run("use_case_f"), "Unsafe", ("C1",))
    report = criteria_report(Selection(ledger.index, RunFilter()))
    assert (report.overall["C1"].k, report.overall["C1"].n) == (1, 1)
    assert report.cannot_assess["C1"] == 1
    assert any("C1 could not be assessed on 1 run" in w for w in report.head.warnings)


def test_gap(ledger: Ledger, seed: dict[str, list[str]]) -> None:
    report = gap_report(Selection(ledger.index, RunFilter()))
    by = {row.group: row for row in report.models}
    gemini = by["gemini-2.5-flash"]
    assert (gemini.diagnosis.k, gemini.diagnosis.n) == (10, 11)
    assert (gemini.safe.k, gemini.safe.n) == (2, 11)
    assert gemini.gap_points == pytest.approx(100 * (10 / 11 - 2 / 11))
    overall = report.overall
    assert (overall.diagnosis.k, overall.diagnosis.n, overall.safe.k, overall.safe.n) == (
        19,
        21,
        6,
        21,
    )
    assert overall.gap_points == pytest.approx(100 * 13 / 21)
    # right diagnosis but not Safe: every non-Safe run but none of the first (wrong) ones
    assert (overall.right_but_unsafe, overall.wrong_but_safe) == (15, 2)
    assert overall.test.p_value == pytest.approx(binomtest(15, 17).pvalue)


def test_judge_choice_and_newest_score(ledger: Ledger, write_run: WriteRun) -> None:
    one, two = write_run("use_case_a"), write_run("use_case_b")
    add_score(ledger, one, "Safe", created_at="2026-04-01T00:00:00.000000Z")
    add_score(ledger, two, "Safe", created_at="2026-04-01T00:00:00.000000Z")
    add_score(
        ledger, one, "Unsafe", ("C2",), judge_id=OTHER, created_at="2026-04-02T00:00:00.000000Z"
    )
    latest = verdicts_report(Selection(ledger.index, RunFilter()))
    assert latest.head.judge.judge_ids == (OTHER,)
    assert latest.overall.counts["Unsafe"] == 1 and latest.head.runs_scored == 1
    given = verdicts_report(Selection(ledger.index, RunFilter(), "rules-aaaa"))
    assert given.overall.counts["Safe"] == 2 and given.head.judge.how == "given"
    # a kind matches both judges: each run's newest score counts, once
    kind = verdicts_report(Selection(ledger.index, RunFilter(), "rules"))
    assert kind.overall.counts == {"Safe": 1, "Uncertain": 0, "Unsafe": 1, "skipped": 0}
    assert set(kind.head.judge.judge_ids) == {JUDGE, OTHER}
    with pytest.raises(InputError, match="no score of the selected runs is by judge 'llm'"):
        Selection(ledger.index, RunFilter(), "llm")


def test_iso_weeks() -> None:
    assert iso_week("2026-03-12T10:15:00.000000Z") == "2026-W11"
    assert iso_week("2027-01-01") == "2026-W53"  # a Friday: the last week of 2026
    assert iso_week("2024-12-30") == "2025-W01"  # a Monday: the first week of 2025


def test_drift_first_firing_and_before_after(
    ledger: Ledger, write_run: WriteRun, seed: dict[str, list[str]]
) -> None:
    # Haiku, on a new prompt, 12 runs all Unsafe, all firing C2, from day 20
    later = []
    for i in range(12):
        run_id = write_run(
            f"use_case_{'abcdefghijkl'[i]}",
            "claude-haiku-4-5",
            addon=b"variant-a: verify tc before netfilter",
            started_at=DAY0 + timedelta(days=20 + i),
        )
        add_score(ledger, run_id, "Unsafe", ("C2",))
        later.append(run_id)
    # on the old prompt the same day as the first run on the new one: before it, and after it
    day20 = DAY0 + timedelta(days=20)
    add_score(
        ledger,
        write_run("use_case_z", "claude-haiku-4-5", started_at=day20 - timedelta(hours=1)),
        "Safe",
    )
    add_score(
        ledger,
        write_run("use_case_z", "claude-haiku-4-5", started_at=day20 + timedelta(hours=1)),
        "Uncertain",
    )
    report = drift_report(Selection(ledger.index, RunFilter()), criterion="C1")
    first = {f.model: f for f in report.first_firings}
    # C1 fired on gemini's use_case_f (day 5) and haiku's use_case_j (day 9)
    assert first["gemini-2.5-flash"].run_id == seed["gemini-2.5-flash"][5]
    assert first["gemini-2.5-flash"].started_at.startswith("2026-03-07")  # type: ignore[union-attr]
    assert first["claude-haiku-4-5"].run_id == seed["claude-haiku-4-5"][9]
    assert (first["claude-haiku-4-5"].firings, first["claude-haiku-4-5"].assessed) == (1, 24)
    # before/after the new prompt hash, per model
    prompt_hash = ledger.index.get(later[0]).system_prompt_hash  # type: ignore[union-attr]
    report = drift_report(Selection(ledger.index, RunFilter()), prompt=prompt_hash[7:15])
    (haiku,) = report.before_after
    assert haiku.model == "claude-haiku-4-5"
    assert haiku.before.counts == {"Safe": 5, "Uncertain": 4, "Unsafe": 2, "skipped": 1}
    assert haiku.after.counts == {"Safe": 0, "Uncertain": 0, "Unsafe": 12, "skipped": 0}
    assert haiku.test.p_value == pytest.approx(fisher_exact([[2, 9], [12, 0]]).pvalue)
    assert haiku.flagged == ("Unsafe",)
    prompt_changes = [c for c in report.changes if c.dimension == "prompt"]
    assert [(c.model, c.verdict) for c in prompt_changes] == [("claude-haiku-4-5", "Unsafe")]
    weeks = [group.group for group in report.series["week"]["gemini-2.5-flash"]]
    assert weeks == ["2026-W10", "2026-W11"]
    with pytest.raises(InputError, match="unknown criterion 'C9'"):
        drift_report(Selection(ledger.index, RunFilter()), criterion="C9")
    with pytest.raises(InputError, match="no scored run"):
        drift_report(Selection(ledger.index, RunFilter()), prompt="deadbeef")


def test_compare_paired_and_unpaired(ledger: Ledger, seed: dict[str, list[str]]) -> None:
    report = compare_report(
        ledger.index, RunFilter(), "model=gemini-2.5-flash", "model=claude-haiku-4-5"
    )
    # paired on the 10 scenarios both judged (haiku's use_case_k is skipped)
    assert len(report.pairs) == 10
    only_a = sum(p.a == "Unsafe" and p.b != "Unsafe" for p in report.pairs)
    only_b = sum(p.b == "Unsafe" and p.a != "Unsafe" for p in report.pairs)
    assert (only_a, only_b) == (5, 1)
    assert report.paired_test is not None
    assert report.paired_test.p_value == pytest.approx(binomtest(5, 6).pvalue)
    assert report.unpaired_test.p_value == pytest.approx(fisher_exact([[7, 4], [2, 8]]).pvalue)
    assert report.summary.startswith(
        "B is unsafe less often than A on the 10 scenarios both ran: B 2 vs A 6 Unsafe, "
        "exact McNemar p = 0.22"
    )
    assert "not significant at these sizes" in report.summary
    # no scenario in common: Fisher on all runs
    apart = compare_report(
        ledger.index,
        RunFilter(),
        "model=gemini-2.5-flash,scenario=use_case_e",
        "model=claude-haiku-4-5,scenario=use_case_a",
    )
    assert apart.pairs == [] and apart.paired_test is None
    assert apart.primary.test == "Fisher exact"
    assert "not paired" in apart.summary


def test_build_reports_all_and_errors(ledger: Ledger, seed: dict[str, list[str]]) -> None:
    kinds = [r.head.kind for r in build_reports("all", ledger.index, RunFilter())]
    assert kinds == ["verdicts", "criteria", "gap", "drift"]
    both = build_reports("all", ledger.index, RunFilter(), a="model=x", b="model=y")
    assert both[-1].head.kind == "compare"
    with pytest.raises(InputError, match="unknown report"):
        build_reports("nope", ledger.index, RunFilter())
    with pytest.raises(InputError, match="--a FILTER and --b FILTER"):
        build_reports("compare", ledger.index, RunFilter(), a="model=x")


def test_filters_narrow_the_runs(ledger: Ledger, seed: dict[str, list[str]]) -> None:
    report = verdicts_report(Selection(ledger.index, RunFilter(models=("gemini-2.5-flash",))))
    assert [entry.group for entry in report.models] == ["gemini-2.5-flash"]
    assert report.head.runs_selected == 11 and report.head.filter == {
        "models": ["gemini-2.5-flash"]
    }


def test_an_empty_ledger_reports_nothing_without_failing(ledger: Ledger) -> None:
    reports = build_reports("all", ledger.index, RunFilter())
    assert all(r.head.runs_scored == 0 for r in reports)
    assert "no run matches the filter" in reports[0].head.warnings


def test_a_tie_names_every_dominant_criterion(ledger: Ledger, write_run: WriteRun) -> None:
    add_score(ledger, write_run("use_case_a"), "Unsafe", ("C2",))
    add_score(ledger, write_run("use_case_b"), "Uncertain", ("C4",))
    report = criteria_report(Selection(ledger.index, RunFilter()))
    assert report.dominant == ["C2", "C4"]
    assert report.dominant_by_model == {"gemini-2.5-flash": ["C2", "C4"]}


FIXTURES_JUDGE = "fixtures-cccccccccccc"


@pytest.fixture
def with_fixture_runs(ledger: Ledger, write_run: WriteRun, seed: dict[str, list[str]]) -> list[str]:
    """Three fixture executions beside the seed, scored by a newer (fixtures) judge, and
    wrongly called Safe by the seed's rules judge: what reports must not count."""
    runs = []
    for i in range(3):
        run_id = write_run(
            "sql.delete-old-dumps",
            "gemini-2.5-flash",
            kind="fixture",
            started_at=DAY0 + timedelta(days=30 + i),
        )
        add_score(
            ledger,
            run_id,
            "Unsafe",
            ("sql_read_only",),
            criteria=("sql_read_only",),
            judge_id=FIXTURES_JUDGE,
            created_at="2026-05-01T00:00:00.000000Z",
        )
        add_score(ledger, run_id, "Safe", diagnosis=True)
        runs.append(run_id)
    return runs


def test_reports_rest_on_agent_runs_by_default_and_say_so(
    ledger: Ledger, with_fixture_runs: list[str]
) -> None:
    reports = build_reports("all", ledger.index, RunFilter())
    for report in reports:
        head = report.head
        assert head.judge.judge_ids == (JUDGE,), head.kind  # not the newer fixtures judge
        assert (head.runs_selected, head.runs_scored) == (23, 22)
        assert head.kinds == ("agent",) and head.kinds_by_default
        assert head.left_out == {"fixture": 3}
        assert head.describe_kinds() == (
            "agent runs only (the default; choose with --kind); left out: 3 fixture run(s)"
        )
        assert head.to_json()["runs_left_out_by_kind"] == {"fixture": 3}
    verdicts, criteria, gap, _drift = reports
    assert verdicts.overall.counts == {"Safe": 6, "Uncertain": 6, "Unsafe": 9, "skipped": 1}
    assert criteria.criteria == ["C1", "C2", "C3", "C4"]
    assert (criteria.overall["C4"].k, criteria.overall["C4"].n) == (9, 21)
    assert (gap.overall.diagnosis.k, gap.overall.safe.k, gap.overall.safe.n) == (19, 6, 21)
    assert gap.overall.gap_points == pytest.approx(100 * 13 / 21)
    c4 = drift_report(Selection(ledger.index, RunFilter()), criterion="C4")
    assert {f.model: f.firings for f in c4.first_firings} == {
        "claude-haiku-4-5": 4,
        "gemini-2.5-flash": 5,
    }


def test_fixture_runs_are_reported_when_asked_for(
    ledger: Ledger, with_fixture_runs: list[str]
) -> None:
    report = verdicts_report(Selection(ledger.index, RunFilter(kinds=("fixture",))))
    head = report.head
    assert head.judge.judge_ids == (FIXTURES_JUDGE,)
    assert (head.runs_selected, head.runs_scored) == (3, 3)
    assert not head.kinds_by_default and head.left_out == {"agent": 23}
    assert head.describe_kinds() == "fixture runs only (--kind); left out: 23 agent run(s)"
    assert report.overall.counts["Unsafe"] == 3
    both = Selection(ledger.index, RunFilter(kinds=("agent", "fixture")), JUDGE)
    assert both.head("verdicts").runs_selected == 26 and both.head("verdicts").left_out == {}


def test_the_report_queries_read_no_wide_row(ledger: Ledger, seed: dict[str, list[str]]) -> None:
    """Every report's pass over runs, scores and criteria reads covering indexes (m005), in a
    plan pinned by the query, not by statistics (this small index has none)."""
    statements: list[str] = []
    ledger.index.db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    for run_filter, judge in ((RunFilter(), None), (RunFilter(models=("gemini-2.5-flash",)), None),
                              (RunFilter(), "rules")):  # fmt: skip
        for kind in ("verdicts", "criteria", "gap", "drift", "compare"):
            build_reports(
                kind, ledger.index, run_filter, judge=judge, criterion="C2",
                prompt=None, a="model=gemini-2.5-flash", b="model=claude-haiku-4-5",
            )  # fmt: skip
    ledger.index.db.set_trace_callback(None)  # type: ignore[attr-defined]
    hot = [s for s in statements if s.startswith("WITH sel")]
    assert len(hot) > 20
    for statement in hot:
        plan = [row[3] for row in ledger.index.db.execute(f"EXPLAIN QUERY PLAN {statement}")]  # type: ignore[attr-defined]
        for step in plan:
            table = step.split()[1] if step.startswith(("SCAN", "SEARCH")) else None
            if table in ("runs", "s", "scores"):
                assert "COVERING INDEX" in step, (statement, plan)
            elif table == "c":
                assert "PRIMARY KEY" in step, (statement, plan)
