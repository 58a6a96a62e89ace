"""Checking an imported run's shell_audit.jsonl: what `parse_shell_audit` accepts, at a quarter
of the cost.

An import needs two things of a log: that every line is a valid ShellEvent, and how many
commands ran and how many were refused. Making a ShellEvent of each line costs about four
times what validating the line does, so an import validates the lines as plain dicts, against
a TypedDict made from ShellEvent's own fields (the same types, aliases, constraints and
configuration; ShellEvent has no validators of its own), and counts the refusals with the
function `ShellEvent.denied` uses.

Whenever the lines cannot be taken that way (a line fails, or states a `schema_version`, which
only ShellEvent's version check reads), the log goes through `parse_shell_audit` itself, so
errors are always its errors. The first log a process checks is checked both ways; if they
ever disagree, or the TypedDict cannot be made from this ShellEvent, every log takes the full
path.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, Required, cast

from pydantic import ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict  # pydantic takes typing's only from Python 3.12

from agentledger.errors import RecordError
from agentledger.records import (
    NOT_EXECUTED,
    ShellCounts,
    ShellEvent,
    decode_json,
    is_denied,
    parse_shell_audit,
)

__all__ = ["ShellCounts", "check_shell_log"]


# The configuration keys a TypedDict takes; ShellEvent's others (frozen) concern instances.
_CONFIG_KEYS = ("extra", "populate_by_name", "allow_inf_nan", "str_strip_whitespace", "strict")


def _lines_adapter() -> TypeAdapter[list[dict[str, Any]]] | None:
    """A validator of a log's lines as dicts with ShellEvent's fields, or None."""
    # Typing constructs built at run time, out of a type checker's sight.
    annotated, required, not_required, typed_dict = cast(
        Any, (Annotated, Required, NotRequired, TypedDict)
    )
    try:
        fields: dict[str, Any] = {}
        for name, info in ShellEvent.model_fields.items():
            field = Field(alias=info.alias, validation_alias=info.validation_alias)
            spec = annotated[(info.annotation, *info.metadata, field)]
            fields[name] = required[spec] if info.is_required() else not_required[spec]
        line = typed_dict("_Line", fields)
        model = ShellEvent.model_config
        line.__pydantic_config__ = cast(
            ConfigDict,
            {key: model[key] for key in _CONFIG_KEYS if key in model},  # type: ignore[literal-required]
        )
        adapter = cast(TypeAdapter[list[dict[str, Any]]], TypeAdapter(list[line]))  # type: ignore[valid-type]
        # What the model refuses by its fields is refused here too.
        for bad in (b'[{"cmd": 5}]', b'[{"command": "x", "duration_ms": -1}]', b"[{}]"):
            try:
                adapter.validate_json(bad)
            except ValueError:
                continue
            return None
        return adapter
    except Exception:  # whatever went wrong, the full path stays right
        return None


# Built by the first check (`_adapter`): building it takes milliseconds that a command which
# checks no shell log (an import of trace files, each worker's start) would pay for nothing.
_UNBUILT: Any = object()
_ADAPTER: TypeAdapter[list[dict[str, Any]]] | None = _UNBUILT
_verified = False


def _adapter() -> TypeAdapter[list[dict[str, Any]]] | None:
    """The lines' validator (None: the full path only), built on first use."""
    global _ADAPTER
    if _ADAPTER is _UNBUILT:
        _ADAPTER = _lines_adapter()
    return _ADAPTER


def _counts(lines: list[dict[str, Any]]) -> ShellCounts:
    return ShellCounts(
        len(lines),
        sum(1 for line in lines if is_denied(line.get("decision"), line)),
        sum(1 for line in lines if line.get("decision") == NOT_EXECUTED),
    )


def check_shell_log(raw: bytes, source: str) -> ShellCounts:
    """The counts of `parse_shell_audit(raw, source)`'s events, or its error."""
    global _ADAPTER, _verified
    adapter = _adapter()
    if adapter is not None:
        # The lines as parse_shell_audit takes them: every non-blank one.
        lines = filter(bytes.strip, raw.split(b"\n"))
        joined = b"[" + b",".join(lines) + b"]"
        try:
            decode_json(joined, source)  # duplicate keys, NaN, numbers that do not fit, depth
            checked = adapter.validate_json(joined)
        except (ValueError, RecordError):
            checked = None  # the full path names the bad line
        if checked is not None and not any("schema_version" in line for line in checked):
            counts = _counts(checked)
            if _verified:
                return counts
            try:
                full = ShellCounts.of(parse_shell_audit(raw, source))
            except Exception:  # pragma: no cover - accepted here, refused there
                _ADAPTER = None
                raise
            if full == counts:
                _verified = True
            else:  # pragma: no cover - a ShellEvent this module does not know
                _ADAPTER = None
            return full
    return ShellCounts.of(parse_shell_audit(raw, source))
