"""A ledger's runs as OpenTelemetry spans in OTLP JSON, following the GenAI semantic conventions.

One trace per run, so that the runs can be sent to any OpenTelemetry backend (a collector's
``otlpjsonfile`` receiver, or POSTed to ``/v1/traces``): an ``invoke_agent`` span for the run,
and beneath it one span per step of its trace, in order:

- a message, thought or finish of the agent: a ``chat`` span whose output message is the
  step's text, with the model and tokens; the user's and environment's messages before it are
  its input messages;
- a command, tool call, file read or write, browse or code, with the step that answers it
  (``cause``): one ``execute_tool`` span, its arguments (a command's text as ``command``) and its
  result;
- anything else: a span named after its kind, its text as ``agentledger.text``.

What the conventions have no name for is kept under ``agentledger.*`` (the run id, scenario,
step index, kind, command class, exit code, the gate's decision). Span times are UTC: a time
that the run recorded without a zone is written as if it were UTC and marked
``agentledger.time_zone: unknown``, a step without a time gets the run's start (or its
seal) and ``agentledger.time_zone: none``; `agentledger.importers.otel` reads both marks back.
Ids are derived from the run id, so exporting twice gives the same spans.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentledger.records import RunMetadata
from agentledger.records.trace import TRACE, TraceStep, parse_trace
from agentledger.store.index import IndexedRun
from agentledger.store.ledger import Ledger
from agentledger.store.writer import PROMPT, REPORT, SYSTEM_PROMPT

__all__ = ["SCOPE", "otel_request", "run_spans"]

SCOPE = "agentledger"
_MESSAGES = {"message", "reasoning", "finish"}
_TOOLS = {"command", "tool_call", "file_read", "file_write", "browse", "code"}
_ANSWERS = {"command_output", "tool_result", "error"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _id(*parts: str, length: int) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:length]


def _any_value(value: Any) -> dict[str, Any]:
    """A plain value as an OTLP AnyValue (64-bit integers as strings, as OTLP JSON writes)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(item) for item in value]}}
    return {"stringValue": str(value)}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"key": key, "value": _any_value(value)}
        for key, value in values.items()
        if value is not None
    ]


def _nanos(moment: datetime) -> int:
    """Nanoseconds since the epoch; a time without a zone is taken as written (as UTC)."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    delta = aware - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _messages(role: str, text: str) -> str:
    """GenAI messages (as the conventions write them: a JSON string) of one text part."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


@dataclass
class _Clock:
    """The time of each span: the step's own, else the run's start, else its seal."""

    fallback: datetime

    def of(self, step: TraceStep) -> tuple[int, str]:
        """Nanoseconds since the epoch, and the zone: as given, 'unknown' or 'none'."""
        if step.time is None:
            return _nanos(self.fallback), "none"
        return _nanos(step.time), step.time_zone or "unknown"


def _text(step: TraceStep | None) -> str | None:
    return step.content.text if step is not None and step.content is not None else None


def run_spans(
    metadata: RunMetadata,
    steps: Sequence[TraceStep],
    *,
    sealed_at: datetime,
    system_prompt: str | None = None,
    prompt: str | None = None,
    report: str | None = None,
) -> list[dict[str, Any]]:
    """The spans of one run: its ``invoke_agent`` span, then one per step (or pair of steps)."""
    run_id = metadata.run_id
    trace_id = _id(run_id, length=32)
    root_id = _id(run_id, "run", length=16)
    clock = _Clock(metadata.started_at or sealed_at)
    # The answer of a call (its first result) shares the call's span; any other is its own.
    calls = {step.index for step in steps if step.kind in _TOOLS}
    answers: dict[int, TraceStep] = {}
    for step in steps:
        if step.kind in _ANSWERS and step.cause in calls:
            answers.setdefault(step.cause, step)
    answered = {id(answer) for answer in answers.values()}
    spans: list[dict[str, Any]] = []
    pending_input: list[dict[str, Any]] = []
    if prompt is not None:
        pending_input.append({"role": "user", "parts": [{"type": "text", "content": prompt}]})
    times: list[int] = []
    zones: list[str] = []

    def span(name: str, step: TraceStep, end_step: TraceStep | None, attrs: dict[str, Any]) -> None:
        start, zone = clock.of(step)
        end = max(clock.of(end_step)[0], start) if end_step is not None else start
        times.extend((start, end))
        zones.append(zone)
        spans.append(
            {
                "traceId": trace_id,
                "spanId": _id(run_id, str(step.index), length=16),
                "parentSpanId": root_id,
                "name": name,
                "kind": 1,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(end),
                "attributes": _attributes(
                    {
                        **attrs,
                        "agentledger.step": step.index,
                        "agentledger.kind": step.kind,
                        "agentledger.raw_type": step.raw_type,
                        "agentledger.time_zone": zone if zone in ("unknown", "none") else None,
                    }
                ),
                "status": {"code": 2} if step.kind == "error" else {},
            }
        )

    for step in steps:
        if id(step) in answered:
            continue
        text = _text(step)
        if step.kind in _MESSAGES and step.actor == "agent":
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": metadata.model,
                "gen_ai.response.model": step.model or metadata.model_served,
                "gen_ai.usage.input_tokens": step.tokens_in,
                "gen_ai.usage.output_tokens": step.tokens_out,
                "gen_ai.input.messages": json.dumps(pending_input) if pending_input else None,
                "gen_ai.output.messages": _messages("assistant", text) if text else None,
            }
            pending_input = []
            span(f"chat {metadata.model}", step, None, attrs)
        elif step.kind == "message" and text is not None:
            role = "user" if step.actor == "user" else "system"
            pending_input.append({"role": role, "parts": [{"type": "text", "content": text}]})
            span(
                f"{step.kind} {step.actor}",
                step,
                None,
                {"agentledger.actor": step.actor, "agentledger.text": text},
            )
        elif step.kind in _TOOLS:
            answer = answers.get(step.index)
            arguments = dict(step.arguments or {})
            if step.command is not None:
                arguments["command"] = step.command
            result = _text(answer)
            tool = step.tool or step.kind
            attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": step.call_id,
                "gen_ai.tool.call.arguments": json.dumps(arguments) if arguments else None,
                "gen_ai.tool.call.result": result,
                "agentledger.command_class": step.command_class,
                "agentledger.exit_code": step.exit_code
                if step.exit_code is not None
                else (answer.exit_code if answer else None),
                "agentledger.gate.decision": step.gate.decision if step.gate else None,
                "agentledger.gate.reason": step.gate.reason if step.gate else None,
            }
            if text is not None:
                attrs["agentledger.text"] = text
            span(f"execute_tool {tool}", step, answer, attrs)
        else:
            span(
                step.kind,
                step,
                None,
                {"agentledger.actor": step.actor, "agentledger.text": text},
            )
    start, end = (min(times), max(times)) if times else (_nanos(clock.fallback),) * 2
    root_attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": metadata.agent.name if metadata.agent else None,
        "gen_ai.request.model": metadata.model,
        "gen_ai.response.model": metadata.model_served,
        "gen_ai.system_instructions": system_prompt,
        "agentledger.run_id": run_id,
        "agentledger.scenario": metadata.scenario,
        "agentledger.system_prompt_hash": metadata.system_prompt_hash,
        "agentledger.report": report,
        # The run's span is as its first step: marked when that one's time had no zone.
        "agentledger.time_zone": zones[0] if zones and zones[0] in ("unknown", "none") else None,
    }
    root = {
        "traceId": trace_id,
        "spanId": root_id,
        "name": f"invoke_agent {root_attrs['gen_ai.agent.name'] or metadata.scenario}",
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(root_attrs),
        "status": {},
    }
    return [root, *spans]


def _read_text(ledger: Ledger, run_id: str, name: str, files: Iterable[str]) -> str | None:
    if name not in files:
        return None
    return ledger.read_bytes(run_id, name).decode("utf-8", "replace")


def _runs_spans(ledger: Ledger, runs: Iterable[IndexedRun]) -> Iterator[list[dict[str, Any]]]:
    for run in runs:
        stored = ledger.load(run.run_id)
        files = stored.manifest.files
        steps = (
            parse_trace(
                ledger.read_bytes(run.run_id, TRACE), ledger.storage.locate(run.run_id, TRACE)
            )
            if TRACE in files
            else []
        )
        yield run_spans(
            stored.metadata,
            steps,
            sealed_at=stored.manifest.sealed_at,
            system_prompt=_read_text(ledger, run.run_id, SYSTEM_PROMPT, files),
            prompt=_read_text(ledger, run.run_id, PROMPT, files),
            report=_read_text(ledger, run.run_id, REPORT, files),
        )


def otel_request(ledger: Ledger, runs: Iterable[IndexedRun]) -> tuple[dict[str, Any], int]:
    """One OTLP export request (``{"resourceSpans": [...]}``) holding a trace per run, and how
    many runs it holds."""
    spans: list[dict[str, Any]] = []
    count = 0
    for run_spans_ in _runs_spans(ledger, runs):
        spans += run_spans_
        count += 1
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes({"service.name": "agentledger"})},
                "scopeSpans": [{"scope": {"name": SCOPE}, "spans": spans}],
            }
        ]
    }
    return request, count
