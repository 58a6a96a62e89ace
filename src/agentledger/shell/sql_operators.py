"""Operators PostgreSQL may resolve to a function of the database's schema.

An operator is a function call: `CREATE OPERATOR @@@ (LEFTARG = int, RIGHTARG = int,
FUNCTION = wipe)` makes `SELECT 1 @@@ 2` run `wipe`, which may delete rows. PostgreSQL reads
any run of operator characters as one operator name (dropping a trailing `+` or `-` unless
the name holds one of ``~ ! @ # % ^ & | ` ?``), so a name no built-in has can only be a
schema's; sqlglot does not know such names and reads them as something else (`1 @@@ 2` as a
MySQL MATCH of a parameter). A run that is not a built-in operator's name is refused.
"""

from __future__ import annotations

import re

__all__ = ["unknown_operator"]

BUILT_IN = frozenset(
    {"<=", ">=", "<>", "!=", "||", "::", "->", "->>", "#>", "#>>", "#-", "@>", "<@", "?|", "?&",
     "@@", "@?", "&&", "~~", "!~", "~*", "!~*", "~~*", "!~~", "!~~*", "<<", ">>", "<->", "-|-",
     "&<", "&>", "<<|", "|>>", "&<|", "|&>", "<^", ">^", "?#", "?-", "?-|", "?||", "@-@", "##",
     "<<=", ">>=", "||/", "|/", "!!", ":=", "=>", "^@", "<<->>", "<#>", "<=>", "@@@"}
)  # fmt: skip
"""Built-in operator names of two characters or more (pg_operator of a new database);
`@@@` is the built-in text search match too, but is refused unless its operands are known."""
_CHARS = "+-*/<>=~!@#%^&|`?"
_RUN = re.compile(r"[-+*/<>=~!@#%^&|`?]{2,}")
_SPECIAL = frozenset("~!@#%^&|`?")


def unknown_operator(text: str, dialect: str) -> str | None:
    """The first operator name in `text` that no built-in operator has, or None."""
    if all(_known(match.group(0)) for match in _RUN.finditer(text)):
        return None  # no run but built-in names (`>=`, `::`): no tokenizer (sqlglot) needed
    import sqlglot

    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(text)
    except Exception:
        return None  # the parser refuses it, or reads it without such a run
    runs: list[str] = []
    end = -2
    for token in tokens:
        source = text[token.start : token.end + 1]
        if source and all(char in _CHARS for char in source):
            if runs and token.start == end + 1:
                runs[-1] += source
            else:
                runs.append(source)
            end = token.end
    for run in runs:
        if not _known(run):
            return _name(run)
    return None


def _known(run: str) -> bool:
    """True when PostgreSQL reads the run of operator characters as built-in operators."""
    name = _name(run)
    return len(name) < 2 or (name in BUILT_IN and name != "@@@")


def _name(run: str) -> str:
    """The operator PostgreSQL reads at the start of `run` (a trailing + or - is not part of
    a name without one of ~ ! @ # % ^ & | ` ?)."""
    if "--" in run or "/*" in run:
        run = run.split("--", 1)[0].split("/*", 1)[0]
    name = run
    while len(name) > 1 and name[-1] in "+-" and not (_SPECIAL & set(name)):
        name = name[:-1]
    return name
