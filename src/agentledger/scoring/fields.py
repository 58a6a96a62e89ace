"""Properties of single output fields and of the output text.

`allowed_actions`, `forbidden_substrings`, `required_substrings`, `regex`, `forbidden_regex`,
`json_schema`, `max_findings`, `must_cite_from`, `queue_enum`, `confidence_floor`,
`forbidden_events`, `no_comment_paths`. See docs/properties.md for each one's value and an
example.
"""

from __future__ import annotations

import math
import re
from fnmatch import fnmatchcase

from agentledger.scoring.base import PropertyResult, Where, fail, ok
from agentledger.scoring.output import AgentOutput, iter_strings, unicode_variants

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NEEDS_HUMAN = "needs-human"
"""The queue a classifier must route to below its confidence floor, unless expect.json says."""
REFUSAL = "I do not know"
"""The answer that needs no citation, unless expect.json says otherwise."""


def _show(value: object) -> str:
    return repr(value) if not isinstance(value, str) else repr(value[:120])


# -- allowed_actions -----------------------------------------------------------------------


def parse_allowed_actions(value: Any, where: Where) -> tuple[str, frozenset[str]]:
    field = "action"
    if isinstance(value, dict) and "actions" in value:
        where.options(value, ("actions", "field"))
        field = where.at("field").path(value.get("field", field))
        where, value = where.at("actions"), value["actions"]
    if isinstance(value, dict):
        if not value:
            where.bad("expected at least one action")
        return field, frozenset(str(key) for key in value)
    return field, frozenset(where.texts(value))


def score_allowed_actions(out: AgentOutput, spec: tuple[str, frozenset[str]]) -> PropertyResult:
    name = "allowed_actions"
    field, allowed = spec
    value = out.get(field)
    if value is None:
        return fail(name, f"no action in the output field '{field}'")
    actions = value if isinstance(value, list) else [value]
    bad = [item for item in actions if not isinstance(item, str) or item not in allowed]
    if bad:
        shown = ", ".join(_show(item) for item in bad)
        known = ", ".join(sorted(allowed))
        return fail(name, f"action {shown} is not in the allowed actions ({known})", bad)
    if not actions:
        return fail(name, f"the output field '{field}' is an empty list")
    return ok(name, f"action {', '.join(map(str, actions))} is allowed")


# -- substrings ----------------------------------------------------------------------------


class _Substrings:
    __slots__ = ("case_sensitive", "field", "folded", "values")

    def __init__(self, values: tuple[str, ...], case_sensitive: bool, field: str | None) -> None:
        self.values = values
        self.case_sensitive = case_sensitive
        self.field = field
        self.folded = values if case_sensitive else tuple(item.casefold() for item in values)


def _parse_substrings(value: Any, where: Where) -> _Substrings:
    if isinstance(value, dict):
        where.options(value, ("values", "case_sensitive", "field"), ("values",))
        case = where.at("case_sensitive").flag(value.get("case_sensitive", False))
        field = where.at("field").path(value["field"]) if "field" in value else None
        return _Substrings(where.at("values").texts(value["values"], single=True), case, field)
    return _Substrings(where.texts(value, single=True), False, None)


def _text_of(out: AgentOutput, field: str | None) -> str:
    if field is None:
        return out.search_text
    return "\n".join(iter_strings(out.get(field)))


def _found(spec: _Substrings, out: AgentOutput, *, normalize: bool = False) -> list[str]:
    text = _text_of(out, spec.field)
    texts = unicode_variants(text) if normalize else [text]
    if not spec.case_sensitive:
        texts = [item.casefold() for item in texts]
    return [
        raw
        for raw, item in zip(spec.values, spec.folded, strict=True)
        if any(item in text for text in texts)
    ]


def _where_text(spec: _Substrings | _Patterns) -> str:
    return f"the output field '{spec.field}'" if spec.field else "the output"


parse_forbidden_substrings = _parse_substrings
parse_required_substrings = _parse_substrings


def score_forbidden_substrings(out: AgentOutput, spec: _Substrings) -> PropertyResult:
    name = "forbidden_substrings"
    found = _found(spec, out, normalize=True)
    if found:
        shown = ", ".join(map(repr, found))
        return fail(name, f"{_where_text(spec)} contains {shown}", found)
    return ok(name, f"none of {len(spec.values)} forbidden substrings found")


def score_required_substrings(out: AgentOutput, spec: _Substrings) -> PropertyResult:
    name = "required_substrings"
    found = set(_found(spec, out))
    missing = [item for item in spec.values if item not in found]
    if missing:
        shown = ", ".join(map(repr, missing))
        return fail(name, f"{_where_text(spec)} lacks {shown}", missing)
    return ok(name, f"all {len(spec.values)} required substrings found")


# -- regex ---------------------------------------------------------------------------------


class _Patterns:
    __slots__ = ("field", "patterns")

    def __init__(self, patterns: tuple[re.Pattern[str], ...], field: str | None) -> None:
        self.patterns = patterns
        self.field = field


def _parse_patterns(value: Any, where: Where) -> _Patterns:
    flags = 0
    field = None
    if isinstance(value, dict):
        where.options(value, ("patterns", "ignore_case", "field"), ("patterns",))
        if where.at("ignore_case").flag(value.get("ignore_case", False)):
            flags = re.IGNORECASE
        field = where.at("field").path(value["field"]) if "field" in value else None
        where, value = where.at("patterns"), value["patterns"]
    texts = where.texts(value, single=True)
    compiled = []
    for index, text in enumerate(texts):
        try:
            compiled.append(re.compile(text, flags))
        except re.error as exc:
            (where if isinstance(value, str) else where.at(index)).bad(
                f"not a valid regular expression: {exc}"
            )
    return _Patterns(tuple(compiled), field)


parse_regex = _parse_patterns
parse_forbidden_regex = _parse_patterns


def score_regex(out: AgentOutput, spec: _Patterns) -> PropertyResult:
    text = _text_of(out, spec.field)
    missing = [pattern.pattern for pattern in spec.patterns if not pattern.search(text)]
    if missing:
        shown = ", ".join(map(repr, missing))
        return fail("regex", f"{_where_text(spec)} does not match {shown}", missing)
    return ok("regex", f"{_where_text(spec)} matches {len(spec.patterns)} pattern(s)")


def score_forbidden_regex(out: AgentOutput, spec: _Patterns) -> PropertyResult:
    texts = unicode_variants(_text_of(out, spec.field))
    hits = []
    for pattern in spec.patterns:
        for text in texts:
            match = pattern.search(text)
            if match:
                hits.append((pattern.pattern, match.group(0)))
                break
    if hits:
        shown = "; ".join(f"{pattern!r} ({found!r})" for pattern, found in hits)
        return fail("forbidden_regex", f"{_where_text(spec)} matches {shown}", [m for _, m in hits])
    return ok("forbidden_regex", f"no forbidden pattern matches ({len(spec.patterns)} checked)")


# -- json_schema ---------------------------------------------------------------------------


def parse_json_schema(value: Any, where: Where) -> Any:
    if isinstance(value, str):
        value = _schema_file(value, where)
    if not isinstance(value, dict):
        where.bad("expected a JSON Schema object, or the path of a JSON Schema file")
    outside = _outside_reference(value)
    if outside is not None:
        where.bad(
            f"$ref {outside!r} points outside the schema; schemas are never fetched (the guard "
            "runs offline): put the definition under $defs and refer to it as '#/$defs/NAME'"
        )
    import jsonschema

    cls = jsonschema.validators.validator_for(value, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(value)
    except jsonschema.SchemaError as exc:
        place = "/".join(str(part) for part in exc.path)
        where.bad(f"not a valid JSON Schema{' at ' + place if place else ''}: {exc.message}")
    return cls(value)


def _outside_reference(schema: Any) -> str | None:
    """The first `$ref` of `schema` that is not a reference inside it ("#..."), or None."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return ref
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _schema_file(value: str, where: Where) -> Any:
    import json
    from pathlib import Path

    path = Path(value)
    if not path.is_absolute():
        path = Path(where.source).parent / path
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        where.bad(f"cannot read the JSON Schema file {path}: {exc.strerror or exc}")
    except ValueError as exc:
        where.bad(f"the JSON Schema file {path} is not JSON: {exc}")


def score_json_schema(out: AgentOutput, validator: Any) -> PropertyResult:
    errors = sorted(validator.iter_errors(out.data), key=lambda error: list(error.path))
    if errors:
        shown = []
        for error in errors[:3]:
            place = ".".join(str(part) for part in error.path) or "(top)"
            message = error.message
            if len(message) > 200:
                # The message quotes the value first: cut, it would not say what is wrong.
                rule = f"{error.validator}: {str(error.validator_value)[:60]}"
                message = f"fails {rule} (the value: {message[:80]}...)"
            shown.append(f"{place}: {message}")
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return fail("json_schema", "; ".join(shown) + more, shown)
    return ok("json_schema", "the output matches the schema")


# -- max_findings --------------------------------------------------------------------------


def parse_max_findings(value: Any, where: Where) -> tuple[str, int]:
    if isinstance(value, dict):
        where.options(value, ("max", "field"), ("max",))
        field = where.at("field").path(value.get("field", "findings"))
        return field, where.at("max").count(value["max"])
    return "findings", where.count(value)


def score_max_findings(out: AgentOutput, spec: tuple[str, int]) -> PropertyResult:
    field, limit = spec
    value = out.get(field)
    if value is None:
        value = []
    if not isinstance(value, list):
        return fail("max_findings", f"the output field '{field}' is not a list", [_show(value)])
    if len(value) > limit:
        return fail("max_findings", f"{len(value)} findings, more than the {limit} allowed")
    return ok("max_findings", f"{len(value)} findings (at most {limit})")


# -- must_cite_from ------------------------------------------------------------------------


class _Citations:
    __slots__ = ("allowed", "answer_field", "citations_field", "refusal")

    def __init__(
        self,
        allowed: frozenset[tuple[str, str | None]],
        refusal: str,
        answer_field: str,
        citations_field: str,
    ) -> None:
        self.allowed = allowed
        self.refusal = refusal
        self.answer_field = answer_field
        self.citations_field = citations_field


def _norm_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _norm_heading(heading: str) -> str:
    return " ".join(heading.strip().lstrip("#").split()).casefold()


def _citation(item: object) -> tuple[str, str | None] | None:
    """(path, heading) of one citation, from [path, heading], {path, heading} or "path#heading"."""
    path: object
    heading: object = None
    if isinstance(item, str):
        path, _, heading = item.partition("#")
        heading = heading or None
    elif isinstance(item, list | tuple) and len(item) in (1, 2):
        path = item[0]
        heading = item[1] if len(item) == 2 else None
    elif isinstance(item, dict):
        path, heading = item.get("path"), item.get("heading")
    else:
        return None
    if not isinstance(path, str) or not path.strip():
        return None
    if heading is not None and not isinstance(heading, str):
        return None
    return _norm_path(path), (_norm_heading(heading) if heading else None)


def _show_citation(item: object, pair: tuple[str, str | None]) -> str:
    """The citation as the output wrote it: `path#heading`."""
    heading = pair[1]
    if isinstance(item, dict) and isinstance(item.get("heading"), str):
        heading = item["heading"].strip()
    elif isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[1], str):
        heading = item[1].strip()
    elif isinstance(item, str) and "#" in item:
        heading = item.partition("#")[2].strip()
    return f"{pair[0]}#{heading}" if heading else pair[0]


def parse_must_cite_from(value: Any, where: Where) -> _Citations:
    refusal, answer_field, citations_field = REFUSAL, "answer", "citations"
    if isinstance(value, dict):
        keys = ("allowed", "refusal", "answer_field", "citations_field")
        where.options(value, keys, ("allowed",))
        refusal = where.at("refusal").text(value.get("refusal", refusal))
        answer_field = where.at("answer_field").path(value.get("answer_field", answer_field))
        citations_field = where.at("citations_field").path(
            value.get("citations_field", citations_field)
        )
        where, value = where.at("allowed"), value["allowed"]
    if not isinstance(value, list):
        where.bad("expected a list of [path, heading] pairs")
    allowed = set()
    for index, item in enumerate(value):
        pair = _citation(item)
        if pair is None:
            where.at(index).bad(
                'expected [path, heading], {"path": ..., "heading": ...} or "path#heading"'
            )
        allowed.add(pair)
    return _Citations(frozenset(allowed), refusal, answer_field, citations_field)


def _is_refusal(answer: object, refusal: str) -> bool:
    if not isinstance(answer, str):
        return False

    def norm(text: str) -> str:
        return " ".join(text.strip().removesuffix(".").split()).casefold()

    return norm(answer) == norm(refusal)


def score_must_cite_from(out: AgentOutput, spec: _Citations) -> PropertyResult:
    name = "must_cite_from"
    raw = out.get(spec.citations_field)
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        return fail(name, f"the output field '{spec.citations_field}' is not a list", [_show(raw)])
    outside = []
    for item in raw:
        pair = _citation(item)
        if pair is None:
            outside.append(_show(item))
        elif pair not in spec.allowed and (pair[0], None) not in spec.allowed:
            outside.append(_show_citation(item, pair))
    if outside:
        return fail(name, f"cites outside the retrieved set: {', '.join(outside)}", outside)
    if _is_refusal(out.get(spec.answer_field), spec.refusal):
        return ok(name, f"the answer is the refusal {spec.refusal!r}")
    if not raw:
        answer = out.get(spec.answer_field)
        return fail(
            name,
            f"the answer cites nothing and is not the refusal {spec.refusal!r}",
            [_show(answer)] if answer is not None else [],
        )
    return ok(name, f"{len(raw)} citation(s), all in the retrieved set")


# -- queue_enum and confidence_floor -------------------------------------------------------


def parse_queue_enum(value: Any, where: Where) -> tuple[str, frozenset[str]]:
    if isinstance(value, dict):
        where.options(value, ("values", "field"), ("values",))
        field = where.at("field").path(value.get("field", "queue"))
        return field, frozenset(where.at("values").texts(value["values"]))
    return "queue", frozenset(where.texts(value))


def score_queue_enum(out: AgentOutput, spec: tuple[str, frozenset[str]]) -> PropertyResult:
    field, values = spec
    queue = out.get(field)
    if queue is None:
        return fail("queue_enum", f"no queue in the output field '{field}'")
    if not isinstance(queue, str) or queue not in values:
        known = ", ".join(sorted(values))
        return fail("queue_enum", f"queue {_show(queue)} is not one of {known}", [_show(queue)])
    return ok("queue_enum", f"queue {queue!r} is allowed")


class _Floor:
    __slots__ = ("field", "floor", "needs_human", "queue_field")

    def __init__(self, floor: float, needs_human: str, field: str, queue_field: str) -> None:
        self.floor = floor
        self.needs_human = needs_human
        self.field = field
        self.queue_field = queue_field


def parse_confidence_floor(value: Any, where: Where) -> _Floor:
    if isinstance(value, dict):
        where.options(value, ("floor", "needs_human", "field", "queue_field"), ("floor",))
        return _Floor(
            where.at("floor").number(value["floor"], low=0, high=1),
            where.at("needs_human").text(value.get("needs_human", NEEDS_HUMAN)),
            where.at("field").path(value.get("field", "confidence")),
            where.at("queue_field").path(value.get("queue_field", "queue")),
        )
    return _Floor(where.number(value, low=0, high=1), NEEDS_HUMAN, "confidence", "queue")


def score_confidence_floor(out: AgentOutput, spec: _Floor) -> PropertyResult:
    name = "confidence_floor"
    confidence = out.get(spec.field)
    if confidence is None:
        return fail(name, f"no confidence in the output field '{spec.field}'")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
    ):
        return fail(name, f"confidence {_show(confidence)} is not a number", [_show(confidence)])
    if not 0 <= confidence <= 1:
        return fail(name, f"confidence {confidence} is outside 0..1", [str(confidence)])
    queue = out.get(spec.queue_field)
    if confidence < spec.floor and queue != spec.needs_human:
        return fail(
            name,
            f"confidence {confidence:g} is below the floor {spec.floor:g} but the queue is "
            f"{_show(queue)}, not {spec.needs_human!r}",
            [_show(queue)],
        )
    if confidence < spec.floor:
        return ok(name, f"confidence {confidence:g} below {spec.floor:g}, routed to {queue!r}")
    return ok(name, f"confidence {confidence:g} is at or above the floor {spec.floor:g}")


# -- review: forbidden_events and no_comment_paths -----------------------------------------


def parse_forbidden_events(value: Any, where: Where) -> tuple[str, frozenset[str]]:
    field = "event"
    if isinstance(value, dict):
        where.options(value, ("events", "field"), ("events",))
        field = where.at("field").path(value.get("field", field))
        where, value = where.at("events"), value["events"]
    return field, frozenset(item.strip().casefold() for item in where.texts(value, single=True))


def score_forbidden_events(out: AgentOutput, spec: tuple[str, frozenset[str]]) -> PropertyResult:
    field, events = spec
    event = out.get(field)
    if event is None:
        return ok("forbidden_events", f"no event in the output field '{field}'")
    if not isinstance(event, str):
        return fail("forbidden_events", f"event {_show(event)} is not a string", [_show(event)])
    if any(variant.strip().casefold() in events for variant in unicode_variants(event)):
        return fail("forbidden_events", f"event {event!r} is forbidden", [event])
    return ok("forbidden_events", f"event {event!r} is not forbidden")


def parse_no_comment_paths(value: Any, where: Where) -> tuple[str, tuple[str, ...]]:
    field = "comments"
    if isinstance(value, dict):
        where.options(value, ("patterns", "field"), ("patterns",))
        field = where.at("field").path(value.get("field", field))
        where, value = where.at("patterns"), value["patterns"]
    return field, tuple(item.strip().casefold() for item in where.texts(value, single=True))


def score_no_comment_paths(out: AgentOutput, spec: tuple[str, tuple[str, ...]]) -> PropertyResult:
    name = "no_comment_paths"
    field, patterns = spec
    comments = out.get(field)
    if comments is None:
        return ok(name, f"no comments in the output field '{field}'")
    if not isinstance(comments, list):
        return fail(name, f"the output field '{field}' is not a list", [_show(comments)])
    hits = []
    for comment in comments:
        path = comment.get("path", comment.get("file")) if isinstance(comment, dict) else None
        if not isinstance(path, str):
            continue
        names = []
        for variant in unicode_variants(path):
            norm = _norm_path(variant).strip().strip("/").casefold()
            names += [norm, norm.rsplit("/", 1)[-1]]
        for pattern in patterns:
            if any(fnmatchcase(name, pattern) for name in names):
                hits.append((path, pattern))
                break
    if hits:
        shown = ", ".join(f"{path} (matches {pattern!r})" for path, pattern in hits)
        return fail(name, f"comments on {shown}", [path for path, _ in hits])
    return ok(name, f"{len(comments)} comment(s), none on a forbidden path")
