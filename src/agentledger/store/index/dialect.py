"""What SQLite and PostgreSQL say differently, as one `Dialect` each.

Every query and every migration of the index is written once (`sql`, `where`, `migrations`)
and asks its dialect for the few words that differ: placeholders, literal prefix matching,
SQLite's plan hints, upserts, a list parameter, NULL ordering, counting rows that meet a
condition, JSON paths and column types. A third engine is a third `Dialect` (and a module
with its connection, transactions and locks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["POSTGRES", "SQLITE", "Dialect", "glob_prefix", "like_prefix"]


def glob_prefix(value: str) -> str:
    """A GLOB pattern matching exactly the strings that start with `value`.

    GLOB (not LIKE: case-sensitive, and it can use an index) reads ``*``, ``?`` and ``[`` as
    patterns; each is put in a bracket of its own so that it matches only itself.
    """
    return value.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]") + "*"


def like_prefix(value: str) -> str:
    """A LIKE pattern (backslash escapes) matching exactly the strings that start with `value`:
    ``%``, ``_`` and the backslash itself match only themselves."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@dataclass(frozen=True)
class Dialect:
    """What the filter SQL says differently in one database."""

    name: str
    mark: str
    """The parameter placeholder."""
    prefix_operator: str
    """The operator that matches a column against a pattern made by `prefix_pattern`."""
    plan_hints: bool
    """Whether the SQL pins SQLite's plans (unary +, CROSS JOIN, INDEXED BY, a page found by
    rowid, bare columns of max()): only SQLite has them, and PostgreSQL plans from its own
    statistics."""
    types: dict[str, str] = field(default_factory=dict)
    """The column types of the migrations' DDL by name (``text``, ``bigint``, ``real``)."""
    char: str = "char"
    """The function that makes a character of a code point (a separator in one text)."""
    bytewise: str = ""
    """What makes a text expression compare byte by byte (the index's own columns do)."""

    def prefix_pattern(self, value: str) -> str:
        """The pattern that matches exactly the strings starting with `value`."""
        return glob_prefix(value) if self.prefix_operator == "GLOB" else like_prefix(value)

    def prefix(self, column: str) -> str:
        """``column`` starts with the parameter (made by `prefix_pattern`)."""
        return f"{column} {self.prefix_operator} {self.mark}"

    def unhinted(self, column: str) -> str:
        """`column`, kept off its own index where the dialect can say so (SQLite's unary +)."""
        return f"+{column}" if self.plan_hints else column

    @property
    def cross_join(self) -> str:
        """An inner join SQLite keeps in the written order; a plain JOIN elsewhere."""
        return "CROSS JOIN" if self.plan_hints else "JOIN"

    def marks(self, count: int) -> str:
        """One placeholder per value, comma-separated."""
        return ", ".join([self.mark] * count)

    def runs_having(
        self, table: str, condition: str, negate: bool = False, common: bool = False
    ) -> str:
        """The runs that have (or, `negate`d, have not) a row of `table` (``name alias``)
        matching `condition`: a semi-join on run_id.

        SQLite gets it as ``runs.run_id IN (SELECT ...)``: the subquery runs once, from an
        index that starts with the condition's columns, into a temporary table. Written as a
        correlated EXISTS, SQLite (with no statistics, as a ledger's index has none) picked
        that same index for the lookup of every single run, scanning every matching row once
        per run: minutes over 100,000 runs.

        SQLite then walks the subquery's rows, looking each run up by id: right for a rare
        fact (a criterion that fired, a tag, a label), about 5x faster than testing every
        run. A `common` fact (a judge's score, which nearly every run has) stays a
        correlated EXISTS, on a `table` whose index leads with run_id (scores_chosen, named
        with INDEXED BY): one seek per run the other conditions leave, which for a verdict
        within one scenario is 3x faster than gathering every score first. PostgreSQL plans
        EXISTS as a semi-join (and NOT EXISTS as an anti-join, where NOT IN would not be)
        from its own statistics.
        """
        alias = table.split()[1]
        if self.plan_hints and not common:
            member = "NOT IN" if negate else "IN"
            run_id = "+runs.run_id" if negate else "runs.run_id"
            return f"{run_id} {member} (SELECT {alias}.run_id FROM {table} WHERE {condition})"
        exists = "NOT EXISTS" if negate else "EXISTS"
        return (
            f"{exists} (SELECT 1 FROM {table} WHERE {alias}.run_id = runs.run_id AND {condition})"
        )

    def ddl(self, statement: str) -> str:
        """`statement` with its ``{text}``, ``{bigint}``, ``{real}`` types in this dialect."""
        return statement.format(**self.types)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of `values`: SQLite's IN list (a placeholder each), PostgreSQL's
        ``= ANY`` of one array parameter (one statement text whatever the count)."""
        if self.plan_hints:
            return f"{column} IN ({self.marks(len(values))})", list(values)
        return f"{column} = ANY({self.mark})", [list(values)]

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        """Insert a row of `columns`, replacing the row of the same `key`. PostgreSQL's
        ``ON CONFLICT`` updates in place (two writers of one row never fail); SQLite's
        ``INSERT OR REPLACE`` (one writer at a time) is its fastest form."""
        names = ", ".join(columns)
        values = self.marks(len(columns))
        if self.plan_hints:
            return f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({values})"
        updates = ", ".join(f"{name} = EXCLUDED.{name}" for name in columns if name not in key)
        action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
        return (
            f"INSERT INTO {table} ({names}) VALUES ({values}) "
            f"ON CONFLICT ({', '.join(key)}) {action}"
        )

    def nulls_first(self, expression: str) -> str:
        """An ascending ORDER BY term with NULL first (SQLite's own order; PostgreSQL's needs
        saying, and saying it to SQLite would keep it off an index's order)."""
        return expression if self.plan_hints else f"{expression} NULLS FIRST"

    def count_if(self, condition: str) -> str:
        """How many rows of a group meet `condition` (SQLite's sum of a truth value: NULL
        over a group of none, which a caller reads as 0)."""
        if self.plan_hints:
            return f"sum({condition})"
        return f"count(*) FILTER (WHERE {condition})"

    def json_text(self, column: str, *path: str) -> str:
        """The text at `path` in the JSON text of `column` (NULL when absent)."""
        if self.plan_hints:
            return f"json_extract({column}, '$.{'.'.join(path)}')"
        return f"{column}::jsonb #>> '{{{','.join(path)}}}'"

    def covering_index(
        self, name: str, table: str, keys: Sequence[str], carried: Sequence[str]
    ) -> str:
        """An index on `keys` that also holds `carried` columns, so a query reading them reads
        the index alone: SQLite gets them as trailing keys, PostgreSQL as INCLUDE."""
        if self.plan_hints:
            return f"CREATE INDEX {name} ON {table} ({', '.join([*keys, *carried])})"
        return f"CREATE INDEX {name} ON {table} ({', '.join(keys)}) INCLUDE ({', '.join(carried)})"


SQLITE = Dialect(
    "sqlite",
    "?",
    "GLOB",
    plan_hints=True,
    types={"text": "TEXT", "bigint": "INTEGER", "real": "REAL"},
)
"""SQLite: GLOB (case-sensitive, and it can use an index), and plans pinned by hand."""
POSTGRES = Dialect(
    "postgresql",
    "%s",
    "LIKE",
    plan_hints=False,
    types={"text": 'TEXT COLLATE "C"', "bigint": "BIGINT", "real": "DOUBLE PRECISION"},
    char="chr",
    bytewise=' COLLATE "C"',
)
"""PostgreSQL (psycopg's placeholders): every text column of the "C" collation, which compares
bytes as SQLite does (so both answer in one order) and whose btree index serves LIKE."""
