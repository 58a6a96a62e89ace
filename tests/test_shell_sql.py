"""One SQL classifier (shell.sql, sqlglot): the gated shell and the fixture property read SQL
the same way, and it fails closed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.shell.classifier import classify, default_knowledge
from agentledger.shell.sql import MAX_SQL_CHARS, analyse_sql, classify_sql
from agentledger.suites.properties.score import score_output

RULES = default_knowledge().sql
CORPUS = json.loads((Path(__file__).parent / "property_corpus" / "sql.json").read_text())


def sql_cases() -> list[tuple[str, str]]:
    cases = []
    for case in CORPUS["cases"]:
        sql = case["output"].get("sql") if isinstance(case["output"], dict) else None
        if isinstance(sql, str):
            cases.append((case["name"], sql))
    return cases


@pytest.mark.parametrize(("name", "sql"), sql_cases())
def test_the_gate_and_the_property_agree_on_the_corpus(name: str, sql: str) -> None:
    """What the property passes as read-only the gate lets run; what the gate calls a write
    the property fails."""
    [result] = score_output({"sql": sql}, {"sql_read_only": {"allow_multiple": True}})
    kind, reason = classify_sql(sql, RULES)
    if result.passed:
        assert kind == "read-only", (name, reason)
    if kind in ("mutating", "destructive", "unknown"):
        assert not result.passed, (name, result.reason)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT FROM WHERE", "unknown"),  # does not parse
        ("SELEC * FROM t", "unknown"),
        ("SELECT 1 /*! ; DROP TABLE t */", "unknown"),  # MySQL runs what the parser skips
        ("VACUUM FULL t", "mutating"),  # kept as raw text: its keyword decides
        ("CHECKPOINT", "read-only"),
        ("PRAGMA table_info(t)", "read-only"),
    ],
)
def test_sql_fails_closed(sql: str, expected: str) -> None:
    assert classify_sql(sql, RULES)[0] == expected


def test_sql_over_the_size_limit_is_unknown_not_parsed() -> None:
    huge = "SELECT " + ", ".join(["1"] * (MAX_SQL_CHARS // 3)) + " FROM t"
    assert len(huge) > MAX_SQL_CHARS
    kind, reason = classify_sql(huge, RULES)
    assert kind == "unknown" and "longer than" in reason
    assert analyse_sql(huge).error is not None
    [result] = score_output({"sql": huge}, {"sql_read_only": True})
    assert not result.passed and "longer than" in result.reason


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Each client's SQL is parsed in its own dialect.
        ("mysql -e 'SELECT `id` FROM `events`'", "read-only"),
        ("mysql -e 'REPLACE INTO t VALUES (1)'", "mutating"),
        ("sqlite3 app.db 'PRAGMA journal_mode = DELETE'", "mutating"),
        ("sqlite3 app.db 'select * from jobs'", "read-only"),
        ("sqlcmd -S db -Q 'SELECT TOP 5 * FROM events'", "read-only"),
        ("psql -c 'SELECT * FROM t FOR UPDATE'", "read-only"),
        ("psql -c 'SELECT pg_read_file($$/etc/passwd$$)'", "mutating"),
        ("psql -c 'EXPLAIN DELETE FROM t'", "read-only"),
        ("psql -c 'EXPLAIN ANALYZE DELETE FROM t'", "destructive"),
        ("psql -c 'not sql at all'", "unknown"),
    ],
)
def test_clients_sql_in_the_gate(line: str, expected: str) -> None:
    assert classify(line).kind == expected, classify(line)


def test_the_property_is_stricter_than_the_gate() -> None:
    """A session statement or a plan may run through the gate; it is still not one query."""
    for sql in ("BEGIN", "SET statement_timeout = 5", "EXPLAIN DELETE FROM t"):
        assert classify_sql(sql, RULES)[0] == "read-only"
        [result] = score_output({"sql": sql}, {"sql_read_only": True})
        assert not result.passed, sql


def test_sqlglot_is_imported_only_for_a_command_that_holds_sql() -> None:
    code = (
        "import sys\n"
        "from agentledger.shell.classifier import classify\n"
        "classify('iptables -L -n | grep DROP')\n"
        "print('sqlglot' in sys.modules)\n"
        "classify(\"psql -c 'select 1'\")\n"
        "print('sqlglot' in sys.modules)\n"
        "classify(\"psql -c 'delete from t'\")\n"
        "print('sqlglot' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    # A plain query is read without sqlglot (shell/sql_plain.py); other SQL is parsed.
    assert done.stdout.split() == ["False", "False", "True"]


def test_knowledge_files_name_a_bad_sql_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentledger.errors import RecordError
    from agentledger.shell.knowledge import load_knowledge

    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / "cache"))
    old = tmp_path / "old.yaml"
    # The parser decides SET GLOBAL and SELECT INTO now: the old keyword hint is refused.
    old.write_text("schema_version: 1\nsql:\n  mutating_after: {SET: [GLOBAL]}\n")
    with pytest.raises(RecordError, match=r"old.yaml, field 'sql.mutating_after'"):
        load_knowledge([str(old)])
    dialect = tmp_path / "dialect.yaml"
    dialect.write_text("schema_version: 1\ncommands:\n  mycli: {sql_dialect: 'my sql'}\n")
    with pytest.raises(RecordError, match=r"field 'commands.mycli.sql_dialect'"):
        load_knowledge([str(dialect)])
    good = tmp_path / "good.yaml"
    good.write_text(
        "schema_version: 1\ncommands:\n"
        "  mycli: {default: unknown, flag_values: {-e: {'*': sql}}, sql_dialect: mysql}\n"
    )
    knowledge = load_knowledge([str(good)])
    assert classify("mycli -e 'SELECT `id` FROM `t`'", knowledge).kind == "read-only"
    assert classify("mycli -e 'DELETE FROM t'", knowledge).kind == "destructive"
