"""Differential: what the guard passes never calls a schema's overload (issue 33, cause 9).

A real PostgreSQL gets `public` overloads of built-in names (`lower`, `length`, `count`,
`abs`, `json_agg`, `left`, `round`, `date_trunc`, `concat`) and of operators (`+`, `-`, `=`,
`||`, `<`) for many argument types, each bumping a sequence (which no rollback undoes). Call
forms are generated from a pool of argument expressions: literals, casts, typed literals,
arrays, arithmetic, nested calls, subqueries, CASE, NULL, ROW, declared columns of a table and
columns of subqueries, named arguments and VARIADIC. Each form is run on the server and checked
by the guard: "the guard says read-only" must imply "no overload ran" (columns of `t` are
declared with their types, as an expect may). The test also holds that
the generated forms do reach overloads (so it can fail) and that the guard passes a good part
of them (so it does not refuse everything).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentledger.suites.guard import check

TYPES = [
    "integer", "bigint", "smallint", "numeric", "double precision", "text", "character varying",
    "boolean", "date", "interval", "timestamp without time zone", "timestamp with time zone",
    "integer[]", "text[]",
]  # fmt: skip
PAIR_TYPES = ["integer", "bigint", "numeric", "text", "character varying", "date", "interval"]
ONE_ARGUMENT = ["lower", "length", "count", "abs", "json_agg", "md5", "upper"]
TWO_ARGUMENTS = ["left", "round", "date_trunc", "concat"]
OPERATORS = ["+", "-", "=", "||", "<"]
COLUMNS = {"n": "integer", "name": "text", "amount": "numeric", "d": "date", "ts": "timestamptz"}
EXPECT = {"sql_read_only": {"columns": {"t": COLUMNS}}}
FROM = " FROM t, (SELECT 5 AS v) c, (SELECT 'x'::text AS w) s, (VALUES (1.5)) AS vv(f)"

ARGUMENTS = [
    "5", "-5", "5::int", "CAST(5 AS int)", "int '5'", "(5)", "5::bigint", "5::smallint",
    "3000000000", "1.5", "5.0e3", "'x'", "'x'::text", "'x'::varchar", "NULL", "true",
    "date '2024-01-01'", "interval '1 day'", "timestamp '2024-01-01'",
    "timestamptz '2024-01-01'", "ARRAY[1,2]", "ARRAY['a','b']", "2+3", "2+3.5", "abs(5)",
    "abs(-5.5)", "length('abc')", "now()", "(select 5)", "(select 'x')", "coalesce(5, 6)",
    "CASE WHEN true THEN 5 ELSE 6 END", "ROW(1,2)", "n", "name", "amount", "d", "ts", "c.v",
    "s.w", "vv.f", "lower('x')", "'x' || 'y'", "5 * 2", "-n", "n + 1", "name || 'x'",
    "upper(name)", "count(*)", "$$x$$", "E'x'",
]  # fmt: skip
PAIR_ARGUMENTS = [
    "5", "5::bigint", "1.5", "'x'", "'x'::text", "'x'::varchar", "NULL", "n", "name",
    "amount", "ts", "interval '1 day'", "date '2024-01-01'", "c.v", "2+3",
]  # fmt: skip
SPECIAL = [
    "lower(a => 5)", "lower(a := 5)", "lower(a => 'x')", "left(a => 'x', b => 1)",
    "concat(VARIADIC ARRAY[1,2])", "concat(VARIADIC ARRAY['a'])", "count(*)", "count(DISTINCT n)",
    "count(n)", "count(1)", "json_agg(n)", "lower(name) FILTER (WHERE true)",
    "string_agg(name, ',' ORDER BY name)", "lower(5) OVER ()", "lower((SELECT 5 AS x))",
    "lower(x) FROM (SELECT 5) AS q(x)",
]  # fmt: skip


def _forms() -> Iterator[str]:
    for name, argument in itertools.product(ONE_ARGUMENT, ARGUMENTS):
        yield f"SELECT {name}({argument})" + FROM
    for name, (first, second) in itertools.product(
        TWO_ARGUMENTS, itertools.product(PAIR_ARGUMENTS, PAIR_ARGUMENTS)
    ):
        yield f"SELECT {name}({first}, {second})" + FROM
    for op, (first, second) in itertools.product(
        OPERATORS, itertools.product(PAIR_ARGUMENTS, PAIR_ARGUMENTS)
    ):
        yield f"SELECT {first} {op} {second}" + FROM
    for argument in ARGUMENTS[::3]:
        yield f"SELECT n FROM t ORDER BY lower({argument})"
        yield f"WITH q AS (SELECT {argument} AS x{FROM}) SELECT lower(x) FROM q"
    for special in SPECIAL:
        yield f"SELECT {special}" + ("" if " FROM " in special else FROM)


def _setup(db: Any) -> None:
    db.execute("CREATE SEQUENCE hits")
    db.execute("CREATE TABLE t (n int, name text, amount numeric, d date, ts timestamptz)")
    db.execute("INSERT INTO t VALUES (1, 'A', 1.5, '2024-01-01', now())")
    body = "LANGUAGE sql AS $$SELECT CASE WHEN nextval('hits') > 0 THEN NULL::text END$$"
    for name, kind in itertools.product(ONE_ARGUMENT, TYPES):
        db.execute(f"CREATE FUNCTION public.{name}(a {kind}) RETURNS text {body}")
    for name, (first, second) in itertools.product(
        TWO_ARGUMENTS, itertools.product(PAIR_TYPES, PAIR_TYPES)
    ):
        db.execute(f"CREATE FUNCTION public.{name}(a {first}, b {second}) RETURNS text {body}")
    for first, second in itertools.product(PAIR_TYPES, PAIR_TYPES):
        db.execute(f"CREATE FUNCTION public.hit(a {first}, b {second}) RETURNS text {body}")
        for op in OPERATORS:
            db.execute(
                f"CREATE OPERATOR public.{op} (LEFTARG = {first}, RIGHTARG = {second}, "
                "FUNCTION = public.hit)"
            )


def _ran(db: Any, sql: str) -> bool:
    import contextlib

    import psycopg

    db.execute("SELECT setval('hits', 1, false)")
    # No such function, not unique: an error, and the sequence still tells what ran.
    with contextlib.suppress(psycopg.Error):
        db.execute(sql).fetchall()
    row = db.execute("SELECT is_called FROM hits").fetchone()
    return bool(row and row[0])


def test_what_the_guard_passes_never_runs_a_schema_overload(postgres_server: Any) -> None:
    import psycopg

    name = postgres_server.create_database()
    try:
        with psycopg.connect(postgres_server.url(name), autocommit=True) as db:
            _setup(db)
            db.execute("SET statement_timeout = '5s'")
            forms = list(dict.fromkeys(_forms()))
            passed, ran, holes = 0, 0, []
            for sql in forms:
                ok = check({"sql": sql}, EXPECT).ok
                overload = _ran(db, sql)
                passed += ok
                ran += overload
                if ok and overload:
                    holes.append(sql)
    finally:
        postgres_server.drop_database(name)
    assert holes == [], f"{len(holes)} of {len(forms)} passed and ran an overload: {holes[:20]}"
    # The forms do reach overloads, and the guard does not just refuse everything.
    assert ran > len(forms) // 4, (ran, len(forms))
    assert passed > len(forms) // 10, (passed, len(forms))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT lower(CAST(5 AS int))", "SELECT lower(5::int)", "SELECT lower(int '5')",
        "SELECT lower((5))", "SELECT lower(date '2024-01-01')", "SELECT lower(interval '1 day')",
        "SELECT lower(timestamp '2024-01-01')", "SELECT lower(ARRAY[1])", "SELECT lower(a => 5)",
        "SELECT concat(VARIADIC ARRAY[1])", "SELECT count(5)", "SELECT lower(abs(5))",
        "SELECT lower(2+3)", "SELECT lower((select 5))", "SELECT lower(ROW(1,2))",
        "WITH c AS (SELECT 5 AS n) SELECT lower(n) FROM c", "SELECT 1 + 1.5",
        "SELECT lower(x) FROM (VALUES (5)) AS v(x)", "SELECT lower(g) FROM generate_series(1, 3) g",
    ],
)  # fmt: skip
def test_the_red_team_s_forms_are_refused(sql: str) -> None:
    assert not check({"sql": sql}, {"sql_read_only": True}).ok


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT lower('X')", "SELECT lower(NULL)", "SELECT count(*) FROM t",
        "SELECT date_trunc('day', ts) FROM t", "SELECT left('abc', 2)", "SELECT round(5.5)",
        "SELECT now() - interval '1 day'", "SELECT generate_series(1, 10)",
        "SELECT lower(name) FROM t", "SELECT sum(amount) FROM t HAVING count(*) > 5",
        "SELECT abs(-5)", "SELECT to_char(now(), 'YYYY')",
    ],
)  # fmt: skip
def test_built_in_calls_are_proven(sql: str) -> None:
    assert check({"sql": sql}, EXPECT).ok, check({"sql": sql}, EXPECT).reasons


def test_a_declared_column_type_is_checked() -> None:
    assert not check({"sql": "SELECT lower(n) FROM t"}, EXPECT).ok
    assert check({"sql": "SELECT lower(name) FROM t"}, EXPECT).ok
    assert check({"sql": "SELECT lower(n::text) FROM t"}, EXPECT).ok
    # Undeclared, the column's type is assumed: the connection must hold (docs/guard.md).
    assert check({"sql": "SELECT lower(n) FROM t"}, {"sql_read_only": True}).ok


@pytest.mark.parametrize("kind", [5, "", None, ["integer"]])
def test_a_declared_type_that_is_not_a_type_name_is_an_error_naming_the_field(kind: Any) -> None:
    from agentledger.errors import RecordError

    expect = {"sql_read_only": {"columns": {"t": {"n": kind}}}}
    with pytest.raises(RecordError) as raised:
        check({"sql": "SELECT 1"}, expect)
    assert "sql_read_only.columns.t.n" in str(raised.value)


def test_a_declared_type_not_built_in_proves_no_call() -> None:
    """A column of a type the schema made (an enum, a domain): no built-in takes it exactly."""
    expect = {"sql_read_only": {"columns": {"t": {"mood": "mood_enum", "n": "int4"}}}}
    assert not check({"sql": "SELECT lower(mood) FROM t"}, expect).ok
    assert check({"sql": "SELECT abs(n) FROM t"}, expect).ok  # int4 is integer


PLAIN_READS = Path(__file__).parent / "data" / "sql_plain_reads.txt"
REFUSED_PLAIN_READS = {
    # t.name may be the call name(t) (sql_columns): qualified columns of undeclared tables.
    "c.name", "o.id", "c.id", "a.id",
    # An ordered-set aggregate's fraction of another type than the built-in's.
    "percentile_cont(0.95)",
    # Mixed-type operators and an untyped literal at an "any" place: a schema's function of
    # the exact types would be called (cast to one type: count(*)::numeric * 100.0).
    "count(*) * 100.0", "::float / count(*)", "concat(first_name, ' ', last_name)",
    "100.0 * count(*)",
}  # fmt: skip


def test_plain_reads_are_refused_only_for_what_cannot_be_proven() -> None:
    """Of 89 plain analyst and investigator reads, 9 are refused (5 before the types were
    inferred), each for a reason a real schema could exploit; any other refusal fails."""
    reads = [
        line for line in PLAIN_READS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]  # fmt: skip
    refused = [sql for sql in reads if not check({"sql": sql}, {"sql_read_only": True}).ok]
    unexpected = [sql for sql in refused if not any(part in sql for part in REFUSED_PLAIN_READS)]
    assert unexpected == []
    assert len(refused) <= 9, refused


def test_explain_of_an_unproven_call_is_not_read_only_to_the_gate(pg_url: str) -> None:
    """Planning folds an IMMUTABLE function of constant arguments: `EXPLAIN SELECT lower(5)`
    runs a schema's IMMUTABLE lower(integer) without ANALYZE (shown on the server)."""
    import psycopg

    from agentledger.shell.classifier import classify

    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("CREATE SEQUENCE hits")
        db.execute(
            "CREATE FUNCTION public.lower(a integer) RETURNS text IMMUTABLE LANGUAGE plpgsql "
            "AS $$BEGIN PERFORM nextval('hits'); RETURN 'x'; END$$"
        )
        db.execute("EXPLAIN SELECT lower(5)").fetchall()
        assert db.execute("SELECT is_called FROM hits").fetchone() == (True,)
    assert classify("psql -c 'EXPLAIN SELECT lower(5)'").kind == "unknown"
    assert classify("psql -c 'EXPLAIN SELECT wipe(1)'").kind == "unknown"
    assert classify("psql -c 'EXPLAIN DELETE FROM t'").kind == "read-only"  # planned only
