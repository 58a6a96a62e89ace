"""The production guard: score a model's output before its tool call runs. If it fails, the
tool does not run.

    >>> from agentledger.guard import check
    >>> result = check('{"sql": "DELETE FROM events", "tables": ["events"]}',
    ...                {"sql_read_only": True, "sql_tables_subset": ["events"]})
    >>> result.ok, result.reasons
    (False, ['sql_read_only: DELETE writes rows: DELETE FROM events'])

It is the fixtures' property scorers (`agentledger.scoring.properties`), in process, with no
ledger: the same output gets the same answer here as in a fixture run. It imports little
(sqlglot only for SQL properties, the gate's classifier only for `shell_commands`), and a
checked expect is reused: pass the result of `load_expect` or `validate_expect`, or a path,
whose parsed form is cached until the file changes.
"""

from __future__ import annotations

import os

from agentledger.scoring.properties import (
    ExpectSpec,
    PropertyResult,
    load_expect,
    score_output,
    validate_expect,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

__all__ = ["GuardResult", "check", "load_expect", "validate_expect"]


class GuardResult:
    """The guard's answer: `ok` lets the tool run; otherwise `reasons` say why not.

    `reasons` has one line per failed property, each naming the property; `results` has every
    property's result, passed or not. True in a boolean context when `ok`.
    """

    __slots__ = ("ok", "reasons", "results")

    def __init__(
        self,
        ok: bool,
        reasons: list[str] | None = None,
        results: list[PropertyResult] | None = None,
    ) -> None:
        self.ok = ok
        self.reasons = reasons if reasons is not None else []
        self.results = results if results is not None else []

    def __bool__(self) -> bool:
        return self.ok

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GuardResult):
            return NotImplemented
        return (self.ok, self.reasons, self.results) == (other.ok, other.reasons, other.results)

    __hash__ = None  # type: ignore[assignment]  # mutable lists inside

    def __repr__(self) -> str:
        return f"GuardResult(ok={self.ok!r}, reasons={self.reasons!r}, results={self.results!r})"

    def as_dict(self) -> dict[str, Any]:
        """The answer as printed by `agentledger guard --json`."""
        return {
            "ok": self.ok,
            "reasons": list(self.reasons),
            "results": [result.as_dict() for result in self.results],
        }


_cache: dict[str, tuple[tuple[int, int], ExpectSpec]] = {}


def _expect_from_path(path: str) -> ExpectSpec:
    """The checked expect.json at `path`, parsed again only when its mtime or size changed."""
    try:
        stat = os.stat(path)
        stamp = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        return load_expect(path)  # raises the RecordError naming the file
    cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    spec = load_expect(path)
    _cache[path] = (stamp, spec)
    return spec


def check(
    output: str | bytes | object,
    expect: Mapping[str, Any] | str | os.PathLike[str],
    *,
    custom: Sequence[Callable[..., Any]] = (),
) -> GuardResult:
    """Check a model's `output` (its raw text, bytes or parsed dict) against `expect`.

    `expect` is a mapping (an expect.json object, or the `ExpectSpec` of `validate_expect`,
    which is fastest), or the path of an expect.json. A bad expect raises InputError; bad
    output never raises: it is rejected, with a reason.
    """
    if isinstance(expect, str | os.PathLike):
        spec = _expect_from_path(os.fspath(expect))
    else:
        spec = validate_expect(expect, "<expect>")
    results = score_output(output, spec, custom=custom)
    reasons = [result.reason for result in results if not result.passed]
    return GuardResult(not reasons, reasons, results)
