"""An OpenHands trajectory's steps as they are read: each written to its trace.jsonl line at
once, and of each only what later steps and the shell log need kept (`StepTable`), so that
the memory of an import grows with the trace's bytes, never with a Python object per event.

The lines go into one growing buffer: each `orjson.dumps` result holds a buffer of at least
4 kB whatever its length, so a list of a line per step took 4 kB a step (200 MB for 50,000).

`openhands._Reader` builds each step as the JSON fields of its TraceStep and appends it here;
`trajectory_steps`, which gives the validated steps, keeps every step's fields as well.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

from agentledger.records import ShellCounts
from agentledger.records.trace import TraceStep, shell_counts, shell_event_of

__all__ = ["StepTable"]

# TraceStep's fields after `gate`, in its order: a gate is written before the first of them.
_FIELDS = list(TraceStep.model_fields)
_AFTER_GATE = frozenset(_FIELDS[_FIELDS.index("gate") + 1 :])
_ANSWERS = frozenset(("command_output", "error"))  # the kinds that answer a command
# What the shell log reads of a command step (`records.trace.shell_event_of`).
_COMMAND_FIELDS = ("index", "kind", "time", "command", "command_class", "cwd", "exit_code")
# A shell event's fields after a gate's decision, reason and who decided, in its order.
_AFTER_DECISION = frozenset(
    {
        *("exit_code", "stdout", "stdout_sha256", "stdout_bytes", "stderr", "stderr_sha256"),
        *("stderr_bytes", "truncated", "policy", "trace_step", "local_time"),
    }
)
_GATE_FIELDS = ("decision", "decided_by", "reason")
_NO_GATE: dict[str, Any] = {}
_DUMP_OPTIONS = orjson.OPT_UTC_Z  # as records.trace.trace_bytes_of_values writes a step
_LINE_OPTIONS = _DUMP_OPTIONS | orjson.OPT_APPEND_NEWLINE
_dumps = orjson.dumps


def _with_decision(event: Mapping[str, Any], gate: Mapping[str, Any]) -> dict[str, Any]:
    """A shell event's fields with `gate`'s decision in its place (ShellEvent's order)."""
    marked: dict[str, Any] = {}
    for name, value in event.items():
        if name in _AFTER_DECISION and "decision" not in marked:
            marked.update((field, gate[field]) for field in _GATE_FIELDS if field in gate)
        marked[name] = value
    return marked


def with_gate(step: Mapping[str, Any], gate: dict[str, Any]) -> dict[str, Any]:
    """`step`'s fields with `gate` in its place among them (TraceStep's order)."""
    marked: dict[str, Any] = {}
    for name, value in step.items():
        if name in _AFTER_GATE and "gate" not in marked:
            marked["gate"] = gate
        marked[name] = value
    marked.setdefault("gate", gate)
    return marked


class StepTable:
    """The steps of one trajectory, in order: their trace.jsonl lines, the shell log's line of
    each command (written when its first answer comes, or at the end), and a small table of
    what is read again (a command step's command and gate, the steps' times, tokens and
    errors). With `keep`, every step's fields too (`kept`)."""

    def __init__(self, keep: bool = False) -> None:
        self.written = bytearray()  # every step's line and its line break, in order
        self.ends = array("q", [0])  # where each step's line starts, and where the last ends
        self.rewritten: dict[int, bytes] = {}  # lines written again (a gate), by step index
        self.commands: dict[int, dict[str, Any]] = {}  # by index: what the shell log reads
        self.said: dict[int, str] = {}  # the command named by a step of another kind (output)
        self.shell = bytearray()  # the shell log's lines, in the order the commands' answers came
        self.shell_lines: dict[int, tuple[int, int]] = {}  # by command: where its line lies
        self.shell_rewritten: dict[int, bytes] = {}  # shell lines written again (a gate)
        self.times: list[datetime] = []
        self.tokens_in = 0
        self.tokens_out = 0
        self.errors = 0
        self.unwritable: int | None = None  # the first step JSON cannot hold
        self.kept: list[dict[str, Any]] | None = [] if keep else None

    def __len__(self) -> int:
        return len(self.ends) - 1

    def append(self, step: dict[str, Any]) -> None:
        """Write `step` (its fields, `index` the next one) and keep what is read again."""
        written = self.written
        try:
            written += _dumps(step, option=_LINE_OPTIONS)
        except orjson.JSONEncodeError:
            if self.unwritable is None:
                self.unwritable = step["index"]
        self.ends.append(len(written))
        if self.kept is not None:
            self.kept.append(step)
        kind = step["kind"]
        if "time" in step:
            self.times.append(step["time"])
        if kind == "command":
            self.commands[step["index"]] = {k: step[k] for k in _COMMAND_FIELDS if k in step}
        elif kind in _ANSWERS:
            if kind == "error":
                self.errors += 1
            cause = step.get("cause")
            if cause in self.commands and cause not in self.shell_lines:
                self._shell_line(cause, step)
            if "command" in step:
                self.said[step["index"]] = step["command"]
        if "tokens_in" in step:
            self.tokens_in += step["tokens_in"]
        if "tokens_out" in step:
            self.tokens_out += step["tokens_out"]

    def _shell_line(self, index: int, answer: Mapping[str, Any] | None) -> None:
        """Write the shell log's line of the command step `index`, answered by `answer`."""
        start = len(self.shell)
        try:
            self.shell += _dumps(shell_event_of(self.commands[index], answer), option=_LINE_OPTIONS)
        except orjson.JSONEncodeError:  # its text is a step's: that step is unwritable too
            return
        self.shell_lines[index] = (start, len(self.shell))

    def command_of(self, index: int) -> str | None:
        """The command step `index` runs, or the one it says it answers (a command's output)."""
        command = self.commands.get(index)
        return self.said.get(index) if command is None else command["command"]

    def mark(self, index: int, gate: dict[str, Any]) -> None:
        """Give the command step `index` the gate `gate`, unless it has one (or is no command):
        its line is written again, the gate in its place."""
        command = self.commands.get(index)
        if command is None or "gate" in command:
            return
        command["gate"] = gate
        if index in self.shell_lines:
            start, end = self.shell_lines[index]
            line = self.shell_rewritten.get(index) or self.shell[start:end]
            marked_event = _with_decision(orjson.loads(line), gate)
            self.shell_rewritten[index] = _dumps(marked_event, option=_LINE_OPTIONS)
        start, end = self.ends[index], self.ends[index + 1]
        if end > start:
            line = self.rewritten.get(index) or self.written[start:end]
            marked = with_gate(orjson.loads(line), gate)
            self.rewritten[index] = orjson.dumps(marked, option=_DUMP_OPTIONS) + b"\n"
        if self.kept is not None:
            self.kept[index] = with_gate(self.kept[index], gate)

    def jsonl(self) -> bytes:
        """trace.jsonl: every step's line (none may be unwritable). Once: the lines written
        are let go."""
        written = memoryview(self.written)
        pieces: list[Any] = []
        at = 0
        for index in sorted(self.rewritten):
            pieces += (written[at : self.ends[index]], self.rewritten[index])
            at = self.ends[index + 1]
        pieces.append(written[at:])
        try:
            return b"".join(pieces)
        finally:
            del pieces, written
            self.written = bytearray()

    def shell_log(self) -> tuple[bytes, ShellCounts]:
        """shell_audit.jsonl and its counts: `records.trace.shell_log_of_values` of the steps,
        from the lines written as the commands were answered (the others' written now), in
        the commands' order. Once: the lines written are let go."""
        for index in self.commands:
            if index not in self.shell_lines:
                self._shell_line(index, None)
        shell = memoryview(self.shell)
        pieces = [
            self.shell_rewritten.get(index) or shell[slice(*self.shell_lines[index])]
            for index in self.commands
            if index in self.shell_lines
        ]
        decisions = [
            command.get("gate", _NO_GATE).get("decision") for command in self.commands.values()
        ]
        try:
            return b"".join(pieces), shell_counts(decisions)
        finally:
            del pieces, shell
            self.shell = bytearray()
