"""SQL built at run time and text the shell joins (issue 33, cause 9): dynamic SQL (EXECUTE of a
concatenation, format(), DO, PREPARE, query_to_xml, dblink, psql's \\gexec and variables) is
refused by the guard and the gate; a search_path that shadows pg_catalog is unknown (shown on
a real server); `forbidden_substrings` sees the text as bash joins it (`DR\\<newline>OP`,
`DR""OP`, `$'DR\\x4fP'`) and `shell_commands` refuses it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentledger.shell.classifier import classify
from agentledger.suites.guard import check
from agentledger.suites.properties.parsed_match import shell_joined


def verdict(output: dict[str, Any], expect: dict[str, Any]) -> tuple[bool, list[str]]:
    result = check(json.dumps(output), expect)
    return result.ok, result.reasons


DYNAMIC_SQL = [
    "EXECUTE 'DR' || 'OP TABLE x'",
    "EXECUTE format('DROP TABLE %I', 'x')",
    "DO $$ BEGIN EXECUTE 'DR' || 'OP TABLE x'; END $$",
    "DO 'BEGIN PERFORM 1; END'",
    "PREPARE p AS DELETE FROM x; EXECUTE p",
    "PREPARE p AS SELECT 1",
    "EXECUTE p",
    "SELECT query_to_xml('DR' || 'OP TABLE x', true, false, '')",
    "SELECT xpath('/a', query_to_xml('x', true, false, ''))",
    "SELECT Query_To_Xml('x', true, false, '')",
    "SELECT pg_catalog.query_to_xml('x', true, false, '')",
    "SELECT * FROM dblink('dbname=x', 'DELETE FROM t') AS t(a int)",
    "SELECT * FROM ROWS FROM (dblink('x', 'delete from t')) AS t(a int)",
    "SELECT dblink_exec('DR' || 'OP TABLE x')",
    "CALL run_sql('DROP TABLE x')",
    "SELECT * FROM crosstab('DELETE FROM x RETURNING a, b, c')",
    "SELECT ts_stat('DELETE FROM x')",
    "SELECT cursor_to_xml('c', 1, false, false, '')",
    "SET search_path = evil, pg_catalog; SELECT lower(name) FROM t",
    "SET LOCAL search_path TO evil",
    'BEGIN; SET SESSION "search_path" = evil; SELECT 1 + 1; COMMIT',
    "SELECT set_config('search_path', 'evil, pg_catalog', false)",
]


@pytest.mark.parametrize("sql", DYNAMIC_SQL)
def test_dynamic_sql_is_refused_by_the_guard_and_the_gate(sql: str) -> None:
    ok, reasons = verdict({"sql": sql}, {"sql_read_only": {"allow_multiple": True}})
    assert not ok and reasons[0].startswith("sql_read_only: "), reasons
    assert classify(f"psql -h db -c {json.dumps(sql)}").kind != "read-only"


@pytest.mark.parametrize(
    "line",
    [
        "psql -h db -c \"SELECT 'DROP TABLE x' \\gexec\"",
        "psql -h db -c \"SELECT format('DROP TABLE %I', 'x')\" -c '\\gexec'",
        "psql -h db -c '\\set q DROP TABLE x' -c ':q'",
        "psql -h db -v q='DROP TABLE x' -c ':q'",
        "psql -h db --set=q='DROP TABLE x' -c 'SELECT 1; :q'",
        "psql -h db -c 'SELECT 1 \\; DROP TABLE x'",
        "psql -h db -At -c \"SELECT 'DROP TABLE x'\" | psql -h db",
        "psql -h db -At -c \"SELECT 'DROP TABLE x'\" | xargs -I{} psql -h db -c {}",
        "q='DR'; psql -h db -c \"${q}OP TABLE x\"",
        'psql -h db -c "$(echo DROP TABLE x)"',
        "psql -h db -c $'DR\\x4fP TABLE x'",
        'psql -h db -c "DR""OP TABLE x"',
        "mysql -h db -e \"SET @s=CONCAT('DR','OP TABLE x'); PREPARE st FROM @s; EXECUTE st\"",
        'mysql -h db -e "\\! rm -rf /tmp/x"',
        "psql -h db -c 'DR\\\nOP TABLE x'",
        "psql -h db -c DR\\\nOP\\ TABLE\\ x",
        "p\\\nsql -h db -c 'DROP TABLE x'",
    ],
)
def test_the_gate_refuses_sql_built_at_run_time(line: str) -> None:
    assert classify(line).kind != "read-only", line


JOINED = [
    "psql -c 'DR\\\nOP TABLE events'",
    "DR\\\nOP TABLE events",
    "DR\\\r\nOP TABLE events",
    "DR\\\n\\\nOP TABLE events",
    "DROP\\\n TABLE events",
    "DROP/**/\\\nTABLE events",
    "TRUN\\\nCATE events",
    "r\\\nm -rf /var/lib/app",
    "rm -r\\\nf /var/lib/app",
    "r''m -r''f /srv",
    'DR""OP TABLE events',
    "DR''OP TABLE events",
    "'DR'\"OP\" TABLE events",
    "D\\ROP TABLE events",
    "psql -c $'DR\\x4fP TABLE events'",
    "psql -c $'DR\\117P TABLE events'",
    "psql -c $'DR\\u004fP TABLE events'",
    "psql -c $'DROP\\tTABLE events'",
    "DROP${IFS}TABLE events",
    "psql <<EOF\nDR\\\nOP TABLE events\nEOF",
    "mysql -e 'DR\\\nOP TABLE events'",
    "psql -c \"EXECUTE 'DR' || 'OP TABLE events'\"",
    "EXECUTE 'DR'\n  'OP TABLE events'",
]
FORBIDDEN = {"forbidden_substrings": ["DROP TABLE", "rm -rf", "TRUNCATE"]}


@pytest.mark.parametrize("text", JOINED)
def test_forbidden_substrings_see_the_text_as_the_shell_joins_it(text: str) -> None:
    ok, reasons = verdict({"commands": [text]}, FORBIDDEN)
    assert not ok and "forbidden_substrings" in reasons[0], reasons
    ok, _ = verdict({"commands": [text]}, {"shell_commands": True})
    assert not ok


@pytest.mark.parametrize(
    "text",
    ["SELECT id FROM events", "rm -i notes.txt", "echo 'drop shipping table'", "Drop the table",
     "psql -c 'SELECT count(*) FROM events'", "grep -r 'DROP' docs/"],
)  # fmt: skip
def test_text_without_them_still_passes(text: str) -> None:
    assert verdict({"commands": [text]}, FORBIDDEN) == (True, [])


def test_shell_joined_decodes_what_bash_decodes() -> None:
    assert shell_joined("DR\\\nOP") == "DROP"
    assert shell_joined("$'\\x44R\\117P'") == "DROP"
    assert shell_joined("D\"R\"'O'P") == "DROP"
    assert shell_joined("plain text") == "plain text"
    assert shell_joined("'DR' || 'OP'") == "DROP"


def test_a_search_path_before_pg_catalog_shadows_a_built_in_on_postgres(pg_url: str) -> None:
    import psycopg

    sql = "SET search_path = evil, pg_catalog; SELECT lower(name) FROM t"
    assert classify(f'psql -h db -c "{sql}"').kind == "unknown"
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE t (name text)")
        db.execute("CREATE TABLE log (n int)")
        db.execute("INSERT INTO t VALUES ('A')")
        db.execute("CREATE SCHEMA evil")
        db.execute(
            "CREATE FUNCTION evil.lower(text) RETURNS text LANGUAGE sql AS "
            "'INSERT INTO public.log VALUES (1) RETURNING ''x'''"
        )
        db.execute("SELECT lower(name) FROM t").fetchall()  # pg_catalog first: the built-in
        assert db.execute("SELECT count(*) FROM log").fetchone() == (0,)
        db.execute("SET search_path = evil, pg_catalog, public")
        assert db.execute("SELECT lower(name) FROM t").fetchone() == ("x",)
        assert db.execute("SELECT count(*) FROM public.log").fetchone() == (1,)
