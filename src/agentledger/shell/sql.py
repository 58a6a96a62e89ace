"""Classify SQL (psql -c, mysql -e, sqlite3, here-documents, a fixture's SQL output) by parsing it.

The SQL is parsed with sqlglot, in the dialect of the client that runs it; sqlglot is imported
only when a command holds SQL that is not a plain query (`sql_plain` reads one SELECT of a
small grammar without it), so the start-up of the gated shell and the guard does not pay for
it. Every
statement, and everything nested in one (a data-modifying CTE, `SELECT INTO`, a function such
as `pg_terminate_backend`), counts: the class is the most severe found. It fails closed: SQL
that does not parse, or longer than `MAX_SQL_CHARS`, is unknown, never read-only.

Two readers share the analysis. The gated shell wants a class (read-only, mutating,
destructive, unknown): a session statement (`BEGIN`, `SET search_path`) or a plan (`EXPLAIN`)
is read-only to it. The fixture property `sql_read_only` wants a single plain query and fails on
any `finding`, whatever its class. psql's backslash commands are classified here too (`\\dt` is
read-only); the parser never sees them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentledger.shell.knowledge import DESTRUCTIVE, MUTATING, RANK, READ_ONLY, UNKNOWN
from agentledger.shell.sql_columns import (
    ATTRIBUTE_DIALECTS,
    Columns,
    attribute_finding,
    enclosing_cte,
)
from agentledger.shell.sql_plain import plain_query
from agentledger.shell.sql_pragmas import pragma_kind
from agentledger.shell.sql_rules import (
    EXPLAIN_OPTIONS,
    EXPLAIN_RUNS,
    GLOBAL_SETTINGS,
    META_READ_ONLY,
    TABLE_READERS,
    TYPED_UNSAFE,
    SqlRules,
    sql_rules,
)
from agentledger.shell.sql_types import ColumnTypes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_DIALECT",
    "MAX_SQL_CHARS",
    "SqlAnalysis",
    "SqlFinding",
    "SqlRules",
    "analyse_sql",
    "classify_sql",
    "sql_rules",
    "table_name",
]

DEFAULT_DIALECT = "postgres"
_SEARCH_PATH = re.compile(r'\b"?search_path"?\b', re.IGNORECASE)
SEARCH_PATH_WHY = (
    "search_path decides which schema's function or operator a name calls (a schema listed "
    "before pg_catalog shadows lower() or +): the gate cannot know what later SQL runs"
)
MAX_SQL_CHARS = 100_000
"""Longer SQL is not parsed (a parser's time grows with it): it classifies as unknown."""
SQL_TIME_LIMIT = 2.0
"""Seconds one text may take to parse and analyse; past them it is unknown, never read-only."""


class SqlFinding:
    """Something in the SQL that is not a plain query: its class, why, and the SQL at fault."""

    __slots__ = ("kind", "sql", "why")

    def __init__(self, kind: str, why: str, sql: str) -> None:
        self.kind = kind
        self.why = why
        self.sql = sql

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SqlFinding) and (self.kind, self.why, self.sql) == (
            other.kind, other.why, other.sql,
        )  # fmt: skip

    def __hash__(self) -> int:
        return hash((self.kind, self.why, self.sql))

    def __repr__(self) -> str:
        return f"SqlFinding(kind={self.kind!r}, why={self.why!r}, sql={self.sql!r})"


class SqlAnalysis:
    """What one SQL text does: its statements, what is not a plain query, the tables it reads."""

    __slots__ = ("error", "findings", "opaque", "statements", "tables")

    def __init__(self) -> None:
        self.statements = 0
        self.findings: list[SqlFinding] = []
        self.tables: set[str] = set()
        self.error: str | None = None
        self.opaque: set[str] = set()
        """Functions called that may read tables `tables` cannot name (`query_to_xml`,
        `dblink`, a user's function): a check of the tables read cannot pass them."""

    @property
    def writes(self) -> list[tuple[str, str]]:
        """(why, SQL) of every finding: what keeps the text from being one read-only query."""
        return [(finding.why, finding.sql) for finding in self.findings]

    def classification(self) -> tuple[str, str]:
        """The class of the text for the gated shell, and why: the most severe finding."""
        if self.error is not None:
            return UNKNOWN, self.error
        if not self.statements and not self.findings:
            return READ_ONLY, "SQL: no statement"
        worst = max(self.findings, key=lambda finding: RANK[finding.kind], default=None)
        if worst is None or worst.kind == READ_ONLY:
            return READ_ONLY, f"SQL: {self.statements} read-only statement(s)"
        return worst.kind, f"SQL: {worst.why}"


def classify_sql(
    text: str, rules: dict[str, Any], dialect: str = DEFAULT_DIALECT
) -> tuple[str, str]:
    """The class of the SQL `text` and why, using the `sql` rules of the command knowledge.

    psql backslash commands are classified line by line; the rest is parsed in `dialect`.
    """
    found: list[tuple[str, str]] = []
    if dialect == "mysql":
        # The mysql client's own commands run anywhere in a line (`SELECT 1; \T file`):
        # `\T` tees to a file, `\!` runs a shell, `\.` reads a script.
        unquoted = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`", "''", text)
        command = re.search(r"\\[A-Za-z!.#?]", unquoted)
        if command:
            return UNKNOWN, f"mysql client command {command.group(0)} runs outside SQL"
    sql_lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("\\"):
            found.append(_meta(stripped))
        else:
            sql_lines.append(line)
    sql = "\n".join(sql_lines)
    if sql.strip():
        found.append(analyse_sql(sql, dialect, sql_rules(rules)).classification())
    if not found:
        return READ_ONLY, "SQL: no statement"
    return max(found, key=lambda pair: RANK[pair[0]])


def _meta(line: str) -> tuple[str, str]:
    command = line.split()[0]
    if command in META_READ_ONLY or command.startswith("\\d"):
        return READ_ONLY, f"psql {command} is read-only"
    if command == "\\copy":
        if " from " in line.lower():
            return MUTATING, "psql \\copy ... from writes a table"
        return READ_ONLY, "psql \\copy ... to reads a table"
    return UNKNOWN, f"psql {command} runs something the gate cannot see"


@lru_cache(maxsize=256)
def analyse_sql(
    text: str,
    dialect: str = DEFAULT_DIALECT,
    rules: SqlRules | None = None,
    *,
    with_sqlglot: bool = False,
    columns: Columns = frozenset(),
    types: ColumnTypes = frozenset(),
) -> SqlAnalysis:
    """Parse `text` and find what is not a plain query, and the tables it reads.

    `error` is set when it does not parse, is too long to parse or takes longer than
    `SQL_TIME_LIMIT`; `rules` default to the packaged command knowledge's. A plain SELECT is
    read without sqlglot (`sql_plain`), unless `with_sqlglot`; the answer is the same.
    `columns` are (relation, column) pairs known besides the system catalogs' (`sql_columns`):
    in PostgreSQL `t.name` is read-only only when `name` is known to be a column of `t`.
    `types` are (relation, column, type) triples declared for the tables' columns: a call
    on such a column is proven to resolve to a built-in only for its type (`sql_types`).
    """
    analysis = SqlAnalysis()
    if len(text) > MAX_SQL_CHARS:
        analysis.error = f"SQL of {len(text)} characters is longer than {MAX_SQL_CHARS} to parse"
        return analysis
    if dialect == DEFAULT_DIALECT:
        from agentledger.shell.sql_operators import unknown_operator

        operator = unknown_operator(text, dialect)
        if operator is not None:
            why = f"the operator {operator} is not built in: a schema's operator calls a function"
            analysis.findings.append(SqlFinding(UNKNOWN, why, text[:300]))
            analysis.opaque.add(f"operator {operator}")
            return analysis
    plain = None if with_sqlglot or types else plain_query(text, dialect)
    if plain is not None and rules is not None and plain.functions & rules.functions:
        # Knowledge of the caller's own says one of these functions changes state. (The
        # packaged knowledge lists none of sql_plain's pure functions: a test holds it, so
        # the guard need not load it.)
        plain = None
    if plain is not None:
        # One plain SELECT, read without sqlglot: the answer sqlglot's analysis would give.
        analysis.statements = 1
        analysis.tables.update(plain.tables)
        return analysis
    rules = rules if rules is not None else _default_rules()
    return _analysed_in_time(text, dialect, rules, columns, types)


def _default_rules() -> SqlRules:
    from agentledger.shell.classifier import default_knowledge

    return sql_rules(default_knowledge().sql)


def _analyse(
    text: str,
    dialect: str,
    rules: SqlRules,
    analysis: SqlAnalysis,
    columns: Columns,
    types: ColumnTypes = frozenset(),
) -> None:
    if "/*!" in text:
        # MySQL runs the text of /*! ... */ comments: what a parser skips, the server executes.
        why = "a MySQL executable comment /*! ... */ runs its content"
        analysis.findings.append(SqlFinding(UNKNOWN, why, text))
    statements = _parse(text, dialect, analysis)
    if statements is None:
        return
    analysis.statements = len(statements)
    for statement in statements:
        if not _is_statement(statement):
            # sqlglot read an unknown statement as an expression: `FLUSH TABLES` as the column
            # FLUSH aliased TABLES, `CHECKPOINT` likewise; name it by its first word.
            first = _sql_text(statement, dialect).split(None, 1)[0].upper()
            shown = text.strip() if len(statements) == 1 else _sql_text(statement, dialect)
            kind = _keyword_kind(first, rules, dialect)
            analysis.findings.append(
                SqlFinding(kind, f"{first} is not a read-only query", shown[:300])
            )
            continue
        _statement(statement, dialect, rules, analysis, 0, columns)
    if dialect in ATTRIBUTE_DIALECTS:
        _overload(analysis, text, types)


def _analysed_in_time(
    text: str, dialect: str, rules: SqlRules, columns: Columns, types: ColumnTypes
) -> SqlAnalysis:
    """`_analyse` in a worker thread, waited for at most SQL_TIME_LIMIT seconds.

    A thread rather than a signal: an exception thrown into sqlglot at an arbitrary point
    (in the middle of an import or of a cache being filled) could leave it broken for every
    later query. A worker that is late is abandoned (a daemon: it ends with the process, and
    MAX_SQL_CHARS bounds its work) and its answer is never used.
    """
    import threading

    _load_parser(dialect)  # the time is the analysis's, not the import's
    analysis = SqlAnalysis()
    finished = threading.Event()

    def work() -> None:
        try:
            _analyse(text, dialect, rules, analysis, columns, types)
        except Exception as exc:
            analysis.error = f"the SQL could not be analysed ({type(exc).__name__}: {exc})"
        finally:
            finished.set()

    threading.Thread(target=work, name="agentledger-sql", daemon=True).start()
    if finished.wait(SQL_TIME_LIMIT):
        return analysis
    late = SqlAnalysis()
    late.error = f"the SQL was not analysed within {SQL_TIME_LIMIT:g} s"
    return late


def _load_parser(dialect: str) -> None:
    """Import sqlglot and the dialect's parser (an unknown dialect is `_parse`'s to report)."""
    from contextlib import suppress

    import sqlglot

    with suppress(ValueError, KeyError):
        sqlglot.Dialect.get_or_raise(dialect)


def _parse(text: str, dialect: str, analysis: SqlAnalysis) -> list[Any] | None:
    import logging

    import sqlglot
    from sqlglot.errors import SqlglotError

    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # "falling back to parsing as a Command" is our finding
    try:
        return [
            item
            for item in sqlglot.parse(text, read=dialect)
            # `SELECT 1; -- a note`: what follows the last semicolon is a comment, not a statement
            if item is not None and not isinstance(item, sqlglot.exp.Semicolon)
        ]
    except (SqlglotError, RecursionError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        analysis.error = f"the SQL does not parse ({dialect}): {first[:200]}"
        return None
    finally:
        logger.setLevel(level)


def _overload(analysis: SqlAnalysis, text: str, types: ColumnTypes) -> None:
    """A finding when a call or operator of a built-in's name is not proven to resolve to a
    built-in: a schema's overload may run (`sql_types`)."""
    from agentledger.shell.sql_rules import unproven_name
    from agentledger.shell.sql_types import unproven_call

    why = unproven_call(text, types)
    if why is not None:
        analysis.findings.append(SqlFinding(UNKNOWN, why, text[:300]))
        analysis.opaque.add(unproven_name(why))


# Keywords of another meaning in one dialect: MySQL's RESET MASTER/REPLICA/PERSIST deletes.
_DIALECT_KEYWORDS = {"mysql": {"RESET": MUTATING}}


def _keyword_kind(keyword: str, rules: SqlRules, dialect: str = "") -> str:
    """The class of a statement known only by its first keyword."""
    special = _DIALECT_KEYWORDS.get(dialect, {}).get(keyword)
    if special is not None:
        return special
    for kind, words in (
        (DESTRUCTIVE, rules.destructive),
        (MUTATING, rules.mutating),
        (READ_ONLY, rules.read_only),
    ):
        if keyword in words:
            return kind
    return UNKNOWN


def _is_statement(node: Any) -> bool:
    """False for what sqlglot makes of an unknown statement: a bare column, alias or name."""
    from sqlglot import exp

    return not isinstance(node, exp.Column | exp.Alias | exp.Identifier | exp.Literal)


def _statement(
    node: Any, dialect: str, rules: SqlRules, analysis: SqlAnalysis, depth: int, columns: Columns
) -> None:
    from sqlglot import exp

    if isinstance(node, exp.Command):
        _command(node, dialect, rules, analysis, depth, _sql_text(node, dialect), columns)
        return
    attributes = dialect in ATTRIBUTE_DIALECTS
    readable = (
        exp.Select, exp.SetOperation, exp.Subquery, exp.Values, exp.Describe, exp.Show, exp.Copy,
    )  # fmt: skip
    if not isinstance(node, readable):
        found = _write(node, exp, rules)
        kind, top = found if found is not None else (UNKNOWN, "is not a read-only query")
        said = top if top[0].isupper() else f"{_statement_name(node)} {top}"
        analysis.findings.append(SqlFinding(kind, said, _sql_text(node, dialect)))
    for inner in node.walk():
        found = _write(inner, exp, rules)
        if found is not None and isinstance(inner, exp.Func) and found[0] != READ_ONLY:
            analysis.opaque.add(_sql_text(inner, dialect).split("(", 1)[0].lower() + "()")
        if found is not None and inner is not node:
            where = "" if isinstance(inner, exp.Func) else " inside the statement"
            kind, why = found
            analysis.findings.append(SqlFinding(kind, why + where, _sql_text(inner, dialect)))
        elif found is not None and isinstance(node, readable):
            kind, why = found
            analysis.findings.append(SqlFinding(kind, why, _sql_text(node, dialect)))
        if attributes and isinstance(inner, exp.Column | exp.Dot):
            call = attribute_finding(inner, exp, columns, _identifier)
            if call is not None:
                analysis.findings.append(SqlFinding(UNKNOWN, call, _sql_text(inner, dialect)))
                analysis.opaque.add(_sql_text(inner, dialect))
        if isinstance(inner, exp.Anonymous) and inner.name.lower() in TABLE_READERS:
            _function_tables(inner, exp, analysis, dialect)
        if isinstance(inner, exp.Table) and isinstance(inner.this, exp.Identifier):
            parts = [
                _identifier(inner.args[key])
                for key in ("catalog", "db", "this")
                if inner.args.get(key) is not None and str(inner.args[key].name)
            ]
            if len(parts) == 1 and _names_a_cte(inner, parts[0]):
                continue
            analysis.tables.add(".".join(parts))


def _names_a_cte(table: Any, name: str) -> bool:
    """True when a WITH clause around `table` (in its own scope or an outer one) defines `name`.

    Scoped, so that `SELECT * FROM secrets, (WITH secrets AS (...) ...)` still reads the
    table `secrets`.
    """
    return enclosing_cte(table, name) is not None


def _write(node: Any, exp: Any, rules: SqlRules) -> tuple[str, str] | None:
    """The class of `node` and why it is not part of a plain query, or None when it is."""
    if isinstance(node, exp.Copy):
        return MUTATING, "COPY moves data between tables and files or programs"
    if isinstance(node, exp.Select):
        if node.args.get("into"):
            return MUTATING, "SELECT INTO creates a table"
        if node.args.get("locks"):
            # A lock for the length of a transaction: the gate lets it read, a query check not.
            return READ_ONLY, "SELECT ... FOR UPDATE/SHARE locks rows (needs write access)"
        return None
    if isinstance(node, exp.Func):
        return _function(node, exp, rules)
    schema_defined = _schema_defined(node, exp)
    if schema_defined is not None:
        return UNKNOWN, schema_defined
    name = _statement_name(node)
    if isinstance(node, exp.Drop | exp.TruncateTable):
        return (
            DESTRUCTIVE,
            f"{name} {'writes rows' if name == 'TRUNCATE' else 'changes the schema'}",
        )
    if isinstance(node, exp.Delete):
        # Without WHERE it empties the table.
        kind = DESTRUCTIVE if node.args.get("where") is None else MUTATING
        return kind, f"{name} writes rows"
    if isinstance(node, exp.Set):
        if _SEARCH_PATH.search(node.sql(dialect="postgres")):
            return UNKNOWN, f"{name} {SEARCH_PATH_WHY}"
        scopes = {str(item.args.get("kind") or "").upper() for item in node.expressions}
        scopes |= {
            str(parameter.args.get("kind") or "").upper()
            for parameter in node.find_all(exp.SessionParameter)
        }  # MySQL's `SET @@global.x = 1`, `@@persist.x`
        if scopes & GLOBAL_SETTINGS:
            return MUTATING, f"{name} changes the server's settings"
        return READ_ONLY, f"{name} changes the session"
    if isinstance(node, exp.Pragma):
        return pragma_kind(node, name)
    effects = (
        ((exp.Insert, exp.Update, exp.Merge), MUTATING, "writes rows"),
        ((exp.Create, exp.Alter, exp.Comment), MUTATING, "changes the schema"),
        ((exp.Grant, exp.Revoke), MUTATING, "changes privileges"),
        ((exp.Use, exp.Transaction, exp.Commit, exp.Rollback, exp.Declare), READ_ONLY,
         "changes the session"),
        ((exp.Analyze, exp.Kill, exp.Cache, exp.Uncache, exp.Refresh, exp.LoadData, exp.Attach,
          exp.Detach, exp.Export), MUTATING, "is not a read-only query"),
        ((exp.Command,), UNKNOWN, "is not a read-only query"),
    )  # fmt: skip
    for kinds, kind, effect in effects:
        if isinstance(node, kinds):
            return kind, f"{name} {effect}"
    return None


def _schema_defined(node: Any, exp: Any) -> str | None:
    """Why `node` may run a function of the database's schema that the query does not name
    (issue 33, cause 9), or None: a cast to a type that is not built in (a domain's CHECK or
    a user cast calls functions), an operator named by OPERATOR(...) (a user operator is a
    function), a TABLESAMPLE method other than the built-in BERNOULLI and SYSTEM."""
    if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.USERDEFINED:
        return f"the type {node.sql()} is not built in: a cast to it may call a function"
    if isinstance(node, exp.Operator):
        return "OPERATOR(...) names an operator a schema may define (it calls a function)"
    if isinstance(node, exp.TableSample):
        method = str(node.args.get("method") or "").upper()
        if method and method not in ("BERNOULLI", "SYSTEM"):
            return f"the TABLESAMPLE method {method.lower()} is not built in"
    return None


def _function(node: Any, exp: Any, rules: SqlRules) -> tuple[str, str] | None:
    """A function call is read-only only when it is known to be: a function of sqlglot's own
    vocabulary (the SQL standard's and the dialects' built-ins) or of the knowledge's list of
    reading functions, and not one a user's schema may define (`public.lower(x)`)."""
    anonymous = isinstance(node, exp.Anonymous)
    name = (node.name if anonymous else node.sql_name()).lower()
    if name in rules.functions:
        return MUTATING, f"the function {name}() changes state or reaches outside the query"
    if isinstance(node.parent, exp.Dot) and node.parent.expression is node:
        schema = node.parent.this.sql().lower()
        if schema not in ("pg_catalog", "information_schema"):
            return UNKNOWN, f"the function {schema}.{name}() is not known to be read-only"
    if anonymous and name not in rules.reading_functions and name not in TABLE_READERS:
        return UNKNOWN, f"the function {name}() is not known to be read-only"
    if not anonymous and node.sql_name() in TYPED_UNSAFE:
        return UNKNOWN, f"the function {name}() reads files or calls out"
    return None


def _function_tables(node: Any, exp: Any, analysis: SqlAnalysis, dialect: str) -> None:
    """The table a `table_to_xml`-like function reads, or a finding when it is not a name."""
    first = node.expressions[0] if node.expressions else None
    if isinstance(first, exp.Cast):
        first = first.this
    if isinstance(first, exp.Literal) and first.is_string:
        name = table_name(str(first.this))
        if name is not None:
            analysis.tables.add(name)
            return
    why = f"{node.name}() reads a table named at run time"
    analysis.findings.append(SqlFinding(UNKNOWN, why, _sql_text(node, dialect)))


def table_name(text: str) -> str | None:
    """The table a regclass literal names (`users`, `public.users`, `"Users"`), folded as
    PostgreSQL folds it: unquoted parts to lower case, quoted parts kept; None if not a name."""
    parts = re.findall(r'"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*)', text)
    rebuilt = ".".join(f'"{q}"' if q else plain for q, plain in parts)
    if not parts or rebuilt.replace('""', '"') != text.strip().replace('""', '"'):
        return None
    return ".".join(q.replace('""', '"') if q else plain.lower() for q, plain in parts)


def _identifier(node: Any) -> str:
    """A name as the database resolves it: a quoted identifier keeps its case (`"Invoices"`
    is not `invoices`), an unquoted one is folded to lower case."""
    from sqlglot import exp

    if isinstance(node, exp.Identifier):
        return str(node.this) if node.quoted else str(node.this).lower()
    return str(getattr(node, "name", node)).lower()


def _statement_name(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Command):
        return str(node.this).upper()
    names = {
        "TruncateTable": "TRUNCATE", "Select": "SELECT", "LoadData": "LOAD DATA",
        "Transaction": "BEGIN", "Lock": "a row lock",
    }  # fmt: skip
    name = type(node).__name__
    if name in ("Drop", "Create", "Alter") and node.args.get("kind"):
        return f"{name.upper()} {str(node.args['kind']).upper()}"
    return names.get(name, name.upper())


def _command(
    node: Any,
    dialect: str,
    rules: SqlRules,
    analysis: SqlAnalysis,
    depth: int,
    shown: str,
    columns: Columns,
) -> None:
    """A statement sqlglot kept as raw text: SHOW reads, EXPLAIN is its statement (planned
    only, unless ANALYZE runs it), anything else is classified by its keyword."""
    keyword = str(node.this).upper()
    expression = node.args.get("expression")
    rest = getattr(expression, "name", expression) if expression is not None else ""
    rest = rest if isinstance(rest, str) else str(rest)
    if keyword == "SHOW":
        return
    if keyword == "SET" and _SEARCH_PATH.search(rest):
        analysis.findings.append(SqlFinding(UNKNOWN, f"SET {SEARCH_PATH_WHY}", shown))
        return
    if keyword == "EXPLAIN" and depth == 0:
        options = EXPLAIN_OPTIONS.match(rest)
        runs = options is not None and EXPLAIN_RUNS.search(options.group(0)) is not None
        inner = analyse_sql(EXPLAIN_OPTIONS.sub("", rest, count=1), dialect, rules, columns=columns)
        if inner.error:
            why = f"EXPLAIN of SQL that does not parse: {inner.error}"
            analysis.findings.append(SqlFinding(UNKNOWN, why, shown))
        for finding in inner.findings:
            if runs:
                why = f"EXPLAIN ANALYZE runs the statement: {finding.why}"
                analysis.findings.append(SqlFinding(finding.kind, why, finding.sql))
            elif finding.kind == UNKNOWN:
                # A function the schema may define (`wipe(1)`, `lower(5)` with a schema's
                # lower(int)): planning runs an IMMUTABLE one of constant arguments.
                why = f"EXPLAIN plans the statement, which may run a function: {finding.why}"
                analysis.findings.append(SqlFinding(UNKNOWN, why, finding.sql))
            else:
                # Planned, not run: harmless to the gate, still not a plain query.
                analysis.findings.append(SqlFinding(READ_ONLY, finding.why, finding.sql))
        analysis.tables.update(inner.tables)
        return
    kind = _keyword_kind(keyword, rules, dialect)
    analysis.findings.append(SqlFinding(kind, f"{keyword} is not a read-only query", shown))


def _sql_text(node: Any, dialect: str) -> str:
    try:
        return str(node.sql(dialect=dialect))[:300]
    except Exception:
        return type(node).__name__
