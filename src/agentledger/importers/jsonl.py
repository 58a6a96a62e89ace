"""The plain trace format: one run per ``.jsonl`` file, one step per line.

For anyone's own agent loop. Each line is a JSON object with the trace record's fields
(`agentledger schema trace-step`), of which only ``actor`` and ``kind`` are required:

- ``index`` may be left out (the line's position is used); when given, steps count from 0;
- ``content`` may be a plain string (the whole text: it is cut, sized and hashed on import);
- ``command_class`` is agentledger.shell's class of the command: a class the file gives that
  differs is noted (the run's summary, ``source.command_class_in_trace``), not stored;
- ``source`` defaults to the file and line.

Reading is strict: numbers are numbers (no ``"0.1"``, no ``true``), a ``content`` object must
agree with its text (size and sha256, unless cut), times either all carry a UTC offset or none
do, and no text may hold a lone surrogate, which UTF-8 cannot store. Each refusal names the
file, the line and the field.

An optional first line ``{"run": {...}}`` states the run's identity: ``scenario``, ``model``,
``model_served``, ``system_prompt`` (its exact text), ``prompt``, ``report``. Without it the
scenario is the file's name, the model comes from ``--model`` (or the steps' ``model``), the
report from the content of the ``finish`` step and the prompt from the first user message.
As for every trace format, ``--model`` (and ``--scenario``) name the run even when the trace
states its own: the trace's model is then kept as ``source.model_in_trace``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentledger.errors import RecordError
from agentledger.identity import sha256_bytes
from agentledger.importers.openhands_events import command_class
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.trace_runs import (
    MAX_TRACE_STEPS,
    TraceFacts,
    attachment_of,
    plan_trace_run,
    read_trace_file,
    too_many_steps,
    trace_files,
)
from agentledger.records import (
    DEFAULT_MAX_ARTIFACT_BYTES,
    NOT_EXECUTED,
    decode_json,
    parse_record_data,
)
from agentledger.records.trace import StepText, TraceStep, step_text
from agentledger.shell.knowledge import KINDS as COMMAND_CLASSES

__all__ = ["FORMAT", "find_traces", "plan_trace_file", "read_trace_lines"]

FORMAT = "jsonl"
_HEADER_FIELDS = ("scenario", "model", "model_served", "system_prompt", "prompt", "report")
_SURROGATE = (
    "a text holds a lone surrogate (an escape such as \\ud800 without its pair), which cannot "
    "be stored as UTF-8"
)
_NOTED_CLASSES = 5  # steps named in the note on disputed command classes


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(key: str) -> str:
    """A field name as an error can print it: a lone surrogate as its escape."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _surrogate_at(value: Any, where: str) -> str | None:
    """The field (dotted path) of the first string in `value` that UTF-8 cannot hold, if any."""
    if isinstance(value, str):
        return None if _storable(value) else where
    if isinstance(value, dict):
        for key, item in value.items():
            if not _storable(key):
                return f"{where}.{_shown(key)}"
            found = _surrogate_at(item, f"{where}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        for position, item in enumerate(value):
            found = _surrogate_at(item, f"{where}.{position}")
            if found:
                return found
    return None


def find_traces(
    paths: Sequence[Path], limit: int = DEFAULT_MAX_ARTIFACT_BYTES
) -> list[tuple[Path, str]]:
    """Every trace file under `paths` (files given, or ``*.jsonl`` in directories)."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        found += trace_files(path, (".jsonl",), "trace file")
    return found


# What a step's gate may have decided (the gated shell's words, and the runtime's refusal).
_DECISIONS = frozenset(("allowed", "denied", "approved", NOT_EXECUTED))


def _header(data: dict[str, Any], origin: str, facts: TraceFacts, line: int) -> None:
    run = data["run"]
    if not isinstance(run, dict):
        raise RecordError(origin, "expected an object", field="run", line=line)
    for key, value in run.items():
        if not _storable(key):
            raise RecordError(origin, _SURROGATE, field=f"run.{_shown(key)}", line=line)
        if key not in _HEADER_FIELDS:
            raise RecordError(
                origin,
                f"unknown field; known: {', '.join(_HEADER_FIELDS)}",
                field=f"run.{key}",
                line=line,
            )
        if not isinstance(value, str):
            raise RecordError(
                origin,
                f"expected a string, found {type(value).__name__}",
                field=f"run.{key}",
                line=line,
            )
        if not _storable(value):
            raise RecordError(origin, _SURROGATE, field=f"run.{key}", line=line)
        setattr(facts, key, value)


def _fail(origin: str, line: int, problem: str, field: str | None = None) -> RecordError:
    return RecordError(origin, problem, field=field, line=line)


def _check_values(data: dict[str, Any], raw: bytes, origin: str, line: int) -> None:
    """Refuse what the record would coerce or the ledger could not store, before validation."""
    if b"\\u" in raw:  # a lone surrogate can only come from an escape
        for key, value in data.items():
            found = _surrogate_at(value, key) if _storable(key) else _shown(key)
            if found:
                raise _fail(origin, line, _SURROGATE, found)
    moment = data.get("time")
    if moment is not None and not isinstance(moment, str):
        raise _fail(
            origin, line, f"expected an ISO 8601 time, found {type(moment).__name__}", "time"
        )
    claimed = data.get("command_class")
    if claimed is not None:
        if not isinstance(claimed, str):
            raise _fail(
                origin, line, f"expected a string, found {type(claimed).__name__}", "command_class"
            )
        if claimed not in COMMAND_CLASSES:
            raise _fail(
                origin,
                line,
                f"{claimed[:40]!r} is not a class of agentledger.shell; known: "
                f"{', '.join(COMMAND_CLASSES)} (or leave it out: it is filled in)",
                "command_class",
            )
        if not isinstance(data.get("command"), str):
            raise _fail(
                origin,
                line,
                "a command_class is given without the command it classes",
                "command_class",
            )


def _check_text(content: StepText, origin: str, line: int) -> None:
    """A content object stated in full must describe its text: a whole text its size and
    sha256, a cut one more bytes than the cut holds."""
    data = content.text.encode("utf-8")
    if content.truncated:
        if content.bytes <= len(data):
            raise _fail(
                origin,
                line,
                f"{content.bytes} bytes for a cut text of {len(data)} bytes: the whole of a cut "
                "text is larger than the cut",
                "content.bytes",
            )
        return
    if content.bytes != len(data):
        raise _fail(
            origin,
            line,
            f"{content.bytes} bytes stated, but the text is {len(data)} bytes in UTF-8 and not "
            "truncated",
            "content.bytes",
        )
    digest = sha256_bytes(data)
    if content.sha256 != digest:
        raise _fail(
            origin,
            line,
            f"the sha256 stated is not the text's ({digest}), and the text is not truncated",
            "content.sha256",
        )


def _check_zones(steps: Sequence[TraceStep], lines: Sequence[int], origin: str) -> None:
    """Times either all carry a UTC offset or none do: between a time with one and a time
    without, no duration or order can be known, and none is made up."""
    timed = [(step.time, line) for step, line in zip(steps, lines, strict=True) if step.time]
    if not timed:
        return
    first, first_line = timed[0]
    zoned = first.tzinfo is not None
    for moment, line in timed[1:]:
        if (moment.tzinfo is not None) != zoned:
            this, that = ("no UTC offset", "one") if zoned else ("a UTC offset", "none")
            raise _fail(
                origin,
                line,
                f"this time has {this}, line {first_line}'s has {that}: give every step's time "
                "with its offset, or none (between the two no duration is known)",
                "time",
            )


def _classify(
    data: dict[str, Any], position: int, line: int, disputed: dict[str, dict[str, str]]
) -> None:
    """Store agentledger.shell's class of a command step; a different class the file gives is
    kept in `disputed` (by step index), not stored."""
    command = data.get("command")
    if not isinstance(command, str):
        return
    claimed = data.get("command_class")
    if data.get("kind") != "command" and claimed is None:
        return
    found = command_class(command)
    if claimed is not None and claimed != found:
        disputed[str(position)] = {"trace": claimed, "stored": found, "line": str(line)}
    data["command_class"] = found


def _dispute_note(disputed: dict[str, dict[str, str]]) -> str:
    named = [
        f"step {index} (line {claim['line']}): the trace says {claim['trace']!r}, "
        f"agentledger.shell {claim['stored']!r}"
        for index, claim in list(disputed.items())[:_NOTED_CLASSES]
    ]
    more = len(disputed) - len(named)
    return (
        "command_class of "
        + "; ".join(named)
        + (f"; and {more} more steps" if more else "")
        + ": agentledger.shell's class is stored, the trace's kept in "
        "source.command_class_in_trace"
    )


def read_trace_lines(
    raw: bytes, origin: str, attachment: str
) -> tuple[list[TraceStep], TraceFacts]:
    """The steps of the plain trace `raw` and what its header (if any) says of the run."""
    # Counted before any line is parsed (a header line comes on top of the steps).
    if raw.count(b"\n") > MAX_TRACE_STEPS and (
        sum(1 for line in raw.split(b"\n") if line.strip()) > MAX_TRACE_STEPS + 1
    ):
        raise too_many_steps(origin, "lines")
    facts = TraceFacts(importer=FORMAT)
    steps: list[TraceStep] = []
    lines: list[int] = []
    texts: dict[int, str] = {}
    disputed: dict[str, dict[str, str]] = {}
    header_line: int | None = None
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        data = decode_json(line, origin, line=number)
        if not isinstance(data, dict):
            raise RecordError(
                origin, f"expected a JSON object, found {type(data).__name__}", line=number
            )
        if "run" in data and len(data) == 1:
            if steps or header_line is not None:
                first = f"line {header_line}" if header_line is not None else "the first line"
                raise RecordError(
                    origin,
                    f"a second run header: the run's header is {first}, before the steps",
                    field="run",
                    line=number,
                )
            _header(data, origin, facts, number)
            header_line = number
            continue
        _check_values(data, line, origin, number)
        position = len(steps)
        data.setdefault("index", position)
        given = data.get("content")
        if isinstance(given, str):
            texts[position] = given
            cut: StepText | None = step_text(given)
            data["content"] = cut.model_dump() if cut else None
        data.setdefault("source", {"file": attachment, "line": number})
        _classify(data, position, number, disputed)
        step = parse_record_data(TraceStep, data, origin, line=number)
        if step.index != position:
            raise RecordError(
                origin,
                f"step index {step.index} where {position} was expected (steps count from 0, "
                "in order, without gaps)",
                field="index",
                line=number,
            )
        if isinstance(given, dict) and step.content is not None:
            _check_text(step.content, origin, number)
        if step.kind == "command" and step.command is None:
            raise RecordError(
                origin,
                "a command step needs its command (the command line)",
                field="command",
                line=number,
            )
        if step.gate is not None and step.gate.decision not in _DECISIONS:
            raise RecordError(
                origin,
                f"{step.gate.decision!r} is no decision: use one of "
                f"{', '.join(sorted(_DECISIONS))}",
                field="gate.decision",
                line=number,
            )
        steps.append(step)
        lines.append(number)
    if not steps:
        raise RecordError(origin, "no steps: a trace needs one JSON object per step")
    _check_zones(steps, lines, origin)
    if disputed:
        facts.notes.append(_dispute_note(disputed))
        facts.extra_source["command_class_in_trace"] = {
            index: {"trace": claim["trace"], "stored": claim["stored"]}
            for index, claim in disputed.items()
        }
    for step in steps:
        if facts.model is None and step.model:
            facts.model = step.model
        whole = texts.get(step.index) or (step.content.text if step.content else None)
        if step.kind == "finish" and facts.report is None:
            facts.report = whole or ""
        if step.kind == "message" and step.actor == "user" and facts.prompt is None:
            facts.prompt = whole
    return steps, facts


def plan_trace_file(path: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of the run in the plain trace file `path`; writes nothing."""
    raw = read_trace_file(path, ctx, real)
    steps, facts = read_trace_lines(raw, str(path), attachment_of(path.name))
    if facts.scenario is None:
        facts.scenario, facts.scenario_from = path.stem, "file name"
    return plan_trace_run(path, raw, steps, facts, ctx)
