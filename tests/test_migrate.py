"""The index schema: exact shape of a new index, refusal of a newer one, recovery by reindex."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.errors import IndexVersionError
from agentledger.store.migrations import MIGRATIONS
from conftest import WriteRun

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
    ],
    "score_criteria": ["run_id", "judge_id", "criterion", "fired"],
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
    "scores_judge_verdict",
    "scores_verdict",
    "score_criteria_fired",
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


def test_an_index_from_before_scores_is_upgraded_in_place(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    root = ledger.root
    ledger.close()
    db = sqlite3.connect(root / "index.sqlite")
    db.executescript(
        "DROP TABLE score_criteria; DROP TABLE scores; "
        "DELETE FROM _migrations WHERE name = 'm002_scores';"
    )
    db.close()
    with Ledger.open(root) as reopened:
        assert reopened.index.applied_migrations() == ["m001_runs", "m002_scores"]  # type: ignore[attr-defined]
        assert [run.run_id for run in reopened.runs()] == [run_id]
    tables, _ = _schema(root / "index.sqlite")
    assert tables == EXPECTED_TABLES
