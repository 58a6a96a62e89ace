"""Command knowledge: what the classifier knows about commands, as data (YAML files).

The packaged file is `agentledger/data/commands.yaml`; its header documents the format. A policy
adds files (`knowledge:`) or entries (`commands:`); a later layer replaces a command's whole
entry. Files are validated once (`normalize_knowledge`) and then read from the cache.
"""

from __future__ import annotations

import os

from agentledger.shell.knowledge_format import (
    DESTRUCTIVE,
    KINDS,
    MUTATING,
    RANK,
    READ_ONLY,
    UNKNOWN,
    build_knowledge,
    normalize_entries,
    normalize_knowledge,
)
from agentledger.shell.validated_cache import load_cached

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

__all__ = [
    "DESTRUCTIVE",
    "KINDS",
    "MUTATING",
    "RANK",
    "READ_ONLY",
    "UNKNOWN",
    "Knowledge",
    "Patterns",
    "Spec",
    "default_knowledge",
    "glob_match",
    "load_knowledge",
    "most_severe",
    "normalize_entries",
    "normalize_knowledge",
]

PACKAGED = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
COMMANDS_FILE = os.path.join(PACKAGED, "commands.yaml")
_default: Knowledge | None = None


def most_severe(kinds: Iterable[str]) -> str:
    """The most severe of `kinds` (read-only when there are none)."""
    best = READ_ONLY
    for kind in kinds:
        if RANK[kind] > RANK[best]:
            best = kind
    return best


def glob_match(pattern: str, text: str) -> bool:
    """True when `text` matches `pattern`, where `*` matches any run of characters."""
    if "*" not in pattern:
        return pattern == text
    pieces = pattern.split("*")
    first, last = pieces[0], pieces[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first):
        return False
    if not text.endswith(last):
        return False
    position, end = len(first), len(text) - len(last)
    for piece in pieces[1:-1]:
        found = text.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


class Patterns:
    """Globs with a class each (verbs, positional words, dry-run options), matched by exact
    lookup first and then by one regular expression per class, most severe first: the long
    verb lists of the cloud CLIs are tried on every positional word."""

    __slots__ = ("_compiled", "exact", "globs")

    def __init__(self, pairs: Iterable[Sequence[str]]) -> None:
        self.exact: dict[str, str] = {}
        self.globs: list[tuple[str, str]] = []
        self._compiled: list[tuple[str, Any]] | None = None
        for pattern, kind in pairs:
            if "*" in pattern:
                self.globs.append((pattern, kind))
            elif pattern not in self.exact or RANK[kind] > RANK[self.exact[pattern]]:
                self.exact[pattern] = kind

    def __bool__(self) -> bool:
        return bool(self.exact or self.globs)

    def most_severe(self, text: str) -> str | None:
        """The most severe class whose glob matches `text`, or None."""
        found = self.exact.get(text)
        if not self.globs:
            return found
        if self._compiled is None:
            self._compiled = _compile(self.globs)
        for kind, expression in self._compiled:
            if found is not None and RANK[kind] <= RANK[found]:
                break
            if expression.fullmatch(text):
                return kind
        return found


def _compile(globs: list[tuple[str, str]]) -> list[tuple[str, Any]]:
    import re

    by_kind: dict[str, list[str]] = {}
    for pattern, kind in globs:
        by_kind.setdefault(kind, []).append(".*".join(map(re.escape, pattern.split("*"))))
    ordered = sorted(by_kind.items(), key=lambda item: -RANK[item[0]])
    return [(kind, re.compile("|".join(parts), re.DOTALL)) for kind, parts in ordered]


class Spec:
    """One command's (or subcommand's) entry, ready for the classifier."""

    __slots__ = (
        "abbreviated",
        "abbreviations",
        "aliases",
        "args",
        "arithmetic",
        "attached",
        "combined_short",
        "dash_outputs",
        "default",
        "dot_commands",
        "dry_run",
        "flag_globs",
        "flags",
        "info",
        "long_names",
        "long_options",
        "named",
        "names",
        "nested",
        "no_args",
        "note",
        "optional_values",
        "options_first",
        "options_with_arg",
        "outputs",
        "risky_options",
        "script",
        "sql_arg",
        "sql_dialect",
        "sql_rest",
        "stdin",
        "strict",
        "subs",
        "values",
        "verbs",
        "wrapper",
        "writes",
        "written_args",
    )

    def __init__(self, entry: dict[str, Any]) -> None:
        self.default: str = entry.get("default", UNKNOWN)
        self.no_args: str | None = entry.get("no_args")
        self.flags: dict[str, str] = entry.get("flags", {})
        self.flag_globs: list[list[str]] = entry.get("flag_globs", [])
        self.values: dict[str, list[list[str]]] = entry.get("values", {})
        self.options_with_arg: set[str] = set(entry.get("options_with_arg", ()))
        self.optional_values: frozenset[str] = frozenset(entry.get("optional_values", ()))
        self.options_with_arg.update(self.values)
        self.combined_short: bool = entry.get("combined_short", False)
        self.subs: dict[str, Any] = entry.get("subs", {})
        self.abbreviations: bool | str = entry.get("abbreviations", False)
        """True, or "ordered": an ambiguous prefix means the first subcommand listed."""
        verbs = entry.get("verbs")
        self.verbs: Patterns | None = None if verbs is None else Patterns(verbs)
        args = Patterns(entry.get("args", ()))
        self.args: Patterns | None = args if args else None
        self.stdin: str | None = entry.get("stdin")
        self.sql_arg: int | None = entry.get("sql_arg")
        self.sql_dialect: str | None = entry.get("sql_dialect")
        self.nested: dict[str, list[str]] = entry.get("nested", {})
        self.wrapper: dict[str, Any] | None = entry.get("wrapper")
        self.note: str | None = entry.get("note")
        self.writes: dict[str, Any] = entry.get("writes", {})
        self.outputs: frozenset[str] = frozenset(self.writes.get("options", ()))
        self.dash_outputs: frozenset[str] = frozenset(self.writes.get("stdout", ()))
        """Write options whose value `-` is standard output (`curl -o -`)."""
        self.options_with_arg.update(self.outputs)
        self.attached: frozenset[str] = self.outputs | self.values.keys()
        dry_run = Patterns((pattern, READ_ONLY) for pattern in entry.get("dry_run", ()))
        self.dry_run: Patterns | None = dry_run if dry_run else None
        self.written_args: bool = bool(self.writes.get("args") or self.writes.get("prefixes"))
        self.script: dict[str, Any] | None = entry.get("script")
        if self.script is not None:
            given = (*self.script.get("options", ()), *self.script.get("files", ()))
            self.options_with_arg.update(given)
            self.attached = self.attached | frozenset(given)
        self.info: tuple[str, ...] = ("--help", "--version", *entry.get("info", ()))
        self.names: bool = entry.get("names", False)
        self.arithmetic: bool = entry.get("arithmetic", False)
        self.options_first: bool = entry.get("options_first", False)
        self.aliases: bool = entry.get("aliases", False)
        self.strict: bool = entry.get("strict", False)
        self.sql_rest: bool = entry.get("sql_rest", False)
        dots = Patterns(entry.get("dot_commands", ()))
        self.dot_commands: Patterns | None = dots if dots else None
        self.long_options: list[tuple[str, str]] = _long_options(self)
        self.long_names: list[str] = [name for name, _ in self.long_options]
        self.named: frozenset[str] = frozenset(
            ("--", *self.options_with_arg, *self.optional_values, *self.info, *self.nested)
        )
        """Options the entry names without a class (`spec_lookup.named_in`)."""
        self.abbreviated: dict[str, list[tuple[str, str]]] = {}
        """Long options an unknown one was found to abbreviate, by the option given."""
        # A word only known at run time could be any option: it matters when some option
        # writes a file, runs a program or changes something.
        self.risky_options: bool = bool(
            self.values
            or self.outputs
            or self.nested
            or self.script
            or self.dry_run
            or any(kind != READ_ONLY for kind in self.flags.values())
            or any(kind != READ_ONLY for _, kind in self.flag_globs)
        )


def _long_options(spec: Spec) -> list[tuple[str, str]]:
    """The long options `spec` knows, with what each does when given, sorted by name (the
    options an abbreviation may stand for are neighbours): an option GNU tools accept
    abbreviated (`--ze` is `--zero`) counts as every option it may abbreviate."""
    found: dict[str, str] = {}
    for flag, kind in spec.flags.items():
        found[flag] = kind
    for pattern, kind in spec.flag_globs:
        head = pattern.split("*", 1)[0]
        if RANK[kind] > RANK[found.get(head, READ_ONLY)]:
            found[head] = kind
    for flag in spec.outputs:
        found[flag] = MUTATING
    for flag in (*spec.values, *spec.nested, *(spec.script or {}).get("files", ())):
        found.setdefault(flag, UNKNOWN)
    for flag in spec.options_with_arg:
        found.setdefault(flag, READ_ONLY)
    return sorted(
        (flag, kind) for flag, kind in found.items() if flag.startswith("--") and len(flag) > 3
    )


class Knowledge:
    """Command entries by name, the SQL keywords and the redirect rules, merged from layers."""

    __slots__ = (
        "_specs",
        "commands",
        "environment",
        "environment_globs",
        "globs",
        "redirects",
        "shell",
        "sql",
    )

    def __init__(self, layers: Sequence[dict[str, Any]]) -> None:
        self.commands: dict[str, Any] = {}
        self.sql: dict[str, Any] = {}
        self.redirects: dict[str, list[str]] = {}
        self.environment: dict[str, str] = {}
        self.shell: dict[str, list[str]] = {}
        for layer in layers:
            self.commands.update(layer.get("commands", {}))
            self.sql.update(layer.get("sql") or {})
            self.redirects.update(layer.get("redirects") or {})
            self.environment.update(layer.get("environment") or {})
            self.shell.update(layer.get("shell") or {})
        self.globs = [(name, entry) for name, entry in self.commands.items() if "*" in name]
        self.environment_globs = [
            (name, kind) for name, kind in self.environment.items() if "*" in name
        ]
        self._specs: dict[object, Spec] = {}

    def variable(self, name: str) -> str | None:
        """What setting the environment variable `name` does (VARIABLE_KINDS), or None."""
        found = self.environment.get(name)
        if found is None:
            for pattern, kind in self.environment_globs:
                if glob_match(pattern, name):
                    return kind
        return found

    def entry(self, name: str) -> Any:
        """The raw entry for command `name` (a class string or a mapping), or None."""
        found = self.commands.get(name)
        if found is None:
            for pattern, entry in self.globs:
                if glob_match(pattern, name):
                    return entry
        return found

    def spec(self, entry: Any) -> Spec:
        """The Spec of a raw entry (memoised)."""
        key = entry if isinstance(entry, str) else id(entry)
        found = self._specs.get(key)
        if found is None:
            found = Spec({"default": entry} if isinstance(entry, str) else entry)
            self._specs[key] = found
        return found


def default_knowledge() -> Knowledge:
    """The packaged command knowledge, loaded once."""
    global _default
    if _default is None:
        _default = load_knowledge()
    return _default


def load_knowledge(files: Sequence[str] = (), commands: dict[str, Any] | None = None) -> Knowledge:
    """The packaged command knowledge, extended by `files` and then by `commands` entries.

    `commands` must already be normalized (`normalize_entries`), as a policy's are.
    """
    layers = [load_cached(COMMANDS_FILE, "knowledge", build_knowledge)]
    layers += [load_cached(os.fspath(path), "knowledge", build_knowledge) for path in files]
    if commands:
        layers.append({"commands": commands})
    return Knowledge(layers)
