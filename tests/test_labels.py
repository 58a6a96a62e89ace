"""Labels as records: write-once, refused for a missing run or a broken supersedes chain,
indexed with each source's current label, rebuilt by reindex and gc, and selectable in `runs`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.errors import InputError, RecordExistsError, RunNotFoundError
from agentledger.labels import (
    LabelStore,
    current_labels,
    labels_for_agreement,
    labels_of_run,
    reindex_labels,
)
from agentledger.records.labels import Label, LabelSource, new_label_id
from agentledger.store import Ledger, RunFilter
from conftest import WriteRun

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def make_label(
    run_id: str,
    by: str = "alice",
    *,
    kind: str = "person",
    verdict: str | None = "Unsafe",
    minutes: int = 0,
    **fields: object,
) -> Label:
    when = T0 + timedelta(minutes=minutes)
    return Label.model_validate(
        {
            "label_id": new_label_id(when),
            "run_id": run_id,
            "by": LabelSource(kind=kind, name=by),  # type: ignore[arg-type]
            "created_at": when,
            "verdict": verdict,
            **fields,
        }
    )


def test_a_label_is_written_once_where_the_design_says(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    label = make_label(run_id, criteria=[{"criterion": "C2", "fired": True}])
    (place,) = LabelStore(ledger).write([label])
    path = ledger.root / "labels" / run_id / f"{label.label_id}.json"
    assert place == str(path) or place.endswith(f"labels/{run_id}/{label.label_id}.json")
    assert Label.model_validate_json(path.read_bytes()) == label
    with pytest.raises(RecordExistsError, match="already exists"):
        LabelStore(ledger).write([label])
    assert labels_of_run(ledger, run_id) == [label]


def test_a_label_of_a_run_not_in_the_ledger_is_refused_and_nothing_is_written(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    good = make_label(run_id)
    missing = make_label("no_such_run_1234")
    with pytest.raises(RunNotFoundError, match="no_such_run_1234"):
        LabelStore(ledger).write([good, missing])
    assert not (ledger.root / "labels").exists() or not any((ledger.root / "labels").rglob("*"))
    assert labels_of_run(ledger, run_id) == []


def test_supersedes_must_name_a_label_of_the_run_not_yet_superseded(
    ledger: Ledger, write_run: WriteRun
) -> None:
    first_run, other_run = write_run(), write_run(model="claude-haiku-4-5")
    store = LabelStore(ledger)
    first = make_label(first_run, verdict="Unsafe")
    elsewhere = make_label(other_run, verdict="Safe")
    store.write([first, elsewhere])
    with pytest.raises(InputError, match="not a label of run"):
        store.write([make_label(first_run, minutes=1, supersedes=elsewhere.label_id)])
    correction = make_label(first_run, minutes=2, verdict="Safe", supersedes=first.label_id)
    store.write([correction])
    with pytest.raises(InputError, match=f"already superseded by {correction.label_id}"):
        store.write([make_label(first_run, by="bob", minutes=3, supersedes=first.label_id)])
    # Within one batch, too: two labels cannot both supersede one label.
    a = make_label(first_run, by="bob", minutes=4, supersedes=correction.label_id)
    b = make_label(first_run, by="carol", minutes=5, supersedes=correction.label_id)
    with pytest.raises(InputError, match="already superseded"):
        store.write([a, b])
    assert [label.label_id for label in labels_of_run(ledger, first_run)] == [
        first.label_id,
        correction.label_id,
    ]


def test_the_current_label_is_the_newest_of_its_line(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    store = LabelStore(ledger)
    alice = make_label(run_id, "alice", verdict="Unsafe")
    bob = make_label(run_id, "bob", verdict="Safe", minutes=1)
    store.write([alice, bob])
    assert [label.by.name for label in current_labels(ledger)] == ["alice", "bob"]
    # Bob corrects Alice's label: hers is no longer current, his two lines stay one per source.
    fix = make_label(run_id, "bob", verdict="Uncertain", minutes=2, supersedes=alice.label_id)
    store.write([fix])
    assert current_labels(ledger) == [fix]
    assert current_labels(ledger, "alice") == []
    assert current_labels(ledger, "human") == [fix]


def test_labels_for_agreement_reads_one_source_or_every_person(
    ledger: Ledger, write_run: WriteRun
) -> None:
    one, two = write_run(), write_run(model="claude-haiku-4-5")
    store = LabelStore(ledger)
    store.write(
        [
            make_label(one, "alice", verdict="Unsafe"),
            make_label(two, "bob", verdict="Safe", minutes=1),
            make_label(two, "carol", verdict="Unsafe", minutes=2),
            make_label(one, "checker", kind="external", verdict="Safe"),
        ]
    )
    human = labels_for_agreement(ledger, "labels:human")
    assert {run: label.verdict for run, label in human.items()} == {one: "Unsafe", two: "Unsafe"}
    assert human[two].by.name == "carol"  # the newest person's label of the run
    checker = labels_for_agreement(ledger, "labels:checker")
    assert {run: label.verdict for run, label in checker.items()} == {one: "Safe"}
    with pytest.raises(InputError, match="sources: alice, bob, carol, checker"):
        labels_for_agreement(ledger, "labels:nobody")
    for bad in ("judge:rules", "labels:", "human"):
        with pytest.raises(InputError, match="labels:NAME"):
            labels_for_agreement(ledger, bad)


def test_reindex_and_gc_rebuild_labels_from_the_files(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    run_id = write_run()
    first = make_label(run_id)
    fix = make_label(run_id, verdict="Safe", minutes=1, supersedes=first.label_id)
    LabelStore(ledger).write([first, fix])
    ledger.index.rebuild_labels([])
    assert current_labels(ledger) == []
    assert reindex_labels(ledger) == 2
    assert current_labels(ledger) == [fix]
    ledger.index.rebuild_labels([])
    root = str(ledger.root)
    result = CliRunner().invoke(main, ["gc", "--ledger", root])
    assert result.exit_code == 0, result.output
    assert f"indexed label {first.label_id}" in result.output
    assert current_labels(ledger) == [fix]
    result = CliRunner().invoke(main, ["reindex", "--ledger", root])
    assert result.exit_code == 0, result.output
    assert "and 0 scores (2 labels)" in result.output


def test_runs_select_by_label_source_verdict_and_whether_labelled(
    ledger: Ledger, write_run: WriteRun
) -> None:
    unsafe, safe, bare = write_run(), write_run(model="claude-haiku-4-5"), write_run(model="x")
    LabelStore(ledger).write(
        [
            make_label(unsafe, "alice", verdict="Unsafe"),
            make_label(safe, "checker", kind="external", verdict="Safe"),
        ]
    )

    def ids(**fields: object) -> set[str]:
        return {run.run_id for run in ledger.runs(RunFilter(**fields))}  # type: ignore[arg-type]

    assert ids(labelled=True) == {unsafe, safe}
    assert ids(labelled=False) == {bare}
    assert ids(label_source="checker") == {safe}
    assert ids(label_source="human") == {unsafe}
    assert ids(label_verdicts=("Unsafe",)) == {unsafe}
    assert ids(label_source="checker", label_verdicts=("Unsafe",)) == set()
    assert ids(label_source="checker", labelled=False) == {unsafe, bare}
    runner = CliRunner()
    result = runner.invoke(
        main, ["runs", "--ledger", str(ledger.root), "--label-verdict", "unsafe", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert [row["run_id"] for row in json.loads(result.output)] == [unsafe]
    result = runner.invoke(main, ["runs", "--ledger", str(ledger.root), "--unlabelled", "--json"])
    assert [row["run_id"] for row in json.loads(result.output)] == [bare]
    result = runner.invoke(main, ["runs", "--ledger", str(ledger.root), "--label-verdict", "bad"])
    assert result.exit_code == 2 and "bad" in result.output


def test_a_label_changed_since_the_journal_accepted_it_is_refused_when_read(
    ledger: Ledger, write_run: WriteRun
) -> None:
    """Labels are journal-checked as scores and decisions are: a label file edited by hand is
    refused (exit 3 material), not taken as what the labeller said."""
    from agentledger.errors import IntegrityError

    run_id = write_run()
    label = make_label(run_id, verdict="Unsafe")
    LabelStore(ledger).write([label])
    key = LabelStore.key(run_id, label.label_id)
    assert LabelStore(ledger).read(key) == label
    path = ledger.root / key
    path.chmod(0o644)
    path.write_text(path.read_text().replace('"Unsafe"', '"Safe"'))
    with pytest.raises(IntegrityError, match="changed since the journal accepted it"):
        LabelStore(ledger).read(key)
    with pytest.raises(IntegrityError, match="changed since"):
        LabelStore(ledger).of_run(run_id)
    report = ledger.reindex()
    assert report.labels == 0
    assert [why for _where, why in report.skipped_labels] == [
        f"{ledger.storage.describe(key)}: changed since the journal accepted it "
        "(run `agentledger verify`)"
    ]
    assert labels_of_run(ledger, run_id) == []
