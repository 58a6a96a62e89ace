"""Command knowledge: what the classifier knows about commands, as data (YAML files).

The packaged file is `agentledger/data/commands.yaml`; its header documents the format. A policy
adds files (`knowledge:`) or entries (`commands:`); a later layer replaces a command's whole
entry. Files are validated once (`normalize_knowledge`) and then read from the cache.
"""

from __future__ import annotations

import os

from agentledger.shell.validated_cache import load_cached, parse_yaml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

__all__ = [
    "DESTRUCTIVE",
    "KINDS",
    "MUTATING",
    "READ_ONLY",
    "UNKNOWN",
    "Knowledge",
    "Patterns",
    "Spec",
    "glob_match",
    "load_knowledge",
    "most_severe",
    "normalize_entries",
    "normalize_knowledge",
]

READ_ONLY = "read-only"
UNKNOWN = "unknown"
MUTATING = "mutating"
DESTRUCTIVE = "destructive"
KINDS = (READ_ONLY, UNKNOWN, MUTATING, DESTRUCTIVE)
"""The classes, least severe first."""
RANK = {kind: rank for rank, kind in enumerate(KINDS)}
VALUE_KINDS = (*KINDS, "sql", "shell")
VARIABLE_KINDS = ("shell", "prompt", "unknown")
"""What setting an environment variable does: names a command line a tool runs (`shell`), a
prompt the shell expands (`prompt`), or something loaded or run that the gate cannot see."""
SCRIPT_LANGUAGES = ("sed", "awk", "mongo", "shell")

PACKAGED = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
COMMANDS_FILE = os.path.join(PACKAGED, "commands.yaml")


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
        self.options_with_arg.update(self.values)
        self.combined_short: bool = entry.get("combined_short", False)
        self.subs: dict[str, Any] = entry.get("subs", {})
        self.abbreviations: bool = entry.get("abbreviations", False)
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
            ("--", *self.options_with_arg, *self.info, *self.nested)
        )
        """Options the entry names without a class (`evaluate._known`)."""
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


def load_knowledge(files: Sequence[str] = (), commands: dict[str, Any] | None = None) -> Knowledge:
    """The packaged command knowledge, extended by `files` and then by `commands` entries.

    `commands` must already be normalized (`normalize_entries`), as a policy's are.
    """
    layers = [load_cached(COMMANDS_FILE, "knowledge", _build)]
    layers += [load_cached(os.fspath(path), "knowledge", _build) for path in files]
    if commands:
        layers.append({"commands": commands})
    return Knowledge(layers)


def _build(raw: bytes, source: str) -> dict[str, Any]:
    return normalize_knowledge(parse_yaml(raw, source), source)


# --- validation: runs once per file, when it is not in the cache -----------------------------

_ENTRY_KEYS = {
    "default",
    "no_args",
    "options_with_arg",
    "combined_short",
    "flags",
    "flag_values",
    "subcommands",
    "abbreviations",
    "verbs",
    "args",
    "stdin",
    "sql_arg",
    "sql_dialect",
    "nested",
    "wrapper",
    "note",
    "writes",
    "dry_run",
    "script",
    "info",
    "names",
    "arithmetic",
    "options_first",
    "aliases",
    "strict",
    "sql_rest",
    "dot_commands",
}
_WRAPPER_KEYS = {
    "options_with_arg",
    "skip",
    "after",
    "join",
    "assignments",
    "no_run_flags",
    "no_command",
    "note",
    "appends",
}


class _Invalid(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def normalize_knowledge(data: Any, source: str) -> dict[str, Any]:
    """Validate a command knowledge document; RecordError names `source` and the field."""
    try:
        return _knowledge(data)
    except _Invalid as exc:
        from agentledger.errors import RecordError

        raise RecordError(source, exc.problem, field=exc.field) from None


def normalize_entries(data: Any, source: str, field: str = "commands") -> dict[str, Any]:
    """Validate a `commands:` mapping (name -> entry), as found in a policy."""
    try:
        return _commands(data, field)
    except _Invalid as exc:
        from agentledger.errors import RecordError

        raise RecordError(source, exc.problem, field=exc.field) from None


def _knowledge(data: Any) -> dict[str, Any]:
    _mapping(data, "", "a mapping with a 'commands' key")
    unknown = set(data) - {"schema_version", "commands", "sql", "redirects", "environment", "shell"}
    if unknown:
        raise _Invalid(
            sorted(unknown)[0],
            "unknown key (expected schema_version, commands, sql, redirects, environment, shell)",
        )
    version = data.get("schema_version", 1)
    if version != 1:
        raise _Invalid(
            "schema_version", f"this agentledger reads schema_version 1, got {version!r}"
        )
    result: dict[str, Any] = {"commands": _commands(data.get("commands", {}), "commands")}
    if "sql" in data:
        result["sql"] = _sql(data["sql"])
    if "redirects" in data:
        redirects = _mapping(data["redirects"], "redirects", "a mapping")
        result["redirects"] = {
            key: _strings(redirects.get(key, []), f"redirects.{key}")
            for key in ("harmless", "destructive")
        }
        for key in set(redirects) - {"harmless", "destructive"}:
            raise _Invalid(f"redirects.{key}", "unknown key (expected harmless, destructive)")
    if "environment" in data:
        result["environment"] = {
            name: kind
            for kind, name in _by_kind(data["environment"], "environment", VARIABLE_KINDS)
        }
    if "shell" in data:
        shell = _mapping(data["shell"], "shell", "a mapping")
        for key in set(shell) - {"hooks", "integers"}:
            raise _Invalid(f"shell.{key}", "unknown key (expected hooks, integers)")
        result["shell"] = {key: _strings(shell[key], f"shell.{key}") for key in shell}
    return result


def _commands(data: Any, field: str) -> dict[str, Any]:
    _mapping(data, field, "a mapping of command name to entry")
    return {name: _entry(value, f"{field}.{name}") for name, value in data.items()}


def _entry(value: Any, field: str) -> Any:
    if isinstance(value, str):
        return _kind(value, field)
    _mapping(value, field, "a class (read-only, mutating, destructive, unknown) or a mapping")
    for key in value:
        if key not in _ENTRY_KEYS:
            raise _Invalid(f"{field}.{key}", f"unknown key (expected one of {sorted(_ENTRY_KEYS)})")
    out: dict[str, Any] = {}
    for key in ("default", "no_args"):
        if key in value:
            out[key] = _kind(value[key], f"{field}.{key}")
    if "options_with_arg" in value:
        out["options_with_arg"] = _strings(value["options_with_arg"], f"{field}.options_with_arg")
    for key in ("combined_short", "abbreviations"):
        if key in value:
            out[key] = _bool(value[key], f"{field}.{key}")
    if "flags" in value:
        exact: dict[str, str] = {}
        globs: list[list[str]] = []
        for kind, flag in _by_kind(value["flags"], f"{field}.flags"):
            if "*" in flag:
                globs.append([flag, kind])
            elif RANK[kind] >= RANK[exact.get(flag, READ_ONLY)]:
                exact[flag] = kind
        out["flags"], out["flag_globs"] = exact, globs
    if "flag_values" in value:
        values = _mapping(value["flag_values"], f"{field}.flag_values", "a mapping")
        out["values"] = {}
        for flag, patterns in values.items():
            where = f"{field}.flag_values.{flag}"
            patterns = _mapping(patterns, where, "a mapping of value glob to class")
            out["values"][flag] = [
                [str(glob).lower(), _kind(kind, f"{where}.{glob}", VALUE_KINDS)]
                for glob, kind in patterns.items()
            ]
    if "subcommands" in value:
        out["subs"] = _subcommands(value["subcommands"], f"{field}.subcommands")
    if "verbs" in value:
        out["verbs"] = [
            [glob.lower(), kind] for kind, glob in _by_kind(value["verbs"], f"{field}.verbs")
        ]
    if "args" in value:
        out["args"] = [
            [glob.lower(), kind] for kind, glob in _by_kind(value["args"], f"{field}.args")
        ]
    if "stdin" in value:
        if value["stdin"] not in ("sql", "shell"):
            raise _Invalid(f"{field}.stdin", "expected sql or shell")
        out["stdin"] = value["stdin"]
    if "sql_arg" in value:
        position = value["sql_arg"]
        if not isinstance(position, int) or isinstance(position, bool) or position < 1:
            raise _Invalid(f"{field}.sql_arg", "expected a positive integer")
        out["sql_arg"] = position
    if "sql_dialect" in value:
        dialect = value["sql_dialect"]
        if not isinstance(dialect, str) or not dialect.isidentifier():
            raise _Invalid(f"{field}.sql_dialect", "expected a SQL dialect name (mysql, sqlite)")
        out["sql_dialect"] = dialect.lower()
    if "nested" in value:
        nested = _mapping(value["nested"], f"{field}.nested", "a mapping of option to terminators")
        out["nested"] = {
            flag: _strings(ends, f"{field}.nested.{flag}") for flag, ends in nested.items()
        }
    if "wrapper" in value:
        out["wrapper"] = _wrapper(value["wrapper"], f"{field}.wrapper")
    if "note" in value:
        if not isinstance(value["note"], str):
            raise _Invalid(f"{field}.note", "expected text")
        out["note"] = value["note"]
    if "dot_commands" in value:
        out["dot_commands"] = [
            [glob.lower(), kind]
            for kind, glob in _by_kind(value["dot_commands"], f"{field}.dot_commands")
        ]
    for key in ("names", "arithmetic", "options_first", "aliases", "strict", "sql_rest"):
        if key in value:
            out[key] = _bool(value[key], f"{field}.{key}")
    for key in ("dry_run", "info"):
        if key in value:
            out[key] = _strings(value[key], f"{field}.{key}")
    if "writes" in value:
        out["writes"] = _writes(value["writes"], f"{field}.writes")
    if "script" in value:
        out["script"] = _script(value["script"], f"{field}.script")
    return out


def _writes(value: Any, field: str) -> dict[str, Any]:
    _mapping(value, field, "a mapping (options, args, prefixes)")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in ("options", "prefixes"):
            out[key] = _strings(item, f"{field}.{key}")
        elif key == "args":
            if item == "all":
                out[key] = item
                continue
            if not isinstance(item, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in item
            ):
                raise _Invalid(f"{field}.args", "expected all or a list of positions (1, 2, ...)")
            out[key] = item
        else:
            raise _Invalid(f"{field}.{key}", "unknown key (expected options, args, prefixes)")
    return out


def _script(value: Any, field: str) -> dict[str, Any]:
    _mapping(value, field, "a mapping (language, options, files)")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "language":
            out[key] = _kind(item, f"{field}.language", SCRIPT_LANGUAGES)
        elif key in ("options", "files", "reads"):
            out[key] = _strings(item, f"{field}.{key}")
        elif key in ("positional", "required"):
            out[key] = _bool(item, f"{field}.{key}")
        else:
            raise _Invalid(
                f"{field}.{key}",
                "unknown key (expected language, options, files, reads, positional, required)",
            )
    if "language" not in out:
        raise _Invalid(f"{field}.language", f"required: one of {', '.join(SCRIPT_LANGUAGES)}")
    return out


def _subcommands(value: Any, field: str) -> dict[str, Any]:
    _mapping(value, field, "a mapping")
    subs: dict[str, Any] = {}
    for key, item in value.items():
        if key in KINDS:
            for name in _strings(item, f"{field}.{key}"):
                subs[name] = key
        else:
            subs[key] = _entry(item, f"{field}.{key}")
    return subs


def _wrapper(value: Any, field: str) -> dict[str, Any]:
    _mapping(value, field, "a mapping")
    for key in value:
        if key not in _WRAPPER_KEYS:
            raise _Invalid(
                f"{field}.{key}", f"unknown key (expected one of {sorted(_WRAPPER_KEYS)})"
            )
    out: dict[str, Any] = {}
    for key in ("options_with_arg", "no_run_flags"):
        if key in value:
            out[key] = _strings(value[key], f"{field}.{key}")
    if "skip" in value:
        skip = value["skip"]
        if not isinstance(skip, int) or isinstance(skip, bool) or skip < 0:
            raise _Invalid(f"{field}.skip", "expected a number of words (0 or more)")
        out["skip"] = skip
    for key in ("after", "note"):
        if key in value:
            if not isinstance(value[key], str):
                raise _Invalid(f"{field}.{key}", "expected text")
            out[key] = value[key]
    for key in ("join", "assignments", "appends"):
        if key in value:
            out[key] = _bool(value[key], f"{field}.{key}")
    if "no_command" in value:
        out["no_command"] = _kind(value["no_command"], f"{field}.no_command")
    return out


def _sql(value: Any) -> dict[str, Any]:
    _mapping(value, "sql", "a mapping")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in KINDS:
            out[key] = [word.upper() for word in _strings(item, f"sql.{key}")]
        elif key == "functions":
            functions = _mapping(item, "sql.functions", "a mapping of class to function names")
            out["functions"] = {
                _kind(kind, f"sql.functions.{kind}"): [
                    name.lower() for name in _strings(names, f"sql.functions.{kind}")
                ]
                for kind, names in functions.items()
            }
        else:
            raise _Invalid(f"sql.{key}", "unknown key (expected a class or functions)")
    return out


def _mapping(value: Any, field: str, expected: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(field, f"expected {expected}, found {_type_name(value)}")
    for key in value:
        if not isinstance(key, str) or not key:
            raise _Invalid(f"{field}.{key}", "keys must be non-empty text (quote yes, no, on, off)")
    return value


def _strings(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise _Invalid(field, f"expected a list of text, found {_type_name(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise _Invalid(f"{field}.{index}", f"expected non-empty text, found {_type_name(item)}")
    return value


def _by_kind(value: Any, field: str, allowed: Sequence[str] = KINDS) -> list[tuple[str, str]]:
    _mapping(value, field, "a mapping of class to a list")
    return [
        (_kind(kind, f"{field}.{kind}", allowed), item)
        for kind, items in value.items()
        for item in _strings(items, f"{field}.{kind}")
    ]


def _kind(value: Any, field: str, allowed: Sequence[str] = KINDS) -> str:
    if value not in allowed:
        raise _Invalid(field, f"expected one of {', '.join(allowed)}, found {value!r}")
    return str(value)


def _bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(field, f"expected true or false, found {_type_name(value)}")
    return value


def _type_name(value: Any) -> str:
    names = {
        dict: "a mapping",
        list: "a list",
        str: "text",
        bool: "a boolean",
        type(None): "nothing",
    }
    return names.get(type(value), type(value).__name__)
