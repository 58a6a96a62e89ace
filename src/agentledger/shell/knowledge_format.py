"""The format of command knowledge files (YAML): its classes, and its validation.

`normalize_knowledge` checks a whole file and `normalize_entries` a policy's `commands:`; each
gives the entries in the form `agentledger.shell.knowledge.Knowledge` reads, or an InputError
naming the file and the field. Validation runs once per file, when it is not in the cache.
"""

from __future__ import annotations

from agentledger.shell.validated_cache import parse_yaml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = [
    "DESTRUCTIVE",
    "KINDS",
    "MUTATING",
    "RANK",
    "READ_ONLY",
    "UNKNOWN",
    "build_knowledge",
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


def build_knowledge(raw: bytes, source: str) -> dict[str, Any]:
    """A knowledge file's bytes, parsed and validated (`normalize_knowledge`)."""
    return normalize_knowledge(parse_yaml(raw, source), source)


# --- validation: runs once per file, when it is not in the cache -----------------------------

_ENTRY_KEYS = {
    "default",
    "no_args",
    "options_with_arg",
    "optional_values",
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
    "sets",
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
    if "optional_values" in value:
        out["optional_values"] = _strings(value["optional_values"], f"{field}.optional_values")
    if "combined_short" in value:
        out["combined_short"] = _bool(value["combined_short"], f"{field}.combined_short")
    if "abbreviations" in value:
        if value["abbreviations"] == "ordered":
            out["abbreviations"] = "ordered"
        else:
            out["abbreviations"] = _bool(value["abbreviations"], f"{field}.abbreviations")
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
        if value["stdin"] not in ("sql", "shell", "sent"):
            raise _Invalid(f"{field}.stdin", "expected sql, shell or sent")
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
    _mapping(value, field, "a mapping (options, args, prefixes, stdout)")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in ("options", "prefixes", "stdout"):
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
            raise _Invalid(
                f"{field}.{key}", "unknown key (expected options, args, prefixes, stdout)"
            )
    for option in out.get("stdout", ()):
        if option not in out.get("options", ()):
            raise _Invalid(f"{field}.stdout", f"{option} is not one of its write options")
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
    for key in ("options_with_arg", "no_run_flags", "sets"):
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
