"""The fast path of strict JSON decoding: C speed for input that is certainly fine, and a doubt
(the strict decoder's turn) for anything that could hide a duplicate key, a number beyond 64
bits or nesting beyond the limit. It never answers a value the strict decoder would refuse,
and never a different value than the strict decoder's."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentledger.records as records
from agentledger.errors import RecordError
from agentledger.records import MAX_JSON_DEPTH, decode_json
from agentledger.records.fast_json import DOUBT, decode_fast
from agentledger.strict_json import depth_exceeds

# The OpenHands samples beside the clone, and the two copied into the tests' data.
SAMPLES = (
    Path(__file__).resolve().parents[2] / "shared" / "samples" / "openhands",
    Path(__file__).resolve().parent / "data" / "openhands",
)


def strict(raw: bytes) -> Any:
    """What the strict decoder alone makes of `raw` (the fast path turned off)."""
    saved = records.decode_fast
    records.decode_fast = lambda _raw, _depth: DOUBT  # type: ignore[assignment]
    try:
        return decode_json(raw, "x")
    finally:
        records.decode_fast = saved


def deep(levels: int, key: bool = False) -> bytes:
    if key:
        return b'{"k": ' * (levels - 1) + b"{}" + b"}" * (levels - 1)
    return b"[" * levels + b"]" * levels


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "a": 2}',
        b'{"a" : 1, "a": 2}',  # a space before the colon
        b'{"a": {"b": 1, "b": 1}}',
        b'[{"x": 1}, {"y": {"z": 1, "z": 2}}]',
        b'{"a": "\\u003a", "a": 1}',  # an escaped colon could make up for the lost key
        b'{"a": "\\u003A:", "b": 2}',
        b'{"a": {"p": 1, "q": 2}, "a": 3}',  # the dropped value held keys of its own
        b'{"s": "a\\\\", "s": "b\\""}',  # escapes next to the key's quotes
        b'{"n": 9223372036854775808}',  # 2**63: orjson reads it
        b'{"n": 18446744073709551615}',  # 2**64 - 1
        b'{"n": 18446744073709551616}',  # 2**64: orjson makes it a float
        b'{"n": -9223372036854775809}',
        b"12345678901234567890",
        b'{"n": NaN}',
        b'{"n": 1e400}',
        b'{"a": "\xff"}',
        b'"\\ud800"',  # a lone surrogate: orjson refuses, the strict decoder takes it
        deep(MAX_JSON_DEPTH + 1),
        deep(MAX_JSON_DEPTH + 1, key=True),
        b"[" * 2000 + b"]" * 2000,
    ],
)
def test_what_could_hide_a_problem_is_left_to_the_strict_decoder(raw: bytes) -> None:
    assert decode_fast(raw, MAX_JSON_DEPTH) is DOUBT


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "b": {"c": [1, 2.5, "x:y"], "d": null}}',
        b'{"cost": 0.0027519999999999997, "t": 1e-5, "big": 1.7e308}',  # long floats fit
        b'{"text": "key\\": value, \\\\ \\" :", "n": -5}',
        json.dumps({"n": 10**18 - 1, "min": -(10**17)}).encode(),
        deep(MAX_JSON_DEPTH - 1),
        deep(MAX_JSON_DEPTH - 1, key=True),
        b'"just a string"',
        b"42",
        b"[]",
    ],
)
def test_what_is_certainly_fine_is_decoded_fast_and_the_same(raw: bytes) -> None:
    value = decode_fast(raw, MAX_JSON_DEPTH)
    assert value is not DOUBT
    assert value == strict(raw)


def test_real_trajectories_take_the_fast_path() -> None:
    """Real OpenHands trajectories (escapes, long floats, nested metrics) decode fast."""
    files = sorted(path for place in SAMPLES for path in place.rglob("traj_*.json"))
    assert files
    for path in files:
        raw = path.read_bytes()
        value = decode_fast(raw, MAX_JSON_DEPTH)
        assert value is not DOUBT, path.name
        assert value == json.loads(raw)


def test_refusals_still_name_the_problem_through_decode_json() -> None:
    with pytest.raises(RecordError, match="duplicate key 'a'"):
        decode_json(b'{"a": "\\u003a", "a": 1}', "f.json")
    with pytest.raises(RecordError, match="does not fit in 64 bits"):
        decode_json(b'{"n": 18446744073709551616}', "f.json")


_KEYS = st.sampled_from(["a", "b", "a:b", 'q"', "\\", ":", "\u00e9"])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_infinity=False, allow_nan=False)
    | st.sampled_from(["", "x:y", '"', "\\", "\\u003a", "\n", "\ud800", "}", "["])
)


def _text(item: Any) -> str:
    """JSON text of a generated tree, where objects are lists of pairs (keys may repeat)."""
    if isinstance(item, tuple) and item and item[0] == "obj":
        return "{" + ", ".join(f"{json.dumps(k)}: {_text(v)}" for k, v in item[1]) + "}"
    if isinstance(item, list):
        return "[" + ",".join(_text(v) for v in item) + "]"
    return json.dumps(item)


_TREES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(st.just("obj"), st.lists(st.tuples(_KEYS, inner), max_size=4))
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(_TREES)
def test_the_fast_path_never_disagrees_with_the_strict_decoder(tree: Any) -> None:
    raw = _text(tree).encode("utf-8", "surrogatepass")
    fast = decode_fast(raw, 6)
    if fast is DOUBT:
        return
    try:
        expected = strict_with_depth(raw, 6)
    except RecordError as exc:
        raise AssertionError(f"the fast path took what the strict decoder refuses: {exc}") from None
    assert _same(fast, expected)


def strict_with_depth(raw: bytes, depth: int) -> Any:
    """The strict decoder with a depth limit of `depth` (so that the tests reach it)."""
    value = strict(raw)
    if depth_exceeds(value, depth):
        raise RecordError("x", "nested deeper")
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
