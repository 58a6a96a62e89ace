"""Recognise a plain query without sqlglot: one SELECT of a small, well-understood grammar.

Importing sqlglot costs a short-lived process (the guard, the gated shell) a few hundred
milliseconds, most of its run. Most SQL an agent proposes is a plain query: a select list,
FROM and JOINs of named tables, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT. `plain_query` reads
exactly that grammar and answers with the tables it reads and the functions it calls; for
anything else (a word sqlglot knows as a keyword outside this grammar, a subquery, a CTE, a
comment, a quoted identifier, a parameter, a string with a backslash, a function not known to
be pure, a second statement) it answers None, and the caller parses the text with sqlglot. So
it fails closed: it never calls read-only what it does not fully understand, and a test
checks that sqlglot's analysis agrees on every query it accepts.
"""

from __future__ import annotations

import re

__all__ = ["DIALECTS", "PURE_FUNCTIONS", "SQLGLOT_KEYWORDS", "PlainQuery", "plain_query"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


DIALECTS = frozenset({"postgres", "mysql", "sqlite"})
"""The dialects whose reading of this grammar is the same (quoting and escapes are refused)."""

_MANY = 100
PURE_FUNCTIONS: dict[str, tuple[int, int]] = {
    "count": (1, 1), "sum": (1, 1), "avg": (1, 1), "min": (1, 1), "max": (1, 1),
    "coalesce": (1, _MANY), "nullif": (2, 2), "lower": (1, 1), "upper": (1, 1),
    "length": (1, 1), "abs": (1, 1), "round": (1, 2), "floor": (1, 1), "ceil": (1, 1),
    "greatest": (1, _MANY), "least": (1, _MANY), "concat": (1, _MANY), "now": (0, 0),
}  # fmt: skip
"""Functions a plain query may call (they read their arguments and change nothing), with the
number of arguments sqlglot accepts for each (fewest, most)."""

SQLGLOT_KEYWORDS = _words(
    """
    ALL ALTER ANALYZE AND ANTI ANY APPLY ARRAY AS ASC ASOF ATTACH AUTOINCREMENT AUTO_INCREMENT
    BEGIN BETWEEN BIGDECIMAL BIGINT BIGNUM BIGNUMERIC BIGSERIAL BINARY BIT BLOB BOOL BOOLEAN
    BPCHAR BYTE BYTEA CACHE CALL CASE CHAR CHARACTER CHARSET CLOB COLLATE COLUMN COMMENT COMMIT
    CONSTRAINT COPY CREATE CROSS CSTRING CUBE CURRENT_CATALOG CURRENT_DATE CURRENT_SCHEMA
    CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER DATABASE DATE DATEMULTIRANGE DATERANGE DATETIME
    DEC DECFLOAT DECIMAL DECLARE DEFAULT DELETE DESC DESCRIBE DETACH DISTINCT DISTINCTROW DIV DO
    DOUBLE DROP ELSE END ENUM ESCAPE EXCEPT EXEC EXECUTE EXISTS EXPLAIN FALSE FETCH FILE FILTER
    FIRST FIXED FLOAT FOR FORCE FORMAT FROM FULL FUNCTION GEOGRAPHY GEOMETRY GLOB GRANT HAVING
    HSTORE HUGEINT IGNORE ILIKE IN INDEX INET INNER INOUT INSERT INT INTEGER INTERSECT INTERVAL
    INTO IS ISNULL JOIN JSON JSONB KEEP KEY KILL LATERAL LEFT LIKE LIMIT LIST LOAD LOCALTIME
    LOCALTIMESTAMP LOCK LONG LONGBLOB LONGTEXT LONGVARCHAR MAP MATCH MEDIUMBLOB MEDIUMINT
    MEDIUMTEXT MERGE MOD MONEY NAME NAMESPACE NATURAL NCHAR NEXT NOT NOTNULL NULL NULLABLE
    NUMBER NUMERIC NUMMULTIRANGE NUMRANGE NVARCHAR OBJECT OFFSET OID ON ONLY OPERATOR OPTIMIZE
    OR ORDINALITY OUT OUTER OVER OVERLAPS OVERWRITE PARTITION PARTITIONED_BY PERCENT PIVOT POINT
    PRAGMA PREPARE PROCEDURE QUALIFY RANGE REAL RECURSIVE REF REFERENCES REFRESH REGCLASS
    REGCOLLATION REGCONFIG REGDICTIONARY REGEXP REGNAMESPACE REGOPER REGOPERATOR REGPROC
    REGPROCEDURE REGROLE REGTYPE REINDEX RELEASE RENAME REPLACE RESET RETURNING REVOKE RIGHT
    RLIKE ROLLBACK ROLLUP ROW ROWS SAVEPOINT SCHEMA SELECT SEMI SEPARATOR SEQUENCE SERIAL
    SESSION SESSION_USER SET SETTINGS SHORT SHOW SIGNED SMALLINT SMALLSERIAL SOME START STR
    STRAIGHT_JOIN STRING STRUCT TABLE TABLESAMPLE TEMP TEMPORARY TEXT THEN TIME TIMESTAMP
    TIMESTAMPLTZ TIMESTAMPNTZ TIMESTAMPTZ TIMESTAMP_LTZ TIMESTAMP_NTZ TIMETZ TIME_NS TINYBLOB
    TINYINT TINYTEXT TRIGGER TRUE TRUNCATE TSMULTIRANGE TSRANGE TSTZMULTIRANGE TSTZRANGE TYPE
    UHUGEINT UINT UNCACHE UNION UNIQUE UNKNOWN UNNEST UNPIVOT UNSIGNED UPDATE USE USING UUID
    VACUUM VALUES VARBINARY VARCHAR VARIADIC VARIANT VECTOR VIEW VOLATILE WHEN WHERE WINDOW WITH
    XML XOR YEAR _ASCII _BINARY _EUCJPMS _EUCKR _GBK _GREEK _HEBREW _MACCE _MACROMAN _SJIS _UJIS
    """
)
"""The single-word keywords of sqlglot's postgres, mysql and sqlite tokenizers (a test keeps
this list a superset of the installed sqlglot's): a word among them that this grammar does
not use sends the text to sqlglot."""

_GRAMMAR = _words(
    """
    SELECT DISTINCT ALL AS FROM JOIN INNER LEFT RIGHT FULL OUTER CROSS ON USING WHERE AND OR
    NOT IN IS NULL TRUE FALSE LIKE ILIKE BETWEEN GROUP BY HAVING ORDER ASC DESC NULLS FIRST
    LAST LIMIT OFFSET CASE WHEN THEN ELSE END CAST INTERVAL
    """
)
_TYPES = _words("INT INTEGER BIGINT SMALLINT TEXT VARCHAR NUMERIC DECIMAL BOOLEAN DATE")
"""Type names a cast may use (`x::int`, `CAST(x AS date)`)."""
_NAMES = frozenset({"NAME", "YEAR", "TYPE", "KEY"})
"""Keywords sqlglot reads as plain names where a column or an alias stands."""
_JOIN_WORDS = frozenset({"JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS"})
_CLAUSES = ("WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET")
_COMPARISONS = frozenset({"=", "<>", "!=", "<", ">", "<=", ">="})
_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z_0-9]))
    | (?P<str>'[^'\\]*(?:''[^'\\]*)*')
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op><>|!=|<=|>=|::|\|\||[-+*/%=<>(),.;])
    """,
    re.VERBOSE,
)
MAX_PLAIN_CHARS = 20_000
"""Longer text goes to sqlglot (which has its own limits): this reader is for typical queries."""


class PlainQuery:
    """A plain query: the tables it reads (lower case, `schema.table` as written) and the
    functions it calls."""

    __slots__ = ("functions", "tables")

    def __init__(self, tables: frozenset[str], functions: frozenset[str]) -> None:
        self.tables = tables
        self.functions = functions


Held = bool | str
"""Whether an expression holds a column (True), or the type of a constant the reader knows
(`now()`: "timestamptz", `interval '1 day'`: "interval"), or False: a constant of another."""


class _NotPlain(Exception):
    pass


def plain_query(text: str, dialect: str) -> PlainQuery | None:
    """The tables and functions of `text` when it is one plain SELECT; None for anything else
    (which the caller must analyse with sqlglot)."""
    if dialect not in DIALECTS or len(text) > MAX_PLAIN_CHARS:
        return None
    tokens = _tokens(text)
    if tokens is None or (dialect == "mysql" and ("op", "||") in tokens):
        return None  # MySQL reads || as OR
    reader = _Reader(tokens)
    try:
        reader.statement()
    except (_NotPlain, IndexError, RecursionError):
        return None
    return PlainQuery(frozenset(reader.tables), frozenset(reader.functions))


def _tokens(text: str) -> list[tuple[str, str]] | None:
    """(kind, text) of every token; None when a character is outside the grammar's tokens,
    a comment starts (`--`, `/*`), or a string is glued to a word (`E'...'`, `x'...'`)."""
    tokens: list[tuple[str, str]] = []
    position = 0
    previous = ""
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            return None
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "space":
            previous = kind
        else:
            if kind == "str" and previous in ("word", "str"):
                return None  # a prefixed or adjacent string literal
            if kind == "op" and value in ("-", "/") and text.startswith(("--", "/*"), position):
                return None
            if kind == "op" and value == "*" and text.startswith("*/", position):
                return None
            tokens.append((kind, value if kind != "word" else value.upper()))
            previous = kind
        position = match.end()
    tokens.append(("end", ""))
    return tokens


class _Reader:
    """Recursive descent over the tokens; raises _NotPlain at the first thing outside the
    grammar."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0
        self.tables: set[str] = set()
        self.functions: set[str] = set()

    # -- tokens --------------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        return self.tokens[self.at + ahead]

    def is_word(self, *words: str, ahead: int = 0) -> bool:
        kind, value = self.peek(ahead)
        return kind == "word" and value in words

    def is_op(self, *ops: str) -> bool:
        kind, value = self.peek()
        return kind == "op" and value in ops

    def take_word(self, *words: str) -> bool:
        if self.is_word(*words):
            self.at += 1
            return True
        return False

    def take_op(self, *ops: str) -> bool:
        if self.is_op(*ops):
            self.at += 1
            return True
        return False

    def expect_word(self, word: str) -> None:
        if not self.take_word(word):
            raise _NotPlain

    def expect_op(self, op: str) -> None:
        if not self.take_op(op):
            raise _NotPlain

    def name(self) -> str:
        """An unquoted identifier: a word that is not a keyword (but for a few plain names)."""
        kind, value = self.peek()
        if kind != "word" or (value in SQLGLOT_KEYWORDS and value not in _NAMES):
            raise _NotPlain
        if value in _GRAMMAR:
            raise _NotPlain
        self.at += 1
        return value.lower()

    # -- the statement -------------------------------------------------------------------

    def statement(self) -> None:
        self.expect_word("SELECT")
        self.take_word("DISTINCT", "ALL")
        self.comma_list(self.select_item)
        if self.take_word("FROM"):
            self.from_clause()
        if self.take_word("WHERE"):
            self.expression()
        if self.take_word("GROUP"):
            self.expect_word("BY")
            self.comma_list(self.expression)
        if self.take_word("HAVING"):
            self.expression()
        if self.take_word("ORDER"):
            self.expect_word("BY")
            self.comma_list(self.order_item)
        if self.take_word("LIMIT"):
            self.number()
        if self.take_word("OFFSET"):
            self.number()
        self.take_op(";")
        if self.peek()[0] != "end":
            raise _NotPlain

    def comma_list(self, item: object) -> None:
        assert callable(item)
        item()
        while self.take_op(","):
            item()

    def select_item(self) -> None:
        if self.take_op("*"):
            return
        self.expression()
        self.alias()

    def alias(self) -> None:
        """`AS name`, or a name alone that is not a word of the grammar."""
        explicit = self.take_word("AS")
        if explicit or (self.peek()[0] == "word" and not self.is_word(*_GRAMMAR)):
            self.name()

    def order_item(self) -> None:
        self.expression()
        self.take_word("ASC", "DESC")
        if self.take_word("NULLS") and not self.take_word("FIRST", "LAST"):
            raise _NotPlain

    def number(self) -> None:
        if self.peek()[0] != "num":
            raise _NotPlain
        self.at += 1

    # -- FROM ----------------------------------------------------------------------------

    def from_clause(self) -> None:
        self.table()
        while True:
            if self.take_op(","):
                self.table()
            elif self.is_word(*_JOIN_WORDS):
                self.join()
            else:
                return

    def join(self) -> None:
        cross = self.take_word("CROSS")
        outer_allowed = not cross and self.take_word("LEFT", "RIGHT", "FULL")
        if outer_allowed:
            self.take_word("OUTER")
        elif not cross:
            self.take_word("INNER")
        self.expect_word("JOIN")
        self.table()
        if cross:
            return
        if self.take_word("ON"):
            self.expression()
        elif self.take_word("USING"):
            self.expect_op("(")
            self.comma_list(self.name)
            self.expect_op(")")
        else:
            raise _NotPlain

    def table(self) -> None:
        parts = [self.name()]
        while self.take_op("."):
            parts.append(self.name())
        if len(parts) > 3 or self.is_op("("):
            raise _NotPlain  # four-part names, table functions
        self.tables.add(".".join(parts))
        self.alias()

    # -- expressions ---------------------------------------------------------------------

    # Each expression method answers whether the expression holds a column: an operator
    # (`1 + 1.5`) or a call (`lower(5)`, `count(1)`) on what holds none is resolved by the
    # types `sql_types` infers, so the text goes to sqlglot. On a column, the type is the
    # column's, which the text does not show (sql_types' COLUMN) and both readers pass.

    def expression(self) -> Held:
        dependent = self.conjunction()
        while self.take_word("OR"):
            dependent = self.conjunction() is True or dependent is True
        return dependent

    def conjunction(self) -> Held:
        dependent = self.negation()
        while self.take_word("AND"):
            dependent = self.negation() is True or dependent is True
        return dependent

    def negation(self) -> Held:
        if self.take_word("NOT"):
            return self.negation()
        return self.predicate()

    def predicate(self) -> Held:
        dependent = self.additive()
        if self.take_op(*_COMPARISONS):
            return self.operands(dependent, self.additive())
        if self.take_word("IS"):
            self.take_word("NOT")
            if not self.take_word("NULL", "TRUE", "FALSE"):
                raise _NotPlain
            return dependent
        negated = self.take_word("NOT")
        if self.take_word("IN"):
            self.expect_op("(")
            self.comma_list(lambda: self.operands(dependent, self.additive()))
            self.expect_op(")")
        elif self.take_word("LIKE", "ILIKE"):
            self.operands(dependent, self.additive())
        elif self.take_word("BETWEEN"):
            self.operands(dependent, self.additive())
            self.expect_word("AND")
            self.operands(dependent, self.additive())
        elif negated:
            raise _NotPlain
        return dependent

    @staticmethod
    def operands(left: Held, right: Held, op: str = "") -> Held:
        """An operator on two operands, one of which must hold a column; or `now() -
        interval '...'`, whose operator is pg_catalog's exactly (timestamptz, interval)."""
        if left is True or right is True:
            return True
        if op in ("+", "-") and (left, right) == ("timestamptz", "interval"):
            return "timestamptz"
        raise _NotPlain

    def additive(self) -> Held:
        dependent = self.term()
        while self.is_op("+", "-", "||"):
            op = self.peek()[1]
            self.at += 1
            dependent = self.operands(dependent, self.term(), op)
        return dependent

    def term(self) -> Held:
        dependent = self.unary()
        while self.take_op("*", "/", "%"):
            dependent = self.operands(dependent, self.unary())
        return dependent

    def unary(self) -> Held:
        dependent: Held
        if self.take_op("-", "+"):
            if self.peek()[0] == "num":
                self.at += 1  # a negative number: a constant
                dependent = False
            else:
                dependent = self.operands(self.unary(), False)
        else:
            dependent = self.primary()
        while self.take_op("::"):
            self.type_name()
            dependent = dependent is True  # a constant cast: of a type this reader leaves be
        return dependent

    def type_name(self) -> None:
        kind, value = self.peek()
        if kind != "word" or value not in _TYPES:
            raise _NotPlain
        self.at += 1
        if self.take_op("("):
            self.number()
            if self.take_op(","):
                self.number()
            self.expect_op(")")

    def primary(self) -> Held:
        kind = self.peek()[0]
        if kind in ("num", "str"):
            self.at += 1
        elif self.take_op("("):
            dependent = self.expression()
            self.expect_op(")")
            return dependent
        elif self.take_word("NULL", "TRUE", "FALSE"):
            pass
        elif self.take_word("CASE"):
            self.case()
        elif self.take_word("CAST"):
            self.expect_op("(")
            dependent = self.expression()
            self.expect_word("AS")
            self.type_name()
            self.expect_op(")")
            return dependent is True
        elif self.take_word("INTERVAL"):
            if self.peek()[0] != "str":
                raise _NotPlain
            self.at += 1
            return "interval"
        elif kind == "word" and self.peek(1) == ("op", "("):
            return self.call()
        else:
            self.column()
            return True
        return False

    def case(self) -> None:
        if not self.is_word("WHEN") and self.expression() is not True:
            raise _NotPlain  # CASE 1 WHEN 1.5: an operator = on constants
        if not self.is_word("WHEN"):
            raise _NotPlain
        while self.take_word("WHEN"):
            self.expression()
            self.expect_word("THEN")
            self.expression()
        if self.take_word("ELSE"):
            self.expression()
        self.expect_word("END")

    def call(self) -> Held:
        """A call whose every argument holds a column (`count(*)` takes none)."""
        function = self.peek()[1].lower()
        if function not in PURE_FUNCTIONS:
            raise _NotPlain
        self.at += 2  # the name and "("
        self.functions.add(function)
        fewest, most = PURE_FUNCTIONS[function]
        if function == "count" and self.take_op("*"):
            self.expect_op(")")
            return False
        arguments = 0
        if function == "now" and self.take_op(")"):
            return "timestamptz"
        if not self.is_op(")"):
            if function in ("count", "sum", "avg", "min", "max"):
                self.take_word("DISTINCT")
            self.operands(self.expression(), False)
            arguments = 1
            while self.take_op(","):
                self.operands(self.expression(), False)
                arguments += 1
        self.expect_op(")")
        if not fewest <= arguments <= most:
            raise _NotPlain  # sqlglot refuses the call: it does not parse
        return arguments > 0

    def column(self) -> None:
        """A bare column name. A qualified one (`t.name`) goes to sqlglot: PostgreSQL may read
        it as a call `name(t)` (`sql_columns`), which this grammar cannot tell from a column."""
        self.name()
        if self.is_op("."):
            raise _NotPlain
