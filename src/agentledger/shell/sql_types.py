"""Prove that each call of a built-in's name resolves to the built-in (PostgreSQL).

PostgreSQL resolves an unqualified call among every function of that name on the search
path. pg_catalog is searched first, so a built-in whose argument types are *exactly* the
call's wins (a schema's function of identical types is hidden); any other call is resolved
by implicit casts, and a schema's overload for the arguments' own types then wins: with
`CREATE FUNCTION public.lower(int) ... DELETE ...`, `SELECT lower(5)`, `lower(5::int)`,
`lower(2+3)`, `lower(abs(5))` and `count(5)` (count takes `"any"`, which is never exact) run
it. Operators are functions resolved the same way (`1 + 1.5`: no built-in `+(integer,
numeric)`, so a schema's wins).

So the guard infers the type of every argument expression (literals, casts and typed
literals, arrays, scalar subqueries, CASE, operators and nested calls, from pg_catalog's
signatures and return types in `data/pg_functions.json`, and columns of CTEs, subqueries and
VALUES of the same SQL), and passes a call to a built-in's name only when one pg_catalog
signature (defaults and variadic expanded) takes exactly those types; an untyped literal
(`'x'`, NULL) is proven only at a `text` place, the type PostgreSQL prefers for it, which no
schema's type can take from it without a superuser (a preferred type needs a base type). A
named argument (`lower(a => 5)`) or `VARIADIC` on a built-in's name is refused. Polymorphic
places (`anyelement`, `"any"`) are never exact: `count(5)` and `json_agg(5)` are refused.

A column of a table has the type the caller declares (the guard's `columns` with types); one
of unknown type is COLUMN: its calls pass when some signature takes the other arguments as
above. That is an assumption, not a proof: a schema's overload for the column's type would
run (docs/guard.md says what closes it: a read-only transaction, or search_path=pg_catalog).
"""

from __future__ import annotations

import re
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["COLUMN", "ColumnTypes", "type_name", "unproven_call"]

ColumnTypes = frozenset[tuple[str, str, str]]
"""Declared (relation, column, PostgreSQL type) triples: `("invoices", "amount", "numeric")`."""
UNKNOWN = "unknown"
"""An untyped literal: a quoted string or NULL."""
COLUMN = "?column"
"""The type of a table's column the caller did not declare (or of what depends on one)."""
_MISSING = "?missing"
_SYNTAX = frozenset({"coalesce", "greatest", "least", "nullif", "row"})
"""Expressions that look like calls but are syntax: no function of a schema is looked up."""
_OPERATORS = {
    "Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%", "Pow": "^", "EQ": "=",
    "NEQ": "<>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "DPipe": "||", "Like": "~~",
    "ILike": "~~*", "NullSafeEQ": "=", "NullSafeNEQ": "=", "JSONExtract": "->",
    "JSONExtractScalar": "->>", "JSONBExtract": "#>", "JSONBExtractScalar": "#>>",
    "JSONBContains": "?", "ArrayContainsAll": "@>", "ArrayContainedBy": "<@",
    "ArrayOverlaps": "&&", "RegexpLike": "~", "RegexpILike": "~*", "BitwiseAnd": "&",
    "BitwiseOr": "|", "BitwiseXor": "#", "BitwiseLeftShift": "<<", "BitwiseRightShift": ">>",
    "Distance": "<->",
}  # fmt: skip
"""sqlglot's binary nodes and the PostgreSQL operator each is."""
_BOOLEAN = ("And", "Or", "Not", "Is", "Exists", "In", "Between", "Boolean", "Any", "All")
_VALUES = {
    "CurrentDate": "date", "CurrentTimestamp": "timestamp with time zone",
    "CurrentTime": "time with time zone", "CurrentUser": "name", "Extract": "numeric",
    "Interval": "interval", "BitString": "bit", "HexString": "bit", "Position": "integer",
    "Trim": "text",
}  # fmt: skip
"""Syntax whose type is fixed (EXTRACT, TRIM, POSITION call pg_catalog's by name)."""
_NUMERIC_ORDER = ("smallint", "integer", "bigint", "numeric", "real", "double precision")
_TYPE_NAMES = {
    "int": "integer", "int4": "integer", "int2": "smallint", "int8": "bigint",
    "decimal": "numeric", "bool": "boolean", "float4": "real", "float8": "double precision",
    "float": "double precision", "varchar": "character varying", "char": "character",
    "bpchar": "character", "timestamp": "timestamp without time zone",
    "timestamptz": "timestamp with time zone", "time": "time without time zone",
    "timetz": "time with time zone", "varbit": "bit varying",
}  # fmt: skip


def unproven_call(text: str, types: ColumnTypes = frozenset()) -> str | None:
    """Why a call or operator in `text` may run a schema's function in place of the built-in
    of its name, or None. `text` is parsed again with every call kept as written."""
    import logging

    import sqlglot
    from sqlglot.errors import SqlglotError

    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # "falling back to parsing as a Command": the analysis's
    try:
        statements = sqlglot.parse(text, read=_raw_dialect())
    except (SqlglotError, RecursionError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"the calls could not be checked ({first[:120]}): a syntax the check does not read"
    finally:
        logger.setLevel(level)
    if _synthesized_intervals(text, statements):
        return (
            "an INTERVAL followed by + or - is read by the parser as one interval "
            "(`interval '1 day' + 5`), not as PostgreSQL's operator: the call is not proven"
        )
    typer = _Typer({(relation, column): kind for relation, column, kind in types})
    for statement in statements:
        if statement is None:
            continue
        for node in statement.walk():
            why = typer.why(node)
            if why is not None:
                return why
    return None


def _synthesized_intervals(text: str, statements: list[Any]) -> bool:
    """True when sqlglot made more intervals than the text writes: it reads `interval '1 day'
    + 5` as the sum of two intervals, where PostgreSQL calls the operator +(interval, integer)
    (a schema's, there being no built-in)."""
    from sqlglot import TokenType, exp

    written = sum(
        token.token_type == TokenType.INTERVAL for token in _raw_dialect()().tokenize(text)
    )
    made = sum(
        1 for statement in statements if statement is not None
        for _ in statement.find_all(exp.Interval)
    )  # fmt: skip
    return bool(made > written)


@lru_cache(maxsize=1)
def _raw_dialect() -> Any:
    """PostgreSQL's grammar with every call kept as the name and arguments written (sqlglot
    otherwise turns `date_trunc('day', x)` into its own node, reordered, quoting lost)."""
    from sqlglot.dialects.postgres import Postgres

    keep = ("EXTRACT", "POSITION", "SUBSTRING", "TRIM", "OVERLAY", "CAST", "TRY_CAST")

    class Raw(Postgres):
        class Parser(Postgres.Parser):  # type: ignore[misc,valid-type]
            FUNCTIONS: dict[str, Any] = {}
            FUNCTION_PARSERS = {
                key: value for key, value in Postgres.Parser.FUNCTION_PARSERS.items()
                if key in keep
            }  # fmt: skip

    return Raw


@lru_cache(maxsize=1)
def _catalog() -> tuple[
    dict[str, list[list[Any]]], dict[tuple[str, str, str], str], frozenset[str]
]:
    import json
    import os

    from agentledger.shell.knowledge import PACKAGED

    with open(os.path.join(PACKAGED, "pg_functions.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    operators = {(name, left, right): result for name, left, right, result in data["operators"]}
    return data["functions"], operators, frozenset(data["types"])


def type_name(text: str) -> str:
    """A type as pg_catalog's signatures name it (`int` -> integer, `varchar(20)` ->
    character varying); a name not built in is kept as written, in lower case."""
    text = " ".join(text.lower().split())
    suffix = ""
    while text.endswith("[]"):
        text, suffix = text[:-2].rstrip(), suffix + "[]"
    text = re.sub(r"\s*\([^)]*\)", "", text).strip()
    return _TYPE_NAMES.get(text, text) + suffix


def data_type(node: Any) -> str | None:
    """The pg_catalog name of a sqlglot type (`INT` -> integer, `VARCHAR(20)` -> character
    varying, `INT[]` -> integer[]), or None for a type not built in."""
    name = type_name(node.sql(dialect="postgres"))
    return name if name in _catalog()[2] else None


class _Typer:
    """The type of each expression of one statement, inferred once."""

    def __init__(self, declared: dict[tuple[str, str], str]) -> None:
        self.declared = declared
        self.memo: dict[int, str | None] = {}
        self.reasons: dict[int, str] = {}
        self.visiting: set[int] = set()

    def why(self, node: Any) -> str | None:
        self.type_of(node)
        return self.reasons.get(id(node))

    def type_of(self, node: Any) -> str | None:
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        if key in self.visiting:
            return _MISSING  # a recursive CTE's own column: its first branch decides
        self.visiting.add(key)
        try:
            kind = self._infer(node)
        finally:
            self.visiting.discard(key)
        self.memo[key] = kind
        return kind

    def refuse(self, node: Any, why: str) -> None:
        self.reasons.setdefault(id(node), why)

    def _infer(self, node: Any) -> str | None:
        from sqlglot import exp

        name = type(node).__name__
        if isinstance(node, exp.Literal):
            if node.is_string:
                return UNKNOWN
            return _number(str(node.this))
        if isinstance(node, exp.Null | exp.RawString | exp.ByteString):
            return UNKNOWN
        if name in _VALUES:
            for inner in node.iter_expressions():
                self.type_of(inner)
            return _VALUES[name]
        if isinstance(node, exp.Cast):
            self.type_of(node.this)
            return data_type(node.to)
        if isinstance(node, exp.Paren | exp.Distinct | exp.Alias | exp.Ordered | exp.Order):
            inner = (
                node.this if not isinstance(node, exp.Distinct) else (node.expressions or [None])[0]
            )
            return self.type_of(inner) if inner is not None else None
        if isinstance(node, exp.Filter | exp.Window | exp.WithinGroup):
            return self.type_of(node.this)
        if isinstance(node, exp.Neg):
            if isinstance(node.this, exp.Literal) and not node.this.is_string:
                return _number("-" + str(node.this.this))
            return self._operator(node, "-", "-", self.type_of(node.this))
        if isinstance(node, exp.Column):
            return self._column(node)
        if isinstance(node, exp.Anonymous):
            return self._call(node)
        if isinstance(node, exp.Substring):
            # `substring(x, 1, 2)` is resolved by the search path (its FROM/FOR form calls
            # pg_catalog's, but sqlglot reads both alike): checked as a call.
            parts = [node.this, node.args.get("start"), node.args.get("length")]
            kinds = [self.type_of(part) for part in parts if part is not None]
            return self._resolve(node, "substring", kinds, _catalog()[0]["substring"])
        if isinstance(node, exp.Dot):
            self.type_of(node.expression)
            return None  # pg_catalog.lower(...): named, resolved there only
        if isinstance(node, exp.Subquery):
            return self._scalar(node.this)
        if isinstance(node, exp.Array):
            return self._array(node)
        if isinstance(node, exp.Case):
            return self._case(node)
        if name in _OPERATORS:
            left, right = self.type_of(node.this), self.type_of(node.expression)
            return self._operator(node, _OPERATORS[name], left, right)
        if isinstance(node, exp.In | exp.Between):
            left = self.type_of(node.this)
            others = [node.args.get("low"), node.args.get("high")]
            ops = (">=", "<=") if isinstance(node, exp.Between) else ("=",) * len(node.expressions)
            others = others if isinstance(node, exp.Between) else list(node.expressions)
            for op, other in zip(ops, others, strict=True):
                if other is not None:
                    self._operator(node, op, left, self.type_of(other))
            if isinstance(node, exp.In) and node.args.get("query") is not None:
                self.type_of(node.args["query"])
            return "boolean"
        if isinstance(node, exp.Boolean) or name in _BOOLEAN:
            for inner in node.iter_expressions():
                self.type_of(inner)
            return "boolean"
        if isinstance(node, exp.Kwarg | exp.PropertyEQ | exp.Variadic):
            return None
        if isinstance(node, exp.Binary):
            left, right = self.type_of(node.this), self.type_of(node.expression)
            if COLUMN in (left, right):
                return COLUMN
            self.refuse(
                node,
                f"the operator of {node.sql(dialect='postgres')[:80]} is not "
                "checked: a schema's operator of that name may be called",
            )
            return None
        return None

    def _number(self, text: str) -> str:
        return _number(text)

    def _operator(self, node: Any, op: str, left: str | None, right: str | None) -> str | None:
        """The result type of the built-in operator `op` PostgreSQL calls for these operand
        types; a refusal when none is proven (a schema's operator would be called)."""
        if COLUMN in (left, right) or _MISSING in (left, right):
            return COLUMN
        _, operators, _ = _catalog()
        shown = f"{'' if left == '-' else left} {op} {right}".strip()
        if left is None or right is None:
            self.refuse(
                node,
                f"the type of an operand of {op} is not known, so the operator "
                "PostgreSQL calls is not proven built in (a schema's may be)",
            )
            return None
        if left == UNKNOWN and right == UNKNOWN:
            found = operators.get((op, "text", "text"))
        elif left == UNKNOWN or right == UNKNOWN:
            known = right if left == UNKNOWN else left
            exact = operators.get((op, known, known))
            text_side = (op, "text", known) if left == UNKNOWN else (op, known, "text")
            found = exact if exact is not None else operators.get(text_side)
        else:
            found = operators.get((op, left, right))
        if found is None:
            self.refuse(
                node,
                f"no built-in operator {op} takes ({shown.replace(f' {op} ', ', ')}) "
                "exactly: PostgreSQL would call a schema's operator for these types, "
                "which may write (cast the operands to one type)",
            )
        return found

    def _call(self, node: Any) -> str | None:
        from sqlglot import exp

        quoted = isinstance(node.this, exp.Identifier) and node.this.quoted
        name = str(node.this.this if isinstance(node.this, exp.Identifier) else node.this)
        name = name if quoted else name.lower()
        arguments = [
            argument for argument in node.expressions if not isinstance(argument, exp.Star)
        ]
        if not quoted and name in _SYNTAX:
            kinds = [self.type_of(argument) for argument in arguments]
            if name == "nullif" and len(kinds) == 2:
                self._operator(node, "=", kinds[0], kinds[1])
                return kinds[0]
            return "record" if name == "row" else _common(kinds)
        signatures = _catalog()[0].get(name)
        if signatures is None:
            for argument in arguments:
                self.type_of(argument)
            if quoted:
                self.refuse(
                    node,
                    f'no built-in is named "{name}": only a schema\'s function can answer to it',
                )
            return None  # not a built-in's name: the analysis checks it as a function
        if any(isinstance(argument, exp.Variadic) for argument in arguments):
            self.refuse(
                node,
                f"VARIADIC in a call of {name}(): the guard does not prove which "
                "function PostgreSQL calls for it (write the elements as arguments)",
            )
            return None
        if any(isinstance(argument, exp.Kwarg | exp.PropertyEQ) for argument in arguments):
            self.refuse(
                node,
                f"a named argument to {name}(): the guard does not prove which "
                "function PostgreSQL calls for it (write the arguments in order)",
            )
            return None
        kinds = [self.type_of(argument) for argument in arguments]
        return self._resolve(node, name, kinds, signatures)

    def _resolve(
        self, node: Any, name: str, kinds: list[str | None], signatures: list[list[Any]]
    ) -> str | None:
        if _MISSING in kinds:
            return COLUMN
        count = len(kinds)
        returns: set[str] = set()
        for defaults, variadic, result, *places in signatures:
            if variadic and count >= len(places) - 1:
                element = places[-1].removesuffix("[]")
                places = places[:-1] + [element] * (count - len(places) + 1)
            elif not len(places) - defaults <= count <= len(places):
                continue
            if all(_takes(place, kind) for place, kind in zip(places, kinds, strict=False)):
                returns.add(result)
        if returns:
            if COLUMN in kinds:
                return (
                    returns.pop()
                    if len(returns) == 1 and "any" not in next(iter(returns))
                    else COLUMN
                )
            return returns.pop() if len(returns) == 1 else None
        shown = f"{name}({', '.join(_shown(kind) for kind in kinds)})"
        if None in kinds:
            why = (
                f"the type of an argument of {shown} is not known, so the function "
                "PostgreSQL calls is not proven built in (a schema's may be)"
            )
        else:
            why = (
                f"no built-in {name}() takes {shown} exactly: PostgreSQL would call a "
                "schema's function of that name for these types, which may write (cast "
                "each argument to the type of a built-in's signature, as in '...'::text)"
            )
        self.refuse(node, why)
        return None

    def _column(self, node: Any) -> str | None:
        """A column's type: a CTE's, subquery's or VALUES' column of the same SQL is inferred,
        a table's is declared or COLUMN."""
        from sqlglot import exp

        if not isinstance(node.this, exp.Identifier):
            return COLUMN  # `t.*`: the row of a table (a type the schema made)
        table = node.table.lower() if node.table else ""
        column = node.name if node.this.quoted else node.name.lower()
        select = node.find_ancestor(exp.Select)
        kinds: set[str | None] = set()
        while select is not None:
            answers = [
                (isinstance(source, exp.Table), self._source_column(source, column, alias))
                for alias, source in _sources(select)
                if not table or alias == table
            ]
            known = {kind for _, kind in answers if kind not in (_MISSING, COLUMN)}
            known |= {kind for is_table, kind in answers if not is_table and kind == COLUMN}
            if known:
                kinds |= known  # a declared column, or a CTE's or subquery's: this level's
                break
            if answers and table:
                kinds.add(COLUMN)  # the table the qualifier names
                break
            if answers:
                kinds.add(COLUMN)  # maybe this level's table's, maybe an outer level's
            select = select.parent.find_ancestor(exp.Select) if select.parent else None
        if not kinds:
            return COLUMN
        return kinds.pop() if len(kinds) == 1 else None

    def _source_column(self, source: Any, column: str, alias: str) -> str | None:
        """The type of `column` from one FROM source (_MISSING: the source has no such
        column, as far as the SQL shows)."""
        from sqlglot import exp

        if isinstance(source, exp.Table):
            relation = ".".join(part.name.lower() for part in source.parts)
            declared = self.declared.get((relation, column)) or self.declared.get((alias, column))
            return declared if declared is not None else COLUMN
        query, names = source
        if query is None:
            return _MISSING if names and column not in names else None
        if isinstance(query, exp.Values):
            rows = query.expressions
            if names and column in names and rows:
                row = rows[0]
                items = row.expressions if isinstance(row, exp.Tuple) else [row]
                index = names.index(column)
                return self.type_of(items[index]) if index < len(items) else None
            return _MISSING if names else None
        return self._output(query, column, names)

    def _output(self, query: Any, column: str, names: list[str]) -> str | None:
        from sqlglot import exp

        if isinstance(query, exp.Subquery):
            return self._output(query.this, column, names)
        if isinstance(query, exp.SetOperation):
            kinds = {
                self._output(query.left, column, names),
                self._output(query.right, column, names),
            } - {_MISSING}
            return kinds.pop() if len(kinds) == 1 else (None if kinds else _MISSING)
        if not isinstance(query, exp.Select):
            return None  # a table function, a data-modifying statement: not inferred
        projections = query.expressions
        if names:
            if column not in names:
                return _MISSING
            index = names.index(column)
            if index >= len(projections) or any(isinstance(p, exp.Star) for p in projections):
                return None
            return self.type_of(projections[index])
        star = False
        for projection in projections:
            if isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
            ):
                star = True
            elif projection.alias_or_name == column or projection.alias_or_name.lower() == column:
                return self.type_of(projection)
        if not star:
            return _MISSING
        kinds = {
            self._source_column(source, column, alias) for alias, source in _sources(query)
        } - {_MISSING}
        return kinds.pop() if len(kinds) == 1 else (None if kinds else _MISSING)

    def _scalar(self, query: Any) -> str | None:
        from sqlglot import exp

        self.type_of(query)
        if isinstance(query, exp.Select) and len(query.expressions) == 1:
            return self.type_of(query.expressions[0])
        return None

    def _array(self, node: Any) -> str | None:
        kinds = [self.type_of(item) for item in node.expressions]
        element = _common(kinds) if kinds else None
        if element in (None, COLUMN, _MISSING):
            return element if element != _MISSING else COLUMN
        return element + "[]" if not element.endswith("[]") else element

    def _case(self, node: Any) -> str | None:
        subject = node.this
        results = []
        for branch in node.args.get("ifs") or []:
            condition = self.type_of(branch.this)
            if subject is not None:
                self._operator(branch, "=", self.type_of(subject), condition)
            results.append(self.type_of(branch.args.get("true")))
        if node.args.get("default") is not None:
            results.append(self.type_of(node.args["default"]))
        return _common(results)


def _sources(select: Any) -> list[tuple[str, Any]]:
    """(alias, source) of a SELECT's FROM and JOINs: an exp.Table for a table, or (query,
    column names) for a CTE, subquery or VALUES of the same SQL, or (None, []) for anything
    else (a table function)."""
    from sqlglot import exp

    from agentledger.shell.sql_columns import enclosing_cte

    found: list[tuple[str, Any]] = []
    clause = select.args.get("from_") or select.args.get("from")
    nodes = [clause.this] if clause is not None else []
    nodes += [join.this for join in select.args.get("joins") or []]
    for node in nodes:
        alias = node.alias_or_name.lower()
        names = (
            [column.name.lower() for column in node.args["alias"].columns]
            if isinstance(node.args.get("alias"), exp.TableAlias)
            else []
        )
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            cte = enclosing_cte(node, node.name.lower()) if not node.args.get("db") else None
            if cte is None:
                found.append((alias, node))
                continue
            cte_names = (
                [c.name.lower() for c in cte.args["alias"].columns]
                if isinstance(cte.args.get("alias"), exp.TableAlias)
                else []
            )
            found.append((alias, (cte.this, names or cte_names)))
        elif isinstance(node, exp.Subquery | exp.Values):
            found.append((alias, (node.this if isinstance(node, exp.Subquery) else node, names)))
        else:
            found.append((alias, (None, names)))
    return found


def _number(text: str) -> str:
    digits = text.lstrip("-")
    if not digits.isdigit():
        return "numeric"
    value = int(text)
    return (
        "integer"
        if -(2**31) <= value < 2**31
        else "bigint"
        if -(2**63) <= value < 2**63
        else "numeric"
    )


def _takes(place: str, kind: str | None) -> bool:
    if kind is None:
        return False
    if kind == COLUMN:
        return True  # the assumption: a column's type is one a built-in of the name takes
    return place == ("text" if kind == UNKNOWN else kind)


def _common(kinds: list[str | None]) -> str | None:
    """The type PostgreSQL gives CASE, COALESCE or ARRAY of these types (None: not proven)."""
    known = {kind for kind in kinds if kind not in (UNKNOWN, _MISSING)}
    if None in known:
        return None
    if COLUMN in known:
        return COLUMN
    if not known:
        return "text"
    if len(known) == 1:
        return known.pop()
    if known <= set(_NUMERIC_ORDER):
        return max(known, key=_NUMERIC_ORDER.index)
    return None


def _shown(kind: str | None) -> str:
    return {None: "?", COLUMN: "column", UNKNOWN: "unknown", _MISSING: "?"}.get(kind, kind) or "?"
