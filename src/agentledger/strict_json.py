"""Strict JSON decoding: what a lenient reader would guess at is refused.

Refused: duplicate keys (which value did the writer mean?), NaN and Infinity (not JSON, and a
threshold of NaN compares false with everything), numbers that do not fit (integers beyond 64
bits, floats that overflow to infinity) and nesting deeper than `MAX_JSON_DEPTH`. The records
(`agentledger.records.decode_json`) and the production guard share it; it imports only `json`
and `math`, so that the guard's start-up does not pay for pydantic.

    >>> loads('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    agentledger.strict_json.StrictJSONError: duplicate key 'a' in an object (each key once)
"""

from __future__ import annotations

import json
import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["INT_MAX", "INT_MIN", "MAX_JSON_DEPTH", "StrictJSONError", "loads"]

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
"""What the ledger can keep of a JSON integer: the index stores integers in 64 bits."""
MAX_JSON_DEPTH = 64
"""How deep JSON may nest: records and model outputs nest a few levels; deeper input is
refused before it can exhaust the interpreter's stack."""


class StrictJSONError(ValueError):
    """Why the text is not strict JSON; `lineno` and `colno` when the syntax is at fault,
    `path` (dotted, list indexes as numbers: `steps.0.confidence`) when a value is."""

    def __init__(
        self,
        msg: str,
        lineno: int | None = None,
        colno: int | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(msg)
        self.msg = msg
        self.lineno = lineno
        self.colno = colno
        self.path = path


class _NonStandard(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonStandard(f"{name} is not a JSON number (use null or a string)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise _NonStandard(
            f"the number {_clip(text)} is not a finite number (floats end near 1.8e308)"
        )
    return value


def _bounded_int(text: str) -> int:
    if len(text) > 20:  # int() of a few thousand digits is refused by Python itself
        raise _NonStandard(f"the number {_clip(text)} does not fit in 64 bits")
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise _NonStandard(f"the number {_clip(text)} does not fit in 64 bits")
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _NonStandard(f"duplicate key {_clip(key)!r} in an object (each key once)")
            seen.add(key)
    return value


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_object,
    parse_constant=_refuse_constant,
    parse_float=_finite_float,
    parse_int=_bounded_int,
)


def loads(text: str) -> Any:
    """Decode the JSON `text` strictly; StrictJSONError says what is wrong (and where)."""
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise StrictJSONError(exc.msg, exc.lineno, exc.colno) from None
    except _NonStandard as exc:
        raise StrictJSONError(str(exc), path=_locate(text)) from None
    except RecursionError:
        deep = True
    else:
        deep = _depth_exceeds(value, MAX_JSON_DEPTH)
    if deep:
        raise StrictJSONError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    return value


class _Refused:
    """Stands, in a lenient decoding, where the strict one refused a value."""

    __slots__ = ()


def _mark(*_: object) -> _Refused:
    return _Refused()


def _marked_float(text: str) -> float | _Refused:
    value = float(text)
    return _Refused() if value in (math.inf, -math.inf) else value


def _marked_int(text: str) -> int | _Refused:
    if len(text) > 20:
        return _Refused()
    value = int(text)
    return value if INT_MIN <= value <= INT_MAX else _Refused()


def _marked_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        value[key] = _Refused() if key in value else item
    return value


_LENIENT = json.JSONDecoder(
    object_pairs_hook=_marked_object,
    parse_constant=_mark,
    parse_float=_marked_float,
    parse_int=_marked_int,
)


def _locate(text: str) -> str | None:
    """The dotted path of the first value the strict decoding refused, in document order."""
    try:
        value = _LENIENT.decode(text)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Refused):
            return path or None
        children = (
            item.items()
            if isinstance(item, dict)
            else enumerate(item)
            if isinstance(item, list)
            else ()
        )
        inner = [(child, f"{path}.{key}" if path else str(key)) for key, child in children]
        stack.extend(reversed(inner))
    return None
