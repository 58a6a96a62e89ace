"""The review queue paged in the index (`review_queue_page`): every window is the same slice of
the whole queue, on SQLite and on PostgreSQL, with no run twice and nothing loaded whole."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.labels.review import review_queue, review_queue_page
from agentledger.store import Ledger
from conftest import T0, WriteRun
from test_labels_cli import score


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    index = request.getfixturevalue("pg_url") if request.param == "postgresql" else "sqlite"
    with Ledger.init(tmp_path / "ledger", index=index) as opened:
        yield opened


@pytest.fixture
def queued(ledger: Ledger, write_run: WriteRun) -> dict[str, str]:
    """Twelve runs, three started at the same minute: two refused, two disagreed on (one of
    each also labelled by a person, so out), one labelled, two in which nothing ran, the rest
    unlabelled."""
    models = ["gemini-2.5-flash", "claude-haiku-4-5", "claude-sonnet-4-6", "gpt-5"]
    runs: dict[str, str] = {}
    for number in range(12):
        minute = 3 if number in (4, 5, 6) else number
        runs[f"r{number}"] = write_run(
            f"use_case_{number % 3}",
            models[number % 4],
            started_at=T0 + timedelta(minutes=minute),
            run_id=f"run-{(number * 7) % 12:02d}-{number}",
        )
    for name in ("r2", "r9", "r5"):
        score(ledger, runs[name], "llm", "skipped", skipped_reason=f"refused {name}")
    for name in ("r6", "r7"):
        score(ledger, runs[name], "rules", "skipped", skipped_reason="nothing ran: no bwrap")
    for name in ("r4", "r10", "r9"):
        score(ledger, runs[name], "rules", "Unsafe")
        score(ledger, runs[name], "llm2", "Safe")
    for name in ("r5", "r10", "r11"):
        result = CliRunner().invoke(
            main,
            [
                "label",
                runs[name],
                "--verdict",
                "safe",
                "--by",
                "alice",
                "--ledger",
                str(ledger.root),
            ],
        )
        assert result.exit_code == 0, result.stderr
    return runs


def test_every_window_is_the_same_slice_of_the_whole_queue(
    ledger: Ledger, queued: dict[str, str]
) -> None:
    full = review_queue(ledger)
    ids = [item.run_id for item in full]
    assert len(ids) == len(set(ids)) == 9  # twelve, less the three a person labelled
    reasons = {item.run_id: item.reasons for item in full}
    # What is worth a person's time first: judges of a pack that disagree, then refusals;
    # the runs in which nothing ran last, after the unlabelled.
    assert reasons[queued["r9"]] == ("disagreement", "refused")
    assert [reasons[run_id][0] for run_id in ids] == (
        ["disagreement"] * 2 + ["refused"] + ["unlabelled"] * 4 + ["nothing-ran"] * 2
    )
    assert ids[:3] == [queued["r9"], queued["r4"], queued["r2"]]
    assert ids[-2:] == [queued["r7"], queued["r6"]]  # newest first
    # The unlabelled: newest first, the three started at one minute by id.
    unlabelled = [run_id for run_id in ids if reasons[run_id] == ("unlabelled",)]
    started = {run.run_id: run.started_at for run in ledger.runs()}
    assert unlabelled == sorted(sorted(unlabelled), key=lambda r: started[r], reverse=True)
    expected_counts = Counter(why for item in full for why in item.reasons)
    for limit in (1, 2, 3, 4, 7, 50):
        for offset in range(len(full) + 2):
            page = review_queue_page(ledger, offset=offset, limit=limit)
            assert page.items == full[offset : offset + limit], (offset, limit)
            assert page.total == len(full)
            assert page.counts == dict(expected_counts)


def test_without_unlabelled_only_refused_and_disagreed_on_are_paged(
    ledger: Ledger, queued: dict[str, str]
) -> None:
    full = review_queue(ledger, unlabelled=False)
    assert [item.run_id for item in full] == [
        item.run_id for item in review_queue(ledger) if item.reasons[0] != "unlabelled"
    ]
    assert [item.reasons[0] for item in full][-2:] == ["nothing-ran"] * 2
    for offset in range(len(full) + 1):
        page = review_queue_page(ledger, offset=offset, limit=2, unlabelled=False)
        assert page.items == full[offset : offset + 2] and page.total == len(full)


def test_an_empty_queue_has_no_window(ledger: Ledger) -> None:
    page = review_queue_page(ledger, offset=0, limit=10)
    assert (page.items, page.total, page.counts) == ([], 0, {})


def test_an_outside_source_s_label_leaves_a_run_for_a_person(
    ledger: Ledger, queued: dict[str, str], tmp_path: Path
) -> None:
    """A benchmark checker's or another judge's label is what a person reviews against: the
    run stays in the queue until a person labels it."""
    before = [item.run_id for item in review_queue(ledger)]
    labels = tmp_path / "checker.csv"
    labels.write_text(f"run_id,verdict\n{queued['r3']},unsafe\n{queued['r9']},safe\n")
    result = CliRunner().invoke(
        main, ["labels", "import", str(labels), "--source", "checker", "--ledger", str(ledger.root)]
    )
    assert result.exit_code == 0, result.stderr
    after = review_queue(ledger)
    assert [item.run_id for item in after] == before
    (three,) = [item for item in after if item.run_id == queued["r3"]]
    assert three.reasons == ("unlabelled",) and three.detail == ("no person's label yet",)
    for offset in range(len(after)):
        page = review_queue_page(ledger, offset=offset, limit=3)
        assert [item.run_id for item in page.items] == [
            i.run_id for i in after[offset : offset + 3]
        ]
        assert page.total == len(after)


def test_a_safe_against_unsafe_disagreement_comes_before_a_milder_one(
    ledger: Ledger, write_run: WriteRun
) -> None:
    """Of two disagreements, the one where a judge says Safe and another Unsafe is the more
    worth a person's time, though the other run is newer; two packs' verdicts differing is no
    disagreement at all."""
    mild = write_run("use_case_a", "gpt-5", started_at=T0 + timedelta(minutes=9), run_id="mild")
    sharp = write_run("use_case_b", "gpt-5", started_at=T0, run_id="sharp")
    packs = write_run("use_case_c", "gpt-5", started_at=T0 + timedelta(minutes=5), run_id="packs")
    score(ledger, mild, "rules", "Uncertain")
    score(ledger, mild, "llm", "Safe")
    score(ledger, sharp, "rules", "Unsafe")
    score(ledger, sharp, "llm", "Safe")
    score(ledger, packs, "rules", "Unsafe")
    score(ledger, packs, "llm", "Safe", pack="ops-trajectory")
    queue = review_queue(ledger)
    assert [(item.run_id, item.reasons[0]) for item in queue] == [
        ("sharp", "disagreement"),
        ("mild", "disagreement"),
        ("packs", "unlabelled"),
    ]


def test_outside_sources_that_disagree_put_a_run_first(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    """A data set's checker and its LLM judge rate the same thing, the run's verdict: where
    their labels differ, the run is a disagreement, before the unlabelled; where they agree
    it waits only for a first label."""
    older = write_run("task_a", "gpt-4o", started_at=T0, run_id="split")
    newer = write_run("task_b", "gpt-4o", started_at=T0 + timedelta(minutes=1), run_id="agreed")
    for source, verdicts in (("checker", ("unsafe", "safe")), ("llm-label", ("safe", "safe"))):
        rows = tmp_path / f"{source}.csv"
        rows.write_text(f"run_id,verdict\n{older},{verdicts[0]}\n{newer},{verdicts[1]}\n")
        result = CliRunner().invoke(
            main, ["labels", "import", str(rows), "--source", source, "--ledger", str(ledger.root)]
        )
        assert result.exit_code == 0, result.stderr
    queue = review_queue(ledger)
    assert [(item.run_id, item.reasons) for item in queue] == [
        ("split", ("disagreement",)),
        ("agreed", ("unlabelled",)),
    ]
    assert queue[0].detail == ("labels: checker Unsafe; llm-label Safe",)
