"""`verify` over everything the ledger holds: each case an attacker or a crash could make is
caught, exit 3, one line naming the record and what is wrong."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.identity import sha256_bytes
from agentledger.judges.scores import reindex_scores
from agentledger.store import verify_ledger
from agentledger.store.index import RunColumns
from agentledger.store.verify import Problem
from conftest import WriteRun
from exact_output import normalised
from journal_records import write_decision, write_label, write_score


def _writable(path: Path) -> Path:
    path.chmod(0o755 if path.is_dir() else 0o644)
    return path


def _problems(ledger: Ledger) -> list[Problem]:
    return verify_ledger(ledger).problems


def _verify_cli(ledger: Ledger, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root), *args])
    return result.exit_code, result.output


class Held:
    """A ledger holding one record of every kind."""

    def __init__(self, ledger: Ledger, write_run: WriteRun) -> None:
        self.ledger = ledger
        self.run_id = write_run(tags={"suite": "netops"})
        self.score = write_score(ledger, self.run_id, "Unsafe")
        self.label = write_label(ledger, self.run_id)
        self.decision = write_decision(ledger, outcome="REJECTED")

    def path(self, key: str) -> Path:
        return self.ledger.root / key


@pytest.fixture
def held(ledger: Ledger, write_run: WriteRun) -> Iterator[Held]:
    made = Held(ledger, write_run)
    assert verify_ledger(ledger).ok
    yield made


def test_a_clean_ledger_with_every_kind_verifies(held: Held, tmp_path: Path) -> None:
    report = verify_ledger(held.ledger)
    # Four records, each announced by an intent and then accepted, after the genesis entry.
    assert report.ok and report.records_checked == 4 and report.journal_entries == 9
    code, output = _verify_cli(held.ledger)
    assert (
        code == 0
        and normalised(output, tmp_path)
        == "Verified 1 run, 7 files (1.4 KB), 4 records and 9 journal entries in 0.0s: OK\n"
        and output.endswith("OK\n")
    )


def test_an_edited_score_verdict_is_caught_and_never_served(held: Held, tmp_path: Path) -> None:
    path = _writable(held.path(held.score))
    path.write_text(path.read_text().replace('"Unsafe"', '"Safe"'))
    assert [(p.record, p.kind, p.run_id) for p in _problems(held.ledger)] == [
        ("score", "changed", held.score)
    ]
    code, output = _verify_cli(held.ledger)
    assert code == 3 and normalised(output, tmp_path) == (
        "RECORD  ID                                                                "
        "                  PROBLEM  FILE  DETAIL\n"
        "score   scores/use_case_m_gemini-2.5-flash_20260501T120000Z_000001/rules-0"
        "123456789ab.json  changed  -     its bytes are not the ones the journal accepted\n"
        "Verified 1 run, 7 files (1.4 KB), 4 records and 9 journal entries in "
        "0.0s: 1 problem(s)\n"
    )
    result = CliRunner().invoke(main, ["reindex", "--ledger", str(held.ledger.root)])
    assert result.exit_code == 3 and normalised(result.output, tmp_path) == (
        "skipped score /home/ops/work/ledger/scores/use_case_m_gemini-2.5-flash_202"
        "60501T120000Z_000001/rules-0123456789ab.json: "
        "/home/ops/work/ledger/scores/use_case_m_gemini-2.5-flash_20260501T120000Z_"
        "000001/rules-0123456789ab.json: changed since the journal accepted it "
        "(run `agentledger verify`)\n"
        "Indexed 1 runs and 0 scores (1 labels) in 0.0s\n"
        "1 record(s) could not be indexed (listed above); `agentledger verify` "
        "checks them against their manifests.\n"
    )


def test_a_forged_score_is_caught(held: Held) -> None:
    forged = held.path(held.score).read_text().replace("rules-0123456789ab", "rules-fedcba987654")
    target = held.path(held.score).with_name("rules-fedcba987654.json")
    _writable(target.parent)
    target.write_text(forged)
    problems = _problems(held.ledger)
    assert [(p.record, p.kind) for p in problems] == [("score", "unannounced")]
    assert problems[0].run_id.endswith("rules-fedcba987654.json")
    reindex_scores(held.ledger)  # never adopted: reindex leaves it out
    assert held.ledger.sql("SELECT judge_id FROM scores").rows == [("rules-0123456789ab",)]
    # Nor by gc: no writer announced it, so it is moved aside, and named until removed.
    assert [key for key, _place in held.ledger.gc().quarantined] == [problems[0].run_id]
    assert [(p.kind, p.run_id) for p in _problems(held.ledger)] == [
        ("quarantined", problems[0].run_id)
    ]
    assert held.ledger.sql("SELECT judge_id FROM scores").rows == [("rules-0123456789ab",)]


def test_a_deleted_score_is_caught(held: Held) -> None:
    _writable(held.path(held.score).parent)
    held.path(held.score).unlink()
    kinds = {(p.record, p.kind) for p in _problems(held.ledger)}
    assert kinds == {("score", "missing"), ("score", "index-orphan")}


def test_a_deleted_label_and_an_edited_one_are_caught(held: Held) -> None:
    path = _writable(held.path(held.label))
    path.write_text(path.read_text().replace('"Safe"', '"Unsafe"'))
    assert [(p.record, p.kind) for p in _problems(held.ledger)] == [("label", "changed")]
    _writable(path.parent)
    path.unlink()
    kinds = {(p.record, p.kind) for p in _problems(held.ledger)}
    assert kinds == {("label", "missing"), ("label", "index-orphan")}


def _decision_file(held: Held, name: str = "decision.json") -> Path:
    directory = _writable(held.path(f"decisions/{held.decision}"))
    return _writable(directory / name)


def test_an_edited_decision_is_caught_and_not_listed_as_valid(held: Held) -> None:
    path = _decision_file(held)
    path.write_text(path.read_text().replace('"REJECTED"', '"ACCEPTED"'))
    assert [(p.record, p.kind) for p in _problems(held.ledger)] == [("decision", "changed")]
    assert _verify_cli(held.ledger)[0] == 3
    listed = CliRunner().invoke(main, ["decisions", "list", "--ledger", str(held.ledger.root)])
    assert listed.exit_code == 3 and "ACCEPTED" not in listed.output
    assert "changed since the journal accepted it" in listed.output


def test_an_edited_decision_markdown_is_caught(held: Held) -> None:
    path = _decision_file(held, "decision.md")
    path.write_text(path.read_text().replace("REJECTED", "ACCEPTED"))
    assert [(p.record, p.kind) for p in _problems(held.ledger)] == [("decision", "changed")]


def test_a_deleted_decision_is_caught(held: Held) -> None:
    directory = _writable(held.path(f"decisions/{held.decision}"))
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()
    assert {(p.record, p.kind) for p in _problems(held.ledger)} == {("decision", "missing")}
    listed = CliRunner().invoke(main, ["decisions", "list", "--ledger", str(held.ledger.root)])
    assert listed.exit_code == 3 and "is gone" in listed.output


def test_a_changed_run_file_with_its_manifest_fixed_and_reindexed_is_caught(
    held: Held, tmp_path: Path
) -> None:
    ledger = held.ledger
    run_dir = _writable(ledger.root / "runs" / held.run_id)
    report = _writable(run_dir / "report.md")
    report.write_text("# Report\nEverything is fine.\n")
    manifest = _writable(run_dir / "MANIFEST.json")
    stored = ledger.load(held.run_id).manifest.files["report.md"]
    new = report.read_bytes()
    manifest.write_text(
        manifest.read_text()
        .replace(stored.sha256, sha256_bytes(new))
        .replace(f'"size": {stored.size}', f'"size": {len(new)}')
    )
    ledger.reindex()
    problems = _problems(ledger)
    assert [(p.record, p.kind, p.file) for p in problems] == [("run", "changed", "MANIFEST.json")]
    code, output = _verify_cli(ledger)
    assert code == 3 and normalised(output, tmp_path) == (
        "RECORD  ID                                                   PROBLEM  "
        "FILE           DETAIL\n"
        "run     use_case_m_gemini-2.5-flash_20260501T120000Z_000001  changed  "
        "MANIFEST.json  MANIFEST.json is not the one the journal accepted\n"
        "Verified 1 run, 7 files (1.4 KB), 4 records and 9 journal entries in "
        "0.0s: 1 problem(s)\n"
    )


def _set_column(ledger: Ledger, table: str, column: str, where: str, args: tuple[str, ...]) -> None:
    db = sqlite3.connect(ledger.root / "index.sqlite")
    (current,) = db.execute(f"SELECT {column} FROM {table} WHERE {where}", args).fetchone()
    if isinstance(current, bool | int):
        value: object = current + 1
    elif isinstance(current, float):
        value = current + 0.5
    elif isinstance(current, str):
        value = current + "-edited"
    else:
        value = "edited"
    db.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (value, *args))
    db.commit()
    db.close()


@pytest.mark.parametrize("column", [c for c in RunColumns._fields if c != "run_id"])
def test_every_edited_run_column_is_caught(held: Held, column: str) -> None:
    _set_column(held.ledger, "runs", column, "run_id = ?", (held.run_id,))
    problems = _problems(held.ledger)
    assert problems and all(p.run_id == held.run_id for p in problems)
    assert any(column in p.detail or p.kind == "index-stale" for p in problems)
    assert _verify_cli(held.ledger)[0] == 3


def test_an_edited_run_id_and_edited_tags_are_caught(held: Held) -> None:
    _set_column(held.ledger, "run_tags", "value", "run_id = ?", (held.run_id,))
    (problem,) = _problems(held.ledger)
    assert problem.detail.startswith("index tags are {'suite': 'netops-edited'}")
    _set_column(held.ledger, "runs", "run_id", "run_id = ?", (held.run_id,))
    kinds = {p.kind for p in _problems(held.ledger)}
    assert {"not-indexed", "index-orphan"} <= kinds


@pytest.mark.parametrize(
    "column",
    [
        "kind",
        "model",
        "pack",
        "verdict",
        "diagnosis",
        "skipped_reason",
        "created_at",
        "score_json",
        "criteria_packed",
    ],
)
def test_every_edited_score_column_is_caught(held: Held, column: str) -> None:
    _set_column(held.ledger, "scores", column, "run_id = ?", (held.run_id,))
    problems = _problems(held.ledger)
    assert [(p.record, p.kind, p.run_id) for p in problems] == [
        ("score", "index-mismatch", held.score)
    ]
    assert f"index column {column} is" in problems[0].detail


def test_an_edited_criterion_and_a_deleted_score_row_are_caught(held: Held) -> None:
    _set_column(held.ledger, "score_criteria", "fired", "criterion = ?", ("C2",))
    assert "index criteria are" in _problems(held.ledger)[0].detail
    db = sqlite3.connect(held.ledger.root / "index.sqlite")
    db.execute("DELETE FROM scores")
    db.commit()
    db.close()
    assert [(p.record, p.kind) for p in _problems(held.ledger)] == [("score", "not-indexed")]


@pytest.mark.parametrize(
    "column",
    [
        "verdict",
        "source_kind",
        "source_name",
        "supersedes",
        "diagnosis",
        "created_at",
        "label_json",
        "current",
        "criteria_packed",
    ],
)
def test_every_edited_label_column_is_caught(held: Held, column: str) -> None:
    _set_column(held.ledger, "labels", column, "run_id = ?", (held.run_id,))
    problems = _problems(held.ledger)
    assert [(p.record, p.kind, p.run_id) for p in problems] == [
        ("label", "index-mismatch", held.label)
    ]
    assert f"index column {column} is" in problems[0].detail
    assert _verify_cli(held.ledger)[0] == 3


def test_an_edited_label_criterion_a_moved_label_and_a_deleted_row_are_caught(
    held: Held,
) -> None:
    _set_column(held.ledger, "label_criteria", "fired", "criterion = ?", ("C2",))
    (problem,) = _problems(held.ledger)
    assert (problem.record, problem.kind) == ("label", "index-mismatch")
    assert problem.detail.startswith("index criteria are (('C2', True),), the record says")
    _set_column(held.ledger, "labels", "run_id", "run_id = ?", (held.run_id,))
    kinds = sorted((p.record, p.kind) for p in _problems(held.ledger))
    assert kinds == [("label", "index-orphan"), ("label", "not-indexed")]
    db = sqlite3.connect(held.ledger.root / "index.sqlite")
    db.execute("DELETE FROM labels")
    db.commit()
    db.close()
    (problem,) = _problems(held.ledger)
    assert (problem.record, problem.kind, problem.run_id) == ("label", "not-indexed", held.label)


def test_a_label_made_current_again_in_the_index_is_caught(held: Held) -> None:
    """A source's newer label replaces its older one; flipping the flags back in the index
    would make agreement read the older verdict."""
    newer = write_label(held.ledger, held.run_id, "Unsafe")
    assert verify_ledger(held.ledger).ok
    db = sqlite3.connect(held.ledger.root / "index.sqlite")
    db.execute("UPDATE labels SET current = 1 - current")
    db.commit()
    db.close()
    problems = _problems(held.ledger)
    assert sorted(p.run_id for p in problems) == sorted([held.label, newer])
    assert all("index column current is" in p.detail for p in problems)


def _every_record_file(ledger: Ledger) -> list[Path]:
    root = ledger.root
    files = [
        path
        for area in ("runs", "scores", "labels", "decisions", "journal")
        for path in sorted((root / area).rglob("*"))
        if path.is_file() and not path.name.startswith(".")
    ]
    kinds = {path.relative_to(root).parts[0] for path in files}
    assert kinds == {"runs", "scores", "labels", "decisions", "journal"}
    return files


def test_a_single_byte_changed_anywhere_in_any_record_is_caught(held: Held) -> None:
    rng = random.Random(20260312)
    checked = 0
    for path in _every_record_file(held.ledger):
        original = path.read_bytes()
        mode = path.stat().st_mode
        path.chmod(0o644)
        try:
            for _ in range(12):
                data = bytearray(original)
                offset = rng.randrange(len(data))
                data[offset] ^= rng.randrange(1, 256)
                path.write_bytes(bytes(data))
                report = verify_ledger(held.ledger)
                where = f"{path.relative_to(held.ledger.root)} byte {offset}"
                assert not report.ok, where
                checked += 1
        finally:
            path.write_bytes(original)
            path.chmod(mode & 0o777)
    assert checked >= 12 * 15 and verify_ledger(held.ledger).ok


def test_problems_are_one_line_each_and_json_names_the_record(held: Held) -> None:
    path = _writable(held.path(held.score))
    path.write_text(path.read_text().replace('"Unsafe"', '"Safe"'))
    _decision_file(held).write_text("{}")
    code, output = _verify_cli(held.ledger, "--json")
    document = json.loads(output)
    assert code == 3 and document["ok"] is False and document["head"].startswith("9:sha256:")
    assert sorted((p["record"], p["kind"]) for p in document["problems"]) == [
        ("decision", "changed"),
        ("score", "changed"),
    ]
    code, output = _verify_cli(held.ledger)
    lines = [line for line in output.splitlines() if "changed" in line]
    assert code == 3 and len(lines) == 2
