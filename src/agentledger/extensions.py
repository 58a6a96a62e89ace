"""Every extension point of agentledger, in one place (as llm's ``hookspecs.py`` declares its
hooks): the entry-point groups another package can add to, and the registries a program
using agentledger as a library can add to, each with the signature of what it holds.

The built-in features are themselves entries of these registries: the local directory, S3
and the in-memory store; SQLite and PostgreSQL; the five model providers; the four agent
adapters; the five import formats. A new one is a new module and one entry, not a change
everywhere. Each point is named as ``"module:attribute"`` and imported only when asked for
(`agentledger.lazy.load`); tests/test_extensions.py checks that every one exists, and that
no entry-point group is read anywhere without being listed here.

Entry-point groups (``[project.entry-points."<group>"]`` in the adding package's
pyproject.toml; looked up only for a name that is not built in):

- ``agentledger.storage_backends``: URI scheme -> ``factory(ledger_root: Path, rest: str) ->
  StorageBackend`` (`store.storage.StorageBackend`; held to tests/test_storage_contract.py).
- ``agentledger.index_backends``: URI scheme -> ``factory(ledger_root: Path, rest: str) ->
  RunIndex`` (`store.index.RunIndex`, most simply a `store.index.sql.SqlIndex` over a new
  `Dialect`; held to tests/test_index_contract.py).
- ``agentledger.scorers``: name -> ``scorer(output: dict, expect: dict)`` returning
  ``(passed, reason)``, a bool, a `PropertyResult` or a list of them (a fixture's custom
  property, also named ``module:function`` or ``file.py:function``).

Registries (call the function, or add to the mapping, before the ledger or command uses it):

- `store.backends.register_storage(scheme, factory)` and `register_index(scheme, factory)`:
  as the two groups above, for a program rather than a package.
- `providers.registry.register_provider(name, provider)`: a `providers.base.Provider` class
  (or ``"module:Class"``), constructed with the keyword options of `make_provider`.
- `runner.adapters.ADAPTERS`: an agent spec's ``kind`` -> an `AgentAdapter` class, made
  with the loaded agent.
- `importers.formats.FORMATS`: an ``--format`` name -> (module, finder, planner): a
  ``finder(paths) -> [(path, format)]`` and a ``planner(path, context, name) -> PlannedRun``.
- `store.record_kinds.RECORD_KINDS`: every kind of record beside the runs (a
  `RecordStore` subclass: its area, model, key scheme and index hook), which reindex and gc
  go through.
- `store.index.migrations.migration`: the decorator that appends a schema step,
  ``step(dialect) -> [statement]``, to the index's one forward-only list.
- `cli.commands.COMMANDS`: a command name -> its click command (``"module:attribute"``) and the
  summary `--help` shows.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ENTRY_POINT_GROUPS", "REGISTRIES", "ExtensionPoint"]


class ExtensionPoint(NamedTuple):
    """One place to extend agentledger: where it is, and what it takes."""

    name: str
    """The entry-point group, or the registry's name."""
    target: str
    """``"module:attribute"``: the registry itself, or the constant naming the group."""
    takes: str
    """The signature of what an entry is."""


ENTRY_POINT_GROUPS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint(
        "agentledger.storage_backends",
        "agentledger.store.backends:STORAGE_GROUP",
        "factory(ledger_root: Path, rest: str) -> StorageBackend",
    ),
    ExtensionPoint(
        "agentledger.index_backends",
        "agentledger.store.backends:INDEX_GROUP",
        "factory(ledger_root: Path, rest: str) -> RunIndex",
    ),
    ExtensionPoint(
        "agentledger.scorers",
        "agentledger.suites.properties.custom:ENTRY_POINT_GROUP",
        "scorer(output: dict, expect: dict) -> (passed, reason) | bool | PropertyResult | list",
    ),
)
"""Every entry-point group agentledger reads."""

REGISTRIES: tuple[ExtensionPoint, ...] = (
    ExtensionPoint(
        "storage backends",
        "agentledger.store.backends:register_storage",
        "register_storage(scheme, factory(ledger_root, rest) -> StorageBackend)",
    ),
    ExtensionPoint(
        "index backends",
        "agentledger.store.backends:register_index",
        "register_index(scheme, factory(ledger_root, rest) -> RunIndex)",
    ),
    ExtensionPoint(
        "model providers",
        "agentledger.providers.registry:register_provider",
        "register_provider(name, Provider class or 'module:Class')",
    ),
    ExtensionPoint(
        "agent adapters",
        "agentledger.runner.adapters:ADAPTERS",
        "ADAPTERS[kind] = AgentAdapter subclass, made as cls(loaded_agent)",
    ),
    ExtensionPoint(
        "import formats",
        "agentledger.importers.formats:FORMATS",
        "FORMATS[name] = (module, finder(paths) -> [(path, format)] or '', "
        "planner(path, context, name) -> PlannedRun)",
    ),
    ExtensionPoint(
        "record kinds",
        "agentledger.store.record_kinds:RECORD_KINDS",
        "a RecordStore subclass: area, model, noun, key(*ids), ids_of(record), index hook",
    ),
    ExtensionPoint(
        "index migrations",
        "agentledger.store.index.migrations:migration",
        "@migration def mNNN_what(dialect) -> list[str]",
    ),
    ExtensionPoint(
        "commands",
        "agentledger.cli.commands:COMMANDS",
        "COMMANDS[name] = Command('module:attribute', summary)",
    ),
)
"""Every registry a program can add to."""
