"""OpenTelemetry spans in OTLP JSON, following the GenAI semantic conventions: one run per
trace id.

A file holds one export request (``{"resourceSpans": [...]}``) or one per line, as the
collector's file exporter writes them. Spans become steps in the order they started:

- ``chat`` (and other model operations: ``text_completion``, ``generate_content``): a
  ``message`` step by the agent, with the model, its tokens and the text of its output
  messages (``gen_ai.output.messages``);
- ``execute_tool``: the call (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``) and its
  result (``gen_ai.tool.call.result``) as two steps; a tool whose arguments hold a
  ``command`` string is a shell command, classified, and its result the command's output;
- anything else (``invoke_agent``, spans of other libraries): ``other``, its operation kept.

Identity: the model asked for and served (``gen_ai.request.model``, ``gen_ai.response.model``),
the system prompt (``gen_ai.system_instructions``), the prompt (the first user message of
``gen_ai.input.messages``), the agent (``gen_ai.agent.name``); the report is the last model
output. Times are nanoseconds since the epoch: UTC.

Spans that agentledger itself exported (`agentledger.store.export_otel`) also carry
``agentledger.*`` attributes, read back so that the run imports as it was: each step's kind,
actor, raw type and text, a command's exit code, the scenario, and times that had no zone
(``agentledger.time_zone: unknown``) or none at all (``none``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentledger.errors import InputError, RecordError
from agentledger.importers.openhands import command_class
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext, read_source
from agentledger.importers.trace_runs import TraceFacts, plan_trace_run, trace_files
from agentledger.records import decode_json
from agentledger.records.trace import ACTORS, KINDS, STEPS, step_text_fields

__all__ = ["FORMAT", "find_otel_traces", "plan_otel_trace", "read_spans"]

FORMAT = "otel"
_MODEL_OPERATIONS = {"chat", "text_completion", "generate_content"}
_SEPARATOR = "#trace="
_TOOL_KINDS = ("tool_call", "file_read", "file_write", "browse", "code")


def _requests(raw: bytes, origin: str) -> list[Any]:
    """The export requests of a file: the whole file, or one per line."""
    text = raw.lstrip()
    if text.startswith(b"{") and b"\n{" not in text.rstrip():
        return [decode_json(raw, origin)]
    return [
        decode_json(line, origin, line=number)
        for number, line in enumerate(raw.split(b"\n"), start=1)
        if line.strip()
    ]


def _hex_id(value: Any, origin: str, where: str) -> str:
    """A trace or span id as hex: OTLP JSON writes hex, protobuf's JSON mapping base64."""
    if not isinstance(value, str) or not value:
        raise RecordError(origin, "expected a trace or span id (hex)", field=where)
    if len(value) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        raise RecordError(
            origin, f"{value[:40]!r} is not a hex or base64 id", field=where
        ) from None


def _value(value: Any) -> Any:
    """An OTLP AnyValue as plain JSON."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    ((kind, inner),) = value.items()
    if kind == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            return None
    if kind == "arrayValue":
        return [_value(item) for item in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return {kv.get("key"): _value(kv.get("value")) for kv in (inner or {}).get("values", [])}
    return inner


def _attributes(items: Any, origin: str, where: str) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise RecordError(origin, "expected a list of attributes", field=where)
    out: dict[str, Any] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = _value(item.get("value"))
    return out


def read_spans(raw: bytes, origin: str) -> dict[str, list[dict[str, Any]]]:
    """Every span of the file by trace id, each with its attributes made plain."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for number, request in enumerate(_requests(raw, origin)):
        if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
            raise RecordError(
                origin, "expected an OTLP export request with 'resourceSpans'", line=number + 1
            )
        for r, resource in enumerate(request["resourceSpans"]):
            for s, scope in enumerate((resource or {}).get("scopeSpans") or []):
                for n, span in enumerate((scope or {}).get("spans") or []):
                    where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                    if not isinstance(span, dict):
                        raise RecordError(origin, "expected a span object", field=where)
                    trace_id = _hex_id(span.get("traceId"), origin, f"{where}.traceId")
                    try:
                        start = int(span.get("startTimeUnixNano", 0))
                        end = int(span.get("endTimeUnixNano", start))
                    except (TypeError, ValueError):
                        raise RecordError(
                            origin,
                            "expected nanoseconds since the epoch",
                            field=f"{where}.startTimeUnixNano",
                        ) from None
                    traces.setdefault(trace_id, []).append(
                        {
                            "where": where,
                            "span_id": _hex_id(span.get("spanId"), origin, f"{where}.spanId"),
                            "parent": bool(span.get("parentSpanId")),
                            "name": span.get("name") if isinstance(span.get("name"), str) else "",
                            "start": start,
                            "end": end,
                            "attributes": _attributes(
                                span.get("attributes"), origin, f"{where}.attributes"
                            ),
                        }
                    )
    return traces


def find_otel_traces(paths: Sequence[Path]) -> list[tuple[Path, str]]:
    """One entry per trace id of every OTLP JSON file under `paths` (``file#trace=ID``)."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        for file in trace_files(path, (".json", ".jsonl"), "OTLP JSON file"):
            for trace_id in sorted(read_spans(read_source(file), str(file))):
                found.append(
                    (
                        Path(f"{file}{_SEPARATOR}{trace_id}"),
                        f"{file.resolve()}{_SEPARATOR}{trace_id}",
                    )
                )
    return found


def _messages_text(value: Any, role: str | None = None) -> str | None:
    """The text parts of GenAI messages (a JSON string or a list), of one role if given."""
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except ValueError:
            return text
    if not isinstance(value, list):
        return None
    texts = []
    for message in value:
        if not isinstance(message, dict) or (role and message.get("role") != role):
            continue
        for part in message.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("content"), str):
                texts.append(part["content"])
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
    return "\n".join(texts) if texts else None


def _when(nanos: int, zone: Any = None) -> datetime | None:
    """A span time; agentledger's own export marks times that had no zone (``unknown``: kept
    without one) and steps that had no time (``none``)."""
    if nanos <= 0 or zone == "none":
        return None
    moment = datetime.fromtimestamp(nanos // 1_000_000_000, UTC).replace(
        microsecond=nanos % 1_000_000_000 // 1000
    )
    return moment.replace(tzinfo=None) if zone == "unknown" else moment


def _raw_type(attrs: dict[str, Any]) -> str | None:
    """The source's own type of a step exported by agentledger (``action:run``)."""
    value = attrs.get("agentledger.raw_type")
    return value[:200] if isinstance(value, str) and value else None


def _ours(attrs: dict[str, Any], name: str, choices: Sequence[str]) -> str | None:
    """agentledger's own attribute `name` (its export), when it holds one of `choices`."""
    value = attrs.get(f"agentledger.{name}")
    return value if isinstance(value, str) and value in choices else None


def _json_object(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"raw": value}
    return value if isinstance(value, dict) else None


def _steps(spans: list[dict[str, Any]], attachment: str, facts: TraceFacts) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    tokens = [0, 0]
    calls = 0
    # A parent starts no later than its children: at the same time, it comes first.
    for span in sorted(spans, key=lambda s: (s["start"], s["parent"], s["end"])):
        attrs = span["attributes"]
        operation = attrs.get("gen_ai.operation.name") or span["name"].split(" ")[0]
        zone = attrs.get("agentledger.time_zone")
        base = {
            "index": len(steps),
            "time": _when(span["start"], zone),
            "source": {"file": attachment, "event": span["span_id"]},
            "raw_type": _raw_type(attrs) or f"span:{operation}",
        }
        if isinstance(attrs.get("gen_ai.agent.name"), str) and facts.agent_name is None:
            facts.agent_name = attrs["gen_ai.agent.name"]
        if isinstance(attrs.get("agentledger.scenario"), str) and facts.scenario is None:
            facts.scenario, facts.scenario_from = attrs["agentledger.scenario"], "trace"
        if operation == "invoke_agent":
            asked, served = attrs.get("gen_ai.request.model"), attrs.get("gen_ai.response.model")
            facts.model = facts.model or (asked if isinstance(asked, str) else None)
            facts.model_served = facts.model_served or (served if isinstance(served, str) else None)
        if (
            isinstance(attrs.get("gen_ai.system_instructions"), str | list)
            and facts.system_prompt is None
        ):
            instructions = attrs["gen_ai.system_instructions"]
            facts.system_prompt = (
                instructions if isinstance(instructions, str) else _messages_text(instructions)
            )
        if operation in _MODEL_OPERATIONS:
            calls += 1
            asked, served = attrs.get("gen_ai.request.model"), attrs.get("gen_ai.response.model")
            facts.model = facts.model or (asked if isinstance(asked, str) else None)
            facts.model_served = facts.model_served or (served if isinstance(served, str) else None)
            tin, tout = (
                attrs.get("gen_ai.usage.input_tokens"),
                attrs.get("gen_ai.usage.output_tokens"),
            )
            tokens[0] += tin if isinstance(tin, int) and tin >= 0 else 0
            tokens[1] += tout if isinstance(tout, int) and tout >= 0 else 0
            if facts.prompt is None:
                facts.prompt = _messages_text(attrs.get("gen_ai.input.messages"), "user")
            output = _messages_text(attrs.get("gen_ai.output.messages"))
            if output is not None:
                facts.report = output
            steps.append(
                {
                    **base,
                    "actor": "agent",
                    "kind": _ours(attrs, "kind", ("reasoning", "finish")) or "message",
                    "tool": None,
                    "model": served if isinstance(served, str) else asked,
                    "tokens_in": tin if isinstance(tin, int) and tin >= 0 else None,
                    "tokens_out": tout if isinstance(tout, int) and tout >= 0 else None,
                    "content": step_text_fields(output),
                }
            )
        elif operation == "execute_tool":
            name = attrs.get("gen_ai.tool.name")
            arguments = _json_object(attrs.get("gen_ai.tool.call.arguments"))
            command = (arguments or {}).get("command")
            # agentledger's export says which tools ran commands (an editor's "command" is not)
            is_command = isinstance(command, str) and _ours(attrs, "kind", KINDS) in (
                None,
                "command",
            )
            text = attrs.get("agentledger.text")
            exit_code = attrs.get("agentledger.exit_code")
            call = len(steps)
            steps.append(
                {
                    **base,
                    "actor": "agent",
                    "kind": "command"
                    if is_command
                    else _ours(attrs, "kind", _TOOL_KINDS) or "tool_call",
                    "tool": name if isinstance(name, str) else None,
                    "call_id": attrs.get("gen_ai.tool.call.id")
                    if isinstance(attrs.get("gen_ai.tool.call.id"), str)
                    else None,
                    "arguments": arguments,
                    "command": command if is_command else None,
                    "command_class": command_class(command) if is_command else None,
                    "content": step_text_fields(text if isinstance(text, str) else None),
                }
            )
            result = attrs.get("gen_ai.tool.call.result")
            if result is not None:
                text = result if isinstance(result, str) else json.dumps(result)
                steps.append(
                    {
                        **base,
                        "index": len(steps),
                        "time": _when(span["end"], zone),
                        "actor": "tool",
                        "kind": "command_output" if is_command else "tool_result",
                        "tool": name if isinstance(name, str) else None,
                        "cause": call,
                        "command": command if is_command else None,
                        "exit_code": exit_code if isinstance(exit_code, int) else None,
                        "content": step_text_fields(text),
                    }
                )
        else:
            text = attrs.get("agentledger.text")
            steps.append(
                {
                    **base,
                    "actor": _ours(attrs, "actor", ACTORS) or "environment",
                    "kind": _ours(attrs, "kind", KINDS) or "other",
                    "tool": None,
                    "content": step_text_fields(text if isinstance(text, str) else None),
                }
            )
    if calls:
        facts.model_calls = calls
        facts.tokens_in, facts.tokens_out = tokens
    return steps


def plan_otel_trace(path: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of one trace (``file#trace=ID``) of an OTLP JSON file."""
    file_name, _, trace_id = str(path).partition(_SEPARATOR)
    file = Path(file_name)
    if file.stat().st_size > ctx.limit:
        raise InputError(f"{file}: larger than the largest artifact accepted ({ctx.limit})")
    raw = read_source(file)
    spans = read_spans(raw, str(file)).get(trace_id)
    if not spans:
        raise InputError(f"{file}: no spans of trace {trace_id}")
    facts = TraceFacts(importer=FORMAT)
    values = _steps(spans, f"attachments/{file.name}", facts)
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
    facts.run_key = trace_id[:12]
    facts.extra_source["trace_id"] = trace_id
    return plan_trace_run(file, raw, steps, facts, ctx)
