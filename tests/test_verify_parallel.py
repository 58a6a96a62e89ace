"""`verify` on several processes says exactly what it says on one: the same problems, in the
same order, the same counts; and a helper process that fails costs time, never a check."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from agentledger import Ledger
from agentledger.store import verify_ledger, verify_runs
from agentledger.store.verify import VerifyReport
from conftest import WriteRun
from journal_records import write_decision, write_label, write_score


def _writable(path: Path) -> Path:
    os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return path


@pytest.fixture
def tampered(ledger: Ledger, write_run: WriteRun, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    """Eleven runs with scores, a label and a decision; five of the runs tampered with in
    different ways, one run's index row edited, and a score's bytes changed."""
    monkeypatch.setattr(verify_runs, "CHUNK", 2)  # many chunks: every process gets some
    run_ids = [write_run(f"use_case_{letter}") for letter in "abcdefghijk"]
    for run_id in run_ids:
        write_score(ledger, run_id, "Safe")
    write_label(ledger, run_ids[0])
    write_decision(ledger)
    runs = ledger.root / "runs"
    report = _writable(runs / run_ids[1] / "report.md")
    report.write_text(report.read_text() + "edited\n")
    _writable(runs / run_ids[2])
    (runs / run_ids[2] / "audit.md").unlink()
    (runs / run_ids[3] / "notes.txt").write_text("added later")
    manifest = _writable(runs / run_ids[4] / "MANIFEST.json")
    # Valid JSON the journal never accepted, with a key given twice: only the strict reader
    # refuses it, so the helper's lenient read must be redone.
    manifest.write_bytes(manifest.read_bytes().replace(b"{", b'{"run_id": "x", ', 1))
    meta = _writable(runs / run_ids[5] / "metadata.json")
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "run_id": "someone-else"}))
    db = sqlite3.connect(ledger.root / "index.sqlite")
    db.execute("UPDATE runs SET model = 'gpt-edited' WHERE run_id = ?", (run_ids[6],))
    db.commit()
    db.close()
    score = _writable(ledger.root / "scores" / run_ids[7] / "rules-0123456789ab.json")
    score.write_text(score.read_text().replace('"Safe"', '"Unsafe"'))
    return ledger


def _summary(report: VerifyReport) -> tuple[object, ...]:
    return (
        report.problems,
        report.runs_checked,
        report.files_checked,
        report.bytes_checked,
        report.records_checked,
        report.journal_entries,
        report.head,
    )


def test_several_processes_find_exactly_what_one_finds(tampered: Ledger) -> None:
    alone = verify_ledger(tampered, processes=1)
    kinds = {(p.record, p.kind) for p in alone.problems}
    assert {
        ("run", "changed"),
        ("run", "missing"),
        ("run", "extra"),
        ("run", "manifest"),
        ("run", "metadata"),
        ("run", "index-mismatch"),
        ("score", "changed"),
    } <= kinds
    assert any("broken manifest" in p.detail for p in alone.problems)
    for processes in (2, 3):
        assert _summary(verify_ledger(tampered, processes=processes)) == _summary(alone)


def test_a_helper_that_dies_leaves_its_runs_to_the_caller(
    tampered: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = verify_ledger(tampered, processes=1)
    monkeypatch.setattr(verify_runs, "_die_with_parent", lambda: os._exit(1))
    assert _summary(verify_ledger(tampered, processes=2)) == _summary(alone)


def test_progress_counts_every_run_on_several_processes(tampered: Ledger) -> None:
    seen: list[tuple[int, int | None]] = []
    verify_ledger(tampered, progress=lambda done, total: seen.append((done, total)), processes=2)
    assert seen[-1] == (11, 11)
    assert [done for done, _total in seen] == sorted(done for done, _total in seen)


def test_a_clean_ledger_verifies_on_several_processes(
    ledger: Ledger, write_run: WriteRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verify_runs, "CHUNK", 1)
    for letter in "abcde":
        write_score(ledger, write_run(f"use_case_{letter}"), "Unsafe")
    report = verify_ledger(ledger, processes=2)
    assert report.ok and report.runs_checked == 5 and report.records_checked == 5
