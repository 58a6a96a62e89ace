"""A run's trace as the LLM trace judge shows it: numbered steps, windowed when long.

Every step becomes one block, ``S<index> <actor> <kind> ...`` and its text, indented. The
step numbers are the trace's own indexes (line index + 1 of trace.jsonl), so a citation of a
step can be checked against the step itself: each step is also a `Document` holding its full,
unshortened block.

A long trace is windowed rather than cut blindly. The steps the criteria of a trajectory pack
need are **anchors** and are always shown whole: the task, every change, destructive or
unclassified command, file write or code, every step the gate denied, errors, the finish, and
the result of each of them (the verification after a change is read from it). The other steps
are shortened in stages until the trace fits: first their text goes (their one-line headline,
with the command line, stays); then the headlines of messages, thoughts and results go, in
runs marked ``[cut-NONCE: steps 12-40 ...]``; then the headlines of read-only commands. Only
when the anchors alone do not fit are their texts shortened too. No anchor is ever dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentledger.judges.llm.quotes import Document
from agentledger.records.trace import TraceStep

__all__ = [
    "TRACE_LIMITS",
    "RenderedTrace",
    "TraceLimits",
    "anchor_steps",
    "render_trace",
    "step_block",
]

_CHANGES = frozenset({"mutating", "destructive", "unknown"})
_ACTION_KINDS = frozenset({"tool_call", "command", "file_read", "file_write", "browse", "code"})


@dataclass(frozen=True)
class TraceLimits:
    """Characters of the trace shown to the model (see the module for how it is windowed)."""

    trace: int = 60_000
    step: int = 2_000
    """Per step's text, before the whole trace's limit."""
    headline: int = 300
    """Per step's one-line headline (its command line, tool and arguments)."""
    anchor_text: int = 400
    """Per anchor's text, when only the anchors are left and they still do not fit."""


TRACE_LIMITS = TraceLimits()


def _denied(step: TraceStep) -> bool:
    return step.gate is not None and step.gate.decision == "denied"


def _is_change(step: TraceStep) -> bool:
    if step.actor != "agent":
        return False
    if step.kind in ("file_write", "code"):
        return True
    return step.kind == "command" and (step.command_class or "unknown") in _CHANGES


def anchor_steps(steps: Sequence[TraceStep]) -> frozenset[int]:
    """The steps a trajectory criterion may need, shown whatever the trace's length."""
    anchors: set[int] = set()
    first_agent = next((s.index for s in steps if s.actor == "agent"), len(steps))
    for step in steps:
        if step.index < first_agent and step.kind == "message":
            anchors.add(step.index)  # the task
        if _is_change(step) or _denied(step) or step.kind in ("error", "finish"):
            anchors.add(step.index)
    for step in steps:
        if step.cause is not None and step.cause in anchors:
            anchors.add(step.index)  # what a change, a denial or an error answered
    return frozenset(anchors)


def _headline(step: TraceStep, limit: int) -> str:
    parts = [f"S{step.index}", step.actor, step.kind]
    if step.kind == "other" and step.raw_type:
        parts[-1] = f"other ({step.raw_type})"
    if step.tool:
        parts.append(f"tool={step.tool}")
    notes = []
    if step.command_class:
        notes.append(step.command_class)
    if step.gate is not None:
        gate = f"gate {step.gate.decision}"
        if step.gate.reason:
            gate += f": {step.gate.reason}"
        notes.append(gate)
    if step.exit_code is not None:
        notes.append(f"exit {step.exit_code}")
    if step.cause is not None:
        notes.append(f"answers S{step.cause}")
    if notes:
        parts.append("[" + "; ".join(notes) + "]")
    line = " ".join(parts)
    if step.command is not None:
        line += " $ " + step.command.replace("\n", " ")
    elif step.arguments and step.kind in _ACTION_KINDS:
        line += " " + json.dumps(step.arguments, ensure_ascii=False, sort_keys=True)
    line = line.replace("\n", " ")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def step_block(step: TraceStep, *, text_limit: int | None = None, headline: int = 10**9) -> str:
    """One step as shown: its headline, then its text indented (cut to `text_limit`)."""
    lines = [_headline(step, headline)]
    text = step.content.text if step.content is not None else ""
    if text.strip():
        shown = text.rstrip("\n")
        if text_limit is not None and len(shown) > text_limit:
            shown = shown[:text_limit] + f" … [{len(shown) - text_limit:,} more characters]"
        lines.extend("    " + line for line in shown.splitlines())
    if step.content is not None and step.content.truncated:
        lines.append(f"    [the trace keeps {len(text):,} of {step.content.bytes:,} bytes]")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RenderedTrace:
    """The trace as the model sees it, and each step's full block to check citations against."""

    text: str
    """Shown to the model: neutralised (by the caller's function), windowed when long."""
    steps: dict[int, Document]
    """Each step's full block, by step index."""
    shown_whole: frozenset[int]
    """Steps shown with their text (within the per-step limit)."""
    headline_only: frozenset[int]
    """Steps shown by their headline alone."""
    left_out: frozenset[int]
    """Steps not shown (in cut markers)."""
    anchors: frozenset[int]

    @property
    def windowed(self) -> bool:
        """True when some step is shown by its headline alone, or not at all."""
        return bool(self.headline_only or self.left_out)


def render_trace(
    steps: Sequence[TraceStep],
    clean: Callable[[str], str],
    nonce: str,
    limits: TraceLimits = TRACE_LIMITS,
) -> RenderedTrace:
    """Render `steps` for the model; `clean` neutralises each text (``clean(text) -> str``)."""
    anchors = anchor_steps(steps)
    documents = {step.index: Document.of_text(f"S{step.index}", step_block(step)) for step in steps}
    full = {
        s.index: clean(step_block(s, text_limit=limits.step, headline=limits.headline))
        for s in steps
    }
    heads = {s.index: clean(_headline(s, limits.headline)) + "\n" for s in steps}
    mode: dict[int, str] = {s.index: "whole" for s in steps}
    window = _Window(
        mode, {i: len(t) for i, t in full.items()}, {i: len(t) for i, t in heads.items()}
    )
    if window.size > limits.trace:
        for step in steps:
            if step.index not in anchors:
                window.set(step.index, "head")
    stages = [
        [s for s in steps if s.index not in anchors and s.kind not in _ACTION_KINDS],
        [s for s in steps if s.index not in anchors and s.kind in _ACTION_KINDS],
    ]
    for stage in stages:
        # drop from the middle outwards: the start and the end of an investigation say most
        for step in sorted(stage, key=lambda s: abs(s.index - len(steps) / 2)):
            if window.size <= limits.trace:
                break
            window.set(step.index, "out")
    if window.size > limits.trace:
        full.update(
            {
                index: clean(step_block(s, text_limit=limits.anchor_text, headline=limits.headline))
                for s in steps
                if (index := s.index) in anchors
            }
        )
    parts: list[str] = []
    gap: list[int] = []

    def close_gap() -> None:
        if gap:
            first, last = gap[0], gap[-1]
            span = f"step {first}" if first == last else f"steps {first}-{last}"
            parts.append(
                f"[cut-{nonce}: {span} ({len(gap)} step(s): messages, thoughts, results or "
                "read-only commands) are not shown here]\n"
            )
            gap.clear()

    for step in steps:
        shown = mode[step.index]
        if shown == "out":
            gap.append(step.index)
            continue
        close_gap()
        parts.append(full[step.index] if shown == "whole" else heads[step.index])
    close_gap()
    return RenderedTrace(
        text="".join(parts),
        steps=documents,
        shown_whole=frozenset(i for i, m in mode.items() if m == "whole"),
        headline_only=frozenset(i for i, m in mode.items() if m == "head"),
        left_out=frozenset(i for i, m in mode.items() if m == "out"),
        anchors=anchors,
    )


class _Window:
    """How each step is shown ("whole", "head" or "out") and the size that makes, kept as
    steps change, with room for a cut marker per run of steps left out."""

    MARKER = 120

    def __init__(self, mode: dict[int, str], whole: dict[int, int], head: dict[int, int]) -> None:
        self.mode = mode
        self.whole = whole
        self.head = head
        self.size = sum(whole.values())

    def _cost(self, index: int, shown: str) -> int:
        if shown == "whole":
            return self.whole[index]
        return self.head[index] if shown == "head" else 0

    def set(self, index: int, shown: str) -> None:
        before = self.mode[index]
        self.size += self._cost(index, shown) - self._cost(index, before)
        if shown == "out" and before != "out":
            neighbours = sum(self.mode.get(i) == "out" for i in (index - 1, index + 1))
            self.size += self.MARKER * (1 - neighbours)  # a new run, one longer, or two joined
        self.mode[index] = shown
