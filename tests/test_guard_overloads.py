"""A schema's overload of a built-in's name, on a real PostgreSQL (issue 33, cause 9).

`CREATE FUNCTION public.lower(int) ... DELETE ...` makes `SELECT lower(5)` and `ORDER BY
lower(1)` run it: PostgreSQL picks a function whose argument types match exactly before a
built-in reached by an implicit cast. The guard infers the types of the arguments and
refuses a call that no built-in signature of its name takes exactly (`sql_types`; the
generated differential test is tests/test_guard_types_differential.py); each case below
creates the overload for the literal's own type and runs the call, and whatever the guard
lets through must not have run it. A column's type the text does not show: a connection in
a read-only transaction stops such an overload's write, whatever the guard answered.

    .venv/bin/python tests/test_guard_overloads.py --write   # data/pg_functions.json anew
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentledger.suites.guard import check

SIGNATURES = Path(__file__).parent.parent / "src/agentledger/data/pg_functions.json"
QUERY = """
SELECT p.proname, p.pronargdefaults, (p.provariadic <> 0)::int, format_type(p.prorettype, NULL),
       coalesce(array(SELECT format_type(t, NULL)
                      FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, n) ORDER BY n),
                '{}')
FROM pg_proc p WHERE p.pronamespace = 'pg_catalog'::regnamespace ORDER BY 1, 5, 4
"""
OPERATORS = """
SELECT o.oprname, format_type(o.oprleft, NULL), format_type(o.oprright, NULL),
       format_type(o.oprresult, NULL)
FROM pg_operator o WHERE o.oprnamespace = 'pg_catalog'::regnamespace ORDER BY 1, 2, 3
"""
TYPES = """
SELECT format_type(t.oid, NULL) FROM pg_type t
WHERE t.typnamespace = 'pg_catalog'::regnamespace AND t.typtype IN ('b', 'r', 'm', 'e')
  AND t.typisdefined ORDER BY 1
"""

# (the overload's signature and return type, the call, whether it runs the overload)
CASES = [
    ("lower(integer) RETURNS text", "SELECT lower(5)", True),
    ("lower(integer) RETURNS text", "SELECT name FROM t ORDER BY lower(1)", True),
    ("lower(integer) RETURNS text", "SELECT lower(-1)", True),
    ("lower(numeric) RETURNS text", "SELECT lower(1.5)", True),
    ("lower(boolean) RETURNS text", "SELECT lower(true)", True),
    ("lower(integer) RETURNS text", "SELECT lower('X')", False),
    ("lower(integer) RETURNS text", "SELECT lower(NULL)", False),
    ("lower(integer) RETURNS text", "SELECT lower(name) FROM t", False),
    ("round(integer) RETURNS numeric", "SELECT round(5)", True),
    ("round(integer) RETURNS numeric", "SELECT round(5.5)", False),
    ("pg_total_relation_size(text) RETURNS bigint", "SELECT pg_total_relation_size('t')", True),
    ("pg_total_relation_size(text) RETURNS bigint",
     "SELECT pg_total_relation_size('t'::regclass)", False),
    ("abs(bigint) RETURNS bigint", "SELECT abs(-5)", False),
    ("length(integer) RETURNS integer", "SELECT length(7::int)", True),
    ("left(text, bigint) RETURNS text", "SELECT left('abc', 2)", False),
    ("upper(text, integer) RETURNS text", "SELECT upper('a', 1)", True),
    ("lower(bit) RETURNS text", "SELECT lower(B'101')", True),
    ("lower(bit) RETURNS text", "SELECT lower(X'1F')", True),
    ("lower(bit) RETURNS text", "SELECT lower(E'x')", False),
    ("lower(bit) RETURNS text", "SELECT lower($$x$$)", False),
    ('"Lower"(text) RETURNS text', """SELECT "Lower"('x')""", True),
]  # fmt: skip


def guard_ok(sql: str) -> bool:
    return check({"sql": sql}, {"sql_read_only": True}).ok


@pytest.mark.parametrize(("overload", "sql", "runs"), CASES)
def test_what_the_guard_passes_never_calls_a_schema_overload(
    pg_url: str, overload: str, sql: str, runs: bool
) -> None:
    import psycopg

    returns = overload.rsplit(" ", 1)[-1]
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE t (n int, name text)")
        db.execute("CREATE TABLE log (n int)")
        db.execute("INSERT INTO t VALUES (1, 'A')")
        db.execute(
            f"CREATE FUNCTION public.{overload} LANGUAGE sql AS "
            f"'INSERT INTO log VALUES (1) RETURNING NULL::{returns}'"
        )
        db.execute(sql).fetchall()
        ran = db.execute("SELECT count(*) FROM log").fetchone() == (1,)
    assert ran == runs, f"{sql}: the overload {'ran' if ran else 'did not run'}"
    assert guard_ok(sql) is not ran, sql


def test_a_read_only_transaction_stops_an_overload_the_text_cannot_show(pg_url: str) -> None:
    """`lower(n)` with n an integer column: the guard cannot see the type; the connection's
    read-only transaction refuses the overload's write."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE TABLE t (n int)")
        db.execute("INSERT INTO t VALUES (1), (2)")
        db.execute(
            "CREATE FUNCTION public.lower(integer) RETURNS integer LANGUAGE sql AS "
            "'DELETE FROM t RETURNING 1'"
        )
    sql = "SELECT n FROM t ORDER BY lower(n)"
    assert guard_ok(sql)  # the limit: a column's type is not in the text
    read_only = f"{pg_url}?options=-cdefault_transaction_read_only%3Don"
    with (
        psycopg.connect(read_only, autocommit=True) as db,
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction),
    ):
        db.execute(sql)
    # Nor can the function turn the transaction back to read-write.
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(
            "CREATE OR REPLACE FUNCTION public.lower(integer) RETURNS integer LANGUAGE plpgsql "
            "AS $$BEGIN SET LOCAL transaction_read_only = off; DELETE FROM t; RETURN 1; END$$"
        )
    with psycopg.connect(read_only, autocommit=True) as db:
        with pytest.raises(psycopg.errors.ActiveSqlTransaction):
            db.execute(sql)
        assert db.execute("SELECT count(*) FROM t").fetchone() == (2,)


def test_the_packaged_signatures_are_the_server_s(pg_url: str) -> None:
    import psycopg

    packaged = json.loads(SIGNATURES.read_text())["functions"]
    with psycopg.connect(pg_url, autocommit=True) as db:
        version = db.execute("SHOW server_version_num").fetchone()[0]  # type: ignore[index]
        served = signatures(db.execute(QUERY).fetchall())
    for name in ("lower", "round", "pg_total_relation_size", "abs", "left", "length", "upper"):
        assert sorted(packaged[name]) == sorted(served[name]), name
    if version.startswith("15"):  # regenerate with --write for another version
        assert {name: sorted(sigs) for name, sigs in packaged.items()} == {
            name: sorted(sigs) for name, sigs in served.items()
        }


def signatures(rows: list[tuple[Any, ...]]) -> dict[str, list[list[Any]]]:
    found: dict[str, list[list[Any]]] = {}
    for name, defaults, variadic, returns, types in rows:
        found.setdefault(name, []).append([defaults, variadic, returns, *types])
    return found


def write() -> None:
    import os

    import psycopg

    sys.path.insert(0, str(Path(__file__).parent))
    from pg_server import start_server

    server = start_server()
    os.environ.update(server.environ())
    try:
        with psycopg.connect(server.url(), autocommit=True) as db:
            rows = db.execute(QUERY).fetchall()
            operators = [list(row) for row in db.execute(OPERATORS).fetchall()]
            types = [row[0] for row in db.execute(TYPES).fetchall()]
    finally:
        server.stop()
    document = {
        "postgresql": "15",
        "functions": signatures(rows),
        "operators": operators,
        "types": types,
    }
    SIGNATURES.write_text(json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write()
