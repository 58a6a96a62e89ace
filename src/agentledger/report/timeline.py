"""A run's trace as a readable timeline: one row per step, untrusted text on one inert line.

`agentledger show RUN --trace` prints these rows; anything else that shows a trace (reports,
the viewer) can use them too. Every text a step carries came from the agent or its tools, so
each cell is flattened by `report.untrusted.one_line`: no control character, escape sequence
or line break reaches the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentledger.errors import InputError
from agentledger.records import NOT_EXECUTED
from agentledger.records.trace import TRACE, TraceStep, parse_trace
from agentledger.report.untrusted import one_line
from agentledger.store.ledger import Ledger

__all__ = ["TimelineRow", "load_trace", "timeline_rows", "timeline_span"]

DETAIL = 100
"""Characters of a step's text shown in its row."""


@dataclass(frozen=True)
class TimelineRow:
    """One step as shown: every field already one safe line of text."""

    step: int
    time: str
    actor: str
    kind: str
    tool: str
    detail: str


def load_trace(ledger: Ledger, run_id: str) -> list[TraceStep]:
    """The steps of run `run_id` (its trace.jsonl); an InputError when the run has none."""
    if TRACE not in ledger.load(run_id).manifest.files:
        raise InputError(
            f"run {run_id} has no trace ({TRACE}): runs imported from run directories or "
            "recorded before traces have only their shell log (show --file shell_audit.jsonl)"
        )
    from agentledger.store.evidence import read_sealed

    return parse_trace(read_sealed(ledger, run_id, TRACE), ledger.storage.locate(run_id, TRACE))


_TARGETS = ("path", "url", "file", "browser_actions")


def _detail(step: TraceStep, limit: int) -> str:
    text = step.content.text if step.content else ""
    if step.kind == "command" and step.command is not None:
        shown = one_line(step.command, limit)
        if step.command_class:
            shown += f"  [{step.command_class}]"
        if step.gate is not None and step.gate.decision == NOT_EXECUTED:
            shown += "  not run by the runtime"
        elif step.gate is not None:
            shown += f"  gate: {one_line(step.gate.decision, 40)}"
            by = step.gate.decided_by
            if by and by != "policy":  # the gated shell's own policy goes without saying
                shown += f" by {one_line(by, 40)}"
        return shown
    arguments = step.arguments or {}
    target = next((arguments[k] for k in _TARGETS if isinstance(arguments.get(k), str)), None)
    if step.kind in ("file_read", "file_write", "browse") and target:
        return one_line(f"{target}: {text}" if text else target, limit)
    if step.exit_code is not None:
        return one_line(
            f"exit {step.exit_code}: {text}" if text else f"exit {step.exit_code}, no output", limit
        )
    if not text and step.arguments:
        text = " ".join(f"{k}={v}" for k, v in step.arguments.items() if isinstance(v, str))
    return one_line(text, limit)


def timeline_span(steps: Sequence[TraceStep]) -> str:
    """When the trace ran, for a heading: first and last time, and the zone as given."""
    times = [step for step in steps if step.time is not None]
    if not times:
        return "no times recorded"
    first, last = times[0], times[-1]
    assert first.time is not None and last.time is not None
    zones = {step.time_zone for step in times}
    offsets = ", ".join(sorted(z for z in zones if z and z != "unknown"))
    if zones == {"unknown"}:
        zone = "time zone unknown (local times as recorded)"
    elif "unknown" in zones:
        zone = f"UTC offset {offsets} for some times, none for others (local times as recorded)"
    else:
        zone = f"UTC offset {offsets}"
    return f"{first.time:%Y-%m-%d %H:%M:%S} to {last.time:%Y-%m-%d %H:%M:%S}, {zone}"


def timeline_rows(steps: Sequence[TraceStep], *, detail: int = DETAIL) -> list[TimelineRow]:
    """One row per step: its index, time of day, actor, kind, tool and a short detail (the
    command and its class, an exit code and output, or the start of the text)."""
    rows = []
    for step in steps:
        kind: str = step.kind
        if kind == "other" and step.raw_type:
            kind = f"other ({one_line(step.raw_type, 30)})"
        rows.append(
            TimelineRow(
                step=step.index,
                time=f"{step.time:%H:%M:%S}" if step.time is not None else "-",
                actor=step.actor,
                kind=kind,
                tool=one_line(step.tool or "", 24) or "-",
                detail=_detail(step, detail) or "-",
            )
        )
    return rows
