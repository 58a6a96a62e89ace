"""Checking an imported run's shell_audit.jsonl: `parse_shell_audit`, at about half the cost.

Every record checks its `schema_version` in a Python validator that runs before the fields are
validated (`Record._check_version`). For a line without a `schema_version` key that check
changes nothing, but it makes pydantic turn each line into a Python dict before validating it,
which doubles the cost of checking a log. An import checks tens of thousands of lines, so it
validates with a subclass of ShellEvent that lacks only that check (same fields, aliases,
constraints, other validators and `denied`), and takes the full `parse_shell_audit` whenever a
line states a `schema_version` or anything fails, so errors and results are always the same.

If the subclass cannot be made exactly so (another pydantic, another ShellEvent), or the first
log checked both ways disagrees, every log takes the full path.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from agentledger.records import ShellEvent, parse_shell_audit

__all__ = ["check_shell_log"]

_VERSION_CHECK = "_check_version"


def _lines_adapter() -> TypeAdapter[list[ShellEvent]] | None:
    """A validator of a log's lines as ShellEvents without the version check, or None."""
    try:

        class _Line(ShellEvent):
            """A line of a log: a ShellEvent, checked without Record's version check."""

        validators: dict[str, Any] = _Line.__pydantic_decorators__.model_validators
        if _VERSION_CHECK not in validators:
            return None
        del validators[_VERSION_CHECK]
        _Line.model_rebuild(force=True)
        adapter: TypeAdapter[list[ShellEvent]] = TypeAdapter(list[_Line])  # type: ignore[arg-type]
        # The check is gone from the copy and only there: a version from the future passes the
        # copy, and ShellEvent still refuses it.
        future = b'[{"command": "true", "schema_version": 1000000}]'
        adapter.validate_json(future)
        try:
            TypeAdapter(list[ShellEvent]).validate_json(future)
        except ValueError:
            return adapter
        return None
    except Exception:  # whatever went wrong, the full path stays right
        return None


_ADAPTER = _lines_adapter()
_verified = False


def _same(fast: list[ShellEvent], full: list[ShellEvent]) -> bool:
    # As JSON (extra keys included), so that a NaN equals itself.
    return len(fast) == len(full) and all(
        a.model_dump_json() == b.model_dump_json() and a.denied == b.denied
        for a, b in zip(fast, full, strict=True)
    )


def _states_a_version(raw: bytes, events: list[ShellEvent]) -> bool:
    """Whether a line of the log has a `schema_version` key."""
    if b"schema_version" not in raw and b"\\u" not in raw:
        return False  # the key, unless spelled with \u escapes, is nowhere in the log
    return any("schema_version" in event.__pydantic_fields_set__ for event in events)


def check_shell_log(raw: bytes, source: str) -> list[ShellEvent]:
    """`parse_shell_audit(raw, source)`: the same events, or the same error."""
    global _ADAPTER, _verified
    adapter = _ADAPTER
    if adapter is not None:
        # The lines as parse_shell_audit takes them: every non-blank one.
        lines = filter(bytes.strip, raw.split(b"\n"))
        try:
            events = adapter.validate_json(b"[" + b",".join(lines) + b"]")
        except ValueError:
            events = None  # the full path names the bad line
        if events is not None and not _states_a_version(raw, events):
            if _verified:
                return events
            full = parse_shell_audit(raw, source)
            try:
                same = _same(events, full)
            except Exception:  # cannot tell: keep to the full path
                same = False
            if same:
                _verified = True
            else:  # pragma: no cover - a ShellEvent this module does not know
                _ADAPTER = None
            return full
    return parse_shell_audit(raw, source)
