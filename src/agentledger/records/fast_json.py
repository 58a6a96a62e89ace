"""Strict JSON decoding at C speed, when the input gives no reason for doubt.

`records.decode_json` refuses what a lenient reader would guess about: duplicate keys, NaN and
Infinity, numbers that do not fit (integers beyond 64 bits, floats that overflow), and nesting
deeper than `MAX_JSON_DEPTH`. The standard library's decoder does that through Python
callbacks on every object and number. orjson decodes at C speed but keeps the last of
duplicate keys silently, reads integers of 2**63 to 2**64-1, and larger ones as floats.
`decode_fast` decodes with orjson and then proves that no strict rule was broken; when it cannot
prove it (or orjson refuses the input) it answers `DOUBT`, and the caller decodes strictly, which
gives the same value or the precise error.

The proof is one pass over the bytes in C (`_strict_scan.c`, built by the Makefile: the keys of
each object compared, the digits of each integer and the depth counted) at a fraction of the
parse's cost. Without the built module, byte operations of the standard library prove it
instead, at about twice the parse's cost:

- Duplicate keys: orjson writes the value back out (indented), with every colon as is: a
  JSON string can hold a colon only literally or as ``\\u003a``. Without the escaped form in
  the input, the input has as many colons as the output exactly when no key (with its value)
  was dropped.
- Integers: any number whose integer part has 19 digits or more (it may not fit in 64 bits),
  or any such run of digits in a string, is a doubt. orjson itself refuses NaN, Infinity and
  floats that overflow, and rounds other floats as Python does.
- Depth: in the indented output every line is indented two spaces per level, and strings
  hold no line breaks; a container deeper than the limit would start on a line indented
  twice the limit.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Final

import orjson

_certain: Callable[[bytes, int], bool] | None
_items: Callable[[bytes, int, int], bytes | None] | None
try:
    # By name: the C module has no .py source, so import-linter would take a plain import
    # for one of the package root (records may not import it); its types are in the .pyi.
    _scan = importlib.import_module("agentledger.records._strict_scan")
    _certain, _items = _scan.certain, _scan.items
except ImportError:  # not built (no C compiler): the checks below, in Python
    _certain = _items = None

__all__ = ["DOUBT", "decode_fast", "list_marks"]

DOUBT: Final = object()
"""What `decode_fast` answers when only the strict decoder can tell."""

_LONG = 19  # digits from which an integer may not fit in 64 bits
# Digits stay digits ("0"), the characters that continue a number's digits stay themselves;
# anything else is a space: a long integer part is then a space and _LONG zeros.
_DIGITS = bytes.maketrans(
    bytes(range(256)),
    bytes(
        ord("0") if chr(byte).isdigit() and byte < 128 else byte if byte in b".eE" else ord(" ")
        for byte in range(256)
    ),
)
_LONG_INTEGER = b" " + b"0" * _LONG
_ESCAPE = b"\\u003"  # the start of "\u003a" and "\u003A", a colon escaped: one search for both


def decode_fast(raw: bytes, max_depth: int) -> Any:
    """The JSON value of `raw` when it is certainly within the strict rules; else DOUBT."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return DOUBT
    if _certain is not None:
        return value if _certain(raw, max_depth) else DOUBT
    return _checked_in_python(raw, value, max_depth)


def list_marks(raw: bytes, max_depth: int, in_history: bool) -> memoryview | None:
    """Where the items of a list in `raw` lie, proven in the pass that proves `raw` within the
    strict rules `decode_fast` does not leave to orjson: the positions of the list's opening
    bracket, of the commas between its items and of its closing bracket (so item `i` is
    ``raw[marks[i] + 1 : marks[i + 1]]``). The list is the top-level one, or with
    `in_history` the value of the top-level object's key ``history``.

    None when the scan cannot prove the rules (the caller decodes strictly, as a whole), when
    there is no such list, or without the C module. Each item must still be decoded by orjson,
    which refuses what the scan does not look at (syntax, NaN, overflowing floats, lone
    surrogates): a lenient item is never taken as strict."""
    if _items is None:
        return None
    marks = _items(raw, max_depth, 2 if in_history else 1)
    return None if marks is None else memoryview(marks).cast("q")


def _checked_in_python(raw: bytes, value: Any, max_depth: int) -> Any:
    """`value` when the standard library's byte operations prove `raw` within the rules."""
    if _LONG_INTEGER in b" " + raw.translate(_DIGITS):
        return DOUBT
    if not isinstance(value, dict | list):
        return value
    written = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    if b"\n" + b" " * (2 * max_depth) in written:
        return DOUBT
    if raw.count(b":") != written.count(b":") or _escaped_colon(raw):
        return DOUBT
    return value


def _escaped_colon(raw: bytes) -> bool:
    at = raw.find(_ESCAPE)
    while at >= 0:
        if raw[at + 5 : at + 6] in (b"a", b"A"):
            return True
        at = raw.find(_ESCAPE, at + 5)
    return False
