"""New cases of issue 33's cause 9, shown on a real PostgreSQL: what the guard refuses does
what it was refused for (an operator that is a user's function deletes rows; a quoted name
reads another table), and what it lets through does not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentledger.suites.guard import check


def verdict(output: dict[str, Any], expect: dict[str, Any]) -> tuple[bool, list[str]]:
    result = check(json.dumps(output), expect)
    return result.ok, result.reasons


@pytest.mark.parametrize(
    ("sql", "operator"),
    [("SELECT id FROM invoices WHERE id @@@ 1", "@@@"), ("SELECT 1 <~> 2", "<~>")],
)
def test_an_operator_not_built_in_is_refused(sql: str, operator: str) -> None:
    ok, reasons = verdict({"sql": sql}, {"sql_read_only": True})
    assert not ok and f"the operator {operator} is not built in" in reasons[0], reasons
    expect = {"sql_read_only": False, "sql_tables_subset": ["invoices"]}
    ok, reasons = verdict({"sql": sql}, expect)
    assert not ok and "may read tables the check cannot see" in reasons[0], reasons


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a->>'b', x::int FROM t WHERE a <-> b < 1 AND c !~* 'x' AND d @> e",
        "SELECT id FROM invoices WHERE id <= -1 OR id = -1 OR id >= +1",
        "SELECT 1 +++ 2",  # PostgreSQL reads 1 + + + 2: a name does not end in + alone
        "SELECT '@@@', $$ <~> $$ FROM invoices",
    ],
)
def test_built_in_operators_and_operator_text_in_strings_pass(sql: str) -> None:
    assert verdict({"sql": sql}, {"sql_read_only": True}) == (True, [])


def test_a_user_operator_deletes_rows_on_postgres_and_is_refused(pg_url: str) -> None:
    import psycopg

    sql = "SELECT id FROM invoices WHERE id @@@ 1"
    ok, _ = verdict({"sql": sql, "tables": ["invoices"]}, {"sql_tables_subset": ["invoices"]})
    assert not ok
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE invoices (id int)")
        db.execute("INSERT INTO invoices SELECT generate_series(1, 5)")
        db.execute(
            "CREATE FUNCTION wipe(int, int) RETURNS boolean LANGUAGE sql AS "
            "'DELETE FROM invoices RETURNING true'"
        )
        db.execute("CREATE OPERATOR @@@ (LEFTARG = int, RIGHTARG = int, FUNCTION = wipe)")
        db.execute(sql).fetchall()
        # What the guard refused emptied the table.
        assert db.execute("SELECT count(*) FROM invoices").fetchone() == (0,)


def test_a_quoted_name_reads_another_table_on_postgres_and_is_refused(pg_url: str) -> None:
    import psycopg

    expect = {"sql_tables_subset": ["invoices"]}
    assert verdict({"sql": 'SELECT secret FROM "Invoices"'}, expect)[0] is False
    assert verdict({"sql": "SELECT * FROM INVOICES"}, expect) == (True, [])
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE invoices (id int)")
        db.execute('CREATE TABLE "Invoices" (secret text)')
        db.execute("INSERT INTO \"Invoices\" VALUES ('payroll')")
        # "Invoices" is another table than invoices (and INVOICES, folded, the same one).
        assert db.execute('SELECT secret FROM "Invoices"').fetchall() == [("payroll",)]
        assert db.execute("SELECT * FROM INVOICES").fetchall() == []


def test_a_null_sql_field_leaves_the_tool_to_run_another(pg_url: str) -> None:
    import psycopg

    output = {"sql": None, "query": "DELETE FROM invoices"}
    ok, reasons = verdict(output, {"sql_read_only": True})
    assert not ok and "the output field 'sql' is null" in reasons[0]
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE invoices (id int)")
        db.execute("INSERT INTO invoices VALUES (1)")
        # A tool that falls back as many do: out.get("sql") or out.get("query").
        db.execute(output["sql"] or output["query"])
        assert db.execute("SELECT count(*) FROM invoices").fetchone() == (0,)


@pytest.mark.parametrize(
    "text",
    ["DROP#x\nTABLE events", "drop # gone\n table events", "DROP/**/TABLE events"],
)
def test_forbidden_words_split_by_a_comment_are_found(text: str) -> None:
    ok, reasons = verdict({"sql": text}, {"forbidden_substrings": ["DROP TABLE"]})
    assert not ok and "'DROP TABLE'" in reasons[0], reasons
