"""A ledger's runs as OpenTelemetry spans in OTLP JSON, following the GenAI semantic conventions.

One trace per run, so that the runs can be sent to any OpenTelemetry backend (a collector's
``otlpjsonfile`` receiver, or POSTed to ``/v1/traces``): an ``invoke_agent`` span for the run
(its model, served model, agent, system prompt and token totals, and under ``agentledger.*``
its run id, scenario, prompt, report, cost, model calls and notes), and beneath it one span per
step of its trace, in order:

- a message, thought or finish of the agent: a ``chat`` span whose output message is the
  step's text, with the model and tokens; the user's and environment's messages before it are
  its input messages;
- a command, tool call, file read or write, browse or code, with the step that answers it
  (``cause``) when that is not earlier: one ``execute_tool`` span, its arguments (a command
  alone as ``{"command": ...}``), call id and result; an error as the answer gives the span an
  ERROR status and an ``exception`` event;
- anything else: a span named after its kind, its text as ``agentledger.text`` (an error step's
  with an ERROR status); a step that answers another links to that one's span.

Every field of a step that the GenAI attributes do not hold is an ``agentledger.*`` attribute
(`step_attributes`; the answer's in a tool's span ``agentledger.result.*``): index, actor,
kind, raw type, command, its class and exit code, cwd, cause, the gate's decision, the model,
tokens and cost where the span is no model call, the size and sha256 of the whole text, and
the time's zone. Span times are UTC: a time that the run recorded without a zone is written as
if it were UTC and marked ``agentledger.time_zone: unknown``, one in another zone is marked with
its offset (``+02:00``), and a step without a time gets the run's start (or its seal) and
``none``. `agentledger.importers.otel` reads it all back. Ids are derived from the run id, so
exporting twice gives the same spans.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from agentledger.records import RunMetadata, RunSummary, otlp
from agentledger.records.trace import TRACE, TraceStep, parse_trace
from agentledger.store.evidence import read_sealed
from agentledger.store.index import IndexedRun
from agentledger.store.ledger import Ledger
from agentledger.store.writer import PROMPT, REPORT, SYSTEM_PROMPT

__all__ = ["SCOPE", "otel_request", "run_spans", "step_attributes", "write_otel"]

SCOPE = "agentledger"
_MESSAGES = {"message", "reasoning", "finish"}
_TOOLS = {"command", "tool_call", "file_read", "file_write", "browse", "code"}
_ANSWERS = {"command_output", "tool_result", "error"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ERROR = 2  # STATUS_CODE_ERROR


def _id(*parts: str, length: int) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:length]


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
        """Nanoseconds since the epoch, and the zone: the offset given, 'unknown' or 'none'."""
        if step.time is None:
            return _nanos(self.fallback), "none"
        return _nanos(step.time), step.time_zone or "unknown"


def _text(step: TraceStep | None) -> str | None:
    return step.content.text if step is not None and step.content is not None else None


def step_attributes(
    step: TraceStep, zone: str, prefix: str = otlp.OURS, skip: Sequence[str] = ()
) -> dict[str, Any]:
    """Every field of `step` that the span's GenAI attributes do not carry (`skip`), as
    ``agentledger.*`` attributes (the step's answer in a tool's span: ``agentledger.result.*``).
    Its time is the span's start (an answer's: its end), its zone `zone`."""
    content, gate = step.content, step.gate
    values: dict[str, Any] = {
        "step": step.index,
        "time_zone": zone,
        "arguments": json.dumps(step.arguments) if step.arguments is not None else None,
        "text": content.text if content is not None else None,
        **{
            f"content.{name}": getattr(content, name) if content is not None else None
            for name in ("bytes", "sha256", "truncated")
        },
        **{
            f"gate.{name}": getattr(gate, name) if gate is not None else None
            for name in ("decision", "decided_by", "reason", "policy")
        },
    }
    return {
        prefix + key: values[key] if key in values else getattr(step, key)
        for key in otlp.STEP_ATTRIBUTES
        if key not in skip
    }


def _failure(step: TraceStep, nanos: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An error step as OpenTelemetry writes a failure: the span's ERROR status with the
    error's text, and an ``exception`` event."""
    text = _text(step)
    status: dict[str, Any] = {"code": _ERROR}
    if text is not None:
        status["message"] = text
    event = {
        "timeUnixNano": str(nanos),
        "name": "exception",
        "attributes": otlp.attribute_list(
            {"exception.type": step.raw_type or step.kind, "exception.message": text}
        ),
    }
    return status, [event]


def _shared_answers(steps: Sequence[TraceStep], clock: _Clock) -> dict[int, TraceStep]:
    """The answer of each call that shares the call's span (the span ends with it): its first
    result, when not earlier than the call; any other answer is a span of its own."""
    by_index = {step.index: step for step in steps}
    answers: dict[int, TraceStep] = {}
    for step in steps:
        call = by_index.get(step.cause) if step.cause is not None else None
        if (
            step.kind in _ANSWERS
            and call is not None
            and call.kind in _TOOLS
            and call.index not in answers
            and clock.of(step)[0] >= clock.of(call)[0]
        ):
            answers[call.index] = step
    return answers


@dataclass
class _Spans:
    """The spans of a run's steps, made one by one, with the times and zones they hold."""

    trace_id: str
    root_id: str
    clock: _Clock
    span_of: dict[int, str]
    """The span holding each step: its own, or its call's."""
    made: list[dict[str, Any]] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    zones: list[str] = field(default_factory=list)

    def add(
        self,
        name: str,
        step: TraceStep,
        attrs: dict[str, Any],
        skip: Sequence[str] = (),
        answer: TraceStep | None = None,
    ) -> None:
        start, zone = self.clock.of(step)
        end = start
        attrs = {**attrs, **step_attributes(step, zone, skip=skip)}
        status: dict[str, Any] = {}
        events: list[dict[str, Any]] = []
        failed = answer if answer is not None and answer.kind == "error" else None
        if step.kind == "error":
            status, events = _failure(step, start)
        if answer is not None:
            end, answer_zone = self.clock.of(answer)
            # its text is the tool's result, unless it is an error (the status's message)
            answer_skip = ("cause",) if failed else ("cause", "text")
            attrs.update(step_attributes(answer, answer_zone, otlp.RESULT, answer_skip))
            if failed:
                status, events = _failure(failed, end)
        self.times.extend((start, end))
        self.zones.append(zone)
        links = []
        if step.cause is not None and step.cause in self.span_of:
            links.append({"traceId": self.trace_id, "spanId": self.span_of[step.cause]})
        made: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": self.span_of[step.index],
            "parentSpanId": self.root_id,
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end),
            "attributes": otlp.attribute_list(attrs),
            "status": status,
        }
        if events:
            made["events"] = events
        if links:
            made["links"] = links
        self.made.append(made)


def _root_span(
    metadata: RunMetadata,
    spans: _Spans,
    system_prompt: str | None,
    prompt: str | None,
    report: str | None,
    summary: RunSummary | None,
) -> dict[str, Any]:
    """The run's ``invoke_agent`` span, over the spans of its steps."""
    start, end = (
        (min(spans.times), max(spans.times)) if spans.times else (_nanos(spans.clock.fallback),) * 2
    )
    agent = metadata.agent
    root_attrs = {
        otlp.OPERATION: "invoke_agent",
        otlp.AGENT_NAME: agent.name if agent else None,
        otlp.REQUEST_MODEL: metadata.model,
        otlp.RESPONSE_MODEL: metadata.model_served,
        otlp.SYSTEM_INSTRUCTIONS: system_prompt,
        # the run's totals (its model calls' own spans hold each one's)
        otlp.INPUT_TOKENS: summary.tokens_in if summary else None,
        otlp.OUTPUT_TOKENS: summary.tokens_out if summary else None,
        otlp.EXPORT: otlp.EXPORT_VERSION,
        otlp.RUN_ID: metadata.run_id,
        otlp.SCENARIO: metadata.scenario,
        otlp.SYSTEM_PROMPT_HASH: metadata.system_prompt_hash,
        otlp.SYSTEM_FINGERPRINT: metadata.system_fingerprint,
        otlp.AGENT_COMMIT: agent.commit if agent else None,
        otlp.STARTED_AT: metadata.started_at.isoformat() if metadata.started_at else None,
        otlp.ENDED_AT: metadata.ended_at.isoformat() if metadata.ended_at else None,
        otlp.PROMPT: prompt,
        otlp.REPORT: report,
        otlp.COST_USD: summary.cost_usd if summary else None,
        otlp.MODEL_CALLS: summary.model_calls if summary else None,
        otlp.NOTES: list(summary.notes) if summary and summary.notes else None,
        # The run's span is as its first step: marked when that one's time had no zone.
        otlp.TIME_ZONE: spans.zones[0]
        if spans.zones and spans.zones[0] in ("unknown", "none")
        else None,
    }
    return {
        "traceId": spans.trace_id,
        "spanId": spans.root_id,
        "name": f"invoke_agent {root_attrs[otlp.AGENT_NAME] or metadata.scenario}",
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": otlp.attribute_list(root_attrs),
        # A run that failed is the agent's span failing, its error the status's message.
        "status": {"code": _ERROR, "message": summary.error or "the run failed"}
        if summary is not None and summary.exit_status == "failed"
        else {},
    }


def run_spans(
    metadata: RunMetadata,
    steps: Sequence[TraceStep],
    *,
    sealed_at: datetime,
    system_prompt: str | None = None,
    prompt: str | None = None,
    report: str | None = None,
    summary: RunSummary | None = None,
) -> list[dict[str, Any]]:
    """The spans of one run: its ``invoke_agent`` span, then one per step (or pair of steps)."""
    run_id = metadata.run_id
    clock = _Clock(metadata.started_at or sealed_at)
    answers = _shared_answers(steps, clock)
    answered = {answer.index: call for call, answer in answers.items()}
    spans = _Spans(
        trace_id=_id(run_id, length=32),
        root_id=_id(run_id, "run", length=16),
        clock=clock,
        span_of={
            step.index: _id(run_id, str(answered.get(step.index, step.index)), length=16)
            for step in steps
        },
    )
    pending_input: list[dict[str, Any]] = []
    if prompt is not None:
        pending_input.append({"role": "user", "parts": [{"type": "text", "content": prompt}]})
    for step in steps:
        if step.index in answered:
            continue
        text = _text(step)
        if step.kind in _MESSAGES and step.actor == "agent":
            attrs: dict[str, Any] = {
                otlp.OPERATION: "chat",
                otlp.REQUEST_MODEL: metadata.model,
                otlp.RESPONSE_MODEL: step.model,
                otlp.INPUT_TOKENS: step.tokens_in,
                otlp.OUTPUT_TOKENS: step.tokens_out,
                otlp.INPUT_MESSAGES: json.dumps(pending_input) if pending_input else None,
                otlp.OUTPUT_MESSAGES: _messages("assistant", text) if text is not None else None,
            }
            pending_input = []
            spans.add(
                f"chat {metadata.model}",
                step,
                attrs,
                skip=("model", "tokens_in", "tokens_out", "text"),
            )
        elif step.kind in _TOOLS:
            answer = answers.get(step.index)
            arguments = step.arguments
            if arguments is None and step.command is not None:
                arguments = {"command": step.command}
            result = _text(answer) if answer is not None and answer.kind != "error" else None
            tool = step.tool or step.kind
            attrs = {
                otlp.OPERATION: "execute_tool",
                otlp.TOOL_NAME: step.tool,
                otlp.TOOL_CALL_ID: step.call_id,
                otlp.TOOL_ARGUMENTS: json.dumps(arguments) if arguments is not None else None,
                otlp.TOOL_RESULT: result,
                # the step had none: the arguments above were made of its command
                otlp.ARGUMENTS_MADE: True if step.arguments is None and arguments else None,
            }
            spans.add(
                f"execute_tool {tool}",
                step,
                attrs,
                skip=("tool", "call_id", "arguments"),
                answer=answer,
            )
        else:
            if step.kind == "message" and text is not None:
                role = "user" if step.actor == "user" else "system"
                pending_input.append({"role": role, "parts": [{"type": "text", "content": text}]})
            spans.add(
                f"{step.kind} {step.actor}" if step.kind == "message" else step.kind, step, {}
            )
    return [_root_span(metadata, spans, system_prompt, prompt, report, summary), *spans.made]


def _read_text(ledger: Ledger, run_id: str, name: str, files: Iterable[str]) -> str | None:
    if name not in files:
        return None
    return read_sealed(ledger, run_id, name).decode("utf-8", "replace")


def _runs_spans(ledger: Ledger, runs: Iterable[IndexedRun]) -> Iterator[list[dict[str, Any]]]:
    for run in runs:
        stored = ledger.load(run.run_id)
        files = stored.manifest.files
        steps = (
            parse_trace(
                read_sealed(ledger, run.run_id, TRACE), ledger.storage.locate(run.run_id, TRACE)
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
            summary=stored.summary,
        )


def _envelope(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": otlp.attribute_list({"service.name": "agentledger"})},
                "scopeSpans": [{"scope": {"name": SCOPE}, "spans": spans}],
            }
        ]
    }


def write_otel(ledger: Ledger, runs: Iterable[IndexedRun], out: TextIO) -> int:
    """Write `otel_request`'s request to `out` as JSON (its very text, ``json.dumps`` with
    ``ensure_ascii=False``, and a newline), one run's spans at a time, so that memory holds
    one run, not every span of the export; return how many runs it holds."""
    empty = json.dumps(_envelope([]), ensure_ascii=False)
    head, _, tail = empty.partition('"spans": []')
    out.write(head + '"spans": [')
    count = 0
    first = True
    for spans in _runs_spans(ledger, runs):
        for span in spans:
            out.write(("" if first else ", ") + json.dumps(span, ensure_ascii=False))
            first = False
        count += 1
    out.write("]" + tail + "\n")
    return count


def otel_request(ledger: Ledger, runs: Iterable[IndexedRun]) -> tuple[dict[str, Any], int]:
    """One OTLP export request (``{"resourceSpans": [...]}``) holding a trace per run, and how
    many runs it holds."""
    spans: list[dict[str, Any]] = []
    count = 0
    for run_spans_ in _runs_spans(ledger, runs):
        spans += run_spans_
        count += 1
    return _envelope(spans), count
