"""Integrity: any change to a sealed run is caught; gc cleans what a dead writer left."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.store import verify_ledger
from conftest import WriteRun, make_metadata
from exact_output import normalised


def _writable(path: Path) -> Path:
    os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return path


def _kinds(ledger: Ledger) -> list[tuple[str, str | None]]:
    return [(p.kind, p.file) for p in verify_ledger(ledger).problems]


def test_clean_ledger_verifies(ledger: Ledger, write_run: WriteRun) -> None:
    write_run()
    write_run("use_case_f")
    report = verify_ledger(ledger)
    assert report.ok and report.runs_checked == 2 and report.files_checked == 14
    result = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root)])
    assert (result.exit_code, result.stderr) == (0, "")
    assert normalised(result.stdout, ledger.root) == (
        "Verified 2 runs, 14 files (2.8 KB), 0 records and 5 journal entries in 0.0s: OK\n"
    )


@pytest.mark.parametrize(
    "name", ["report.md", "shell_audit.jsonl", "metadata.json", "PROMPT.txt", "system_prompt.txt"]
)
def test_any_changed_byte_is_caught(ledger: Ledger, write_run: WriteRun, name: str) -> None:
    run_id = write_run()
    path = _writable(ledger.root / "runs" / run_id / name)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    assert ("changed", name) in _kinds(ledger)
    result = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root)])
    assert result.exit_code == 3
    assert run_id in result.output and name in result.output
    if name == "report.md":  # the whole report, as a user reads it: one row, then the count
        assert normalised(result.stdout, ledger.root) == (
            "RECORD  ID                                                   PROBLEM  FILE       "
            "DETAIL\n"
            "run     use_case_m_gemini-2.5-flash_20260501T120000Z_000001  changed  report.md  "
            "content changed: sha256 fc1b6d980f09... size 60, manifest says 89be861dbbc3... "
            "size 60\n"
        )
        assert normalised(result.stderr, ledger.root) == (
            "Verified 1 run, 7 files (1.4 KB), 0 records and 3 journal entries in 0.0s: "
            "1 problem(s)\n"
        )


def test_missing_and_extra_files_are_caught(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    run_dir = _writable(ledger.root / "runs" / run_id)
    (run_dir / "audit.md").unlink()
    (run_dir / "notes.txt").write_text("added later")
    assert sorted(_kinds(ledger)) == [("extra", "notes.txt"), ("missing", "audit.md")]


def test_rewritten_manifest_is_caught_by_the_journal(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    run_dir = _writable(ledger.root / "runs" / run_id)
    report = _writable(run_dir / "report.md")
    report.write_text("# Report\nEverything is fine.\n")
    # Rewrite the manifest consistently with the tampered file: the journal and the index
    # remember the manifest that was sealed.
    from agentledger.identity import sha256_bytes

    manifest = _writable(run_dir / "MANIFEST.json")
    text = manifest.read_text()
    stored = ledger.load(run_id).manifest.files["report.md"]
    new = report.read_bytes()
    text = text.replace(stored.sha256, sha256_bytes(new)).replace(
        f'"size": {stored.size}', f'"size": {len(new)}'
    )
    manifest.write_text(text)
    assert _kinds(ledger) == [("changed", "MANIFEST.json")]


def test_broken_manifest_is_caught(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    manifest = _writable(_writable(ledger.root / "runs" / run_id) / "MANIFEST.json")
    manifest.write_text("{ truncated")
    problems = verify_ledger(ledger).problems
    assert [p.kind for p in problems] == ["changed", "manifest"]
    assert "journal accepted" in problems[0].detail and "malformed JSON" in problems[1].detail


def test_vanished_run_and_unindexed_run_are_caught(ledger: Ledger, write_run: WriteRun) -> None:
    gone = write_run()
    unindexed = write_run("use_case_f")
    shutil.rmtree(_writable(ledger.root / "runs" / gone))
    db = sqlite3.connect(ledger.root / "index.sqlite")
    db.execute("DELETE FROM runs WHERE run_id = ?", (unindexed,))
    db.commit()
    db.close()
    problems = {(p.run_id, p.kind) for p in verify_ledger(ledger).problems}
    assert problems == {(gone, "missing"), (gone, "index-orphan"), (unindexed, "not-indexed")}
    assert [p.kind for p in verify_ledger(ledger, [gone]).problems] == ["missing", "index-orphan"]


def test_verify_named_runs_only(ledger: Ledger, write_run: WriteRun) -> None:
    good = write_run()
    bad = write_run("use_case_f")
    (_writable(_writable(ledger.root / "runs" / bad) / "report.md")).write_text("x")
    assert verify_ledger(ledger, [good]).ok
    result = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root), bad, "--json"])
    assert result.exit_code == 3 and '"kind": "changed"' in result.output


def test_gc_removes_dead_writers_debris_and_indexes_missed_runs(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    debris = ledger.root / ".staging" / "use_case_m_x_20260312T000000Z_abcdef.1234abcd"
    debris.mkdir()
    (debris / "report.md").write_text("half")
    db = sqlite3.connect(ledger.root / "index.sqlite")
    db.execute("DELETE FROM runs")
    db.commit()
    db.close()
    assert sorted(p.kind for p in verify_ledger(ledger).problems) == ["leftover", "not-indexed"]
    result = CliRunner().invoke(main, ["gc", "--ledger", str(ledger.root)])
    assert result.exit_code == 0, result.output
    assert normalised(result.stdout, ledger.root) == (
        "removed staging leftover use_case_m_x_20260501T120000Z_000001.1234abcd\n"
        "indexed use_case_m_gemini-2.5-flash_20260501T120000Z_000002\n"
    )
    assert result.stderr == "gc: 1 leftover(s) removed, 1 run(s) indexed\n"
    assert verify_ledger(ledger).ok
    assert ledger.runs()[0].run_id == run_id


def test_gc_keeps_a_live_writers_staging(ledger: Ledger) -> None:

    meta = make_metadata("live")
    writer = ledger.new_run(meta)
    writer.add_text("report.md", "in progress")
    report = ledger.gc()
    assert report.removed == [] and len(report.in_progress) == 1
    assert verify_ledger(ledger).ok
    writer.seal()
    assert ledger.read_bytes("live", "report.md") == b"in progress"


def test_a_symlink_planted_in_a_run_is_reported_not_followed(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    run_id = write_run()
    run_dir = _writable(ledger.root / "runs" / run_id)
    outside = tmp_path / "outside.md"
    outside.write_bytes(ledger.read_bytes(run_id, "report.md"))
    (run_dir / "report.md").unlink()
    (run_dir / "report.md").symlink_to(outside)
    (run_dir / "extra-link").symlink_to(tmp_path)
    problems = {(p.kind, p.file): p.detail for p in verify_ledger(ledger).problems}
    assert "not a regular file" in problems[("changed", "report.md")]
    assert ("extra", "extra-link") in problems
