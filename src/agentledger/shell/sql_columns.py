"""PostgreSQL's attribute notation: `t.name` may be a call `name(t)` (issue 33, cause 9).

PostgreSQL reads `t.name` (and `(expr).name`) as the column or field `name` when `t` has one,
and otherwise as the call `name(t)` of any function taking `t`'s row type: on a schema with
`CREATE FUNCTION evil(users) ... DELETE ...`, `SELECT u.evil FROM users u` deletes rows (a
test shows it on a real server). A bare `name` is never read as a call (PostgreSQL says the
column does not exist), so it is safe; a qualified one is read-only only when `name` is known
to be a column of what `t` names: a column a subquery or CTE of the same SQL selects, a column
of the system catalogs (`data/pg_catalog_columns.txt`), or one the caller declares (the
guard's `columns` option). Anything else is a finding of class unknown, never read-only.
"""

from __future__ import annotations

import os
from functools import lru_cache

from agentledger.shell.knowledge import PACKAGED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ATTRIBUTE_DIALECTS",
    "CATALOG_FILE",
    "Columns",
    "attribute_finding",
    "catalog_columns",
    "enclosing_cte",
]

ATTRIBUTE_DIALECTS = frozenset({"postgres", "redshift", "materialize", "risingwave"})
"""Dialects of PostgreSQL's parser, where `t.name` may be the call `name(t)`."""
CATALOG_FILE = os.path.join(PACKAGED, "pg_catalog_columns.txt")
Columns = frozenset[tuple[str, str]]
"""Known (relation, column) pairs; a relation as written in SQL, lower case: `users`,
`public.users`."""


@lru_cache(maxsize=1)
def catalog_columns() -> Columns:
    """The columns of PostgreSQL's system catalogs and views, under the relation's bare and
    schema-qualified names (`pg_locks`, `pg_catalog.pg_locks`)."""
    pairs: set[tuple[str, str]] = set()
    with open(CATALOG_FILE, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            schema, relation, *columns = line.split()
            for column in columns:
                pairs.add((relation, column))
                pairs.add((f"{schema}.{relation}", column))
    return frozenset(pairs)


def attribute_finding(node: Any, exp: Any, known: Columns, identifier: Any) -> str | None:
    """Why `node` (a qualified column or a field selection) may call a function, or None
    when it is a known column (or not a qualified reference at all)."""
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        name = identifier(node.expression)
        return (
            f"({node.this.sql(dialect='postgres')[1:-1][:60]}).{name} may be the call {name}(...)"
            " of a function the schema defines: a field of a composite value is not known"
        )
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return None
    if node.args.get("table") is None:
        return None  # a bare name is a column or an error, never a call
    name = identifier(node.this)
    qualifier = [
        identifier(node.args[key])
        for key in ("catalog", "db", "table")
        if node.args.get(key) is not None
    ]
    source = _source(node, qualifier[-1], exp, identifier)
    if source is not None and _selects(source, name, exp, known, qualifier, identifier):
        return None
    written = ".".join([*qualifier, name])
    return (
        f"{written} may be the call {name}({qualifier[-1]}) of a function the schema defines: "
        f"PostgreSQL reads t.name so when t has no column name, and {name} is not known to be "
        f"a column of {qualifier[-1]} (write the column unqualified, or declare it)"
    )


def _source(node: Any, alias: str, exp: Any, identifier: Any) -> Any | None:
    """The FROM or JOIN source (a Table or Subquery) that `alias` names in a SELECT around
    `node` (the nearest first: correlated subqueries see outer sources), or None."""
    scope = node.parent
    while scope is not None:
        if isinstance(scope, exp.Select):
            clause = scope.args.get("from_") or scope.args.get("from")
            sources = [clause.this] if clause is not None else []
            sources += [join.this for join in scope.args.get("joins") or ()]
            for source in sources:
                name = source.alias_or_name
                if isinstance(source, exp.Table) and source.alias:
                    named = identifier(source.args["alias"].this)
                elif isinstance(source, exp.Table | exp.Subquery) and name:
                    named = (
                        identifier(source.this)
                        if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)
                        else name.lower()
                    )
                else:
                    continue
                if named == alias:
                    return source
        scope = scope.parent
    return None


def _selects(
    source: Any, name: str, exp: Any, known: Columns, qualifier: list[str], identifier: Any
) -> bool:
    """True when `name` is known to be a column of `source`."""
    alias = source.args.get("alias")
    if alias is not None and alias.args.get("columns"):
        return name in {identifier(column) for column in alias.args["columns"]}
    if isinstance(source, exp.Subquery):
        return _query_selects(source.this, name, exp)
    cte = _cte(source, exp, identifier)
    if cte is not None:
        header = cte.args.get("alias")  # `WITH days(n) AS (...)` names its columns itself
        if header is not None and header.args.get("columns"):
            return name in {identifier(column) for column in header.args["columns"]}
        return _query_selects(cte.this, name, exp)
    parts = [
        identifier(source.args[key])
        for key in ("catalog", "db", "this")
        if source.args.get(key) is not None
    ]
    table = ".".join(parts)
    if len(qualifier) > 1 and qualifier != parts[-len(qualifier) :]:
        return False
    if len(parts) > 1 and parts[-2] == "public":  # `public.t` is the `t` a caller declares
        table = parts[-1] if (parts[-1], name) in known else table
    return (table, name) in known or (table, name) in catalog_columns()


def _query_selects(query: Any, name: str, exp: Any) -> bool:
    """True when a subquery's or CTE's select list names `name` (`SELECT *` names nothing
    the check can see)."""
    if not isinstance(query, exp.Query):
        return False
    return name in {selected.lower() for selected in query.named_selects}


def _cte(table: Any, exp: Any, identifier: Any) -> Any | None:
    """The CTE a bare table name refers to, in its own scope or an outer one."""
    if table.args.get("db") is not None or not isinstance(table.this, exp.Identifier):
        return None
    return enclosing_cte(table, identifier(table.this))


def enclosing_cte(table: Any, name: str) -> Any | None:
    """The CTE named `name` of a WITH clause around `table`, in its own scope or an outer
    one (scoped: `SELECT * FROM secrets, (WITH secrets AS (...) ...)` reads the table)."""
    node = table.parent
    while node is not None:
        clause = node.args.get("with_") or node.args.get("with")
        if clause is not None:
            for cte in clause.expressions:
                if cte.alias_or_name.lower() == name:
                    return cte
        node = node.parent
    return None
