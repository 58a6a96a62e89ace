"""OpenTelemetry spans in OTLP JSON, following the GenAI semantic conventions: one run per
trace id.

A file holds one export request (``{"resourceSpans": [...]}``) or one per line, as the
collector's file exporter writes them. A span given again (the same request twice) is taken
once; a span id that a trace repeats with other content, or a file without spans, is refused.
Spans become steps in the order they started:

- ``chat`` (and other model operations: ``text_completion``, ``generate_content``): a
  ``message`` step by the agent, with the model, its tokens and the text of its output
  messages (``gen_ai.output.messages``);
- ``execute_tool``: the call (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``) and its
  result (``gen_ai.tool.call.result``) as two steps; a tool whose arguments hold a
  ``command`` string is a shell command, classified, and its result the command's output;
- anything else (``invoke_agent``, spans of other libraries): ``other``, its operation kept.

A span that failed (status ERROR, or an ``error.type``) is answered by an ``error`` step: a
tool's result is that error, with the status message, each ``exception`` event's type and
message, and the result it gave all the same; the run's summary notes each failure.

Identity: the model asked for and served (``gen_ai.request.model``, ``gen_ai.response.model``),
the system prompt (``gen_ai.system_instructions``), the prompt (the first user message of
``gen_ai.input.messages``), the agent (``gen_ai.agent.name``); the report is the last model
output. Times are nanoseconds since the epoch: UTC.

A run that agentledger itself exported (`agentledger.store.export_otel`, its run's span marked
``agentledger.export: 2``) is read back as it was: each step from its span's GenAI and
``agentledger.*`` attributes (the answer in a tool's span from ``agentledger.result.*``), at
its own index, with its time in the zone it had; the run's facts (the run id's key, tokens,
cost, model calls, prompt, report, notes) from the run's span, which is no step of its own.
Older exports are read as any spans, with their ``agentledger.*`` marks of kind, actor, raw
type, text, exit code, scenario and times without a zone (``unknown``) or none (``none``).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentledger.errors import InputError, RecordError
from agentledger.importers.openhands_events import command_class
from agentledger.importers.otel_dialects import (
    message_call_steps,
    tool_answers,
)
from agentledger.importers.otel_spans import (
    SEPARATOR,
    find_otel_traces,
    hex_id,
    json_object,
    messages_text,
    read_spans,
    requests_of,
    span_time,
)
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.source_files import given_file, read_regular
from agentledger.importers.trace_runs import (
    TraceFacts,
    attachment_of,
    part_attachment,
    plan_trace_run,
)
from agentledger.records import otlp
from agentledger.records.trace import ACTORS, KINDS, STEPS, step_text_fields

__all__ = ["FORMAT", "find_otel_traces", "plan_otel_trace", "read_spans"]

FORMAT = "otel"
_MODEL_OPERATIONS = {"chat", "text_completion", "generate_content"}
_TOOL_KINDS = ("tool_call", "file_read", "file_write", "browse", "code")
_NO_REPORT = "no finish step: the run has no report"  # the note plan_trace_run adds itself
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")  # as trace_runs makes the run id of its parts


def _raw_type(attrs: dict[str, Any]) -> str | None:
    """The source's own type of a step exported by agentledger (``action:run``)."""
    value = attrs.get(otlp.RAW_TYPE)
    return value[:200] if isinstance(value, str) and value else None


def _ours(attrs: dict[str, Any], name: str, choices: Sequence[str]) -> str | None:
    """agentledger's own attribute `name` (its export), when it holds one of `choices`."""
    value = attrs.get(otlp.OURS + name)
    return value if isinstance(value, str) and value in choices else None


def _failure(span: dict[str, Any], result: str | None) -> str | None:
    """The text of a failed span (status ERROR, or an ``error.type``): its status message, each
    exception event's type and message, and the result it gave all the same; None when the span
    did not fail."""
    error_type = span["attributes"].get("error.type")
    if not span["failed"] and not (isinstance(error_type, str) and error_type):
        return None
    lines: list[str] = []
    if span["status_message"]:
        lines.append(span["status_message"])
    exceptions = [event["attributes"] for event in span["events"] if event["name"] == "exception"]
    for attrs in exceptions:
        parts = [
            value
            for value in (attrs.get("exception.type"), attrs.get("exception.message"))
            if isinstance(value, str) and value
        ]
        if parts and ": ".join(parts) not in lines:
            lines.append(": ".join(parts))
    if not exceptions and isinstance(error_type, str) and error_type and error_type not in lines:
        lines.append(error_type)
    if result is not None:
        lines.append(f"result: {result}")
    return "\n".join(lines) or "failed (status ERROR), without a message"


@dataclass
class _Tally:
    """What a trace's model calls add up to, and its failed spans (as error steps)."""

    calls: int = 0
    tokens: list[int | None] = field(default_factory=lambda: [None, None])  # None: unknown
    cost: float | None = None
    failures: list[tuple[int, str, str]] = field(default_factory=list)

    def into(self, facts: TraceFacts) -> None:
        """The run's totals, and a note naming the failed spans."""
        if self.calls:
            facts.model_calls = self.calls
            facts.tokens_in, facts.tokens_out = self.tokens
            facts.cost_usd = self.cost
        if self.failures:
            shown = "; ".join(
                f"step {index} ({name}): {text.splitlines()[0][:200]}"
                for index, name, text in self.failures[:5]
            )
            count = len(self.failures)
            more = f"; and {count - 5} more" if count > 5 else ""
            facts.notes.append(
                f"{count} failed span{'s' if count > 1 else ''} in the trace (status ERROR), "
                f"kept as error steps: {shown}{more}"
            )


def _models(attrs: dict[str, Any], facts: TraceFacts) -> tuple[Any, Any]:
    """The models a span asked for and was served, noted as the run's when it has none."""
    asked, served = attrs.get(otlp.REQUEST_MODEL), attrs.get(otlp.RESPONSE_MODEL)
    facts.model = facts.model or (asked if isinstance(asked, str) else None)
    facts.model_served = facts.model_served or (served if isinstance(served, str) else None)
    return asked, served


def _note_facts(attrs: dict[str, Any], operation: str, facts: TraceFacts) -> None:
    """What any span may say of the run: fingerprint, agent, scenario, models, system prompt."""
    fingerprint = attrs.get(otlp.SYSTEM_FINGERPRINT_GENAI)
    if isinstance(fingerprint, str) and facts.system_fingerprint is None:
        facts.system_fingerprint = fingerprint
    if isinstance(attrs.get(otlp.AGENT_NAME), str) and facts.agent_name is None:
        facts.agent_name = attrs[otlp.AGENT_NAME]
    if isinstance(attrs.get(otlp.SCENARIO), str) and facts.scenario is None:
        facts.scenario, facts.scenario_from = attrs[otlp.SCENARIO], "trace"
    if operation == "invoke_agent":
        _models(attrs, facts)
    instructions = attrs.get(otlp.SYSTEM_INSTRUCTIONS)
    if isinstance(instructions, str | list) and facts.system_prompt is None:
        facts.system_prompt = (
            instructions if isinstance(instructions, str) else messages_text(instructions)
        )


def _model_step(
    attrs: dict[str, Any], base: dict[str, Any], facts: TraceFacts, tally: _Tally
) -> dict[str, Any]:
    """The agent's step of a model call; the call counted, its prompt and answer noted."""
    tally.calls += 1
    asked, served = _models(attrs, facts)
    tin, tout = attrs.get(otlp.INPUT_TOKENS), attrs.get(otlp.OUTPUT_TOKENS)
    for at, count in enumerate((tin, tout)):
        if type(count) is int and count >= 0:  # else unknown, never taken for 0
            tally.tokens[at] = (tally.tokens[at] or 0) + count
    spent: Any = attrs.get(otlp.COST)
    spent = spent if type(spent) in (int, float) and spent >= 0 else None
    if spent is not None:
        tally.cost = (tally.cost or 0.0) + spent
    if facts.prompt is None:
        facts.prompt = messages_text(attrs.get(otlp.INPUT_MESSAGES), "user")
    output = messages_text(attrs.get(otlp.OUTPUT_MESSAGES))
    if output is not None:
        facts.report = output
    return {
        **base,
        "actor": "agent",
        "kind": _ours(attrs, "kind", ("reasoning", "finish")) or "message",
        "tool": None,
        "model": served if isinstance(served, str) else asked,
        "tokens_in": tin if isinstance(tin, int) and tin >= 0 else None,
        "tokens_out": tout if isinstance(tout, int) and tout >= 0 else None,
        "cost_usd": float(spent) if spent is not None else None,
        "content": step_text_fields(output),
    }


def _tool_steps(
    span: dict[str, Any], base: dict[str, Any], at: int, tally: _Tally
) -> list[dict[str, Any]]:
    """The call of a tool's span (step `at`), and its answer or failure after it."""
    attrs = span["attributes"]
    name = attrs.get(otlp.TOOL_NAME)
    arguments = json_object(attrs.get(otlp.TOOL_ARGUMENTS))
    command = (arguments or {}).get("command")
    # agentledger's export says which tools ran commands (an editor's "command" is not)
    is_command = isinstance(command, str) and _ours(attrs, "kind", KINDS) in (None, "command")
    text = attrs.get(otlp.TEXT)
    call_id = attrs.get(otlp.TOOL_CALL_ID)
    steps = [
        {
            **base,
            "actor": "agent",
            "kind": "command" if is_command else _ours(attrs, "kind", _TOOL_KINDS) or "tool_call",
            "tool": name if isinstance(name, str) else None,
            "call_id": call_id if isinstance(call_id, str) else None,
            "arguments": arguments,
            "command": command if is_command else None,
            "command_class": command_class(command) if is_command else None,
            "content": step_text_fields(text if isinstance(text, str) else None),
        }
    ]
    result = attrs.get(otlp.TOOL_RESULT)
    if result is not None and not isinstance(result, str):
        result = json.dumps(result)
    failure = _failure(span, result)
    if result is None and failure is None:
        return steps
    if failure is not None:
        tally.failures.append((at + 1, span["name"] or "execute_tool", failure))
    answer = "command_output" if is_command else "tool_result"
    exit_code = attrs.get(otlp.EXIT_CODE)
    steps.append(
        {
            **base,
            "index": at + 1,
            "time": span_time(span["end"], attrs.get(otlp.TIME_ZONE)),
            "actor": "tool",
            "kind": "error" if failure is not None else answer,
            "tool": name if isinstance(name, str) else None,
            "cause": at,
            "command": command if is_command else None,
            "exit_code": exit_code if type(exit_code) is int else None,
            "content": step_text_fields(failure if failure is not None else result),
        }
    )
    return steps


def _steps(spans: list[dict[str, Any]], attachment: str, facts: TraceFacts) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    tally = _Tally()
    # Without spans of its tools (an instrumented model client), a trace's tool calls are
    # those its model answers ask for, answered in the next request's messages.
    from_messages = not any(
        span["attributes"].get(otlp.OPERATION) == "execute_tool" for span in spans
    )
    answers: dict[str, str] = {}
    if from_messages:
        for span in spans:
            answers.update(tool_answers(span["attributes"].get(otlp.INPUT_MESSAGES)))
    # A parent starts no later than its children: at the same time, it comes first.
    for span in sorted(spans, key=lambda s: (s["start"], s["parent"], s["end"])):
        attrs = span["attributes"]
        operation = attrs.get(otlp.OPERATION) or span["name"].split(" ")[0]
        zone = attrs.get(otlp.TIME_ZONE)
        base = {
            "index": len(steps),
            "time": span_time(span["start"], zone),
            "source": {"file": attachment, "event": span["span_id"]},
            "raw_type": _raw_type(attrs) or f"span:{operation}",
        }
        _note_facts(attrs, operation, facts)
        if operation in _MODEL_OPERATIONS:
            steps.append(_model_step(attrs, base, facts, tally))
            if from_messages:
                steps += message_call_steps(
                    base,
                    len(steps),
                    attrs.get(otlp.OUTPUT_MESSAGES),
                    answers,
                    span_time(span["end"]),
                )
            failure = _failure(span, None)
        elif operation == "execute_tool":
            steps += _tool_steps(span, base, len(steps), tally)
            continue
        else:
            text = attrs.get(otlp.TEXT)
            steps.append(
                {
                    **base,
                    "actor": _ours(attrs, "actor", ACTORS) or "environment",
                    "kind": _ours(attrs, "kind", KINDS) or "other",
                    "tool": None,
                    "content": step_text_fields(text if isinstance(text, str) else None),
                }
            )
            failure = _failure(span, None)
        if failure is None:
            continue
        if operation == "invoke_agent" and not span["parent"]:
            facts.error = f"the agent's span failed: {failure}"[:_ERROR_CHARS]
        tally.failures.append((len(steps), span["name"] or operation, failure))
        steps.append(
            {
                **base,
                "index": len(steps),
                "time": span_time(span["end"], zone),
                "actor": "environment",
                "kind": "error",
                "tool": None,
                "cause": len(steps) - 1,
                "content": step_text_fields(failure),
            }
        )
    tally.into(facts)
    return steps


_ERROR_CHARS = 2000


def _export_root(spans: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's span of a trace that agentledger exported (`otlp.EXPORT_VERSION`), if it is one."""
    for span in spans:
        attrs = span["attributes"]
        if (
            not span["parent"]
            and attrs.get(otlp.OPERATION) == "invoke_agent"
            and attrs.get(otlp.EXPORT) == otlp.EXPORT_VERSION
        ):
            return span
    return None


def _of(value: Any, kind: type | tuple[type, ...]) -> Any:
    """`value` when it is of `kind` (a bool is no int here), else None."""
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        return None
    return value if isinstance(value, kind) else None


def _exported_step(
    attrs: dict[str, Any], prefix: str, nanos: int, text: Any = None
) -> dict[str, Any] | None:
    """The fields of a step as agentledger's export wrote them (`step_attributes` of
    `agentledger.store.export_otel`): ``agentledger.*``, or ``agentledger.result.*`` for the
    answer in a tool's span. `text` is its text when a GenAI attribute holds it. None without
    the step's index."""

    said = {
        name: _of(attrs.get(prefix + name), kind) for name, kind in otlp.STEP_ATTRIBUTES.items()
    }
    if said["step"] is None:
        return None
    gate = None
    if said["gate.decision"] is not None:
        gate = {
            name: said[f"gate.{name}"]
            for name in ("decision", "decided_by", "reason", "policy")
            if said[f"gate.{name}"] is not None
        }
    if text is None:
        text = said["text"]
    content = step_text_fields(text) if isinstance(text, str) else None
    if content is not None and said["content.sha256"] is not None:
        # the size and hash of the whole text, which the export may have cut
        content.update(
            bytes=said["content.bytes"],
            sha256=said["content.sha256"],
            truncated=said["content.truncated"] or False,
        )
    arguments = said["arguments"]
    return {
        "index": said["step"],
        "time": span_time(nanos, said["time_zone"]),
        **{name: said[name] for name in ("actor", "kind", "raw_type", "tool", "call_id")},
        "arguments": json_object(arguments) if arguments is not None else None,
        "command": said["command"],
        "command_class": said["command_class"],
        "gate": gate,
        "exit_code": said["exit_code"],
        "cwd": said["cwd"],
        "content": content,
        **{name: said[name] for name in ("cause", "model", "tokens_in", "tokens_out", "cost_usd")},
    }


def _exported_steps(
    spans: list[dict[str, Any]], root: dict[str, Any], attachment: str, facts: TraceFacts
) -> list[dict[str, Any]] | None:
    """The steps of a run that agentledger exported, exactly as its trace held them, and the
    run's facts from its span; None when a span of a step is missing or lacks its fields (the
    trace is then read as any other)."""
    steps: list[dict[str, Any]] = []
    for span in spans:
        if span is root:
            continue
        attrs = span["attributes"]
        operation = attrs.get(otlp.OPERATION)
        text = None
        if operation in _MODEL_OPERATIONS:
            text = messages_text(attrs.get(otlp.OUTPUT_MESSAGES))
        step = _exported_step(attrs, otlp.OURS, span["start"], text)
        if step is None:
            return None
        step["source"] = {"file": attachment, "event": span["span_id"]}
        if operation in _MODEL_OPERATIONS:
            step["model"] = _of(attrs.get(otlp.RESPONSE_MODEL), str)
            step["tokens_in"] = _of(attrs.get(otlp.INPUT_TOKENS), int)
            step["tokens_out"] = _of(attrs.get(otlp.OUTPUT_TOKENS), int)
        elif operation == "execute_tool":
            step["tool"] = _of(attrs.get(otlp.TOOL_NAME), str)
            step["call_id"] = _of(attrs.get(otlp.TOOL_CALL_ID), str)
            arguments = attrs.get(otlp.TOOL_ARGUMENTS)
            if arguments is not None and attrs.get(otlp.ARGUMENTS_MADE) is not True:
                step["arguments"] = json_object(arguments)
        steps.append(step)
        if otlp.RESULT + "step" in attrs:
            result = attrs.get(otlp.TOOL_RESULT)
            answer = _exported_step(
                attrs,
                otlp.RESULT,
                span["end"],
                result if attrs.get(otlp.RESULT + "kind") != "error" else None,
            )
            if answer is None:
                return None
            answer["cause"] = step["index"]
            answer["source"] = step["source"]
            steps.append(answer)
    steps.sort(key=lambda step: step["index"])
    if [step["index"] for step in steps] != list(range(len(steps))):
        return None
    attrs = root["attributes"]

    def said(name: str) -> str | None:
        value = attrs.get(name)
        return value if isinstance(value, str) else None

    facts.agent_name = said(otlp.AGENT_NAME)
    facts.model, facts.model_served = said(otlp.REQUEST_MODEL), said(otlp.RESPONSE_MODEL)
    facts.system_prompt = said(otlp.SYSTEM_INSTRUCTIONS)
    facts.system_fingerprint = said(otlp.SYSTEM_FINGERPRINT)
    facts.agent_commit = said(otlp.AGENT_COMMIT)
    if said(otlp.SCENARIO) is not None:
        facts.scenario, facts.scenario_from = said(otlp.SCENARIO), "trace"
    facts.prompt, facts.report = said(otlp.PROMPT), said(otlp.REPORT)
    facts.tokens_in = _of(attrs.get(otlp.INPUT_TOKENS), int)
    facts.tokens_out = _of(attrs.get(otlp.OUTPUT_TOKENS), int)
    facts.cost_usd = _of(attrs.get(otlp.COST_USD), (int, float))
    facts.model_calls = _of(attrs.get(otlp.MODEL_CALLS), int)
    for name in ("started_at", "ended_at"):
        value = said(otlp.OURS + name)
        with contextlib.suppress(ValueError):
            setattr(facts, name, datetime.fromisoformat(value) if value else None)
    notes = attrs.get(otlp.NOTES)
    if isinstance(notes, list):
        # plan_trace_run notes a missing report itself
        facts.notes = [
            note
            for note in notes
            if isinstance(note, str) and not (facts.report is None and note == _NO_REPORT)
        ]
    run_id = said(otlp.RUN_ID)
    if run_id is not None:
        facts.extra_source["exported_run_id"] = run_id
    return steps


def _run_key(facts: TraceFacts, trace_id: str) -> str:
    """What tells this trace's run apart: the exported run's own key when its id is
    ``<scenario>_<model>_<key>`` (so the run id comes back), else the trace id's start (its
    end when the start is zeros)."""
    run_id = facts.extra_source.get("exported_run_id")
    model = facts.model or facts.model_served
    if isinstance(run_id, str) and facts.scenario and model:
        prefix = "_".join(
            _SLUG.sub("-", part).strip("-._")[:60] or "x" for part in (facts.scenario, model)
        )
        if run_id.startswith(prefix + "_") and len(run_id) > len(prefix) + 1:
            return run_id[len(prefix) + 1 :]
    # A 64-bit id widened to 128 bits (Zipkin, Jaeger) starts with zeros: its end tells.
    return trace_id[:12] if trace_id[:12].strip("0") else trace_id[-12:]


def plan_otel_trace(path: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of one trace (``file#trace=ID``) of an OTLP JSON file."""
    file_name, _, trace_id = str(path).partition(SEPARATOR)
    file = Path(file_name)
    at = real.partition(SEPARATOR)[0] if real else given_file(file)
    # A file's traces come in a row: it is read and parsed once for all of them.
    raw, traces, parts = ctx.latest(
        "otel-file", Path(at), lambda _at: _read_file(file, read_regular(at, ctx.limit, file))
    )
    spans = traces.get(trace_id)
    if not spans:
        raise InputError(f"{file}: no spans of trace {trace_id}")
    facts = TraceFacts(importer=FORMAT)
    # A file of several traces: each run keeps its own spans, not the whole file once more.
    part = [(f"trace-{trace_id}.json", parts[trace_id])] if len(traces) > 1 else None
    attachment = part_attachment(file.name, part[0][0]) if part else attachment_of(file.name)
    root = _export_root(spans)
    values = _exported_steps(spans, root, attachment, facts) if root is not None else None
    if root is not None and values is not None and root["failed"]:
        facts.error = root["status_message"] or "failed (status ERROR), without a message"
    if values is None:
        facts = TraceFacts(importer=FORMAT)
        values = _steps(spans, attachment, facts)
    try:
        steps = STEPS.validate_python(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise RecordError(
            str(file), f"trace {trace_id}: {first['msg']}", field=f"step {where}"
        ) from None
    if facts.scenario is None:
        facts.scenario, facts.scenario_from = file.stem, "file name"
    facts.run_key = _run_key(facts, trace_id)
    facts.extra_source["trace_id"] = trace_id
    return plan_trace_run(file, raw, steps, facts, ctx, parts=part)


def _read_file(
    file: Path, raw: bytes
) -> tuple[bytes, dict[str, list[dict[str, Any]]], dict[str, bytes]]:
    """A file's bytes `raw`, its spans by trace id (`read_spans`), and each trace's own part of
    it: an OTLP export request of that trace's spans only, in their resource and scope, each
    span as the file gives it."""
    origin = str(file)
    traces = read_spans(raw, origin)
    kept: dict[str, dict[str, Any]] = {}
    for request in requests_of(raw, origin):
        for resource in request["resourceSpans"]:
            resource = resource or {}
            for scope in resource.get("scopeSpans") or []:
                scope = scope or {}
                by_trace: dict[str, list[Any]] = {}
                for span in scope.get("spans") or []:
                    trace_id = hex_id(span.get("traceId"), origin, "traceId")
                    by_trace.setdefault(trace_id, []).append(span)
                for trace_id, spans in by_trace.items():
                    wrapped = {**{k: v for k, v in scope.items() if k != "spans"}, "spans": spans}
                    outer = {k: v for k, v in resource.items() if k != "scopeSpans"}
                    kept.setdefault(trace_id, {"resourceSpans": []})["resourceSpans"].append(
                        {**outer, "scopeSpans": [wrapped]}
                    )
    parts = {
        trace_id: json.dumps(request, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass")
        + b"\n"
        for trace_id, request in kept.items()
    }
    return raw, traces, parts
