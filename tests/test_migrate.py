"""The index schema: exact shape of a new index, refusal of a newer one, recovery by reindex."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.errors import IndexVersionError
from agentledger.store import RunFilter, SQLiteIndex
from agentledger.store.index import packed_criteria
from agentledger.store.index.dialect import POSTGRES, SQLITE
from agentledger.store.index.migrations import MIGRATIONS
from conftest import RELEASED_MIGRATIONS, WriteRun

RELEASED = RELEASED_MIGRATIONS["sqlite"]

EXPECTED_TABLES = {
    "_migrations": ["name", "applied_at"],
    "runs": [
        "run_id",
        "scenario",
        "model",
        "model_served",
        "provider",
        "system_fingerprint",
        "system_prompt_hash",
        "base_prompt_hash",
        "addon_name",
        "addon_hash",
        "variant",
        "agent_name",
        "agent_commit",
        "agent_dirty",
        "started_at",
        "ended_at",
        "silent_update_detectable",
        "backfilled",
        "kind",
        "commands_run",
        "commands_denied",
        "duration_s",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "exit_status",
        "sealed_at",
        "manifest_sha256",
        "metadata_json",
        "summary_json",
    ],
    "run_tags": ["run_id", "key", "value"],
    "scores": [
        "run_id",
        "judge_id",
        "kind",
        "model",
        "pack",
        "verdict",
        "diagnosis",
        "skipped_reason",
        "created_at",
        "score_json",
        "criteria_packed",
        "accepted_seq",
    ],
    "score_criteria": ["run_id", "judge_id", "criterion", "fired"],
    "labels": [
        "label_id",
        "run_id",
        "source_kind",
        "source_name",
        "verdict",
        "diagnosis",
        "supersedes",
        "created_at",
        "current",
        "label_json",
        "criteria_packed",
        "accepted_seq",
    ],
    "label_criteria": ["label_id", "criterion", "fired"],
    "decisions": [
        "decision_id",
        "kind",
        "subject",
        "outcome",
        "supersedes",
        "created_at",
        "decision_json",
        "accepted_seq",
    ],
    "decision_runs": ["decision_id", "run_id"],
    "outcomes": [
        "outcome_id",
        "run_id",
        "scenario",
        "created_at",
        "fixed",
        "durable",
        "collateral",
        "verified",
        "outcome_json",
        "accepted_seq",
    ],
}
EXPECTED_INDEXES = {
    "runs_model_prompt",
    "runs_prompt",
    "runs_scenario",
    "runs_model_served",
    "runs_variant",
    "runs_started",
    "runs_agent_commit",
    "run_tags_key_value",
    "runs_kind",
    "runs_commands_run",
    "runs_commands_denied",
    "runs_scenario_sort",
    "scores_judge_verdict",
    "scores_verdict",
    "scores_chosen",
    "score_criteria_fired",
    "labels_current",
    "labels_run",
    "labels_source",
    "labels_supersedes",
    "decisions_subject",
    "decision_runs_run",
    "outcomes_run",
}


def _schema(path: Path) -> tuple[dict[str, list[str]], set[str]]:
    db = sqlite3.connect(path)
    tables = {
        name: [col[1] for col in db.execute(f"PRAGMA table_info({name})")]
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    indexes = {
        name
        for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
    }
    db.close()
    return tables, indexes


def _index_at(path: Path, migrations: list[tuple[str, list[str]]]) -> sqlite3.Connection:
    """An index at `path` as an older agentledger left it: `migrations` (as released) applied
    and recorded, the rest not; the connection, to fill it as that release would have."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for name, statements in migrations:
        for statement in statements:
            db.execute(statement)
        db.execute("INSERT INTO _migrations VALUES (?, '2026-03-01')", (name,))
    return db


def test_new_index_has_the_exact_schema(ledger: Ledger) -> None:
    tables, indexes = _schema(ledger.root / "index.sqlite")
    assert tables == EXPECTED_TABLES
    assert indexes == EXPECTED_INDEXES
    applied = ledger.index.applied_migrations()  # type: ignore[attr-defined]
    assert applied == [name for name, _ in MIGRATIONS]


def test_index_is_in_wal_mode(ledger: Ledger) -> None:
    db = sqlite3.connect(ledger.root / "index.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_query_plan_uses_the_model_prompt_index(ledger: Ledger) -> None:
    plan = ledger.sql(
        "EXPLAIN QUERY PLAN SELECT run_id FROM runs WHERE model = 'm' "
        "AND system_prompt_hash GLOB 'sha256:ab*'"
    )
    assert any("runs_model_prompt" in str(row) for row in plan.rows)


def _from_the_future(root: Path) -> None:
    db = sqlite3.connect(root / "index.sqlite")
    db.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', '2030-01-01')")
    db.commit()
    db.close()


def test_index_from_a_newer_version_is_refused(ledger: Ledger) -> None:
    root = ledger.root
    ledger.close()
    _from_the_future(root)
    with pytest.raises(IndexVersionError, match="newer agentledger"):
        Ledger.open(root)
    result = CliRunner().invoke(main, ["runs", "--ledger", str(root)])
    assert result.exit_code == 2
    assert "index.sqlite" in result.output and "m999_from_the_future" in result.output


def test_reindex_replaces_a_newer_or_corrupt_index(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    root = ledger.root
    ledger.close()
    _from_the_future(root)
    result = CliRunner().invoke(main, ["reindex", "--ledger", str(root)])
    assert result.exit_code == 0, result.output
    assert "replaced" in result.output and "Indexed 1 runs" in result.output
    for suffix in ("-wal", "-shm"):
        (root / f"index.sqlite{suffix}").unlink(missing_ok=True)
    (root / "index.sqlite").write_bytes(b"this is not a database" * 100)
    result = CliRunner().invoke(main, ["runs", "--ledger", str(root)])
    assert result.exit_code == 2 and "agentledger reindex" in result.output
    result = CliRunner().invoke(main, ["reindex", "--ledger", str(root)])
    assert result.exit_code == 0, result.output
    with Ledger.open(root) as reopened:
        assert [run.run_id for run in reopened.runs()] == [run_id]


def test_opening_twice_does_not_migrate_twice(ledger: Ledger) -> None:
    with Ledger.open(ledger.root) as again:
        assert again.index.migrate() == []  # type: ignore[attr-defined]


def test_an_index_from_before_scores_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    db = _index_at(path, RELEASED[:1])
    db.execute(
        f"INSERT INTO runs VALUES ({', '.join('?' * 29)})",
        _old_row("r1", {"scenario": "use_case_m", "model": "m1"}, False),
    )
    db.close()
    index = SQLiteIndex(path)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert [run.run_id for run in index.query(RunFilter())] == ["r1"]
    finally:
        index.close()
    tables, indexes = _schema(path)
    assert tables == EXPECTED_TABLES and indexes == EXPECTED_INDEXES


def _old_row(run_id: str, metadata: dict[str, object], backfilled: bool) -> tuple[object, ...]:
    """A `runs` row as the index before run kinds (m001, m002) held it: 29 columns."""
    return (
        run_id, "use_case_m", "m1", None, None, None, "sha256:" + "a" * 64, None, None, None,
        None, "ghost", None, None, "2026-03-12T10:00:00.000000Z", None, 0, int(backfilled),
        None, None, None, None, None, None, None, "2026-03-12T10:00:00.000000Z",
        "sha256:" + "b" * 64, json.dumps(metadata), None,
    )  # fmt: skip


def test_an_index_from_before_run_kinds_is_upgraded_and_backfilled(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    db = _index_at(path, RELEASED[:2])
    base = {"scenario": "use_case_m", "model": "m1"}
    rows = [
        _old_row("recorded", {**base, "source": {"runner": "agentledger run"}}, False),
        _old_row("imported", {**base, "source": {"importer": "directory"}}, True),
        _old_row("fixture", {**base, "source": {"runner": "agentledger fixtures"}}, False),
        _old_row("no-source", {**base, "source": None}, False),
    ]
    db.executemany(f"INSERT INTO runs VALUES ({', '.join('?' * 29)})", rows)
    db.execute("INSERT INTO run_tags VALUES ('fixture', 'suite', 'sql')")
    db.close()
    index = SQLiteIndex(path)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        kinds = {run.run_id: run.kind for run in index.query(RunFilter())}
        assert kinds == {
            "recorded": "agent",
            "imported": "agent",
            "fixture": "fixture",
            "no-source": "agent",
        }
        assert [run.run_id for run in index.query(RunFilter(kinds=("fixture",)))] == ["fixture"]
        tagged = index.query(RunFilter(tags=(("suite", "sql"),)))
        assert [run.run_id for run in tagged] == ["fixture"]  # the tags survive the rebuild
        assert index.get("imported").backfilled  # type: ignore[union-attr]
    finally:
        index.close()
    tables, indexes = _schema(path)
    assert tables == EXPECTED_TABLES and indexes == EXPECTED_INDEXES


def test_an_index_from_before_the_report_indexes_is_upgraded(tmp_path: Path) -> None:
    """m005: the covering indexes appear, score_criteria keeps its rows without a rowid."""
    path = tmp_path / "index.sqlite"
    db = _index_at(path, RELEASED[:3])
    db.execute(
        f"INSERT INTO runs ({', '.join(EXPECTED_TABLES['runs'])}) VALUES ("
        "'r1', 'use_case_m', 'm1', NULL, NULL, NULL, 'sha256:ab', NULL, NULL, NULL, NULL, "
        "'ghost', NULL, NULL, '2026-03-12T10:00:00.000000Z', NULL, 0, 0, 'agent', NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, '2026-03-12T10:00:00.000000Z', 'sha256:cd', '{}', NULL)"
    )
    db.execute(
        "INSERT INTO scores VALUES ('r1', 'rules-a', 'rules', NULL, 'remediation-safety', "
        "'Unsafe', 1, NULL, '2026-03-13T00:00:00.000000Z', '{}')"
    )
    db.executemany(
        "INSERT INTO score_criteria VALUES ('r1', 'rules-a', ?, ?)",
        [("C1", 1), ("C2", 0), ("C3", None)],
    )
    db.close()
    index = SQLiteIndex(path)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        cells = index.criterion_cells(RunFilter(), ["rules-a"])
        assert [(c.criterion, c.fired, c.assessed, c.unassessed) for c in cells] == [
            ("C1", 1, 1, 0),
            ("C2", 0, 1, 0),
            ("C3", 0, 0, 1),
        ]
    finally:
        index.close()
    tables, indexes = _schema(path)
    assert tables == EXPECTED_TABLES and indexes == EXPECTED_INDEXES
    db = sqlite3.connect(path)
    table_sql = db.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'score_criteria'"
    ).fetchone()[0]
    assert table_sql.rstrip().endswith("WITHOUT ROWID")
    columns = [row[2] for row in db.execute("PRAGMA index_info(runs_model_prompt)")]
    assert columns[:2] == ["model", "system_prompt_hash"]
    db.close()


def test_an_index_from_before_the_label_lookups_is_upgraded(tmp_path: Path) -> None:
    """m006: labels keep their criteria, now in a table without a rowid, and a source's
    current labels are read from the covering index alone."""
    path = tmp_path / "index.sqlite"
    db = _index_at(path, RELEASED[:5])
    db.execute(
        "INSERT INTO labels (label_id, run_id, source_kind, source_name, verdict, created_at, "
        "current, label_json) VALUES ('lbl_20260312T101500Z_0000abcd', 'r1', 'external', "
        "'dataset', 'Unsafe', '2026-03-12T10:15:00.000000Z', 1, '{}')"
    )
    db.executemany(
        "INSERT INTO label_criteria VALUES ('lbl_20260312T101500Z_0000abcd', ?, ?)",
        [("C1", 1), ("C2", 0), ("C3", None)],
    )
    db.close()
    index = SQLiteIndex(path)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        (result,) = index.current_label_results(source_name="dataset")
        assert (result.run_id, result.verdict) == ("r1", "Unsafe")
        assert dict(result.criteria) == {"C1": True, "C2": False, "C3": None}
    finally:
        index.close()
    tables, indexes = _schema(path)
    assert tables == EXPECTED_TABLES and indexes == EXPECTED_INDEXES
    db = sqlite3.connect(path)
    table_sql = db.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'label_criteria'"
    ).fetchone()[0]
    assert table_sql.rstrip().endswith("WITHOUT ROWID")
    plan = " ".join(
        str(row[3])
        for row in db.execute(
            "EXPLAIN QUERY PLAN SELECT run_id, label_id, source_kind, verdict, created_at "
            "FROM labels WHERE current = 1 AND source_name = 'dataset' "
            "ORDER BY run_id, created_at, label_id"
        )
    )
    assert "COVERING INDEX labels_current" in plan and "TEMP B-TREE" not in plan
    db.close()


def test_an_index_from_before_m008_gets_run_ids_in_its_start_index(tmp_path: Path) -> None:
    """m008: runs_started keeps its name and gains run_id; the runs stay as they were."""
    path = tmp_path / "index.sqlite"
    db = _index_at(path, [item for item in RELEASED if item[0] < "m008"])
    db.execute(
        f"INSERT INTO runs ({', '.join(EXPECTED_TABLES['runs'])}) VALUES ("
        "'r1', 'use_case_m', 'm1', NULL, NULL, NULL, 'sha256:ab', NULL, NULL, NULL, NULL, "
        "'ghost', NULL, NULL, '2026-03-12T10:00:00.000000Z', NULL, 0, 0, 'agent', NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, '2026-03-12T10:00:00.000000Z', 'sha256:cd', '{}', NULL)"
    )
    assert [row[2] for row in db.execute("PRAGMA index_info(runs_started)")] == ["started_at"]
    db.close()
    index = SQLiteIndex(path)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert [run.run_id for run in index.query_sorted(RunFilter(limit=10))] == ["r1"]
    finally:
        index.close()
    tables, indexes = _schema(path)
    assert tables == EXPECTED_TABLES and indexes == EXPECTED_INDEXES
    db = sqlite3.connect(path)
    columns = [row[2] for row in db.execute("PRAGMA index_info(runs_started)")]
    assert columns == ["started_at", "run_id"]
    db.close()


def test_an_index_from_before_m011_gets_each_rows_criteria_packed(tmp_path: Path) -> None:
    """m011: every score and label indexed before it gets its criteria packed on its row, as
    the index packs a new one's, and agreement reads them from the covering indexes alone."""
    path = tmp_path / "index.sqlite"
    db = _index_at(path, [item for item in RELEASED if item[0] < "m011"])
    db.execute(
        f"INSERT INTO runs ({', '.join(EXPECTED_TABLES['runs'])}) VALUES ("
        "'r1', 'use_case_m', 'm1', NULL, NULL, NULL, 'sha256:ab', NULL, NULL, NULL, NULL, "
        "'ghost', NULL, NULL, '2026-03-12T10:00:00.000000Z', NULL, 0, 0, 'agent', NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, '2026-03-12T10:00:00.000000Z', 'sha256:cd', '{}', NULL)"
    )
    for judge_id in ("rules-a", "rules-b"):
        db.execute(
            "INSERT INTO scores VALUES ('r1', ?, 'rules', NULL, 'remediation-safety', "
            "'Unsafe', 1, NULL, '2026-03-13T00:00:00.000000Z', '{}')",
            (judge_id,),
        )
    results = [("C4", 1), ("C10", None), ("C1", 0)]
    db.executemany("INSERT INTO score_criteria VALUES ('r1', 'rules-a', ?, ?)", results)
    for label_id in ("lbl_a", "lbl_b"):
        db.execute(
            "INSERT INTO labels (label_id, run_id, source_kind, source_name, verdict, "
            "created_at, current, label_json) VALUES (?, 'r1', 'external', ?, 'Unsafe', "
            "'2026-03-12T10:15:00.000000Z', 1, '{}')",
            (label_id, label_id),
        )
    db.executemany("INSERT INTO label_criteria VALUES ('lbl_a', ?, ?)", results)
    db.close()
    index = SQLiteIndex(path)
    try:
        assert index.applied_migrations() == [name for name, _ in MIGRATIONS]
        packed = packed_criteria((("C4", True), ("C10", None), ("C1", False)))
        assert [row.criteria_packed for row in index.score_rows()] == [packed, None]
        assert [row.criteria_packed for row in index.label_rows()] == [packed, None]
        expected = [{"C1": False, "C10": None, "C4": True}]
        assert index.score_ratings(RunFilter(), ["rules-a"]).criteria == expected
        assert index.label_ratings(source_name="lbl_a").criteria == expected
    finally:
        index.close()
    tables, indexes = _schema(path)
    assert tables == EXPECTED_TABLES and indexes == EXPECTED_INDEXES
    db = sqlite3.connect(path)
    for sql in (
        "SELECT run_id, verdict, criteria_packed FROM scores INDEXED BY scores_chosen "
        "WHERE run_id = 'r1' AND judge_id = 'rules-a'",
        "SELECT run_id, verdict, criteria_packed FROM labels WHERE current = 1 "
        "AND source_name = 'lbl_a' ORDER BY run_id, created_at, label_id",
    ):
        plan = " ".join(str(row[3]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "COVERING INDEX" in plan and "TEMP B-TREE" not in plan
    db.close()


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES], ids=lambda d: d.name)
def test_released_migrations_give_the_statements_they_were_released_with(dialect: Any) -> None:
    """A released migration is never edited: each engine gets, statement for statement, what
    the release that made it ran (the one list of migrations, written over a dialect)."""
    released = RELEASED_MIGRATIONS[dialect.name]
    current = [
        (step.name, [" ".join(statement.split()) for statement in step.statements(dialect)])
        for step in MIGRATIONS[: len(released)]
    ]
    assert current == released


def test_an_index_every_release_made_has_the_schema_of_a_new_one(tmp_path: Path) -> None:
    def normalised(path: Path) -> list[tuple[str, str, str]]:
        db = sqlite3.connect(path)
        rows = db.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL")
        out = sorted((kind, name, " ".join(sql.split())) for kind, name, sql in rows)
        db.close()
        return out

    _index_at(tmp_path / "old.sqlite", RELEASED).close()
    SQLiteIndex(tmp_path / "old.sqlite").close()
    SQLiteIndex(tmp_path / "new.sqlite").close()
    assert normalised(tmp_path / "old.sqlite") == normalised(tmp_path / "new.sqlite")
