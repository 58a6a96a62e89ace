"""The SQL classifier's knowledge: psql's read-only meta-commands, the functions that change
state or reach outside a query, and `SqlRules`, the `sql` section of the command knowledge
(what the parser alone cannot know). Used by `agentledger.shell.sql`."""

from __future__ import annotations

import re

from agentledger.shell.knowledge import DESTRUCTIVE, MUTATING, READ_ONLY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "EXPLAIN_OPTIONS",
    "EXPLAIN_RUNS",
    "GLOBAL_SETTINGS",
    "META_READ_ONLY",
    "RISKY_FUNCTIONS",
    "TABLE_READERS",
    "TYPED_UNSAFE",
    "SqlRules",
    "sql_rules",
]

META_READ_ONLY = {
    "\\l", "\\x", "\\timing", "\\conninfo", "\\q", "\\echo", "\\pset", "\\set", "\\unset",
    "\\encoding", "\\?", "\\h", "\\sf", "\\sv", "\\z", "\\g", "\\a", "\\t", "\\c", "\\connect",
    "\\watch", "\\f", "\\H", "\\T", "\\C", "\\errverbose", "\\p", "\\r",
}  # fmt: skip
# Functions that change state or reach outside the query (files, other databases, SQL given
# as text, locks), on top of the command knowledge's list of mutating functions.
RISKY_FUNCTIONS = frozenset(
    {
        "dblink", "dblink_exec", "dblink_send_query", "query_to_xml",
        "query_to_xml_and_xmlschema", "lo_import", "lo_export", "lo_unlink", "lo_put",
        "lo_from_bytea", "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_file_write",
        "pg_file_unlink", "pg_file_rename", "pg_stat_file", "pg_logdir_ls", "load_file",
        "sys_exec", "sys_eval", "xp_cmdshell", "pg_advisory_xact_lock",
        "pg_advisory_lock_shared", "pg_advisory_xact_lock_shared", "pg_try_advisory_lock",
        "pg_try_advisory_lock_shared", "pg_try_advisory_xact_lock",
        "pg_try_advisory_xact_lock_shared", "pg_advisory_unlock", "pg_advisory_unlock_shared",
        "pg_advisory_unlock_all", "pg_logical_emit_message", "pg_replication_slot_advance",
        "get_lock", "release_lock", "release_all_locks", "cursor_to_xml",
        "cursor_to_xmlschema", "schema_to_xml", "schema_to_xmlschema",
        "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema",
        "database_to_xml_and_xmlschema", "pg_import_system_collations", "readfile",
        "pg_ls_logdir", "pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir",
    }
)  # fmt: skip
TABLE_READERS = frozenset({"table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema"})
"""Functions that read the whole table named by their first argument (`table_to_xml('users',
...)`): the table counts as read, like one in FROM."""
TYPED_UNSAFE = frozenset(
    {
        "NEXT_VALUE_FOR", "READ_CSV", "READ_PARQUET", "TO_FILE", "SECRET", "PREDICT",
        "GENERATE_EMBEDDING", "GENERATE_TEXT", "GENERATE_TABLE", "GENERATE_BOOL",
        "GENERATE_DOUBLE", "GENERATE_INT", "M_L_FORECAST", "M_L_TRANSLATE", "A_I_FORECAST",
        "FEATURES_AT_TIME", "VECTOR_SEARCH", "NET_FUNC", "APPLY",
    }
)  # fmt: skip
"""Functions sqlglot knows that read files, advance sequences or call out: never read-only."""
EXPLAIN_OPTIONS = re.compile(
    r"^\s*(?:\([^)]*\)\s*|(?:ANALYZE|ANALYSE|VERBOSE|COSTS|BUFFERS|SETTINGS|QUERY\s+PLAN|"
    r"FORMAT\s*=?\s*\w+)\b\s*)*",
    re.IGNORECASE,
)
EXPLAIN_RUNS = re.compile(r"\bANALY[SZ]E\b", re.IGNORECASE)
GLOBAL_SETTINGS = frozenset({"GLOBAL", "PERSIST", "PERSIST_ONLY"})


class SqlRules:
    """The `sql` section of the command knowledge: what the parser alone cannot know.

    Keywords classify statements sqlglot keeps as raw commands (`VACUUM`, `FLUSH`); the
    functions are those known to change state. Immutable and compared by value (written by
    hand, like SqlFinding: a NamedTuple would import typing, which the guard's start-up would
    pay for).
    """

    __slots__ = ("destructive", "functions", "mutating", "read_only", "reading_functions")

    def __init__(
        self,
        read_only: frozenset[str],
        mutating: frozenset[str],
        destructive: frozenset[str],
        functions: frozenset[str],
        reading_functions: frozenset[str] = frozenset(),
    ) -> None:
        self.read_only = read_only
        self.mutating = mutating
        self.destructive = destructive
        self.functions = functions
        self.reading_functions = reading_functions
        """Functions sqlglot does not know that are known to only read: any other is unknown."""

    def _key(self) -> tuple[frozenset[str], ...]:
        return (
            self.read_only, self.mutating, self.destructive, self.functions,
            self.reading_functions,
        )  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SqlRules) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"SqlRules(read_only={self.read_only!r}, mutating={self.mutating!r}, "
            f"destructive={self.destructive!r}, functions={self.functions!r}, "
            f"reading_functions={self.reading_functions!r})"
        )


_RULES: dict[int, tuple[dict[str, Any], SqlRules]] = {}


def sql_rules(section: dict[str, Any]) -> SqlRules:
    """The SqlRules of a knowledge's `sql` section (memoised per section)."""
    found = _RULES.get(id(section))
    if found is not None and found[0] is section:
        return found[1]
    rules = SqlRules(
        read_only=frozenset(section.get(READ_ONLY, ())),
        mutating=frozenset(section.get(MUTATING, ())),
        destructive=frozenset(section.get(DESTRUCTIVE, ())),
        functions=frozenset(RISKY_FUNCTIONS | set(section.get("functions", {}).get(MUTATING, ()))),
        reading_functions=frozenset(section.get("functions", {}).get(READ_ONLY, ())),
    )
    _RULES[id(section)] = (section, rules)
    return rules


def unproven_name(why: str) -> str:
    """The call (`round()`) or operator (`operator <`) an `unproven_call` answer names."""
    import re

    call = re.search(r"(?:argument of |built-in )([\w.\"]+)\(", why)
    if call:
        return f"{call.group(1)}()"
    operator = re.search(r"(?:operand of |operator )(\S+) ", why)
    return f"operator {operator.group(1)}" if operator else why
