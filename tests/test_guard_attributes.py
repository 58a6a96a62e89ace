"""PostgreSQL reads `t.name` as the call `name(t)` when `t` has no column `name` (issue 33,
cause 9): the guard and the gate refuse a qualified name not known to be a column, shown on a
real server; bare names, catalog columns, a subquery's columns and declared ones still pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentledger.errors import RecordError
from agentledger.shell.classifier import classify
from agentledger.shell.sql import analyse_sql
from agentledger.suites.guard import check

DECLARED = {"users": ["id", "email"], "public.orders": ["user_id", "total"]}


def verdict(output: dict[str, Any], expect: dict[str, Any]) -> tuple[bool, list[str]]:
    result = check(json.dumps(output), expect)
    return result.ok, result.reasons


CALLS = [
    "SELECT u.evil FROM users u",
    "SELECT users.evil FROM users",
    "SELECT public.users.evil FROM public.users",
    "SELECT (u).evil FROM users u",
    "SELECT (users.*).evil FROM users",
    "SELECT id FROM users ORDER BY users.evil",
    "SELECT id FROM users u WHERE u.evil > 0",
    "SELECT count(*) FROM users u GROUP BY u.evil",
    "SELECT id FROM users WHERE EXISTS (SELECT 1 FROM orders o WHERE o.evil = 0)",
    "SELECT a.id FROM users a JOIN orders b ON b.evil = a.id",
    "SELECT * FROM (SELECT u.evil FROM users u) s",
    "WITH w AS (SELECT u.evil AS e FROM users u) SELECT e FROM w",
    "SELECT s.evil FROM (SELECT id FROM users) s",
    "SELECT s.evil FROM (SELECT * FROM users) s",
    "SELECT x.evil FROM users",
    "SELECT (p.x).evil FROM p",
    "SELECT coalesce(u.evil, 0) FROM users u",
    "SELECT l.evil FROM pg_locks l",
    "WITH RECURSIVE d(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM d WHERE n < 3) "
    "SELECT d.evil FROM d",
    "SELECT u.evil FROM public.users u",
]


@pytest.mark.parametrize("sql", CALLS)
def test_a_qualified_name_not_known_to_be_a_column_is_refused(sql: str) -> None:
    ok, reasons = verdict({"sql": sql}, {"sql_read_only": {"columns": DECLARED}})
    assert not ok and "may be the call" in reasons[0], reasons
    assert analyse_sql(sql).classification()[0] == "unknown"


@pytest.mark.parametrize("sql", CALLS[:6])
def test_the_gate_refuses_them_in_psql(sql: str) -> None:
    result = classify(f'psql -h db -c "{sql}"')
    assert result.kind != "read-only", result


def test_the_subset_check_counts_them_as_reading_what_it_cannot_see() -> None:
    expect = {"sql_read_only": False, "sql_tables_subset": ["users"]}
    ok, reasons = verdict({"sql": "SELECT u.evil FROM users u"}, expect)
    assert not ok and "may read tables the check cannot see" in reasons[0], reasons


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT evil FROM users",
        "SELECT id, email FROM users WHERE id > 3 ORDER BY email",
        "SELECT u.id, u.email FROM users u",
        "SELECT users.email FROM users",
        "SELECT u.* FROM users u",
        "SELECT o.total FROM public.orders o JOIN users u ON u.id = o.user_id",
        "SELECT s.a FROM (SELECT 1 AS a) s",
        "SELECT s.x FROM (SELECT id AS x FROM users) AS s(x)",
        "WITH c AS (SELECT id AS n FROM users) SELECT c.n FROM c",
        "WITH RECURSIVE d(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM d WHERE n < 3) "
        "SELECT d.n FROM d",
        "SELECT u.email FROM public.users u",
        "SELECT l.pid, a.query FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid",
        "SELECT c.relname FROM pg_catalog.pg_class c",
        "SELECT t.table_name FROM information_schema.tables t",
        "SELECT id FROM users WHERE EXISTS "
        "(SELECT 1 FROM public.orders o WHERE o.user_id = users.id)",
    ],
)
def test_bare_names_known_columns_and_subquery_columns_pass(sql: str) -> None:
    expect = {"sql_read_only": {"columns": DECLARED}}
    assert verdict({"sql": sql}, expect) == (True, [])


def test_declared_columns_belong_to_their_relation_only() -> None:
    expect = {"sql_read_only": {"columns": {"users": ["id"]}}}
    assert verdict({"sql": "SELECT u.id FROM users u"}, expect)[0]
    assert not verdict({"sql": "SELECT o.id FROM orders o"}, expect)[0]
    assert not verdict({"sql": "SELECT u.id FROM users u"}, {"sql_read_only": True})[0]


def test_columns_given_to_the_subset_check_count_for_the_read_only_check() -> None:
    expect = {"sql_tables_subset": {"tables": ["users"], "columns": {"users": ["id"]}}}
    assert verdict({"sql": "SELECT u.id FROM users u"}, expect) == (True, [])


def test_other_dialects_have_no_such_reading() -> None:
    assert analyse_sql("SELECT u.x FROM users u", "mysql").classification()[0] == "read-only"


@pytest.mark.parametrize(
    ("columns", "said"),
    [
        (["id"], "expected an object"),
        ({"users": ["a.b"]}, "is not a column name"),
        ({"users": [3]}, "expected a string"),
        ({"users;x": ["id"]}, "is not a table name"),
    ],
)
def test_a_bad_columns_option_is_refused_at_load(columns: Any, said: str) -> None:
    with pytest.raises(RecordError, match=said):
        check(json.dumps({"sql": "SELECT 1"}), {"sql_read_only": {"columns": columns}})


def test_attribute_notation_calls_a_function_on_postgres_and_is_refused(pg_url: str) -> None:
    import psycopg

    refused = [sql for sql in CALLS[:8] if not verdict({"sql": sql}, {"sql_read_only": True})[0]]
    assert refused == CALLS[:8]
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE users (id int, email text)")
        db.execute("CREATE TABLE orders (user_id int, total int)")
        db.execute("INSERT INTO users VALUES (1, 'a'), (2, 'b')")
        db.execute("INSERT INTO orders VALUES (1, 10)")
        db.execute(
            "CREATE FUNCTION evil(users) RETURNS int LANGUAGE sql AS "
            "'DELETE FROM orders RETURNING 0'"
        )
        db.execute("SELECT u.evil FROM users u").fetchall()
        # What the guard refused emptied another table.
        assert db.execute("SELECT count(*) FROM orders").fetchone() == (0,)
        # A bare name is never read as a call: PostgreSQL says the column does not exist.
        with pytest.raises(psycopg.errors.UndefinedColumn):
            db.execute("SELECT evil FROM users")
