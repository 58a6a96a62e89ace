"""The trace record: one step of a run (a line of trace.jsonl), in order.

A run's trace holds every step the agent, its tools, the user and the environment took:
messages, reasoning, tool calls and their results, shell commands and their output, file
reads and writes, code, browsing, the finish, errors. Importers of foreign formats
(`agentledger.importers.openhands`, `agentledger.importers.jsonl`) write it; judges of steps
read it. The shell log (shell_audit.jsonl) stays as it is, and is derivable from the command
steps (`shell_events`).

Times keep their time zone as given; a time written without one is kept as local time of an
unknown zone (`time_zone: "unknown"`), never taken for UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from agentledger.errors import RecordError
from agentledger.identity import sha256_bytes
from agentledger.records import (
    NOT_EXECUTED,
    TRACE,
    Record,
    ShellCounts,
    ShellEvent,
    is_denied,
    numbered_lines,
    parse_lines,
)

__all__ = [
    "ACTORS",
    "KINDS",
    "MAX_STEP_TEXT",
    "STEPS",
    "TRACE",
    "GateDecision",
    "StepSource",
    "StepText",
    "TraceStep",
    "exact_time",
    "parse_trace",
    "shell_counts",
    "shell_event_of",
    "shell_events",
    "shell_events_of",
    "shell_log_of_values",
    "step_text",
    "step_text_fields",
    "steps_from_shell_log",
    "time_zone_of",
    "trace_bytes",
    "trace_bytes_of_values",
]

MAX_STEP_TEXT = 4096
"""Characters of a step's text kept in the trace; the original is kept whole elsewhere."""

Actor = Literal["agent", "tool", "user", "environment"]
Kind = Literal[
    "message",
    "reasoning",
    "tool_call",
    "tool_result",
    "command",
    "command_output",
    "file_read",
    "file_write",
    "browse",
    "code",
    "finish",
    "error",
    "other",
]
ACTORS: tuple[str, ...] = Actor.__args__  # type: ignore[attr-defined]
KINDS: tuple[str, ...] = Kind.__args__  # type: ignore[attr-defined]


class StepText(BaseModel):
    """A step's text (message, thought, observation), cut to MAX_STEP_TEXT characters, with the
    size and sha256 of the whole, so that the cut is visible and the whole can be checked."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    text: str = Field(description="The text, possibly cut.")
    bytes: int = Field(ge=0, strict=True, description="Size of the whole text in UTF-8 bytes.")
    sha256: str = Field(
        pattern=r"^sha256:[0-9a-f]{64}$", description="sha256 of the whole text's UTF-8 bytes."
    )
    truncated: bool = Field(
        default=False, strict=True, description="True when `text` is a cut of the whole."
    )


def step_text(value: str | None, limit: int = MAX_STEP_TEXT) -> StepText | None:
    """`value` as a StepText (None for None)."""
    fields = step_text_fields(value, limit)
    return None if fields is None else StepText(**fields)


def step_text_fields(value: str | None, limit: int = MAX_STEP_TEXT) -> dict[str, Any] | None:
    """The fields of `step_text(value)`, for importers that validate many steps at once."""
    if value is None:
        return None
    data = value.encode("utf-8", "surrogatepass")
    cut = len(value) > limit
    return {
        "text": value[:limit] if cut else value,
        "bytes": len(data),
        "sha256": sha256_bytes(data),
        "truncated": cut,
    }


class GateDecision(BaseModel):
    """What the gated shell decided about a command step, when it went through it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    decision: str = Field(
        description="allowed, denied or approved; not-executed when the agent's own runtime "
        "would not run the command (no safety gate refused it)."
    )
    decided_by: str | None = Field(default=None, description="policy, or who approved.")
    reason: str | None = Field(default=None, description="Why the gate decided so.")
    policy: str | None = Field(default=None, description="The policy file, or 'default'.")


class StepSource(BaseModel):
    """Where a step comes from in the original: the file, and the line or event id in it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    file: str = Field(description="The original file (kept as an attachment of the run).")
    line: int | None = Field(
        default=None, ge=1, strict=True, description="Line in the file, when known."
    )
    event: str | None = Field(default=None, description="The event's own id, when it has one.")


class TraceStep(Record):
    """One step of a run, in order (a line of trace.jsonl).

    Its numbers and flags are read strictly, as written: no string or boolean is taken for a
    number (``"0.1"``, ``true``), nor a number for a boolean."""

    index: int = Field(
        ge=0, strict=True, description="Position in the trace, from 0, without gaps."
    )
    time: datetime | None = Field(
        default=None,
        description="When the step happened, as given; without a time zone when the source "
        "gave none (see time_zone).",
    )
    time_zone: str | None = Field(
        default=None,
        description="The time's UTC offset as given ('+00:00'), or 'unknown' when the source "
        "wrote a time without a zone (never taken for UTC); None without a time.",
    )
    actor: Actor = Field(description="Who took the step: agent, tool, user or environment.")
    kind: Kind = Field(description="What the step is, from a closed list; 'other' otherwise.")
    raw_type: str | None = Field(
        default=None, description="The source's own type of the event ('action:run'), as given."
    )
    tool: str | None = Field(default=None, description="The tool called, as named by the source.")
    call_id: str | None = Field(default=None, description="The tool call's id, as given.")
    arguments: dict[str, Any] | None = Field(
        default=None, description="The tool's arguments, as given."
    )
    command: str | None = Field(default=None, description="The shell command, where there is one.")
    command_class: str | None = Field(
        default=None,
        description="read-only, mutating, destructive or unknown (by agentledger.shell).",
    )
    gate: GateDecision | None = Field(
        default=None, description="The gated shell's decision, when the command went through it."
    )
    exit_code: int | None = Field(
        default=None, strict=True, description="A command's exit code, if known."
    )
    cwd: str | None = Field(default=None, description="A command's working directory, if known.")
    content: StepText | None = Field(
        default=None, description="The message, thought or observation text (cut, with its size)."
    )
    cause: int | None = Field(
        default=None,
        ge=0,
        strict=True,
        description="The index of the step this one answers (a result's call).",
    )
    model: str | None = Field(default=None, description="The model that produced the step.")
    tokens_in: int | None = Field(
        default=None, ge=0, strict=True, description="Prompt tokens of the step."
    )
    tokens_out: int | None = Field(
        default=None, ge=0, strict=True, description="Completion tokens."
    )
    cost_usd: float | None = Field(
        default=None, ge=0, strict=True, description="Model cost in US dollars."
    )
    source: StepSource | None = Field(default=None, description="Where the step comes from.")

    @property
    def did_not_run(self) -> bool:
        """True for a command the gated shell denied or the agent's runtime did not run."""
        return self.gate is not None and self.gate.decision in ("denied", NOT_EXECUTED)

    @model_validator(mode="after")
    def _consistent(self) -> TraceStep:
        if self.cause is not None and self.cause >= self.index:
            raise ValueError(f"cause {self.cause} is not an earlier step than {self.index}")
        if self.time is None:
            if self.time_zone is not None:
                raise ValueError("time_zone is given without a time")
            return self
        zone = time_zone_of(self.time)
        if zone == "unknown":
            if self.time_zone not in (None, "unknown"):
                raise ValueError(
                    f"time_zone {self.time_zone!r} is given, but the time has no UTC offset"
                )
        else:
            if self.time_zone == "unknown":
                raise ValueError("time_zone is 'unknown', but the time has a UTC offset")
            if self.time_zone is not None and self.time_zone != zone:
                raise ValueError(
                    f"time_zone {self.time_zone!r} differs from the time's offset {zone}"
                )
        if self.time_zone != zone:
            object.__setattr__(self, "time_zone", zone)  # filled in, frozen afterwards
        return self


def time_zone_of(moment: datetime) -> str:
    """A step's `time_zone` for its time: the UTC offset as given ('+02:00'), or 'unknown'."""
    offset = moment.utcoffset()
    return "unknown" if offset is None else _offset_text(offset)


def _offset_text(offset: timedelta) -> str:
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}"


def exact_time(moment: datetime) -> bool:
    """Whether `trace_bytes_of_values` writes `moment` as the record's serialiser does: any
    time but one whose UTC offset has seconds (which the record cuts to the minute)."""
    offset = moment.utcoffset()
    return offset is None or (offset.seconds % 60 == 0 and not offset.microseconds)


_DEFERRED = ConfigDict(defer_build=True)  # built when first used (see records._DEFERRED)
_TRACE = TypeAdapter(list[TraceStep], config=_DEFERRED)
_SHELL_EVENTS = TypeAdapter(list[ShellEvent], config=_DEFERRED)
STEPS = _TRACE
"""Validates a list of steps at once (much faster than one by one)."""


def parse_trace(raw: bytes, source: str) -> list[TraceStep]:
    """Parse trace.jsonl strictly (see `records.decode_json`); errors name the line and field."""
    return parse_trace_lines(numbered_lines(raw), source)


def parse_trace_lines(
    lines: Sequence[tuple[int, bytes]], source: str, first_index: int = 0
) -> list[TraceStep]:
    """The steps of some numbered lines of trace.jsonl (`records.numbered_lines`, or a part of
    them), the first being step `first_index`: what reading a part of a long trace parses."""
    steps = parse_lines(lines, TraceStep, _TRACE, source)
    for position, (step, (number, _line)) in enumerate(zip(steps, lines, strict=True)):
        if step.index != first_index + position:
            raise RecordError(
                source,
                f"step index {step.index} where {first_index + position} was expected (steps "
                "are numbered from 0, in order, without gaps)",
                field="index",
                line=number,
            )
    return steps


def trace_bytes(steps: Iterable[TraceStep]) -> bytes:
    """trace.jsonl: one compact JSON object per step, fields left unset omitted."""
    return b"".join(
        step.model_dump_json(exclude_none=True).encode("utf-8") + b"\n" for step in steps
    )


_DUMP_OPTIONS = orjson.OPT_UTC_Z  # a UTC time as "Z", as pydantic writes it


def trace_bytes_of_values(values: Sequence[Mapping[str, Any]]) -> bytes | None:
    """trace.jsonl of steps given as their JSON fields, the same bytes `trace_bytes` writes of
    the validated steps, without a model per step (an importer's fast path).

    Each mapping must be what a valid TraceStep dumps to (``model_dump(exclude_none=True)``):
    every field in the model's order from ``schema_version`` on, none None, ``time`` a
    datetime for which `exact_time` holds and ``time_zone`` its `time_zone_of`. The caller's
    own code guarantees that; the equivalence is tested. None when a value cannot be written
    as JSON in UTF-8 (a string with a lone surrogate).
    """
    written = bytearray()  # not a list of lines: each dumps result holds 4 kB or more
    try:
        for value in values:
            written += orjson.dumps(value, option=_DUMP_OPTIONS)
            written += b"\n"
    except orjson.JSONEncodeError:
        return None
    return bytes(written)


def shell_events(steps: Sequence[TraceStep]) -> list[ShellEvent]:
    """The shell log of a trace: one ShellEvent per command step, with its output step's text
    (or, when the tool answered with an error instead, that error as the command's stderr).

    A time without a time zone is kept as `local_time` rather than `ts`, which is read as UTC.
    """
    return shell_events_of([dict(step) for step in steps])


def shell_events_of(steps: Sequence[Mapping[str, Any]]) -> list[ShellEvent]:
    """`shell_events` of steps given by their fields: a TraceStep's (``dict(step)``), or the
    JSON fields an importer builds (see `trace_bytes_of_values`)."""
    return _SHELL_EVENTS.validate_python(_shell_event_values(steps))


def shell_log_of_values(steps: Sequence[Mapping[str, Any]]) -> tuple[bytes, ShellCounts] | None:
    """shell_audit.jsonl of `shell_events_of(steps)`, the bytes the validated ShellEvents
    write, and their counts, without a model per event (an importer's fast path: `steps` as
    `trace_bytes_of_values` takes them). None when a value cannot be written as JSON."""
    events = _shell_event_values(steps)
    written = trace_bytes_of_values(events)  # the same JSON lines, of events
    if written is None:
        return None
    return written, shell_counts([event.get("decision") for event in events])


def shell_counts(decisions: Sequence[str | None]) -> ShellCounts:
    """The counts of a shell log whose events have the gate decisions `decisions`."""
    denied = not_executed = 0
    for decision in decisions:
        if decision is None:
            continue
        if is_denied(decision, _NO_EXTRA):
            denied += 1
        elif decision == NOT_EXECUTED:
            not_executed += 1
    return ShellCounts(len(decisions), denied, not_executed)


_NO_EXTRA: dict[str, Any] = {}
_STREAMS = {  # a command's answer: the fields its text goes in, by the answer's kind
    "command_output": ("stdout", "stdout_sha256", "stdout_bytes"),
    "error": ("stderr", "stderr_sha256", "stderr_bytes"),
}


def _text_parts(content: StepText | Mapping[str, Any]) -> tuple[str, int, str, bool]:
    if isinstance(content, StepText):
        return content.text, content.bytes, content.sha256, content.truncated
    return content["text"], content["bytes"], content["sha256"], content.get("truncated", False)


def _gate_fields(gate: GateDecision | Mapping[str, Any]) -> Mapping[str, Any]:
    return gate.model_dump(exclude_none=True) if isinstance(gate, GateDecision) else gate


def _shell_event_values(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The fields of each command step's ShellEvent, unset ones left out, in the order the
    validated event writes them: its declared fields in their order (a gate's among them),
    then the others (``trace_step``, ``local_time``)."""
    # A command's answer: its output, or the error the tool gave instead of running it.
    outputs: dict[int, Mapping[str, Any]] = {}
    for step in steps:
        cause = step.get("cause")
        if cause is not None and step["kind"] in _STREAMS:
            outputs.setdefault(cause, step)
    events: list[dict[str, Any]] = []
    for step in steps:
        if step["kind"] == "command" and step.get("command") is not None:
            events.append(shell_event_of(step, outputs.get(step["index"])))
    return events


def shell_event_of(step: Mapping[str, Any], output: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields of the ShellEvent of the command step `step` (its fields, as
    `shell_events_of` takes them), answered by the step `output` (or by none)."""
    command = step["command"]
    event: dict[str, Any] = {"schema_version": 1}
    local_time = None
    moment = step.get("time")
    if moment is not None:
        if moment.tzinfo is None:
            local_time = moment.isoformat()
        else:
            event["ts"] = moment
    event["command"] = command
    cwd = step.get("cwd") or (output.get("cwd") if output is not None else None)
    if cwd is not None:
        event["cwd"] = cwd
    classification = step.get("command_class")
    if classification is not None:
        event["classification"] = classification
    gate = step.get("gate")
    policy = None
    if gate is not None:
        fields = _gate_fields(gate)
        for name in ("decision", "decided_by", "reason"):
            value = fields.get(name)
            if value is not None:
                event[name] = value
        policy = fields.get("policy")
    exit_code = step.get("exit_code")
    if exit_code is None and output is not None:
        exit_code = output.get("exit_code")
    if exit_code is not None:
        event["exit_code"] = exit_code
    content = output.get("content") if output is not None else None
    if content is not None:
        assert output is not None
        text, size, digest, truncated = _text_parts(content)
        text_field, digest_field, size_field = _STREAMS[output["kind"]]
        event[text_field] = text
        event[digest_field] = digest
        event[size_field] = size
        if truncated is not None:
            event["truncated"] = truncated
    if policy is not None:
        event["policy"] = policy
    event["trace_step"] = step["index"]
    if local_time is not None:
        event["local_time"] = local_time
    return event


def steps_from_shell_log(
    prompt: str | None,
    events: Sequence[ShellEvent],
    report: str | None,
    *,
    started: datetime | None = None,
    ended: datetime | None = None,
) -> list[TraceStep]:
    """The trace of a run recorded by `agentledger run`: the prompt given, each command the
    gated shell saw (with its decision) and its output, and the report as the finish.

    What the agent thought between commands is not in the gate's log: it stays in audit.md.
    """
    steps: list[TraceStep] = []

    def add(**values: Any) -> int:
        index = len(steps)
        steps.append(TraceStep(index=index, **values))
        return index

    if prompt is not None:
        add(time=started, actor="user", kind="message", content=step_text(prompt))
    for number, event in enumerate(events, start=1):
        gate = None
        if event.decision is not None:
            gate = GateDecision(
                decision=event.decision,
                decided_by=event.decided_by,
                reason=event.reason,
                policy=event.policy,
            )
        source = StepSource(file="shell_audit.jsonl", line=number)
        call = add(
            time=event.ts,
            actor="agent",
            kind="command",
            tool="shell",
            command=event.command,
            command_class=event.classification,
            gate=gate,
            cwd=event.cwd,
            source=source,
        )
        if event.denied:
            continue
        output = event.stdout
        if event.stderr:
            output = f"{output or ''}{event.stderr}"
        add(
            time=event.ts,
            actor="tool",
            kind="command_output",
            tool="shell",
            cause=call,
            exit_code=event.exit_code,
            content=_logged_output(event, output),
            source=source,
        )
    if report is not None:
        add(time=ended, actor="agent", kind="finish", content=step_text(report))
    return steps


def _logged_output(event: ShellEvent, output: str | None) -> StepText | None:
    """A command's output as the gate logged it: already cut, with the whole's size and hash
    when the log has them (stdout alone) and there is no error output besides."""
    text = step_text(output)
    if text is None or event.stderr or event.stdout_sha256 is None:
        return text
    whole = event.stdout_bytes if event.stdout_bytes is not None else text.bytes
    return StepText(
        text=text.text,
        bytes=whole,
        sha256=event.stdout_sha256,
        truncated=bool(event.truncated) or text.truncated,
    )
