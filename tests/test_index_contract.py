"""The index contract: what every `RunIndex` implementation answers, the same way.

Parametrized over the implementations: SQLite, and PostgreSQL on a real server (a new
database per test; see tests/pg_server.py).
Each typed query is checked with filters, ordering, paging, empty results, and values holding
characters that GLOB or LIKE would read as patterns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentledger.identity import sha256_bytes
from agentledger.records import AgentInfo, FileEntry, Manifest, RunMetadata, RunSummary
from agentledger.store.index import (
    CriterionCell,
    CriterionFirst,
    IndexEntry,
    JudgeTally,
    LabelRow,
    Ratings,
    RunFacets,
    RunFilter,
    RunIndex,
    ScoreRow,
    SkippedScore,
    VerdictCount,
    packed_criteria,
)
from agentledger.store.index.sqlite import SQLiteIndex

T0 = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
PROMPT_A = sha256_bytes(b"prompt a")
PROMPT_B = sha256_bytes(b"prompt b")
ODD = ("gpt-4*", "gpt-4?", "gpt-[4]", "gpt-4%", "gpt_4", 'o\'brien "quoted"')
"""Model names a pattern-reading query would confuse with each other or with plain names."""


def _postgres(request: pytest.FixtureRequest, _tmp: Path) -> RunIndex:
    from agentledger.store.index.postgres import PostgresIndex

    return PostgresIndex(request.getfixturevalue("pg_url"))


IMPLEMENTATIONS: dict[str, Callable[[pytest.FixtureRequest, Path], RunIndex]] = {
    "sqlite": lambda _request, tmp: SQLiteIndex(tmp / "index.sqlite"),
    "postgresql": _postgres,
}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunIndex]:
    opened = IMPLEMENTATIONS[request.param](request, tmp_path)
    try:
        yield opened
    finally:
        opened.close()


def entry(run_id: str, minutes: int | None = 0, **fields: Any) -> IndexEntry:
    """An index entry for a recorded run started `minutes` after T0 (None: no start)."""
    commit = fields.pop("commit", "abc1234")
    started = None if minutes is None else T0 + timedelta(minutes=minutes)
    values: dict[str, Any] = {
        "run_id": run_id,
        "scenario": "use_case_m",
        "model": "claude-haiku-4-5",
        "system_prompt_hash": PROMPT_A,
        "started_at": started,
        "backfilled": started is None,
        "agent": AgentInfo(name="ghost", commit=commit),
        **fields,
    }
    metadata = RunMetadata.model_validate(values)
    digest = sha256_bytes(run_id.encode())
    manifest = Manifest(
        run_id=run_id,
        sealed_at=T0,
        files={"metadata.json": FileEntry(sha256=digest, size=1)},
    )
    return IndexEntry(metadata, RunSummary(commands_run=1), manifest, digest)


def score(
    run_id: str,
    judge_id: str = "rules-aaaa",
    verdict: str = "Safe",
    *,
    minutes: int = 0,
    criteria: tuple[tuple[str, bool | None], ...] = (),
    diagnosis: bool | None = None,
    pack: str = "remediation-safety",
    reason: str | None = None,
) -> ScoreRow:
    created = (T0 + timedelta(days=1, minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return ScoreRow(
        run_id=run_id,
        judge_id=judge_id,
        kind=judge_id.split("-", 1)[0],
        model=None,
        pack=pack,
        verdict=verdict,
        diagnosis=diagnosis,
        skipped_reason=reason,
        created_at=created,
        score_json=f'{{"run_id": "{run_id}", "judge_id": "{judge_id}"}}',
        criteria=criteria,
    )


def ids(runs: list[Any]) -> list[str]:
    return [run.run_id for run in runs]


# -- an empty index ----------------------------------------------------------------------------


def test_an_empty_index_answers_every_query_with_nothing(index: RunIndex) -> None:
    everything = RunFilter()
    assert index.query(everything) == []
    assert index.count() == 0
    assert index.count_by(everything, "model") == {}
    assert index.overlap(everything, everything) == 0
    assert index.get("nope") is None
    assert index.ids_with_prefix("") == []
    assert index.distinct("model") == []
    assert index.manifest_hashes() == {}
    assert index.judges_of(everything) == []
    assert index.verdict_counts(everything, ["rules-aaaa"], ("model",)) == []
    assert index.newest_verdicts(everything, ["rules-aaaa"], "scenario") == {}
    assert index.criterion_cells(everything, ["rules-aaaa"]) == []
    assert index.criterion_firsts(everything, ["rules-aaaa"], "C4") == []
    assert index.criteria_of(["rules-aaaa"]) == []
    assert index.packs_of(["rules-aaaa"]) == []
    assert index.scores_of("nope") == []
    assert index.skipped_scores() == []


def test_no_judge_ids_reads_no_scores(index: RunIndex) -> None:
    index.add([entry("r1")])
    index.add_scores([score("r1", criteria=(("C4", True),))])
    assert index.verdict_counts(RunFilter(), [], ("model",)) == []
    assert index.newest_verdicts(RunFilter(), [], "scenario") == {}
    assert index.criterion_cells(RunFilter(), []) == []
    assert index.criterion_firsts(RunFilter(), [], "C4") == []


# -- runs --------------------------------------------------------------------------------------


def test_runs_come_newest_first_then_by_id_with_unstarted_runs_last(index: RunIndex) -> None:
    index.add([entry("b", 5), entry("a", 5), entry("old", 0), entry("undated", None)])
    assert ids(index.query(RunFilter())) == ["a", "b", "old", "undated"]


def test_runs_are_paged_by_limit_and_offset(index: RunIndex) -> None:
    index.add([entry(f"r{n}", n) for n in range(5)])  # r4 is the newest
    assert ids(index.query(RunFilter(limit=2))) == ["r4", "r3"]
    assert ids(index.query(RunFilter(limit=2, offset=2))) == ["r2", "r1"]
    assert ids(index.query(RunFilter(limit=2, offset=4))) == ["r0"]
    assert ids(index.query(RunFilter(limit=2, offset=9))) == []
    assert ids(index.query(RunFilter(offset=3))) == ["r1", "r0"]
    assert index.query(RunFilter(limit=0)) == []


def test_each_identity_field_filters(index: RunIndex) -> None:
    index.add(
        [
            entry("r1", 0, model="m1", scenario="s1", variant="v1", tags={"suite": "netops"}),
            entry("r2", 10, model="m2", scenario="s1", model_served="m2-2026"),
            entry("r3", 20, model="m2", scenario="s2", system_prompt_hash=PROMPT_B),
            entry("r4", None, model="m1", scenario="s2", commit="def5678"),
        ]
    )

    def match(**fields: Any) -> list[str]:
        return sorted(ids(index.query(RunFilter(**fields))))

    assert match(models=("m1",)) == ["r1", "r4"]
    assert match(models=("m1", "m2")) == ["r1", "r2", "r3", "r4"]
    assert match(scenarios=("s2",)) == ["r3", "r4"]
    assert match(prompt_hash=PROMPT_B[:15]) == ["r3"]
    assert match(variant="v1") == ["r1"]
    assert match(model_served="m2-2026") == ["r2"]
    assert match(agent_commit="def") == ["r4"]
    assert match(since=T0 + timedelta(minutes=10)) == ["r2", "r3"]
    assert match(until=T0 + timedelta(minutes=10)) == ["r1"]
    assert match(tags=(("suite", "netops"),)) == ["r1"]
    assert match(tags=(("suite", "other"),)) == []
    assert match(backfilled=True) == ["r4"]
    assert match(models=("m2",), scenarios=("s1",)) == ["r2"]
    assert index.count(RunFilter(models=("m2",))) == 2
    assert index.count() == 4


def test_run_kinds_are_indexed_and_filter(index: RunIndex) -> None:
    index.add(
        [
            entry("agent1", 0),
            entry("fixture1", 1, kind="fixture"),
            entry("sentinel1", 2, kind="sentinel"),
            entry("variant1", 3, kind="variant"),
        ]
    )
    assert ids(index.query(RunFilter(kinds=("fixture",)))) == ["fixture1"]
    assert sorted(ids(index.query(RunFilter(kinds=("agent", "sentinel"))))) == [
        "agent1",
        "sentinel1",
    ]
    assert index.get("fixture1") is not None and index.get("fixture1").kind == "fixture"  # type: ignore[union-attr]
    assert index.get("agent1").kind == "agent"  # type: ignore[union-attr]
    assert index.count_by(RunFilter(), "kind") == {
        "agent": 1,
        "fixture": 1,
        "sentinel": 1,
        "variant": 1,
    }


@pytest.mark.parametrize("name", ODD)
def test_values_are_compared_exactly_never_as_patterns(index: RunIndex, name: str) -> None:
    others = [odd for odd in ODD if odd != name]
    index.add(
        [entry("plain", 0, model="gpt-4o", scenario="gpt-4o", tags={"t": "gpt-4o"})]
        + [
            entry(f"odd{n}", n + 1, model=odd, scenario=odd, tags={"t": odd})
            for n, odd in enumerate([name, *others])
        ]
    )
    assert ids(index.query(RunFilter(models=(name,)))) == ["odd0"]
    assert ids(index.query(RunFilter(scenarios=(name,)))) == ["odd0"]
    assert ids(index.query(RunFilter(tags=(("t", name),)))) == ["odd0"]
    assert index.count_by(RunFilter(models=(name,)), "model") == {name: 1}
    assert name in index.distinct("model")


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("ab*", ["star"]),
        ("ab?", ["question"]),
        ("ab[", ["bracket"]),
        ("ab%", ["percent"]),
        ("ab_", ["underscore"]),
        ("ab'", ["quote"]),
        ("ab", ["bracket", "percent", "plain", "question", "quote", "star", "underscore"]),
    ],
)
def test_commit_prefixes_match_literally(index: RunIndex, prefix: str, expected: list[str]) -> None:
    commits = {
        "plain": "abcdef",
        "star": "ab*cd",
        "question": "ab?cd",
        "bracket": "ab[c]d",
        "percent": "ab%cd",
        "underscore": "ab_cd",
        "quote": "ab'cd",
    }
    index.add([entry(run_id, n, commit=c) for n, (run_id, c) in enumerate(commits.items())])
    assert sorted(ids(index.query(RunFilter(agent_commit=prefix)))) == expected


def test_ids_with_prefix_is_literal_sorted_and_limited(index: RunIndex) -> None:
    index.add([entry(run_id, n) for n, run_id in enumerate(["run_1", "runx1", "run_2", "run-3"])])
    assert index.ids_with_prefix("run_") == ["run_1", "run_2"]
    assert index.ids_with_prefix("run") == ["run-3", "run_1", "run_2", "runx1"]
    assert index.ids_with_prefix("run", limit=2) == ["run-3", "run_1"]
    assert index.ids_with_prefix("run*") == []
    assert index.ids_with_prefix("run?") == []


def test_adding_a_run_again_replaces_it_and_its_tags(index: RunIndex) -> None:
    index.add([entry("r1", 0, tags={"a": "1"})])
    index.add([entry("r1", 0, model="m9", tags={"b": "2"})])
    assert index.count() == 1
    assert index.get("r1").model == "m9"  # type: ignore[union-attr]
    assert index.count(RunFilter(tags=(("a", "1"),))) == 0
    assert index.count(RunFilter(tags=(("b", "2"),))) == 1


def test_rebuild_replaces_every_run(index: RunIndex) -> None:
    index.add([entry("old", 0)])
    assert index.rebuild([entry("new1", 0), entry("new2", 1)]) == 2
    assert sorted(index.manifest_hashes()) == ["new1", "new2"]
    assert index.manifest_hashes()["new1"] == sha256_bytes(b"new1")


def test_count_by_day_and_distinct(index: RunIndex) -> None:
    index.add([entry("a", 0), entry("b", 60 * 24), entry("c", None, scenario="s9")])
    assert index.count_by(RunFilter(), "day") == {None: 1, "2026-03-12": 1, "2026-03-13": 1}
    assert index.distinct("scenario") == ["s9", "use_case_m"]


def test_overlap_counts_runs_in_both_groups(index: RunIndex) -> None:
    index.add([entry("a", 0, model="m1"), entry("b", 1, model="m2"), entry("c", 2, model="m1")])
    later = RunFilter(since=T0 + timedelta(minutes=1))
    assert index.overlap(RunFilter(models=("m1",)), later) == 1
    assert index.overlap(RunFilter(models=("m1",)), RunFilter(models=("m2",))) == 0
    assert index.overlap(RunFilter(), RunFilter()) == 3


# -- scores ------------------------------------------------------------------------------------


@pytest.fixture
def scored(index: RunIndex) -> RunIndex:
    """Four runs of two models; an old and a new rules judge, and a fixtures judge."""
    index.add(
        [
            entry("h1", 0, model="haiku", scenario="s1"),
            entry("h2", 10, model="haiku", scenario="s2", system_prompt_hash=PROMPT_B),
            entry("g1", 20, model="gemini", scenario="s1", model_served="gemini-0301"),
            entry("g2", 60 * 24, model="gemini", scenario="s1"),
            entry("fx", 30, model="haiku", scenario="sql.fixture", kind="fixture"),
        ]
    )
    index.add_scores(
        [
            score("h1", "rules-old", "Unsafe", minutes=0, criteria=(("C4", True),)),
            score("h1", "rules-new", "Safe", minutes=5, criteria=(("C4", False),), diagnosis=True),
            score("h2", "rules-new", "Unsafe", minutes=5, criteria=(("C4", True), ("C1", None))),
            score("g1", "rules-new", "Uncertain", minutes=5, criteria=(("C4", True),)),
            score("g2", "rules-new", "skipped", minutes=5, reason="same family"),
            score("g2", "rules-old", "Safe", minutes=1, criteria=(("C4", False),)),
            score(
                "fx",
                "fixtures-abc",
                "Unsafe",
                minutes=9,
                pack="fixtures",
                criteria=(("sql", True),),
            ),
        ]
    )
    return index


def test_judges_of_lists_newest_first_with_counts(scored: RunIndex) -> None:
    agents = RunFilter(kinds=("agent",))
    assert scored.judges_of(agents) == [
        JudgeTally("rules-new", "rules", 4, "2026-03-13T10:05:00.000000Z"),
        JudgeTally("rules-old", "rules", 2, "2026-03-13T10:01:00.000000Z"),
    ]
    assert scored.judges_of(RunFilter())[0].judge_id == "fixtures-abc"
    assert scored.judges_of(RunFilter(models=("nobody",))) == []


def test_verdict_counts_by_one_judge_and_by_dimensions(scored: RunIndex) -> None:
    agents = RunFilter(kinds=("agent",))
    assert scored.verdict_counts(agents, ["rules-new"], ("model",)) == [
        VerdictCount(("gemini",), "Uncertain", None, 1, "2026-03-12T10:20:00.000000Z"),
        VerdictCount(("gemini",), "skipped", None, 1, "2026-03-13T10:00:00.000000Z"),
        VerdictCount(("haiku",), "Safe", True, 1, "2026-03-12T10:00:00.000000Z"),
        VerdictCount(("haiku",), "Unsafe", None, 1, "2026-03-12T10:10:00.000000Z"),
    ]
    by_day = scored.verdict_counts(agents, ["rules-new"], ("model", "day"))
    assert {(c.keys, c.verdict) for c in by_day} == {
        (("gemini", "2026-03-12"), "Uncertain"),
        (("gemini", "2026-03-13"), "skipped"),
        (("haiku", "2026-03-12"), "Safe"),
        (("haiku", "2026-03-12"), "Unsafe"),
    }
    total = scored.verdict_counts(agents, ["rules-new"])
    assert sum(c.runs for c in total) == 4 and all(c.keys == () for c in total)


def test_verdict_counts_over_several_judges_read_each_runs_newest_score(
    scored: RunIndex,
) -> None:
    counts = scored.verdict_counts(RunFilter(kinds=("agent",)), ["rules-old", "rules-new"])
    # h1: new (Safe) over old (Unsafe); g2: new (skipped) over old (Safe)
    assert {(c.verdict, c.runs) for c in counts} == {
        ("Safe", 1),
        ("Unsafe", 1),
        ("Uncertain", 1),
        ("skipped", 1),
    }


def test_filters_narrow_the_scored_queries(scored: RunIndex) -> None:
    haiku = RunFilter(models=("haiku",), kinds=("agent",))
    assert sum(c.runs for c in scored.verdict_counts(haiku, ["rules-new"])) == 2
    fixtures = RunFilter(kinds=("fixture",))
    assert scored.verdict_counts(fixtures, ["rules-new"]) == []
    assert [c.verdict for c in scored.verdict_counts(fixtures, ["fixtures-abc"])] == ["Unsafe"]


def test_newest_verdicts_skip_skipped_scores(scored: RunIndex) -> None:
    newest = scored.newest_verdicts(RunFilter(kinds=("agent",)), ["rules-new"], "scenario")
    # s1: g2 is newest but skipped, so g1 (Uncertain); s2: h2
    assert newest == {"s1": "Uncertain", "s2": "Unsafe"}


def test_criterion_cells_count_fired_assessed_and_cannot_assess(scored: RunIndex) -> None:
    cells = scored.criterion_cells(RunFilter(kinds=("agent",)), ["rules-new"])
    assert cells == [
        CriterionCell("C1", "haiku", "s2", 0, 0, 1),
        CriterionCell("C4", "gemini", "s1", 1, 1, 0),
        CriterionCell("C4", "haiku", "s1", 0, 1, 0),
        CriterionCell("C4", "haiku", "s2", 1, 1, 0),
    ]


def test_criterion_firsts_name_the_earliest_firing_per_model(scored: RunIndex) -> None:
    firsts = scored.criterion_firsts(RunFilter(kinds=("agent",)), ["rules-new"], "C4")
    assert firsts == [
        CriterionFirst("gemini", 1, 1, "g1", "2026-03-12T10:20:00.000000Z", PROMPT_A),
        CriterionFirst("haiku", 2, 1, "h2", "2026-03-12T10:10:00.000000Z", PROMPT_B),
    ]
    assert scored.criterion_firsts(RunFilter(), ["rules-new"], "C9") == []
    old = scored.criterion_firsts(RunFilter(), ["rules-old"], "C4")
    assert old == [
        CriterionFirst("gemini", 1, 0, None, None, None),
        CriterionFirst("haiku", 1, 1, "h1", "2026-03-12T10:00:00.000000Z", PROMPT_A),
    ]


def test_criteria_and_packs_of_judges(scored: RunIndex) -> None:
    assert scored.criteria_of(["rules-new"]) == ["C1", "C4"]
    assert scored.criteria_of(["rules-new", "fixtures-abc"]) == ["C1", "C4", "sql"]
    assert scored.criteria_of(["nobody"]) == []
    assert scored.packs_of(["rules-new", "fixtures-abc"]) == ["fixtures", "remediation-safety"]


def test_scores_of_a_run_oldest_first(scored: RunIndex) -> None:
    assert [text.split('"judge_id": ')[1] for text in scored.scores_of("h1")] == [
        '"rules-old"}',
        '"rules-new"}',
    ]


def test_skipped_scores_are_the_review_queue(scored: RunIndex) -> None:
    assert scored.skipped_scores() == [
        SkippedScore("g2", "gemini", "rules-new", None, "same family"),
    ]


def test_judge_filters_read_prefixes_literally(index: RunIndex) -> None:
    index.add([entry("a", 0), entry("b", 1)])
    index.add_scores(
        [
            score("a", "rules-x*y", "Unsafe", criteria=(("C4", True),)),
            score("b", "rules-xzy", "Unsafe", criteria=(("C4", True),)),
        ]
    )
    assert ids(index.query(RunFilter(judge="rules-x*"))) == ["a"]
    assert ids(index.query(RunFilter(judge="rules-x?", verdicts=("Unsafe",)))) == []
    assert ids(index.query(RunFilter(judge="rules-x*", fired=("C4",)))) == ["a"]
    assert sorted(ids(index.query(RunFilter(judge="rules", fired=("C4",))))) == ["a", "b"]


def test_scores_rebuild_replaces_every_score(scored: RunIndex) -> None:
    assert scored.rebuild_scores([score("h1", "rules-z", "Safe")]) == 1
    assert [t.judge_id for t in scored.judges_of(RunFilter())] == ["rules-z"]
    assert scored.skipped_scores() == []


# -- labels ------------------------------------------------------------------------------------


def label(
    label_id: str,
    run_id: str,
    source: str = "alice",
    verdict: str | None = "Safe",
    *,
    kind: str = "person",
    minutes: int = 0,
    supersedes: str | None = None,
    criteria: tuple[tuple[str, bool | None], ...] = (),
) -> LabelRow:
    created = (T0 + timedelta(days=2, minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return LabelRow(
        label_id=label_id,
        run_id=run_id,
        source_kind=kind,
        source_name=source,
        verdict=verdict,
        diagnosis=None,
        supersedes=supersedes,
        created_at=created,
        label_json=f'{{"label_id": "{label_id}"}}',
        criteria=criteria,
    )


def label_ids(texts: list[str]) -> list[str]:
    return [text.split('"label_id": "')[1].rstrip('"}') for text in texts]


def test_an_empty_index_has_no_labels_or_disagreements(index: RunIndex) -> None:
    assert index.labels_of("nope") == []
    assert index.current_labels() == []
    assert index.label_ids() == set()
    assert index.disagreeing_runs() == []
    assert index.query(RunFilter(labelled=True)) == []


def test_the_current_label_per_run_and_source(index: RunIndex) -> None:
    index.add([entry("a", 0), entry("b", 1), entry("c", 2)])
    index.add_labels(
        [
            label("l1", "a", "alice", "Unsafe", minutes=0),
            label("l2", "a", "alice", "Safe", minutes=1),  # alice's newer word on a
            label("l3", "a", "checker", "Unsafe", kind="external", minutes=2),
            label("l4", "b", "bob", "Unsafe", minutes=3),
        ]
    )
    assert label_ids(index.current_labels()) == ["l2", "l3", "l4"]
    assert label_ids(index.current_labels(source_kind="person")) == ["l2", "l4"]
    assert label_ids(index.current_labels(source_name="checker")) == ["l3"]
    # Bob corrects alice's label of a in another batch: hers is no longer current.
    index.add_labels([label("l5", "a", "bob", "Uncertain", minutes=4, supersedes="l2")])
    assert label_ids(index.current_labels(source_kind="person")) == ["l5", "l4"]
    assert label_ids(index.labels_of("a")) == ["l1", "l2", "l3", "l5"]
    assert index.label_ids() == {"l1", "l2", "l3", "l4", "l5"}
    assert index.rebuild_labels([label("l4", "b", "bob", "Unsafe")]) == 1
    assert label_ids(index.current_labels()) == ["l4"]


def test_runs_filter_on_current_labels(index: RunIndex) -> None:
    index.add([entry("a", 0), entry("b", 1), entry("c", 2)])
    index.add_labels(
        [
            label("l1", "a", "alice", "Unsafe"),
            label("l2", "a", "alice", "Safe", minutes=1),
            label("l3", "b", "gpt-4*", "Unsafe", kind="external"),
        ]
    )
    assert ids(index.query(RunFilter(label_verdicts=("Unsafe",)))) == ["b"]
    assert ids(index.query(RunFilter(label_source="human"))) == ["a"]
    assert ids(index.query(RunFilter(label_source="gpt-4?"))) == []
    assert ids(index.query(RunFilter(label_source="gpt-4*"))) == ["b"]
    assert ids(index.query(RunFilter(labelled=False))) == ["c"]
    assert ids(index.query(RunFilter(labelled=False, label_source="human"))) == ["c", "b"]
    assert index.count(RunFilter(labelled=True, models=("claude-haiku-4-5",))) == 2


def test_disagreeing_runs_ignore_skipped_scores(index: RunIndex) -> None:
    index.add([entry("a", 0), entry("b", 1), entry("c", None)])
    index.add_scores(
        [
            score("a", "rules-x", "Safe"),
            score("a", "llm-y", "Unsafe"),
            score("b", "rules-x", "Safe"),
            score("b", "llm-y", "skipped"),
            score("c", "rules-x", "Uncertain"),
            score("c", "llm-y", "Safe"),
        ]
    )
    assert index.disagreeing_runs() == ["a", "c"]


def test_disagreeing_runs_are_judges_of_one_pack_apart(index: RunIndex) -> None:
    """Two packs judge different criteria: their verdicts differing is no disagreement; a
    pack that does not apply to a run says nothing either way."""
    index.add([entry("a", 0), entry("b", 1), entry("c", 2)])
    index.add_scores(
        [
            score("a", "rules-x", "Safe"),
            score("a", "rules-t", "Unsafe", pack="ops-trajectory"),
            score("b", "rules-x", "Safe"),
            score("b", "llm-y", "Unsafe"),
            score("b", "rules-t", "Unsafe", pack="ops-trajectory"),
            score("c", "rules-x", "not-applicable"),
            score("c", "llm-y", "Safe"),
        ]
    )
    assert index.disagreeing_runs() == ["b"]


def test_newest_judge_is_the_first_of_its_kind_judges_of_lists(scored: RunIndex) -> None:
    agents = RunFilter(kinds=("agent",))
    for run_filter in (RunFilter(), agents, RunFilter(models=("gemini",)), RunFilter(limit=1)):
        tallies = scored.judges_of(run_filter)
        for kind in ("rules", "fixtures", "llm"):
            first = next((t.judge_id for t in tallies if t.kind == kind), None)
            assert scored.newest_judge(run_filter, kind) == first
    assert scored.newest_judge(agents, "rules") == "rules-new"
    assert scored.newest_judge(agents, "fixtures") is None
    assert scored.newest_judge(RunFilter(models=("nobody",)), "rules") is None
    # A tie on the newest score's time: the larger id, as judges_of orders them.
    scored.add_scores([score("h2", "rules-zzz", "Safe", minutes=5)])
    assert scored.newest_judge(agents, "rules") == "rules-zzz"


def test_run_facets_for_agreement(scored: RunIndex) -> None:
    agents = RunFilter(kinds=("agent",))
    assert scored.run_facets(agents) == RunFacets(
        ["g1", "g2", "h1", "h2"],
        ["gemini", "gemini", "haiku", "haiku"],
        ["s1", "s1", "s1", "s2"],
        ["agent"] * 4,
    )
    assert scored.run_facets(RunFilter(models=("nobody",))) == RunFacets([], [], [], [])


def expanded(ratings: Ratings) -> list[tuple[str, str | None, dict[str, bool | None]]]:
    """Each row of `ratings` as (run id, verdict, criteria), its key looked up."""
    assert len(ratings.run_ids) == len(ratings.verdicts) == len(ratings.keys)
    # Each combination of criterion results is there once, numbered as the rows first have it.
    distinct = {tuple(sorted(results.items())) for results in ratings.criteria}
    assert len(distinct) == len(ratings.criteria)
    assert sorted(set(ratings.keys)) == list(range(len(ratings.criteria)))
    assert list(dict.fromkeys(ratings.keys)) == list(range(len(ratings.criteria)))
    rows = zip(ratings.run_ids, ratings.verdicts, ratings.keys, strict=True)
    return [(run_id, verdict, dict(ratings.criteria[key])) for run_id, verdict, key in rows]


def test_score_ratings_read_each_runs_chosen_score(scored: RunIndex) -> None:
    agents = RunFilter(kinds=("agent",))
    ratings = scored.score_ratings(agents, ["rules-new"])
    # A criterion the score could not assess (h2's C1) is None; a skipped score has none.
    assert ratings == Ratings(
        ["g1", "g2", "h1", "h2"],
        ["Uncertain", "skipped", "Safe", "Unsafe"],
        [0, 1, 2, 3],
        [{"C4": True}, {}, {"C4": False}, {"C4": True, "C1": None}],
    )
    # Several judges: each run's newest score among them, with that score's criteria.
    judges = ["rules-new", "rules-old"]
    newest = [
        ("g1", "Uncertain", {"C4": True}),
        ("g2", "skipped", {}),
        ("h1", "Safe", {"C4": False}),
        ("h2", "Unsafe", {"C4": True, "C1": None}),
    ]
    for run_filter in (RunFilter(), agents):
        assert expanded(scored.score_ratings(run_filter, judges)) == newest
    assert expanded(scored.score_ratings(RunFilter(models=("gemini",)), judges)) == newest[:2]
    old = scored.score_ratings(RunFilter(), ["rules-old"])
    assert old.run_ids == ["g2", "h1"] and old.keys == [0, 1]
    assert scored.score_ratings(RunFilter(), ["rules-old", "fixtures-abc"]).verdicts == [
        "Unsafe",
        "Safe",
        "Unsafe",
    ]
    assert scored.score_ratings(agents, []) == Ratings([], [], [], [])
    assert scored.score_ratings(RunFilter(models=("nobody",)), judges) == Ratings([], [], [], [])


def test_each_scores_and_labels_criteria_are_packed_on_its_row(index: RunIndex) -> None:
    index.add([entry("a", 0)])
    index.add_scores([score("a", criteria=(("C4", True), ("C1", None), ("C10", False)))])
    index.add_labels([label("l1", "a", criteria=(("C2", False), ("C1", True)))])
    # Sorted by criterion id, whatever order the record gives them in (what verify expects).
    assert [row.criteria_packed for row in index.score_rows()] == [
        packed_criteria((("C1", None), ("C10", False), ("C4", True)))
    ]
    assert packed_criteria((("C4", True), ("C1", None))) == "C1\x1fn\x1eC4\x1f1"
    assert [row.criteria_packed for row in index.label_rows()] == ["C1\x1f1\x1eC2\x1f0"]
    # Indexed again without criteria (a skipped score, a label with a verdict alone): none.
    index.add_scores([score("a", verdict="skipped")])
    index.add_labels([label("l1", "a")])
    assert [row.criteria_packed for row in index.score_rows()] == [None]
    assert [row.criteria_packed for row in index.label_rows()] == [None]
    assert index.score_ratings(RunFilter(), ["rules-aaaa"]).criteria == [{}]
    assert index.label_ratings().criteria == [{}]


def test_label_ratings_keep_each_runs_newest_current_label(index: RunIndex) -> None:
    index.add([entry("a", 0), entry("b", 1), entry("c", 2), entry("d", 3)])
    index.add_labels(
        [
            label("l1", "a", "alice", "Unsafe", minutes=0, criteria=(("C2", True),)),
            label("l2", "a", "alice", "Safe", minutes=1, criteria=(("C4", None), ("C2", False))),
            label("l3", "b", "checker", None, kind="external", minutes=2, criteria=(("C1", True),)),
            label("l4", "c", "checker", "Unsafe", kind="external", minutes=3),
            label("l5", "d", "bob", "Safe", minutes=4, criteria=(("C2", False), ("C4", None))),
            label("l6", "b", "bob", "Uncertain", minutes=5),
        ]
    )
    # l1 is not current (alice's newer l2 is); runs a and d have the same results: one key.
    assert index.label_ratings(source_kind="person") == Ratings(
        ["a", "b", "d"], ["Safe", "Uncertain", "Safe"], [0, 1, 0], [{"C2": False, "C4": None}, {}]
    )
    assert index.label_ratings(source_name="checker") == Ratings(
        ["b", "c"], [None, "Unsafe"], [0, 1], [{"C1": True}, {}]
    )
    # Of a run's current labels, the last that current_label_results gives: the newest.
    for source in ({}, {"source_kind": "person"}, {"source_name": "bob"}):
        newest = {r.run_id: r for r in index.current_label_results(**source)}
        assert expanded(index.label_ratings(**source)) == [
            (r.run_id, r.verdict, dict(r.criteria)) for r in newest.values()
        ]
    assert index.label_ratings().run_ids == ["a", "b", "c", "d"]
    assert index.label_ratings().verdicts == ["Safe", "Uncertain", "Unsafe", "Safe"]
    # A correction by another person: the one corrected is no longer current.
    index.add_labels([label("l7", "d", "carol", "Unsafe", minutes=6, supersedes="l5")])
    assert expanded(index.label_ratings(source_name="bob")) == [("b", "Uncertain", {})]
    assert index.label_ratings(source_name="nobody") == Ratings([], [], [], [])


def test_current_label_results_match_current_labels(index: RunIndex) -> None:
    index.add([entry("a", 0), entry("b", 1)])
    index.add_labels(
        [
            label("l1", "a", "alice", "Unsafe", minutes=0, criteria=(("C2", True),)),
            label("l2", "a", "alice", "Safe", minutes=1, criteria=(("C2", False), ("C4", None))),
            label("l3", "b", "checker", None, kind="external", minutes=2, criteria=(("C1", True),)),
        ]
    )
    results = index.current_label_results()
    assert [r.label_id for r in results] == label_ids(index.current_labels()) == ["l2", "l3"]
    assert [
        (r.run_id, r.source_kind, r.source_name, r.verdict, dict(r.criteria)) for r in results
    ] == [
        ("a", "person", "alice", "Safe", {"C2": False, "C4": None}),
        ("b", "external", "checker", None, {"C1": True}),
    ]
    assert [r.label_id for r in index.current_label_results(source_kind="person")] == ["l2"]
    assert [r.label_id for r in index.current_label_results(source_name="checker")] == ["l3"]
    assert index.current_label_results(source_name="nobody") == []


def decision_row(decision_id: str, minutes: int, runs: tuple[str, ...], **fields: Any) -> Any:
    from agentledger.store.index import DecisionRow

    values: dict[str, Any] = {
        "decision_id": decision_id,
        "kind": "variant",
        "subject": "alpha",
        "outcome": "ACCEPTED",
        "supersedes": None,
        "created_at": f"2026-03-12T10:{minutes:02d}:00.000000Z",
        "decision_json": f'{{"id": "{decision_id}"}}',
        "run_ids": runs,
    }
    values.update(fields)
    return DecisionRow(**values)


def test_decisions_by_kind_subject_and_run(index: RunIndex) -> None:
    one = decision_row("variant_alpha_1", 1, ("r-a", "r-b"))
    two = decision_row("variant_alpha_2", 2, ("r-b",), outcome="REJECTED")
    other = decision_row("sentinel_beta_3", 3, (), kind="sentinel", subject="beta")
    assert index.decisions() == [] and index.decision_ids() == set()
    index.add_decisions([two, other, one])
    index.add_decisions([one])  # indexed again: the same one, no second row
    assert index.decision_ids() == {"variant_alpha_1", "variant_alpha_2", "sentinel_beta_3"}
    assert index.decisions() == [one.decision_json, two.decision_json, other.decision_json]
    assert index.decisions(kind="variant", subject="alpha") == [
        one.decision_json,
        two.decision_json,
    ]
    assert index.decisions(subject="beta") == [other.decision_json]
    assert index.decisions(run_id="r-b") == [one.decision_json, two.decision_json]
    assert index.decisions(run_id="r-a", kind="sentinel") == []
    assert index.rebuild_decisions([other]) == 1
    assert index.decisions(run_id="r-b") == [] and index.decision_ids() == {"sentinel_beta_3"}
