"""What every property scorer shares: its result, and the checks of its expect.json value.

A property module defines, for each property NAME it owns, `parse_NAME(value, where)` (checks
the value from expect.json and returns what scoring needs; raises `RecordError` naming the
file and the field) and `score_NAME(output, spec)` (returns one `PropertyResult`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, NoReturn

__all__ = ["PropertyResult", "Where", "fail", "ok"]


class PropertyResult:
    """Whether one property held for one output, and why, in plain words.

    Immutable, compared and hashed by value, like a frozen dataclass (written by hand:
    importing dataclasses costs the guard's start-up more than everything else it loads).
    """

    __slots__ = ("evidence", "passed", "property", "reason")
    __match_args__ = ("property", "passed", "reason", "evidence")

    property: str
    """The property: `sql_read_only`, `allowed_actions`, `output_json`, `custom:mod:fn`, ..."""
    passed: bool
    reason: str
    """Names the property and what was wrong, or what was checked when it held."""
    evidence: tuple[str, ...]
    """The offending values (an SQL statement, a hostname, a command), shortened."""

    def __init__(
        self, property: str, passed: bool, reason: str, evidence: tuple[str, ...] = ()
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "property", property)
        set_field(self, "passed", passed)
        set_field(self, "reason", reason)
        set_field(self, "evidence", tuple(evidence))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: PropertyResult is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: PropertyResult is immutable")

    def _key(self) -> tuple[str, bool, str, tuple[str, ...]]:
        return (self.property, self.passed, self.reason, self.evidence)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, PropertyResult)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"PropertyResult(property={self.property!r}, passed={self.passed!r}, "
            f"reason={self.reason!r}, evidence={self.evidence!r})"
        )

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (what `agentledger guard --json` prints)."""
        return {
            "property": self.property,
            "passed": self.passed,
            "reason": self.reason,
            "evidence": list(self.evidence),
        }


def ok(name: str, reason: str) -> PropertyResult:
    """A passing result of `name`."""
    return PropertyResult(name, True, f"{name}: {reason}")


def fail(name: str, reason: str, evidence: Iterable[object] = ()) -> PropertyResult:
    """A failing result of `name` with the offending values as evidence."""
    return PropertyResult(
        name, False, f"{name}: {reason}", tuple(_shorten(item) for item in evidence)
    )


def _shorten(item: object, limit: int = 300) -> str:
    text = item if isinstance(item, str) else repr(item)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Where:
    """Where a value of expect.json sits: its file and dotted field, for error messages."""

    __slots__ = ("field", "source")

    def __init__(self, source: str, field: str) -> None:
        self.source = source
        self.field = field

    def at(self, key: str | int) -> Where:
        """The place of `key` inside this value."""
        return Where(self.source, f"{self.field}.{key}" if self.field else str(key))

    def bad(self, problem: str) -> NoReturn:
        """Raise the `RecordError` for a bad value here."""
        from agentledger.errors import RecordError

        raise RecordError(self.source, problem, field=self.field)

    # -- typed readers -------------------------------------------------------------------

    def options(
        self, value: Any, allowed: Iterable[str], required: Iterable[str] = ()
    ) -> dict[str, Any]:
        """`value` as an object form whose keys are all in `allowed` and include `required`."""
        if not isinstance(value, dict):
            self.bad(f"expected an object, got {_kind(value)}")
        known = set(allowed)
        for key in value:
            if key not in known:
                names = ", ".join(sorted(known))
                self.at(str(key)).bad(f"unknown option (known: {names})")
        for key in required:
            if key not in value:
                self.at(key).bad("missing")
        return value

    def text(self, value: Any, *, empty: bool = False) -> str:
        """`value` as a string (non-empty unless `empty`)."""
        if not isinstance(value, str):
            self.bad(f"expected a string, got {_kind(value)}")
        if not empty and not value.strip():
            self.bad("expected a non-empty string")
        return value

    def texts(self, value: Any, *, single: bool = False, empty: bool = False) -> tuple[str, ...]:
        """`value` as a list of strings (one string alone is accepted when `single`)."""
        if single and isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            self.bad(f"expected a list of strings, got {_kind(value)}")
        if not value and not empty:
            self.bad("expected at least one entry")
        return tuple(self.at(index).text(item) for index, item in enumerate(value))

    def flag(self, value: Any) -> bool:
        """`value` as a boolean."""
        if not isinstance(value, bool):
            self.bad(f"expected true or false, got {_kind(value)}")
        return value

    def number(self, value: Any, *, low: float | None = None, high: float | None = None) -> float:
        """`value` as a number within [`low`, `high`]."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.bad(f"expected a number, got {_kind(value)}")
        if (low is not None and value < low) or (high is not None and value > high):
            self.bad(f"expected a number from {low} to {high}, got {value}")
        return float(value)

    def count(self, value: Any) -> int:
        """`value` as a whole number, zero or more."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.bad(f"expected a whole number (0 or more), got {_kind(value)}")
        return value

    def path(self, value: Any) -> str:
        """`value` as a dotted field path of the output (`sql`, `result.queue`)."""
        text = self.text(value)
        if any(not part for part in text.split(".")):
            self.bad(f"{text!r} is not a dotted field path")
        return text


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return {"list": "a list", "dict": "an object"}.get(type(value).__name__, type(value).__name__)
