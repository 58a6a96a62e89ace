"""SQLite PRAGMAs: which only read."""

from __future__ import annotations

from typing import Any

from agentledger.shell.knowledge import MUTATING, READ_ONLY, UNKNOWN

# SQLite PRAGMAs that only read, asked without a value (`PRAGMA integrity_check`) or with a
# table or index name (`PRAGMA table_info(t)`); any other may write (`incremental_vacuum`,
# `optimize`, `wal_checkpoint`) and one given a value changes a setting.
_SETTINGS = (
    "page_size max_page_count schema_version user_version application_id journal_mode "
    "auto_vacuum cache_size busy_timeout foreign_keys synchronous temp_store locking_mode "
    "mmap_size secure_delete recursive_triggers query_only"
)
_READS = (
    "integrity_check quick_check table_info table_xinfo table_list index_list index_info "
    "index_xinfo foreign_key_list foreign_key_check database_list collation_list "
    "compile_options function_list module_list pragma_list page_count freelist_count "
    "data_version encoding"
)
SQLITE_READ_PRAGMAS = frozenset(f"{_READS} {_SETTINGS}".split())
_PRAGMA_NAME_ONLY = frozenset(_SETTINGS.split())
"""Of those, the settings: a read only when asked without a value."""


def pragma_kind(node: Any, name: str) -> tuple[str, str]:
    """A SQLite PRAGMA: read-only only when it is one known to read (SQLITE_READ_PRAGMAS)."""
    from sqlglot import exp

    target = node.this
    given = isinstance(target, exp.EQ) or node.args.get("expression") is not None
    if isinstance(target, exp.EQ):
        target = target.this
    if isinstance(target, exp.Dot):  # main.table_info: the schema first
        target = target.expression
    pragma = str(getattr(target, "name", "") or "").lower()
    if pragma not in SQLITE_READ_PRAGMAS:
        return UNKNOWN, f"{name} {pragma or '?'} is not known to only read (it may write)"
    if given and pragma in _PRAGMA_NAME_ONLY:
        return MUTATING, f"{name} {pragma} with a value changes the database's settings"
    return READ_ONLY, f"{name} {pragma} only reads"
