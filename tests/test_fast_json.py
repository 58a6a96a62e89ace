"""The fast path of strict JSON decoding: C speed for input that is certainly fine, and a doubt
(the strict decoder's turn) for anything that could hide a duplicate key, a number beyond 64
bits or nesting beyond the limit. It never answers a value the strict decoder would refuse,
and never a different value than the strict decoder's."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentledger.records as records
from agentledger.errors import RecordError
from agentledger.records import MAX_JSON_DEPTH, decode_json
from agentledger.records import fast_json as fj
from agentledger.records.fast_json import DOUBT, decode_fast
from agentledger.strict_json import depth_exceeds

# The check in C (built by the Makefile) and the one in Python (without a C compiler).
CHECKERS = ["C", "Python"]


def no_scan() -> None:
    """Skip a test of the C scan where it is not built; in CI (AGENTLEDGER_REQUIRE_SCAN=1,
    where .ci/run installs a compiler and Python's headers) fail instead."""
    if os.environ.get("AGENTLEDGER_REQUIRE_SCAN") == "1":
        pytest.fail("the C scan is not built (make scan), and CI requires it")
    pytest.skip("the C scan is not built (make scan)")


@pytest.fixture(params=CHECKERS)
def checker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test taking it runs with each way of checking."""
    if request.param == "C":
        if fj._certain is None:
            no_scan()
    else:
        monkeypatch.setattr(fj, "_certain", None)
    return str(request.param)


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
        b'{"\\u0061": 1, "a": 2}',  # the same key, once escaped
        b'{"\\u003a": true, "\\u003a": true}',  # the lost key's colon is escaped in the other
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
        # Many keys (compared sorted, not pairwise) with one repeated.
        json.dumps({f"k{n}": n for n in range(40)}).encode()[:-1] + b', "k7": 0}',
    ],
)
def test_what_could_hide_a_problem_is_left_to_the_strict_decoder(raw: bytes, checker: str) -> None:
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
        json.dumps({f"k{n}": {"k1": n} for n in range(40)}).encode(),
    ],
)
def test_what_is_certainly_fine_is_decoded_fast_and_the_same(raw: bytes, checker: str) -> None:
    value = decode_fast(raw, MAX_JSON_DEPTH)
    assert value is not DOUBT
    assert value == strict(raw)


def test_the_c_scan_proves_what_python_can_only_doubt() -> None:
    """An escaped colon leaves the Python check unsure; the C scan reads the strings."""
    if fj._certain is None:
        no_scan()
    raw = b'{"a": "\\u003A:", "b": 2, "c": "1234567890123456789012"}'
    assert decode_fast(raw, MAX_JSON_DEPTH) == strict(raw)
    assert fj._checked_in_python(raw, json.loads(raw), MAX_JSON_DEPTH) is DOUBT


def test_real_trajectories_take_the_fast_path(checker: str) -> None:
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


@pytest.mark.parametrize("way", CHECKERS)
@settings(max_examples=400, deadline=None)
@given(tree=_TREES)
def test_the_fast_path_never_disagrees_with_the_strict_decoder(tree: Any, way: str) -> None:
    raw = _text(tree).encode("utf-8", "surrogatepass")
    certain = fj._certain if way == "C" else None
    if way == "C" and certain is None:
        no_scan()
    saved, fj._certain = fj._certain, certain
    try:
        fast = decode_fast(raw, 6)
    finally:
        fj._certain = saved
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


# Adversarial JSON text, built from tokens: keys that are the same once unescaped, integers
# around 64 bits, floats that overflow, NaN, lone and paired surrogates, nesting around the
# real limit, random spacing and now and then a cut or a stray byte.
_KEY_TOKENS = st.sampled_from(
    [
        *[b'"a"', b'"\\u0061"', b'"b"', b'"a\\"b"', b'"\\\\"', '"é"'.encode(), b'"\\u00e9"'],
        *[b'"\\ud800"', b'"k:"', b'"\\u003a"', b'":"'],
    ]
) | st.integers(0, 40).map(lambda n: b'"k%d"' % n)
_SPACE = st.sampled_from([b"", b" ", b"\n", b"\t ", b"\r\n"])


@st.composite
def _numbers(draw: st.DrawFn) -> bytes:
    digits = draw(st.integers(1, 25))
    integer = b"0" if digits == 1 and draw(st.booleans()) else b"%d" % draw(st.integers(1, 9))
    integer += b"".join(b"%d" % draw(st.integers(0, 9)) for _ in range(digits - 1))
    sign = draw(st.sampled_from([b"", b"-"]))
    fraction = draw(st.sampled_from([b"", b".5", b".0001", b".9999999999999999999"]))
    exponent = draw(st.sampled_from([b"", b"e5", b"E-5", b"e+308", b"e309", b"e400", b"e-400"]))
    return sign + integer + fraction + exponent


_SCALAR_TOKENS = (
    _numbers()
    | st.sampled_from([b"true", b"false", b"null", b"NaN", b"-Infinity", b"Infinity"])
    | st.sampled_from(
        [
            *[b'""', b'"x:y"', b'"\\ud800"', b'"\\udc00x"', b'"\\ud83d\\ude00"', b'"\\u003a"'],
            *[b'"\\"\\\\"', '"é"'.encode(), b'"\xff"', b'"12345678901234567890"'],
        ]
    )
)


def _joined(draw: st.DrawFn, parts: list[bytes], opening: bytes, closing: bytes) -> bytes:
    space = draw(_SPACE)
    return opening + space + (b"," + draw(_SPACE)).join(parts) + draw(_SPACE) + closing


_VALUES = st.recursive(
    _SCALAR_TOKENS,
    lambda inner: (
        st.composite(lambda draw: _joined(draw, draw(st.lists(inner, max_size=5)), b"[", b"]"))()
        | st.composite(
            lambda draw: _joined(
                draw,
                [
                    k + draw(_SPACE) + b":" + draw(_SPACE) + v
                    for k, v in draw(st.lists(st.tuples(_KEY_TOKENS, inner), max_size=20))
                ],
                b"{",
                b"}",
            )
        )()
    ),
    max_leaves=40,
)


@st.composite
def _documents(draw: st.DrawFn) -> bytes:
    raw = draw(_VALUES)
    levels = draw(st.sampled_from([0, 0, 0, 1, MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH]))
    raw = b"[" * levels + raw + b"]" * levels
    damage = draw(st.sampled_from(["none"] * 8 + ["cut", "stray"]))
    if damage == "cut" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif damage == "stray":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b",", b"}", b'"', b"\\", b"\x00"])) + raw[at:]
    return draw(_SPACE) + raw + draw(_SPACE)


def _outcome(decode: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "value", decode(raw)
    except RecordError as exc:
        return "refused", str(exc)


@pytest.mark.parametrize("way", CHECKERS)
@settings(max_examples=300, deadline=None)
@given(raw=_documents())
def test_decoding_with_the_fast_path_is_decoding_strictly(raw: bytes, way: str) -> None:
    """Same acceptance, same value, same refusal (message included) as the strict decoder alone,
    on adversarial text, with the real depth limit."""
    certain = fj._certain if way == "C" else None
    if way == "C" and certain is None:
        no_scan()
    saved, fj._certain = fj._certain, certain
    try:
        got = _outcome(lambda data: decode_json(data, "x"), raw)
    finally:
        fj._certain = saved
    expected = _outcome(strict, raw)
    assert got[0] == expected[0], (got, expected)
    assert got[1] == expected[1] if got[0] == "refused" else _same(got[1], expected[1])


def test_the_c_scan_stays_within_its_input() -> None:
    """Input orjson refuses still gets an answer, never a read beyond the bytes (the answer
    counts only beside orjson's acceptance)."""
    if fj._certain is None:
        no_scan()
    for raw in [b"", b" ", b'"', b'"\\', b'{"a', b"[", b"]", b"}", b'{"a":1', b"\\", b"[1,"]:
        assert fj._certain(raw, MAX_JSON_DEPTH) is False
    assert fj._certain(b"-", MAX_JSON_DEPTH) is True
    assert fj._certain(memoryview(b'{"a": [1, 2]}'), MAX_JSON_DEPTH) is True
    with pytest.raises(ValueError, match="max_depth"):
        fj._certain(b"[]", 100_000)


def _items_by_marks(raw: bytes, in_history: bool) -> list[Any] | None:
    """The list's items decoded one by one between the scan's marks (None: no marks)."""
    marks = fj.list_marks(raw, MAX_JSON_DEPTH, in_history)
    if marks is None:
        return None
    spans = [raw[marks[i] + 1 : marks[i + 1]] for i in range(len(marks) - 1)]
    if len(spans) == 1 and not spans[0].strip():
        return []
    return [orjson.loads(span) for span in spans]


@settings(max_examples=300, deadline=None)
@given(raw=_documents(), in_history=st.booleans())
def test_the_marks_of_a_list_are_where_its_items_lie(raw: bytes, in_history: bool) -> None:
    """Where the scan marks a list's items (the OpenHands importer decodes a trajectory's
    events between them, a chunk at a time), it is also certain of the whole document, and
    the items decoded one by one are the list's own, in order; a list under another key, or
    a document it doubts, gets no marks."""
    if fj._items is None:
        no_scan()
    document = b'{"metadata": {"history": [0]}, "history": ' + raw + b', "x": [1]}'
    whole = document if in_history else raw
    try:
        items = _items_by_marks(whole, in_history)
    except orjson.JSONDecodeError:
        items = "an item orjson refuses"  # type: ignore[assignment]
    try:
        value = orjson.loads(whole)
    except orjson.JSONDecodeError:
        value = None
    if items is None:
        return
    assert fj._certain is not None and fj._certain(whole, MAX_JSON_DEPTH)
    events = value["history"] if in_history and value is not None else value
    if isinstance(events, list):
        assert items == events
    else:  # not a list after all: an item or the document is not JSON
        assert items == "an item orjson refuses" or value is None


def test_marks_are_given_only_for_the_list_asked_for() -> None:
    if fj._items is None:
        no_scan()
    assert list(fj.list_marks(b' [1, {"a": [2, 3]}, "x,]" ] ', 64, False) or []) == [1, 3, 18, 26]
    assert list(fj.list_marks(b"[]", 64, False) or []) == [0, 1]
    assert fj.list_marks(b'{"history": [1]}', 64, False) is None  # not a list at the top
    assert fj.list_marks(b"[[1]]", 64, True) is None  # no history key
    assert fj.list_marks(b'{"history": {"a": [1]}}', 64, True) is None  # not a list
    assert fj.list_marks(b'{"a": {"history": [1]}}', 64, True) is None  # not the top level
    assert fj.list_marks(b'{"history": [1], "history": [2]}', 64, True) is None  # repeated
    assert fj.list_marks(b"[1, 2", 64, False) is None  # not closed
    assert fj.list_marks(b"[" * 70 + b"]" * 70, 64, False) is None  # too deep
    assert list(fj.list_marks(b'{"h": [0], "history": [1,2]}', 64, True) or []) == [22, 24, 26]
