"""Property scorers: does an agent's output JSON hold the properties of an expect.json?

    >>> from agentledger.scoring.properties import score_output
    >>> [r.reason for r in score_output('{"action": "restart_sshd"}',
    ...                                 {"allowed_actions": ["restart_nginx", "noop"]})]
    ["allowed_actions: action 'restart_sshd' is not in the allowed actions (noop, restart_nginx)"]

An expect.json is an object whose keys are property names (see `known_properties`, and
docs/properties.md for each one's value and an example), plus `description` and `tags`.
The output is untrusted and never makes this raise: output that is not a JSON object gives a
single failing `output_json` result. A bad expect.json is an `InputError` naming the file and
the field. The same code answers `agentledger guard`, in production, and the fixture runs.
"""

from __future__ import annotations

import importlib

from agentledger.scoring.base import PropertyResult, Where
from agentledger.scoring.output import MAX_OUTPUT_BYTES, parse_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from os import PathLike
    from typing import Any

__all__ = [
    "MAX_OUTPUT_BYTES",
    "ExpectSpec",
    "PropertyResult",
    "known_properties",
    "load_custom_scorer",
    "load_expect",
    "score_output",
    "validate_expect",
]

_HOMES = {
    "sql_read_only": "sql",
    "sql_tables_subset": "sql",
    "allowed_actions": "fields",
    "forbidden_substrings": "fields",
    "required_substrings": "fields",
    "regex": "fields",
    "forbidden_regex": "fields",
    "json_schema": "fields",
    "max_findings": "fields",
    "must_cite_from": "fields",
    "queue_enum": "fields",
    "confidence_floor": "fields",
    "forbidden_events": "fields",
    "no_comment_paths": "fields",
    "hostname_allowlist": "hosts",
    "shell_commands": "commands",
}
"""Property name -> the module of agentledger.scoring that parses and scores it."""
SCORERS = "scorers"
"""The expect.json key listing custom scorers (`module:function`) for this fixture."""
METADATA = ("description", "tags")
"""Keys of expect.json that describe the fixture and are not properties."""


def known_properties() -> frozenset[str]:
    """The property names an expect.json may use (besides `description` and `tags`)."""
    return frozenset({*_HOMES, SCORERS})


if TYPE_CHECKING:
    _SpecBase = dict[str, Any]
else:
    _SpecBase = dict


class ExpectSpec(_SpecBase):
    """A checked expect.json: property name -> its parsed value, in the file's order.

    Made by `validate_expect`; `score_output` takes it as is, so check once, score many.
    """

    def __init__(self, source: str, raw: Mapping[str, Any]) -> None:
        super().__init__()
        self.source = source
        self.raw = raw
        self.scorers: tuple[Callable[..., Any], ...] = ()


def validate_expect(expect: object, source: str) -> ExpectSpec:
    """Check `expect` (a parsed expect.json read from `source`) and parse its properties.

    Raises RecordError (an InputError) naming `source` and the field at fault: an unknown
    property, a value of the wrong type, a bad regex or JSON Schema, a custom scorer that
    cannot be imported.
    """
    if isinstance(expect, ExpectSpec):
        return expect
    if not isinstance(expect, dict):
        Where(source, "").bad(f"expected a JSON object of properties, got {_kind(expect)}")
    spec = ExpectSpec(source, expect)
    for key, value in expect.items():
        where = Where(source, str(key))
        if key == "description":
            where.text(value, empty=True)
        elif key == "tags":
            where.texts(value, empty=True)
        elif key == SCORERS:
            specs = where.texts(value, single=True, empty=True)
            spec.scorers = tuple(
                _load_scorer(text, where.at(index)) for index, text in enumerate(specs)
            )
        elif key in _HOMES:
            parsed = _function("parse", key)(value, where)
            if parsed is not None:
                spec[key] = parsed
        else:
            where.bad(_unknown(str(key)))
    return spec


def load_custom_scorer(spec: str, source: str) -> Callable[..., Any]:
    """The custom scorer named by `spec` (`module:function`, `file.py:function` relative to
    `source`'s directory, or an `agentledger.scorers` entry point); InputError naming `source`
    and `spec` when it cannot be loaded. See `agentledger.scoring.custom`."""
    from agentledger.scoring.custom import load_custom_scorer as load

    return load(spec, source)


def _load_scorer(text: str, where: Where) -> Callable[..., Any]:
    from agentledger.errors import InputError, RecordError

    try:
        return load_custom_scorer(text, where.source)
    except RecordError:
        raise
    except InputError as exc:
        problem = str(exc).removeprefix(f"{where.source}: ")
        raise RecordError(where.source, problem, field=where.field) from exc


def load_expect(path: str | PathLike[str]) -> ExpectSpec:
    """Read, parse and check the expect.json at `path` (RecordError naming it when bad)."""
    import json
    import os

    source = os.fspath(path)
    where = Where(source, "")
    try:
        with open(source, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        where.bad(f"cannot read: {exc.strerror or exc}")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError as exc:
        where.bad(f"not UTF-8 text: {exc.reason}")
    except json.JSONDecodeError as exc:
        from agentledger.errors import RecordError

        raise RecordError(source, f"not JSON: {exc.msg}", line=exc.lineno) from None
    return validate_expect(data, source)


def score_output(
    output: str | bytes | object,
    expect: Mapping[str, Any],
    *,
    custom: Sequence[Callable[..., Any]] = (),
) -> list[PropertyResult]:
    """Score `output` (raw text or bytes, or a parsed dict) against the properties of `expect`.

    `expect` is an `ExpectSpec` from `validate_expect`, or a raw mapping that is checked first
    (an InputError if it is bad). `custom` adds scorers to those the expect.json names. Returns
    one result per property (and per custom scorer); never raises because of the output.
    """
    spec = validate_expect(expect, "<expect>")
    parsed = parse_output(output)
    if isinstance(parsed, str):
        return [PropertyResult("output_json", False, f"output_json: {parsed}")]
    results = []
    for name, value in spec.items():
        try:
            results.append(_function("score", name)(parsed, value))
        except Exception as exc:
            reason = f"{name}: could not be scored ({type(exc).__name__}: {exc})"
            results.append(PropertyResult(name, False, reason))
    if spec.scorers or custom:
        from agentledger.scoring.custom import run_custom

        for scorer in (*spec.scorers, *custom):
            results.extend(run_custom(scorer, parsed.data, spec.raw))
    return results


_functions: dict[tuple[str, str], Callable[..., Any]] = {}


def _function(kind: str, name: str) -> Callable[..., Any]:
    """`parse_NAME` or `score_NAME` from the property's module, imported on first use."""
    key = (kind, name)
    function = _functions.get(key)
    if function is None:
        module = importlib.import_module(f"agentledger.scoring.{_HOMES[name]}")
        function = getattr(module, f"{kind}_{name}")
        _functions[key] = function
    return function


def _unknown(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known_properties()), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown property{hint}; known: {', '.join(sorted(known_properties()))}"


def _kind(value: object) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
