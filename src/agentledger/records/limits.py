"""What a record may hold so that the ledger can keep it: checked before anything is sealed.

A value the index or the strict reader cannot take must be refused before it is written: once a
run is sealed it can never be removed, so a number SQLite cannot store, or a file `decode_json`
would refuse to read back, would break the ledger for good. The limits are those of the index
(SQLite integers are 64-bit, floats finite) and of the strict reader (`MAX_JSON_DEPTH`), plus a
bound on the length of one string, so that no record comes near SQLite's limit on a value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
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


def _children(value: Any) -> Iterable[tuple[str, Any]] | None:
    if isinstance(value, dict):
        return ((str(key), item) for key, item in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return ((f"[{number}]", item) for number, item in enumerate(value))
    return None


def _join(path: str, part: str) -> str:
    if part.startswith("["):
        return f"{path}{part}"
    return f"{path}.{part}" if path else part


def storable_problem(data: Any, *, top_depth: int = 1) -> tuple[str | None, str] | None:
    """(field path, problem) of the first value of `data` that cannot be stored, or None.

    `data` is JSON-like (dicts, lists, scalars). `top_depth` is the nesting level `data` sits
    at in the file it will be written to (1 for the whole record).
    """
    stack: list[tuple[str, Any, int]] = [("", data, top_depth)]
    while stack:
        path, value, depth = stack.pop()
        children = _children(value)
        if children is None:
            problem = _problem(value)
            if problem is not None:
                return path or None, problem
            continue
        if depth > MAX_JSON_DEPTH:
            return path or None, f"nested deeper than {MAX_JSON_DEPTH} levels"
        pending = []
        for part, item in children:
            if isinstance(value, dict):
                key_problem = _problem(part)
                if key_problem is not None:
                    return _join(path, part[:40] + "..."), f"key: {key_problem}"
            pending.append((_join(path, part), item, depth + 1))
        stack.extend(reversed(pending))
    return None


def check_storable(record: BaseModel | Any, source: str | Path) -> None:
    """Raise RecordError naming `source` and the field when `record` holds a value the ledger
    cannot keep: an integer beyond 64 bits, a float that is not finite, a string longer than
    MAX_STRING_CHARS, or nesting deeper than the strict reader accepts."""
    data = record.model_dump() if isinstance(record, BaseModel) else record
    found = storable_problem(data)
    if found is not None:
        field, problem = found
        raise RecordError(source, f"{problem}; nothing was written", field=field)
