"""The plain-query reader gives sqlglot's answer without importing sqlglot, or no answer.

`agentledger.shell.sql_plain.plain_query` lets the guard and the gated shell skip sqlglot's
import for a plain SELECT. It must never call read-only what sqlglot's analysis would not:
on every query it accepts (generated ones, and the same with keywords and symbols thrown in),
sqlglot parses one statement with no finding and the same tables.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentledger.shell.sql import DEFAULT_DIALECT, analyse_sql, classify_sql
from agentledger.shell.sql_plain import (
    DIALECTS,
    PURE_FUNCTIONS,
    SQLGLOT_KEYWORDS,
    plain_query,
)


def sqlglot_agrees(text: str, dialect: str) -> None:
    """When the reader accepts `text`, sqlglot's analysis finds the same."""
    plain = plain_query(text, dialect)
    if plain is None:
        return
    full = analyse_sql(text, dialect, with_sqlglot=True)
    assert full.error is None, (text, full.error)
    # The one finding a plain query may have: a literal argument no built-in of the call's
    # name takes (`length(1)`: a schema's overload would run), found on both paths.
    overload = [finding for finding in full.findings if finding.why.startswith("no built-in ")]
    assert full.findings == overload, (text, full.findings)
    assert full.statements == 1, text
    assert full.tables == set(plain.tables), text
    quick = analyse_sql(text, dialect)
    assert (quick.error, quick.findings, quick.statements, quick.tables) == (
        None, overload, 1, full.tables,
    )  # fmt: skip


def test_the_keyword_list_covers_the_installed_sqlglot() -> None:
    from sqlglot.dialects import Dialect

    for dialect in sorted(DIALECTS):
        tokenizer = Dialect.get_or_raise(dialect).tokenizer_class
        words = {word for word in tokenizer.KEYWORDS if word.replace("_", "").isalpha()}
        missing = words - SQLGLOT_KEYWORDS
        assert not missing, f"add to SQLGLOT_KEYWORDS: {sorted(missing)}"


def test_pure_functions_are_not_known_to_change_state() -> None:
    from sqlglot import exp, parse_one

    from agentledger.shell.classifier import default_knowledge
    from agentledger.shell.sql import sql_rules

    risky = sql_rules(default_knowledge().sql).functions
    for name, (fewest, _) in sorted(PURE_FUNCTIONS.items()):
        arguments = ", ".join(["x"] * fewest)
        node = parse_one(f"SELECT {name}({arguments}) FROM t", read=DEFAULT_DIALECT).find(exp.Func)
        assert node is not None, name
        seen = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
        assert name not in risky and seen not in risky, name


TYPICAL = [
    "SELECT count(*) FROM invoices",
    "select 1",
    "SELECT * FROM users;",
    "SELECT name, sum(amount) AS total FROM invoices i JOIN customers c "
    "ON id = customer_id WHERE created_at > now() - interval '5 days' "
    "AND amount > 3 GROUP BY name ORDER BY total DESC LIMIT 20",
    "SELECT DISTINCT kind FROM public.events AS e LEFT OUTER JOIN users u USING (id) "
    "WHERE kind IN ('a', 'b''c') AND n BETWEEN 1 AND 10 OR note LIKE 'x%' "
    "ORDER BY kind NULLS LAST LIMIT 5 OFFSET 10",
    "SELECT CASE WHEN n > 0 THEN 'pos' ELSE 'neg' END AS sign, CAST(n AS int), n::text FROM t",
    "SELECT a FROM x, y CROSS JOIN z WHERE a IS NOT NULL AND NOT b = 2",
]


@pytest.mark.parametrize("text", TYPICAL)
def test_typical_queries_are_read_without_sqlglot_and_sqlglot_agrees(text: str) -> None:
    assert plain_query(text, DEFAULT_DIALECT) is not None
    sqlglot_agrees(text, DEFAULT_DIALECT)


NOT_PLAIN = [
    # PostgreSQL may read t.name as the call name(t) (issue 33): sqlglot's analysis decides.
    "SELECT c.name FROM customers c",
    "SELECT id FROM users ORDER BY users.evil",
    "DELETE FROM events",
    "SELECT * FROM users; DROP TABLE events",
    "WITH gone AS (DELETE FROM events RETURNING *) SELECT count(*) FROM gone",
    "SELECT * INTO backup FROM users",
    "SELECT * FROM users FOR UPDATE",
    "SELECT nextval('s')",
    "SELECT pg_terminate_backend(42)",
    "SELECT * FROM users -- a comment",
    "SELECT * FROM users /* a comment */",
    "SELECT /*! 1 */ 2",
    'SELECT * FROM "Users"',
    "SELECT * FROM `users`",
    "SELECT E'\\x41'",
    "SELECT 'a\\'b' FROM t",
    "SELECT * FROM users WHERE id = $1",
    "SELECT * FROM (SELECT 1) AS x",
    "SELECT * FROM t WHERE id IN (SELECT id FROM secrets)",
    "SELECT extract(year FROM now())",
    "SELECT * FROM generate_series(1, 3)",
    "SELECT 1 UNION SELECT 2",
    "SELECT count(*) OVER () FROM t",
    "EXPLAIN ANALYZE DELETE FROM t",
    "SELECT * FROM a.b.c.d",
    "SELECT a b c FROM t",
    "SELECT FROM t",
    "SELECT",
    "SELECT 1 LIMIT ALL",
]


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_anything_else_goes_to_sqlglot(text: str) -> None:
    assert plain_query(text, DEFAULT_DIALECT) is None


def test_other_dialects_and_long_text_go_to_sqlglot() -> None:
    assert plain_query("SELECT 1", "tsql") is None
    assert plain_query("SELECT " + " + ".join(["1"] * 10_000), "postgres") is None


# -- generated queries --------------------------------------------------------------------

NAMES = ["id", "name", "amount", "kind", "created_at", "a", "b", "users", "events", "t1", "x_y"]
name = st.sampled_from(NAMES)
column = st.one_of(name, st.builds(lambda t, c: f"{t}.{c}", name, name))
literal = st.one_of(
    st.integers(0, 10_000).map(str),
    st.sampled_from(["1.5", "'x'", "'it''s'", "NULL", "TRUE", "interval '3 days'"]),
)
function = st.sampled_from(sorted(PURE_FUNCTIONS))


def call(function: str, arguments: list[str]) -> str:
    """A call, of the right arity most of the time (the reader must refuse the others)."""
    fewest, most = PURE_FUNCTIONS[function]
    if len(arguments) % 4 != 3:  # now and then, keep a wrong number of arguments
        arguments = (arguments * most)[: max(fewest, min(len(arguments), most))]
        arguments += ["1"] * (fewest - len(arguments))
    return f"{function}({', '.join(arguments)})"


def expressions() -> st.SearchStrategy[str]:
    base = st.one_of(column, literal)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.builds(lambda a, op, b: f"{a} {op} {b}", inner, st.sampled_from(
                ["+", "-", "*", "/", "=", "<>", "<", ">=", "AND", "OR", "||"]), inner),
            st.builds(call, function, st.lists(inner, min_size=0, max_size=3)),
            st.builds(lambda a: f"({a})", inner),
            st.builds(lambda a: f"NOT {a}", inner),
            st.builds(lambda a, b: f"CASE WHEN {a} THEN {b} ELSE NULL END", inner, inner),
            st.builds(lambda a: f"{a} IS NOT NULL", inner),
            st.builds(lambda a, b, c: f"{a} BETWEEN {b} AND {c}", inner, inner, inner),
            st.builds(lambda a, b: f"{a} IN ({b}, 1)", inner, inner),
            st.builds(lambda a: f"CAST({a} AS int)", inner),
            st.builds(lambda a: f"{a}::text", inner),
        )  # fmt: skip

    return st.recursive(base, extend, max_leaves=6)


def table() -> st.SearchStrategy[str]:
    return st.builds(
        lambda parts, alias: ".".join(parts) + alias,
        st.lists(name, min_size=1, max_size=2),
        st.sampled_from(["", " x", " AS y"]),
    )


@st.composite
def queries(draw: st.DrawFn) -> str:
    expression = expressions()
    items = draw(st.lists(st.one_of(st.just("*"), expression), min_size=1, max_size=3))
    text = "SELECT " + ", ".join(items)
    if draw(st.booleans()):
        text += " FROM " + draw(table())
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(["JOIN", "LEFT JOIN", "INNER JOIN", ","]))
            text += f" {kind} {draw(table())}"
            if kind != ",":
                text += f" ON {draw(expression)}"
    if draw(st.booleans()):
        text += f" WHERE {draw(expression)}"
    if draw(st.booleans()):
        text += f" GROUP BY {draw(expression)}"
    if draw(st.booleans()):
        text += f" ORDER BY {draw(expression)} {draw(st.sampled_from(['', 'ASC', 'DESC']))}"
    if draw(st.booleans()):
        text += f" LIMIT {draw(st.integers(0, 100))}"
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), st.sampled_from(sorted(DIALECTS)))
def test_sqlglot_agrees_on_generated_queries(text: str, dialect: str) -> None:
    sqlglot_agrees(text, dialect)


INSERTS = [*sorted(SQLGLOT_KEYWORDS), "(", ")", ",", ";", ".", "*", "'", "--", "$1", "@x", "#"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), st.lists(st.tuples(st.integers(0, 400), st.sampled_from(INSERTS)), max_size=3))
def test_sqlglot_agrees_when_words_are_thrown_in(text: str, inserts: list[tuple[int, str]]) -> None:
    words = text.split(" ")
    for position, word in inserts:
        words.insert(position % (len(words) + 1), word)
    sqlglot_agrees(" ".join(words), DEFAULT_DIALECT)


def test_a_plain_query_does_not_import_sqlglot() -> None:
    code = (
        "import sys\n"
        "from agentledger.shell.sql import analyse_sql, classify_sql\n"
        "from agentledger.shell.classifier import default_knowledge\n"
        "a = analyse_sql('SELECT count(*) FROM invoices WHERE amount > 3')\n"
        "assert a.tables == {'invoices'} and a.error is None, a\n"
        "assert classify_sql('select 1', default_knowledge().sql)[0] == 'read-only'\n"
        "assert 'sqlglot' not in sys.modules\n"
        "assert analyse_sql('DELETE FROM invoices').findings\n"
        "assert 'sqlglot' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_gate_classifies_psql_of_a_plain_query_read_only() -> None:
    from agentledger.shell.classifier import default_knowledge

    assert classify_sql("select 1", default_knowledge().sql) == (
        "read-only",
        "SQL: 1 read-only statement(s)",
    )


def test_knowledge_that_names_a_function_as_mutating_sends_the_query_to_sqlglot() -> None:
    from agentledger.shell.sql import SqlRules

    rules = SqlRules(frozenset(), frozenset(), frozenset(), frozenset({"lower"}))
    analysis = analyse_sql("SELECT lower(name) FROM users", DEFAULT_DIALECT, rules)
    assert [finding.kind for finding in analysis.findings] == ["mutating"]
    assert analysis.classification()[0] == "mutating"
    assert analyse_sql("SELECT upper(name) FROM users", DEFAULT_DIALECT, rules).findings == []
