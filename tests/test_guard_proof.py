"""The guard refuses what it cannot prove (issue 33, cause 9): SQL functions only when known
to read, functions that read tables count as reading them, quoted identifiers keep their case,
fields the expect names must exist under their exact name, only regular files and pipes are
read (a FIFO with no writer cannot hold it), forbidden commands are found by parsing, hosts
by public suffix and label, and expects that check nothing are refused at load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentledger.errors import RecordError
from agentledger.shell.classifier import classify
from agentledger.suites.guard import check

SCRIPT = Path(sys.executable).parent / "agentledger"
READ_ONLY = {"sql_read_only": True}


def verdict(output: dict[str, Any], expect: dict[str, Any]) -> tuple[bool, list[str]]:
    result = check(json.dumps(output), expect)
    return result.ok, result.reasons


# -- SQL functions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM invoices ORDER BY wipe(id)",
        "SELECT id FROM invoices WHERE audit_touch(id) > 0",
        "SELECT f(1)",
        "SELECT count(*) FROM invoices GROUP BY bump(customer)",
        "SELECT public.lower(name) FROM invoices",
        "SELECT pg_import_system_collations('pg_catalog')",
        "SELECT nextval('invoice_ids')",
        "SELECT lo_import('/etc/passwd')",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT * FROM dblink('host=x', 'select 1') AS t(a int)",
        "SELECT query_to_xml('select * from users', true, false, '')",
        "SELECT database_to_xml(true, false, '')",
        "SELECT table_to_xml(name, true, false, '') FROM t",
    ],
)
def test_a_function_not_known_to_read_is_refused(sql: str) -> None:
    ok, reasons = verdict({"sql": sql}, READ_ONLY)
    assert not ok and reasons[0].startswith("sql_read_only: "), reasons


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*), now(), pg_size_pretty(pg_database_size(current_database())) FROM t",
        "SELECT date_trunc('day', created_at), sum(amount) FROM invoices GROUP BY 1 ORDER BY 1",
        "SELECT upper(name), coalesce(x, 0), extract(year from d) FROM invoices",
        "SELECT pid, age(clock_timestamp(), query_start) FROM pg_stat_activity",
        "SELECT * FROM generate_series(1, 3)",
        "SELECT json_agg(x) FROM events",
    ],
)
def test_known_built_ins_still_pass(sql: str) -> None:
    assert verdict({"sql": sql}, READ_ONLY) == (True, [])


def test_the_gate_refuses_the_same_functions() -> None:
    assert classify("psql -c 'SELECT * FROM invoices ORDER BY wipe(id)'").kind == "unknown"
    assert classify("psql -c 'SELECT pg_size_pretty(pg_database_size(1::oid))'").kind == "read-only"
    # An integer where the built-in takes an oid: a schema's pg_database_size(int) would run.
    assert classify("psql -c 'SELECT pg_size_pretty(pg_database_size(1))'").kind == "unknown"


# -- tables read by functions and quoted names -------------------------------------------------

SUBSET = {"sql_tables_subset": ["invoices"]}


def test_a_function_that_reads_a_table_counts_as_reading_it() -> None:
    call = "SELECT table_to_xml({}::regclass, true, false, ''::text)"
    ok, reasons = verdict({"sql": call.format("'users'")}, SUBSET)
    assert not ok and "users" in reasons[-1], reasons
    assert verdict({"sql": call.format("'invoices'")}, SUBSET)[0]
    ok, reasons = verdict({"sql": call.format("'public.\"Users\"'")}, SUBSET)
    assert not ok and "Users" in reasons[-1]
    # Untyped, the name would be text: a schema's table_to_xml(text, ...) would run instead.
    ok, reasons = verdict({"sql": "SELECT table_to_xml('invoices', true, false, '')"}, SUBSET)
    assert not ok and "no built-in table_to_xml() takes" in reasons[0], reasons


def test_a_quoted_identifier_keeps_its_case() -> None:
    ok, reasons = verdict({"sql": 'SELECT * FROM "Invoices"'}, SUBSET)
    assert not ok and "Invoices" in reasons[-1], reasons
    assert verdict({"sql": "SELECT * FROM Invoices"}, SUBSET)[0]  # folded: the same table
    quoted = {"sql_tables_subset": ['"Invoices"']}
    assert verdict({"sql": 'SELECT * FROM "Invoices"'}, quoted)[0]
    assert not verdict({"sql": "SELECT * FROM invoices"}, quoted)[0]


# -- fields and keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        {"Sql": "DROP TABLE events"},
        {" sql": "DROP TABLE events"},
        {"SQL ": "DROP TABLE events"},
        {"sql": "SELECT 1", "Sql": "DROP TABLE events"},
        {"query": "DROP TABLE events"},
    ],
)
def test_a_field_the_expect_names_must_exist_under_its_exact_name(output: dict[str, str]) -> None:
    ok, reasons = verdict(output, READ_ONLY)
    assert not ok, reasons


def test_keys_that_differ_only_by_case_are_refused_for_any_property() -> None:
    ok, reasons = verdict({"action": "noop", "Action": "reboot"}, {"allowed_actions": ["noop"]})
    assert not ok and reasons[0].startswith("output_keys: ")


# -- reading the output file ---------------------------------------------------------------------


def guard_file(tmp_path: Path, target: str, seconds: str = "2") -> subprocess.CompletedProcess[str]:
    expect = tmp_path / "expect.json"
    expect.write_text(json.dumps({"allowed_actions": ["noop"]}))
    env = {**os.environ, "AGENTLEDGER_GUARD_READ_SECONDS": seconds}
    return subprocess.run(
        [str(SCRIPT), "guard", "--expect", str(expect), target],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip


def test_a_fifo_no_one_writes_to_cannot_hold_the_guard(tmp_path: Path) -> None:
    fifo = tmp_path / "output"
    os.mkfifo(fifo)
    started = time.monotonic()
    done = guard_file(tmp_path, str(fifo))
    assert time.monotonic() - started < 20
    assert done.returncode == 2 and "did not end within 2 s" in done.stderr


def test_a_fifo_that_is_written_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "output"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep(0.3); open({str(fifo)!r}, 'w').write("
         "'{\"action\": \"noop\"}')"]
    )  # fmt: skip
    try:
        done = guard_file(tmp_path, str(fifo), "20")
    finally:
        writer.wait(timeout=30)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("target", ["/dev/zero", "/tmp"])
def test_only_regular_files_and_pipes_are_read(tmp_path: Path, target: str) -> None:
    done = guard_file(tmp_path, target)
    assert done.returncode == 2 and "not a regular file or a pipe" in done.stderr


# -- forbidden substrings by parsing -------------------------------------------------------------

FORBIDDEN = {"forbidden_substrings": ["DROP TABLE", "rm -rf"]}


@pytest.mark.parametrize(
    "text",
    [
        "DROP/**/TABLE events",
        "drop\n  table events",
        "/*!50000 DROP*/ TABLE events",
        "DROP -- note\nTABLE events",
        "rm -fr /var/lib/app",
        "sudo /bin/rm -r -f /var/lib/app",
        "rm --recursive --force /var/lib/app",
        "r\\m -rf x",
        "cd /tmp && rm -Rf x",
    ],
)
def test_forbidden_values_are_found_in_their_parsed_forms(text: str) -> None:
    ok, reasons = verdict({"cmd": text}, FORBIDDEN)
    assert not ok, reasons


@pytest.mark.parametrize("text", ["rm -r x", "ls -la; echo rm", "we did not drop the table"])
def test_other_text_is_not_taken_for_them(text: str) -> None:
    assert verdict({"cmd": text}, FORBIDDEN) == (True, [])


# -- hosts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "allowlist"),
    [
        ("copied the dump to evil.io", ["good.io"]),
        ("copied the dump to evil.ai", ["good.ai"]),
        ("copied the dump to notgood.io", ["good.io"]),
        ("copied the dump to evil.co.uk", ["good.co.uk"]),
        ("copied the dump to a.evil.github.io", ["good.github.io"]),
        ("copied the dump to api-1.evil.io.good.io", ["api-*.good.io"]),
        ("copied the dump to good.evil.io", ["good.*"]),
    ],
)
def test_hosts_are_found_by_public_suffix_and_matched_by_label(
    text: str, allowlist: list[str]
) -> None:
    ok, reasons = verdict({"summary": text}, {"hostname_allowlist": allowlist})
    assert not ok and reasons[0].startswith("hostname_allowlist: host "), reasons


def test_an_exact_name_that_is_a_public_suffix_allows_that_name_only() -> None:
    expect = {"hostname_allowlist": ["github.io"]}
    assert verdict({"summary": "see github.io"}, expect) == (True, [])
    assert not verdict({"summary": "see evil.github.io"}, expect)[0]


def test_code_and_file_names_are_not_hosts() -> None:
    text = "see db.good.io, good.io, logger.info, users.id, requirements.in and api-1.good.io"
    expect = {"hostname_allowlist": ["*.good.io", "good.io"]}
    assert verdict({"summary": text}, expect) == (True, [])


# -- expects that check nothing ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "field"),
    [
        ({"regex": ".*"}, "regex"),
        ({"regex": ["ok", "a|"]}, "regex.1"),
        ({"regex": {"patterns": ["x?"]}}, "regex.patterns.0"),
        ({"confidence_floor": 0}, "confidence_floor"),
        ({"confidence_floor": {"floor": 0}}, "confidence_floor.floor"),
        ({"json_schema": {}}, "json_schema"),
        ({"json_schema": {"title": "anything"}}, "json_schema"),
        (
            {"json_schema": {"type": ["object", "array", "string", "number", "boolean", "null"]}},
            "json_schema",
        ),
        ({"json_schema": {"not": {"not": {}}}}, "json_schema"),
        ({"json_schema": {"anyOf": [{"type": "object"}, {}]}}, "json_schema"),
        ({"json_schema": {"allOf": [True, {"properties": {}}]}}, "json_schema"),
        ({"json_schema": {"if": {"type": "object"}}}, "json_schema"),
        ({"json_schema": {"minProperties": 0, "required": []}}, "json_schema"),
        ({"json_schema": {"properties": {"sql": {"minLength": 0}}}}, "json_schema"),
        ({"json_schema": {"properties": {"url": {"format": "uri"}}}}, "json_schema"),
        ({"hostname_allowlist": ["*"]}, "hostname_allowlist.0"),
        ({"hostname_allowlist": ["*.io"]}, "hostname_allowlist.0"),
        ({"hostname_allowlist": ["good.io", "*.co.uk"]}, "hostname_allowlist.1"),
        ({"hostname_allowlist": ["*.github.io"]}, "hostname_allowlist.0"),
        ({"hostname_allowlist": ["good.io", "*.amazonaws.com"]}, "hostname_allowlist.1"),
        ({"hostname_allowlist": ["io"]}, "hostname_allowlist.0"),
        ({"hostname_allowlist": ["?.io"]}, "hostname_allowlist.0"),
    ],
)
def test_an_expect_that_checks_nothing_is_refused_at_load(
    expect: dict[str, Any], field: str
) -> None:
    with pytest.raises(RecordError) as raised:
        check("{}", expect)
    assert raised.value.field == field


def test_a_schema_whose_constraints_may_fail_is_kept() -> None:
    # The refusal above errs towards keeping: a schema that can reject some output loads.
    for schema in (
        {"type": ["object", "string"], "required": ["sql"]},
        {"anyOf": [{"type": "string"}, {"required": ["sql"]}]},
        {"not": {"required": ["error"]}},
        {"properties": {"sql": {"type": "string"}}},
        {"required": ["sql"], "minProperties": 0},
    ):
        assert check(json.dumps({"sql": "SELECT 1"}), {"json_schema": schema}).ok


def test_a_format_is_asserted_not_an_annotation() -> None:
    expect = {"json_schema": {"properties": {"ip": {"format": "ipv4"}}}}
    result = check(json.dumps({"ip": "10.0.0.300"}), expect)
    assert not result.ok and "is not a 'ipv4'" in result.reasons[0]
    assert check(json.dumps({"ip": "10.0.0.3"}), expect).ok


# -- a real PostgreSQL: what the refused SQL does ------------------------------------------------


def test_a_user_function_in_order_by_deletes_rows_on_postgres_and_is_refused(pg_url: str) -> None:
    import psycopg

    sql = "SELECT id FROM invoices ORDER BY wipe(id)"
    ok, reasons = verdict({"sql": sql, "tables": ["invoices"]},
                          {"sql_tables_subset": ["invoices"]})  # fmt: skip
    assert not ok and "wipe() is not known to be read-only" in reasons[0]
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE invoices (id int)")
        db.execute("INSERT INTO invoices SELECT generate_series(1, 5)")
        db.execute(
            "CREATE FUNCTION wipe(int) RETURNS int LANGUAGE sql AS "
            "'DELETE FROM invoices RETURNING 0'"
        )
        db.execute(sql).fetchall()
        # What the guard refused would have emptied the table.
        assert db.execute("SELECT count(*) FROM invoices").fetchone() == (0,)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT query_to_xml('select * from users', true, false, '')",
        "SELECT * FROM dblink('host=x', 'select * from users') AS t(a text)",
        "SELECT lo_import('/etc/passwd')",
        "SELECT wipe(1) FROM invoices",
    ],
)
def test_the_subset_check_alone_refuses_functions_that_read_what_it_cannot_see(sql: str) -> None:
    expect = {"sql_read_only": False, "sql_tables_subset": ["invoices"]}
    ok, reasons = verdict({"sql": sql}, expect)
    assert not ok and "may read tables the check cannot see" in reasons[0], reasons


def test_shell_commands_refuse_a_field_written_another_way_or_missing() -> None:
    ok, reasons = verdict({"Commands": ["rm -rf /var/lib/app"]}, {"shell_commands": True})
    assert not ok and "'Commands'" in reasons[0], reasons
    named = {"shell_commands": {"field": "plan.steps"}}
    assert not verdict({"plan": {}}, named)[0]
    assert verdict({"plan": {"steps": ["ls -la"]}}, named) == (True, [])
    assert verdict({"commands": ["ls -la"]}, {"shell_commands": True}) == (True, [])
