"""What a record may hold so that the ledger can keep it: checked before anything is sealed.

A value the index or the strict reader cannot take must be refused before it is written: once a
run is sealed it can never be removed, so a number SQLite cannot store, or a file `decode_json`
would refuse to read back, would break the ledger for good. The limits are those of the index
(SQLite integers are 64-bit, floats finite) and of the strict reader (`MAX_JSON_DEPTH`), plus a
bound on the length of one string, so that no record comes near SQLite's limit on a value.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentledger.errors import RecordError
from agentledger.records import INT_MAX, INT_MIN, MAX_JSON_DEPTH

__all__ = ["MAX_STRING_CHARS", "check_storable", "storable_problem"]

MAX_STRING_CHARS = 1_000_000
"""The longest string (or object key) a record may hold, in characters. Records are identity
and metrics; long text (reports, traces, logs) belongs in artifacts, which are not indexed."""


def _problem(value: Any) -> str | None:
    """Why one scalar cannot be stored, or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            digits = len(str(abs(value))) if abs(value) < 10**100 else "over 100"
            return (
                f"the integer ({digits} digits) does not fit in 64 bits "
                f"(from {INT_MIN} to {INT_MAX})"
            )
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"{value} is not a finite number (NaN and infinity cannot be stored)"
        return None
    if isinstance(value, str) and len(value) > MAX_STRING_CHARS:
        return f"a string of {len(value)} characters is longer than {MAX_STRING_CHARS}"
    return None


_PLAIN = (type(None), bool)


def _find(value: Any, depth: int) -> tuple[list[str], str] | None:
    """(reversed path, problem) of the first value under `value` that cannot be stored.

    Recursive (the depth check bounds it) and type-dispatched, with the path built only on
    failure: an import checks every run's records, so this stays cheap on the common case.
    """
    kind = type(value)
    if kind is dict:
        if depth > MAX_JSON_DEPTH:
            return [], f"nested deeper than {MAX_JSON_DEPTH} levels"
        for key, item in value.items():
            if type(key) is str and len(key) > MAX_STRING_CHARS:
                return [key[:40] + "..."], f"key: {_problem(key)}"
            item_kind = type(item)
            if item_kind in _PLAIN or (item_kind is str and len(item) <= MAX_STRING_CHARS):
                continue
            found = _find(item, depth + 1)
            if found is not None:
                found[0].append(str(key))
                return found
        return None
    if kind is list or kind is tuple:
        if depth > MAX_JSON_DEPTH:
            return [], f"nested deeper than {MAX_JSON_DEPTH} levels"
        for number, item in enumerate(value):
            item_kind = type(item)
            if item_kind in _PLAIN or (item_kind is str and len(item) <= MAX_STRING_CHARS):
                continue
            found = _find(item, depth + 1)
            if found is not None:
                found[0].append(f"[{number}]")
                return found
        return None
    if isinstance(value, dict | list | tuple | set | frozenset):
        return _find(dict(value) if isinstance(value, dict) else list(value), depth)
    problem = _problem(value)
    return None if problem is None else ([], problem)


def _dotted(reversed_path: list[str]) -> str | None:
    path = ""
    for part in reversed(reversed_path):
        path = f"{path}{part}" if part.startswith("[") else (f"{path}.{part}" if path else part)
    return path or None


def storable_problem(data: Any, *, top_depth: int = 1) -> tuple[str | None, str] | None:
    """(field path, problem) of the first value of `data` that cannot be stored, or None.

    `data` is JSON-like (dicts, lists, scalars). `top_depth` is the nesting level `data` sits
    at in the file it will be written to (1 for the whole record).
    """
    found = _find(data, top_depth)
    if found is None:
        return None
    return _dotted(found[0]), found[1]


def check_storable(record: BaseModel | Any, source: str | Path) -> None:
    """Raise RecordError naming `source` and the field when `record` holds a value the ledger
    cannot keep: an integer beyond 64 bits, a float that is not finite, a string longer than
    MAX_STRING_CHARS, or nesting deeper than the strict reader accepts."""
    data = record.model_dump() if isinstance(record, BaseModel) else record
    found = storable_problem(data)
    if found is not None:
        field, problem = found
        raise RecordError(source, f"{problem}; nothing was written", field=field)
