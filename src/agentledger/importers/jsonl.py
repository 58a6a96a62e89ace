"""The plain trace format: one run per ``.jsonl`` file, one step per line.

For anyone's own agent loop. Each line is a JSON object with the trace record's fields
(`agentledger schema trace-step`), of which only ``actor`` and ``kind`` are required:

- ``index`` may be left out (the line's position is used); when given, steps count from 0;
- ``content`` may be a plain string (the whole text: it is cut, sized and hashed on import);
- ``command_class`` is filled in by agentledger.shell for a ``command`` step that has none;
- ``source`` defaults to the file and line.

An optional first line ``{"run": {...}}`` states the run's identity: ``scenario``, ``model``,
``model_served``, ``system_prompt`` (its exact text), ``prompt``, ``report``. Without it the
scenario is the file's name, the model comes from ``--model`` (or the steps' ``model``), the
report from the content of the ``finish`` step and the prompt from the first user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentledger.errors import RecordError
from agentledger.importers.openhands import command_class
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.trace_runs import (
    TraceFacts,
    plan_trace_run,
    read_trace_file,
    trace_files,
)
from agentledger.records import decode_json, parse_record_data
from agentledger.records.trace import StepText, TraceStep, step_text

__all__ = ["FORMAT", "find_traces", "plan_trace_file", "read_trace_lines"]

FORMAT = "jsonl"
_HEADER_FIELDS = ("scenario", "model", "model_served", "system_prompt", "prompt", "report")


def find_traces(paths: Sequence[Path]) -> list[tuple[Path, str]]:
    """Every trace file under `paths` (files given, or ``*.jsonl`` in directories)."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        files = trace_files(path, (".jsonl",), "trace file")
        found += [(file, str(file.resolve())) for file in files]
    return found


def _header(data: dict[str, Any], origin: str, facts: TraceFacts) -> None:
    run = data["run"]
    if not isinstance(run, dict):
        raise RecordError(origin, "expected an object", field="run", line=1)
    for key, value in run.items():
        if key not in _HEADER_FIELDS:
            raise RecordError(
                origin,
                f"unknown field; known: {', '.join(_HEADER_FIELDS)}",
                field=f"run.{key}",
                line=1,
            )
        if not isinstance(value, str):
            raise RecordError(
                origin,
                f"expected a string, found {type(value).__name__}",
                field=f"run.{key}",
                line=1,
            )
        setattr(facts, key, value)


def read_trace_lines(
    raw: bytes, origin: str, attachment: str
) -> tuple[list[TraceStep], TraceFacts]:
    """The steps of the plain trace `raw` and what its header (if any) says of the run."""
    facts = TraceFacts(importer=FORMAT)
    steps: list[TraceStep] = []
    texts: dict[int, str] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        data = decode_json(line, origin, line=number)
        if not isinstance(data, dict):
            raise RecordError(
                origin, f"expected a JSON object, found {type(data).__name__}", line=number
            )
        if not steps and "run" in data and len(data) == 1:
            _header(data, origin, facts)
            continue
        position = len(steps)
        data.setdefault("index", position)
        if isinstance(data.get("content"), str):
            texts[position] = data["content"]
            cut: StepText | None = step_text(data["content"])
            data["content"] = cut.model_dump() if cut else None
        data.setdefault("source", {"file": attachment, "line": number})
        if data.get("kind") == "command" and isinstance(data.get("command"), str):
            data.setdefault("command_class", command_class(data["command"]))
        step = parse_record_data(TraceStep, data, origin, line=number)
        if step.index != position:
            raise RecordError(
                origin,
                f"step index {step.index} where {position} was expected (steps count from 0, "
                "in order, without gaps)",
                field="index",
                line=number,
            )
        steps.append(step)
    if not steps:
        raise RecordError(origin, "no steps: a trace needs one JSON object per step")
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
    steps, facts = read_trace_lines(raw, str(path), f"attachments/{path.name}")
    if facts.scenario is None:
        facts.scenario, facts.scenario_from = path.stem, "file name"
    return plan_trace_run(path, raw, steps, facts, ctx)
