"""Calls of a built-in's name that only a schema's function can answer (PostgreSQL).

PostgreSQL resolves an unqualified call among every function of that name on the search
path. A call whose argument types are exactly a signature of pg_catalog's gets that built-in
(pg_catalog is searched first); any other call is resolved by implicit casts, and then a
schema's overload for the arguments' own types wins: with `CREATE FUNCTION public.lower(int)
... DELETE ...`, `SELECT lower(5)` and `ORDER BY lower(1)` delete rows (shown on a real
server by tests/test_guard_overloads.py), although `lower` is a known read-only name.

What the text shows is the type of a literal argument: an integer (`integer`, or `bigint`
and `numeric` when larger), a decimal (`numeric`), a quoted string or NULL (untyped, which
PostgreSQL prefers to read as `text`), `TRUE`/`FALSE` (`boolean`), a cast to a built-in type
(`'users'::regclass`). A call is refused when a literal argument's type is not the type some
built-in signature of the name, with that number of arguments, has at its place (or a
polymorphic one that takes any type, `anyelement`, `"any"`), or when no signature takes
that many arguments.
The signatures are pg_catalog's of PostgreSQL 15 (`data/pg_functions.json`, read from a
server by tests/test_guard_overloads.py), read only when a call has a literal argument.

What it cannot show: the type of a column or of an expression. An overload for another
type is still called by `lower(id)` when `id` is of that type: a limit docs/guard.md states,
with what closes it (a read-only transaction or role).
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["sqlglot_tokens", "unproven_call"]

_SPECIAL = frozenset(
    {"from", "for", "in", "placing", "similar", "escape", "order", "by", "as", "both",
     "leading", "trailing", "distinct", "all", "variadic", "at", "within", "filter", "over"}
)  # fmt: skip
"""Words of a call's own syntax (`extract(year from x)`, `string_agg(x, ',' order by x)`):
its arguments are not a plain list, and such a call is not checked here."""
_POLYMORPHIC = frozenset(
    {'"any"', "anyelement", "anycompatible", "anynonarray", "anycompatiblenonarray"}
)
"""Polymorphic places that take a literal of any type (`anyarray`, `anyrange` take none)."""
_TYPES = {
    "int": "integer", "int4": "integer", "integer": "integer", "bigint": "bigint",
    "int8": "bigint", "smallint": "smallint", "int2": "smallint", "text": "text",
    "varchar": "character varying", "numeric": "numeric", "decimal": "numeric",
    "bool": "boolean", "boolean": "boolean", "real": "real", "float4": "real",
    "float8": "double precision", "float": "double precision", "date": "date",
    "timestamp": "timestamp without time zone", "timestamptz": "timestamp with time zone",
    "interval": "interval", "json": "json", "jsonb": "jsonb", "regclass": "regclass",
    "regproc": "regproc", "regtype": "regtype", "oid": "oid", "name": "name", "bytea": "bytea",
    "uuid": "uuid", "inet": "inet", "cidr": "cidr", "time": "time without time zone",
    "timetz": "time with time zone", "regnamespace": "regnamespace", "regrole": "regrole",
}  # fmt: skip
"""Type names a cast may use, as pg_proc's signatures name them."""
_UNTYPED = "text"
"""What PostgreSQL prefers for a quoted string or NULL at a place: the string category's
preferred type (a built-in taking `regclass` there loses to a schema's `text` overload)."""
Token = tuple[str, str]


def unproven_call(tokens: list[Token]) -> str | None:
    """Why a call in `tokens` may run a schema's function in place of the built-in of its
    name, or None. Tokens are (kind, text): kinds `num`, `str`, `name` (folded as PostgreSQL
    folds it: unquoted to lower case), `op` and anything else."""
    for index in range(len(tokens) - 1):
        kind, name = tokens[index]
        if kind not in ("name", "quoted") or tokens[index + 1] != ("op", "("):
            continue
        before = tokens[index - 1] if index else ("", "")
        if before in (("op", "."), ("op", "::")) or before == ("name", "as"):
            continue  # qualified (pg_catalog.lower) or a type's modifier (varchar(20))
        if before[1].lower() == "tablesample":
            continue  # a sampling method (BERNOULLI (10)): a C handler, not a SQL function
        if kind == "quoted" and name not in _signatures():
            # `"Lower"('x')`: a quoted name keeps its case, and no built-in is called so.
            return f'no built-in is named "{name}": only a schema\'s function can answer to it'
        arguments = _arguments(tokens, index + 2)
        if arguments is None or not any(kind is not None for kind in arguments):
            continue  # its own syntax, or no literal: nothing the text can show
        signatures = _signatures().get(name)
        if signatures is None:
            continue  # not a function of pg_catalog's (coalesce, a keyword): not resolved here
        why = _unmatched(name, arguments, signatures)
        if why is not None:
            return why
    return None


def _arguments(tokens: list[Token], start: int) -> list[str | None] | None:
    """The type of each argument of the call opening before `start` (None: not a literal),
    or None when its arguments are not a plain list."""
    depth = 0
    current: list[Token] = []
    arguments: list[list[Token]] = []
    for token in tokens[start:]:
        if token == ("op", "(") or token == ("op", "["):
            depth += 1
        elif token == ("op", ")") or token == ("op", "]"):
            if depth == 0:
                if current or arguments:
                    arguments.append(current)
                return [_literal_type(argument) for argument in arguments]
            depth -= 1
        elif depth == 0 and token == ("op", ","):
            arguments.append(current)
            current = []
            continue
        if depth == 0 and (
            (token[0] == "name" and token[1] in _SPECIAL) or token in (("op", "=>"), ("op", ":="))
        ):
            return None
        current.append(token)
    return None


def _literal_type(argument: list[Token]) -> str | None:
    """The type of a literal argument (`5`, `-5`, `'x'`, `NULL`, `'t'::regclass`), or None."""
    if argument[:1] in ([("op", "-")], [("op", "+")]):
        argument = argument[1:]
    if not argument:
        return None
    kind, text = argument[0]
    rest = argument[1:]
    if len(rest) == 2 and rest[0] == ("op", "::") and rest[1][0] == "name":
        return _TYPES.get(rest[1][1])
    if rest:
        return None
    if kind == "str" or (kind, text) == ("name", "null"):
        return "unknown"
    if kind == "bit":
        return "bit"
    if kind == "name" and text in ("true", "false"):
        return "boolean"
    if kind != "num":
        return None
    if not text.isdigit():
        return "numeric"
    value = int(text)
    return "integer" if value < 2**31 else "bigint" if value < 2**63 else "numeric"


def _unmatched(
    name: str, arguments: list[str | None], signatures: list[list[object]]
) -> str | None:
    count = len(arguments)
    fitting = []
    for defaults, variadic, *types in signatures:
        assert isinstance(defaults, int)
        places = [str(item) for item in types]
        if variadic and count >= len(places) - 1:
            element = places[-1].removesuffix("[]")
            fitting.append(places[:-1] + [element] * (count - len(places) + 1))
        elif len(places) - defaults <= count <= len(places):
            fitting.append(places[:count])
    shown = f"{name}({', '.join(kind or '?' for kind in arguments)})"
    if not fitting:
        return (
            f"no built-in {name}() takes {count} argument(s), so {shown} can only call a "
            "schema's function of that name, which may write"
        )
    for places in fitting:
        if all(_takes(place, kind) for place, kind in zip(places, arguments, strict=True)):
            return None
    return (
        f"no built-in {name}() takes {shown} as written: PostgreSQL would call a schema's "
        f"function of that name for these types, which may write (cast the literal to the "
        "built-in's type, as in '...'::text)"
    )


def _takes(place: str, kind: str | None) -> bool:
    if kind is None or place in _POLYMORPHIC:
        return True
    return place == (_UNTYPED if kind == "unknown" else kind)


@lru_cache(maxsize=1)
def _signatures() -> dict[str, list[list[object]]]:
    import json
    import os

    from agentledger.shell.knowledge import PACKAGED

    with open(os.path.join(PACKAGED, "pg_functions.json"), encoding="utf-8") as handle:
        functions: dict[str, list[list[object]]] = json.load(handle)["functions"]
    return functions


def sqlglot_tokens(text: str, dialect: str) -> list[tuple[str, str]]:
    """`text`'s tokens as `sql_literals` reads them: names folded as PostgreSQL folds them."""
    import sqlglot
    from sqlglot import TokenType

    strings = {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.HEREDOC_STRING,
               TokenType.UNICODE_STRING}  # fmt: skip
    ops = {TokenType.L_PAREN: "(", TokenType.R_PAREN: ")", TokenType.COMMA: ",",
           TokenType.DOT: ".", TokenType.DCOLON: "::", TokenType.DASH: "-",
           TokenType.PLUS: "+", TokenType.L_BRACKET: "[", TokenType.R_BRACKET: "]"}  # fmt: skip
    tokens: list[tuple[str, str]] = []
    for token in sqlglot.Dialect.get_or_raise(dialect).tokenize(text):
        kind = token.token_type
        if kind in ops:
            tokens.append(("op", ops[kind]))
        elif kind == TokenType.NUMBER:
            tokens.append(("num", token.text))
        elif kind in strings:
            tokens.append(("str", token.text))
        elif kind == TokenType.IDENTIFIER:
            tokens.append(("quoted", token.text))  # its case kept
        elif kind in (TokenType.BIT_STRING, TokenType.HEX_STRING):
            tokens.append(("bit", token.text))  # B'101', X'1F': of type bit
        elif token.text[:1].isalpha() or token.text[:1] == "_":
            tokens.append(("name", token.text.lower()))
        else:
            tokens.append(("other", token.text))
    return tokens
