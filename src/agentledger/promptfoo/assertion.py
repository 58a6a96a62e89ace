"""A promptfoo assertion (``type: python``) that scores an output with agentledger's fixture
properties, through the production guard: the same answer as a fixture run or `guard`.

    assert:
      - type: python
        value: file:///…/agentledger/promptfoo/assertion.py
        config:
          expect:                     # an expect.json's properties, inline
            shell_commands: {forbid: [delete, write]}
            forbidden_substrings: ["rm -rf"]
          # or: expect_file: path/to/expect.json

promptfoo calls `get_assert(output, context)`; the answer is a GradingResult: ``pass`` when
every property holds, ``score`` the share that held, ``componentResults`` one per property
and ``namedScores`` 1 or 0 per property (so promptfoo's views show each). The expect may also
come from the test's vars (``agentledger_expect``). A bad expect is an error promptfoo shows,
never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentledger.errors import InputError
from agentledger.suites.guard import check

__all__ = ["get_assert", "grade"]


def _expect(context: Mapping[str, Any]) -> Mapping[str, Any] | str:
    config = context.get("config") or {}
    variables = context.get("vars") or {}
    expect = config.get("expect", variables.get("agentledger_expect"))
    if isinstance(expect, str) and expect.lstrip().startswith("{"):
        import json

        expect = json.loads(expect)
    if isinstance(expect, Mapping):
        return expect
    path = config.get("expect_file", variables.get("agentledger_expect_file"))
    if isinstance(path, str) and path:
        return path
    raise InputError(
        "the agentledger assertion needs the properties to check: give config.expect (an "
        "expect.json's properties) or config.expect_file (its path)"
    )


def grade(output: Any, expect: Mapping[str, Any] | str) -> dict[str, Any]:
    """The GradingResult of `output` against `expect` (mapping or expect.json path)."""
    result = check(output, expect)
    components = [
        {
            "pass": item.passed,
            "score": 1.0 if item.passed else 0.0,
            "reason": item.reason,
            "assertion": {"type": "python", "metric": item.property},
        }
        for item in result.results
    ]
    held = sum(1 for item in result.results if item.passed)
    total = len(result.results)
    return {
        "pass": result.ok,
        "score": held / total if total else 1.0,
        "reason": "; ".join(result.reasons) if result.reasons else f"all {total} properties held",
        "componentResults": components,
        "namedScores": {item.property: 1.0 if item.passed else 0.0 for item in result.results},
    }


def get_assert(output: Any, context: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's entry point: `output` scored against the assertion's expect."""
    return grade(output, _expect(context))
