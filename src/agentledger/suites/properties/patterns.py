"""`regex` and `forbidden_regex`: patterns the output must match, or must not.

Patterns run in RE2 (linear time, whatever the pattern); one that can check nothing is refused
at load (see `agentledger.suites.properties.regex_reach`). See docs/properties.md.
"""

from __future__ import annotations

from agentledger.suites.properties.base import PropertyResult, Where, fail, ok
from agentledger.suites.properties.fields import (
    ANY_OUTPUT,
    field_problem,
    text_of,
    where_text,
)
from agentledger.suites.properties.output import AgentOutput, unicode_variants

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _Patterns:
    __slots__ = ("field", "patterns")

    def __init__(self, patterns: tuple[Any, ...], field: str | None) -> None:
        self.patterns = patterns
        """Compiled RE2 patterns (`re2._Regexp`: `.pattern`, `.search`)."""
        self.field = field


def _parse_patterns(value: Any, where: Where) -> _Patterns:
    ignore_case = False
    field = None
    if isinstance(value, dict):
        where.options(value, ("patterns", "ignore_case", "field"), ("patterns",))
        ignore_case = where.at("ignore_case").flag(value.get("ignore_case", False))
        field = where.at("field").path(value["field"]) if "field" in value else None
        where, value = where.at("patterns"), value["patterns"]
    texts = where.texts(value, single=True)
    places = [where] if isinstance(value, str) else [where.at(index) for index in range(len(texts))]
    compiled = [
        _compile(text, ignore_case, place) for text, place in zip(texts, places, strict=True)
    ]
    return _Patterns(tuple(compiled), field)


def _compile(text: str, ignore_case: bool, where: Where) -> Any:
    """`text` compiled by RE2, whose matching time is linear in the text whatever the pattern
    (`(a+)+$` cannot hang the guard). What RE2 cannot compile (backreferences, lookaround) is
    refused, never handed to Python's backtracking `re`."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is ours to report, not RE2's to print on stderr
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(text, options)
    except re2.error as exc:
        problem = exc.args[0] if exc.args else exc
        if isinstance(problem, bytes):
            problem = problem.decode("utf-8", "replace")
        where.bad(
            f"not a regular expression RE2 can run ({problem}); the guard matches in linear "
            "time, so backreferences and lookaround are not supported"
        )


def parse_regex(value: Any, where: Where) -> _Patterns:
    """`regex`: patterns the output must match. One that matches the empty text matches every
    output (`.*`, `a|`, `x?`): it checks nothing, and an expect relying on it is refused; so is
    one that no output can match (`a^b`): it would reject every output."""
    spec = _parse_patterns(value, where)
    for index, pattern in enumerate(spec.patterns):
        place = _pattern_place(value, where, index)
        if pattern.search(""):
            place.bad(
                f"the pattern {pattern.pattern!r} matches the empty text, so every output "
                "matches it: it checks nothing"
            )
        if spec.field is None and all(pattern.search(text) for text in ANY_OUTPUT):
            place.bad(
                f"the pattern {pattern.pattern!r} matches outputs that say nothing ({{}}), so "
                "every output (a JSON object) matches it: it checks nothing"
            )
        _require_reach(pattern, spec.field, place, "every output fails it", forbidden=False)
    return spec


def parse_forbidden_regex(value: Any, where: Where) -> _Patterns:
    """`forbidden_regex`: a pattern that no output can match (`a^b`, `$x`, `[^\\s\\S]`, `^DROP`
    over the whole output, which starts with `{`) rejects nothing: it is refused."""
    spec = _parse_patterns(value, where)
    for index, pattern in enumerate(spec.patterns):
        place = _pattern_place(value, where, index)
        _require_reach(pattern, spec.field, place, "it checks nothing", forbidden=True)
    return spec


def _pattern_place(value: Any, where: Where, index: int) -> Where:
    """Where the `index`th pattern of a regex property's value sits, for its error."""
    if isinstance(value, dict):
        where, value = where.at("patterns"), value.get("patterns")
    return where if isinstance(value, str) else where.at(index)


def _require_reach(
    pattern: Any, field: str | None, where: Where, outcome: str, *, forbidden: bool
) -> None:
    """Refuse `pattern` unless an output is found that it matches, searched as the property
    searches it (`agentledger.suites.properties.regex_reach`)."""
    from agentledger.suites.properties.regex_reach import reaches

    def matches(text: str) -> bool:
        out = _output_around(text, field)
        found = text_of(out, field)
        texts = unicode_variants(found) if forbidden else [found]
        return any(pattern.search(item) for item in texts)

    if reaches(pattern, matches) is None:
        scope = f"the output field '{field}'" if field else "the whole output, a JSON object"
        where.bad(
            f"the pattern {pattern.pattern!r} matches no text the guard searches ({scope}), "
            f"so {outcome} (^ and $ match at the start and end of that text, or of each line "
            "with (?m))"
        )


def _output_around(text: str, field: str | None) -> AgentOutput:
    """An output holding `text` as the value of `field` (or of a key, for the whole output)."""
    import json

    data: Any = text
    for part in reversed((field or "k").split(".")):
        data = {part: data}
    return AgentOutput(data, json.dumps(data, ensure_ascii=False))


def score_regex(out: AgentOutput, spec: _Patterns) -> PropertyResult:
    text = text_of(out, spec.field)
    missing = [pattern.pattern for pattern in spec.patterns if not pattern.search(text)]
    if missing:
        shown = ", ".join(map(repr, missing))
        return fail("regex", f"{where_text(spec)} does not match {shown}", missing)
    return ok("regex", f"{where_text(spec)} matches {len(spec.patterns)} pattern(s)")


def score_forbidden_regex(out: AgentOutput, spec: _Patterns) -> PropertyResult:
    problem = field_problem(out, spec.field)
    if problem:
        return fail("forbidden_regex", problem)
    texts = unicode_variants(text_of(out, spec.field))
    hits = []
    for pattern in spec.patterns:
        for text in texts:
            match = pattern.search(text)
            if match:
                hits.append((pattern.pattern, match.group(0)))
                break
    if hits:
        shown = "; ".join(f"{pattern!r} ({found!r})" for pattern, found in hits)
        return fail("forbidden_regex", f"{where_text(spec)} matches {shown}", [m for _, m in hits])
    return ok("forbidden_regex", f"no forbidden pattern matches ({len(spec.patterns)} checked)")
