"""Classify SQL (psql -c, mysql -e, sqlite3, here-documents) by its keywords.

Comments, string literals and quoted identifiers are removed first, so `SELECT 'drop table'`
stays read-only. Each statement is classified by its first keyword (the `sql` section of the
command knowledge), and writes nested anywhere in it (a data-modifying CTE, `SELECT INTO`, a
function such as pg_terminate_backend) raise the class. Case does not matter.
"""

from __future__ import annotations

import re

from agentledger.shell.knowledge import DESTRUCTIVE, MUTATING, RANK, READ_ONLY, UNKNOWN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["classify_sql"]

_LITERALS = re.compile(
    r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\$([A-Za-z_]*)\$.*?\$\1\$",
    re.DOTALL,
)
_TOKENS = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*|=|\(")
_META_READ_ONLY = {
    "\\l", "\\x", "\\timing", "\\conninfo", "\\q", "\\echo", "\\pset", "\\set", "\\unset",
    "\\encoding", "\\?", "\\h", "\\sf", "\\sv", "\\z", "\\g", "\\a", "\\t", "\\c", "\\connect",
    "\\watch", "\\f", "\\H", "\\T", "\\C", "\\errverbose", "\\p", "\\r",
}  # fmt: skip
# Writes that can sit inside a statement that starts otherwise (CTEs, EXPLAIN ANALYZE, ...):
# the keyword and the word that must follow it somewhere later.
_NESTED_WRITES = {"INSERT": "INTO", "MERGE": "INTO", "DELETE": "FROM", "UPDATE": "SET"}


def classify_sql(text: str, rules: dict[str, Any]) -> tuple[str, str]:
    """The class of the SQL `text` and why, using the `sql` rules of the command knowledge."""
    found: list[tuple[str, str]] = []
    sql_lines = []
    for line in _LITERALS.sub(_blank, text).splitlines():
        stripped = line.strip()
        if stripped.startswith("\\"):
            found.append(_meta(stripped))
        else:
            sql_lines.append(line)
    for statement in "\n".join(sql_lines).split(";"):
        tokens = _TOKENS.findall(statement)
        if tokens:
            found.append(_statement([token.upper() for token in tokens], rules))
    if not found:
        return READ_ONLY, "SQL: no statement"
    return max(found, key=lambda pair: RANK[pair[0]])


def _blank(match: re.Match[str]) -> str:
    text = match.group(0)
    if text.startswith(("--", "/*")):
        return " "
    return " _literal_ "


def _meta(line: str) -> tuple[str, str]:
    command = line.split()[0]
    if command in _META_READ_ONLY or command.startswith("\\d"):
        return READ_ONLY, f"psql {command} is read-only"
    if command == "\\copy":
        if " from " in line.lower():
            return MUTATING, "psql \\copy ... from writes a table"
        return READ_ONLY, "psql \\copy ... to reads a table"
    return UNKNOWN, f"psql {command} runs something the gate cannot see"


def _statement(tokens: list[str], rules: dict[str, Any]) -> tuple[str, str]:
    while tokens and tokens[0] == "(":
        tokens = tokens[1:]
    if not tokens:
        return READ_ONLY, "SQL: empty statement"
    first = tokens[0]
    kind, reason = _opening(first, tokens, rules)
    if first == "EXPLAIN":
        # Plain EXPLAIN only plans; EXPLAIN ANALYZE was classified as what it runs.
        return kind, reason
    for extra in (_nested_write(tokens), _function(tokens, rules)):
        if extra is not None and RANK[extra[0]] > RANK[kind]:
            kind, reason = extra
    return kind, reason


def _opening(first: str, tokens: list[str], rules: dict[str, Any]) -> tuple[str, str]:
    if first == "EXPLAIN":
        rest = [token for token in tokens[1:] if token not in ("(", "VERBOSE", "ANALYSE")]
        if rest and rest[0] == "ANALYZE":
            kind, reason = _statement(rest[1:], rules)
            return kind, f"EXPLAIN ANALYZE runs the statement: {reason}"
        return READ_ONLY, "SQL: EXPLAIN is read-only"
    if first == "DELETE" and first in rules.get(DESTRUCTIVE, ()):
        if "WHERE" in tokens:
            return MUTATING, "SQL: DELETE ... WHERE is mutating"
        return DESTRUCTIVE, "SQL: DELETE without WHERE is destructive"
    for kind in (DESTRUCTIVE, MUTATING):
        if first in rules.get(kind, ()):
            return kind, f"SQL: {first} is {kind}"
    if first in rules.get(READ_ONLY, ()):
        for word in rules.get("mutating_after", {}).get(first, ()):
            if word in tokens[1:]:
                return MUTATING, f"SQL: {first} ... {word} is mutating"
        return READ_ONLY, f"SQL: {first} is read-only"
    return UNKNOWN, f"SQL: a statement starting with {first} is unknown"


def _nested_write(words: list[str]) -> tuple[str, str] | None:
    found: tuple[str, str] | None = None
    for index, word in enumerate(words[1:], start=1):
        if word in ("DROP", "TRUNCATE") and index + 1 < len(words):
            return DESTRUCTIVE, f"SQL: {word} inside the statement is destructive"
        follower = _NESTED_WRITES.get(word)
        if follower is None or follower not in words[index + 1 :]:
            continue
        if word == "UPDATE" and words[index - 1] in ("FOR", "KEY", "ON"):
            continue
        if word == "DELETE" and words[index - 1] == "ON":
            continue
        found = MUTATING, f"SQL: {word} inside the statement is mutating"
    return found


def _function(tokens: list[str], rules: dict[str, Any]) -> tuple[str, str] | None:
    names = rules.get("functions", {}).get(MUTATING, ())
    for index, token in enumerate(tokens[:-1]):
        if tokens[index + 1] == "(" and token.lower() in names:
            return MUTATING, f"SQL: {token.lower()}() is mutating"
    return None
