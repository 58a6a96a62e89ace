"""Trajectory match: what an agent did, step by step, against a reference trajectory.

A reference is a list of steps, each a pattern over one action of the agent (a tool call, a
shell command, a file write, ...): the tool's name, the command's program, a glob over the
command line, the command's class (read-only, mutating, destructive, unknown) or the step's
kind. The agent's actions come from its trace (`actions_from_trace`), its shell log
(`actions_from_events`) or a list in a fixture's output (`actions_from_output`).

Four modes say what "matches" means, each pairing one action with one reference step:

- ``strict``: the same number of actions as reference steps, each matching the step at its
  place;
- ``unordered``: the same, in any order;
- ``subset``: every action matches a reference step (the agent did nothing beyond it);
- ``superset``: every reference step is matched by an action (the agent did at least it).

Beside the mode, precision and recall are given both in order (the longest common
subsequence of actions and reference steps) and in any order (a maximum matching), so a
partial match is measured, not only failed. `min_precision` / `min_recall` set floors on them.

The fixture property `trajectory_match`, the gate predicate `trajectory_match` and criteria
packs all call `match_trajectory`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentledger.records import Record, ShellEvent
from agentledger.records.specfiles import load_yaml_record
from agentledger.records.trace import TraceStep

__all__ = [
    "ACTION_KINDS",
    "MODES",
    "Action",
    "PrecisionRecall",
    "ReferenceStep",
    "TrajectoryMatch",
    "TrajectoryReference",
    "TrajectoryReferences",
    "TrajectorySpec",
    "actions_from_events",
    "actions_from_output",
    "actions_from_trace",
    "load_references",
    "match_trajectory",
]

Mode = Literal["strict", "unordered", "subset", "superset"]
MODES: tuple[str, ...] = Mode.__args__  # type: ignore[attr-defined]
CommandClass = Literal["read-only", "mutating", "destructive", "unknown"]
ACTION_KINDS = frozenset({"tool_call", "command", "file_read", "file_write", "browse", "code"})
"""Trace step kinds that are actions of the agent (messages, thoughts and results are not)."""
_DURATION = re.compile(r"\d+(\.\d+)?[smhd]?")
_WRAPPERS = frozenset({"sudo", "env", "nice", "nohup", "timeout", "time", "command", "exec"})


class ReferenceStep(BaseModel):
    """One step of a reference trajectory: every field given must hold for an action to match.

    Written as a string it is a name, matching the tool or the command's program (globs allowed:
    ``kubectl``, ``iptables*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = Field(
        default=None, min_length=1, description="Glob over the tool's name or the program."
    )
    tool: str | None = Field(default=None, min_length=1, description="Glob over the tool name.")
    program: str | None = Field(
        default=None, min_length=1, description="Glob over the command's program (first word)."
    )
    command: str | None = Field(
        default=None, min_length=1, description="Glob over the whole command line."
    )
    command_class: CommandClass | None = Field(
        default=None,
        alias="class",
        description="The command's class: read-only, mutating, destructive or unknown.",
    )
    kind: str | None = Field(
        default=None, min_length=1, description="The trace step's kind (command, file_write...)."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"name": data}
        return data

    @model_validator(mode="after")
    def _something(self) -> ReferenceStep:
        if not any(
            (self.name, self.tool, self.program, self.command, self.command_class, self.kind)
        ):
            raise ValueError(
                "a reference step needs at least one of name, tool, program, command, class, kind"
            )
        if self.kind is not None and self.kind not in ACTION_KINDS:
            kinds = ", ".join(sorted(ACTION_KINDS))
            raise ValueError(f"kind {self.kind!r} is not an action; choose from {kinds}")
        return self

    def text(self) -> str:
        """The step in words, as reasons show it."""
        fields = [
            ("name", self.name),
            ("tool", self.tool),
            ("program", self.program),
            ("command", self.command),
            ("class", self.command_class),
            ("kind", self.kind),
        ]
        shown = [f"{key} {value!r}" for key, value in fields if value is not None]
        return ", ".join(shown)

    def matches(self, action: Action) -> bool:
        """True when `action` fits every field this step gives."""
        if self.name is not None and not (
            _glob(self.name, action.tool) or _glob(self.name, action.program)
        ):
            return False
        if self.tool is not None and not _glob(self.tool, action.tool):
            return False
        if self.program is not None and not _glob(self.program, action.program):
            return False
        if self.command is not None and not _glob(self.command, action.command):
            return False
        if self.command_class is not None and action.resolved_class != self.command_class:
            return False
        return self.kind is None or action.kind == self.kind


def _glob(pattern: str, value: str | None) -> bool:
    return value is not None and fnmatchcase(value.strip(), pattern)


class TrajectoryReference(BaseModel):
    """A reference trajectory and how an agent's actions must match it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Mode = Field(
        default="strict", description="strict, unordered, subset or superset (see the module)."
    )
    steps: list[ReferenceStep] = Field(min_length=1, description="The reference steps, in order.")
    order: Literal["in-order", "any-order"] = Field(
        default="in-order",
        description="Which precision and recall the floors apply to.",
    )
    min_precision: float | None = Field(
        default=None, ge=0, le=1, description="Floor on precision (matched / actions)."
    )
    min_recall: float | None = Field(
        default=None, ge=0, le=1, description="Floor on recall (matched / reference steps)."
    )
    include_denied: bool = Field(
        default=False,
        description="Count commands the gate denied as actions (by default only what ran).",
    )

    def text(self) -> str:
        """One line: the mode and the steps."""
        steps = "; ".join(step.text() for step in self.steps)
        return f"{self.mode} [{steps}]"


class TrajectorySpec(TrajectoryReference):
    """A reference trajectory for every run, or `by_scenario`: one per scenario id (what gate
    predicates and criteria write)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[ReferenceStep] = Field(
        default_factory=list, description="The reference steps, in order (without by_scenario)."
    )
    by_scenario: dict[str, TrajectoryReference] | None = Field(
        default=None, min_length=1, description="A reference per scenario id."
    )

    @model_validator(mode="after")
    def _one_source(self) -> TrajectorySpec:
        if self.by_scenario is None and not self.steps:
            raise ValueError("give the reference's steps, or by_scenario: {SCENARIO: {...}}")
        if self.by_scenario is not None and self.steps:
            raise ValueError("give steps or by_scenario, not both")
        return self

    def reference_for(self, scenario: str) -> TrajectoryReference | None:
        """The reference a run of `scenario` is matched against (None: no reference for it)."""
        if self.by_scenario is None:
            return TrajectoryReference.model_validate(
                self.model_dump(exclude={"by_scenario"}, by_alias=True)
            )
        return self.by_scenario.get(scenario)

    def text(self) -> str:
        """One line: the reference, or each scenario's."""
        if self.by_scenario is None:
            reference = self.reference_for("")
            assert reference is not None
            return reference.text()
        shown = "; ".join(
            f"{scenario}: {reference.text()}"
            for scenario, reference in sorted(self.by_scenario.items())
        )
        return f"by scenario {{{shown}}}"


class TrajectoryReferences(Record):
    """A file of reference trajectories, one per scenario (``references: {SCENARIO: ...}``)."""

    references: dict[str, TrajectoryReference] = Field(
        min_length=1, description="The reference trajectory of each scenario, by scenario id."
    )


def load_references(path: str | Path) -> TrajectoryReferences:
    """A references file; a RecordError naming the file, the field and the line otherwise."""
    return load_yaml_record(TrajectoryReferences, Path(path), what="trajectory references")


@dataclass(frozen=True)
class Action:
    """One action of the agent, as the reference is matched against."""

    kind: str
    tool: str | None = None
    command: str | None = None
    command_class: str | None = None
    denied: bool = False
    step: int | None = None
    """The trace step it is (from 0), when it comes from a trace."""
    line: int | None = None
    """Its line in shell_audit.jsonl, when it comes from the shell log."""

    @cached_property
    def resolved_class(self) -> str | None:
        """The command's class as recorded, else as the gated shell's classifier reads it."""
        if self.command_class and self.command_class.strip():
            return self.command_class.strip().lower()
        if self.command is None or not self.command.strip():
            return None
        from agentledger.shell.classifier import classify

        return classify(self.command).kind

    @property
    def program(self) -> str | None:
        """The command's program: its first word after environment settings and wrappers."""
        return program_of(self.command)

    def text(self) -> str:
        """The action in words (its command, else its tool and kind)."""
        where = f"step {self.step}" if self.step is not None else None
        if where is None and self.line is not None:
            where = f"line {self.line}"
        what = f"$ {self.command}" if self.command else f"{self.tool or '-'} ({self.kind})"
        return f"{where}: {what}" if where else what


def program_of(command: str | None) -> str | None:
    """The program a command line runs (``sudo -n iptables -L`` -> ``iptables``), or None."""
    if not command or not command.strip():
        return None
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError:
        words = command.split()
    for position, word in enumerate(words):
        if "=" in word.split("/")[0] and not word.startswith("="):
            continue
        after_wrapper = position > 0 and words[position - 1].rsplit("/", 1)[-1] in _WRAPPERS
        if after_wrapper and (word.startswith("-") or _DURATION.fullmatch(word)):
            continue
        base = word.rsplit("/", 1)[-1]
        if base in _WRAPPERS:
            continue
        return base or None
    return None


def actions_from_trace(steps: Sequence[TraceStep], *, include_denied: bool = False) -> list[Action]:
    """The agent's actions in a trace, in order (denied commands left out unless asked)."""
    actions: list[Action] = []
    for step in steps:
        if step.actor != "agent" or step.kind not in ACTION_KINDS:
            continue
        denied = step.did_not_run  # denied by the gate, or not run by the agent's runtime
        if denied and not include_denied:
            continue
        line = step.source.line if step.source and step.source.file == "shell_audit.jsonl" else None
        actions.append(
            Action(
                kind=step.kind,
                tool=step.tool,
                command=step.command,
                command_class=step.command_class,
                denied=denied,
                step=step.index,
                line=line,
            )
        )
    return actions


def actions_from_events(
    events: Sequence[ShellEvent], *, include_denied: bool = False
) -> list[Action]:
    """The commands of a shell log as actions (line n of shell_audit.jsonl is event n-1)."""
    return [
        Action(
            kind="command",
            tool="shell",
            command=event.command,
            command_class=event.classification,
            denied=event.denied,
            step=_trace_step(event),
            line=number,
        )
        for number, event in enumerate(events, start=1)
        if include_denied or not event.denied
    ]


def _trace_step(event: ShellEvent) -> int | None:
    step = (event.model_extra or {}).get("trace_step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def actions_from_output(value: object) -> list[Action] | str:
    """A fixture output's list of tool calls as actions, or why it is not one.

    Each item is a tool name, or an object with ``tool`` (or ``name``), and optionally
    ``command`` and ``class``."""
    if not isinstance(value, list):
        return f"expected a list of tool calls, found {_type_name(value)}"
    actions: list[Action] = []
    for position, item in enumerate(value):
        if isinstance(item, str):
            actions.append(Action(kind="tool_call", tool=item, step=position))
            continue
        if not isinstance(item, Mapping):
            return f"item {position} is {_type_name(item)}, expected a tool name or an object"
        tool = item.get("tool", item.get("name"))
        command = item.get("command")
        klass = item.get("class")
        if not all(isinstance(part, str | None) for part in (tool, command, klass)):
            return f"item {position}: tool, name, command and class must be text"
        if tool is None and command is None:
            return f"item {position} names no tool and no command"
        kind = "command" if command is not None else "tool_call"
        actions.append(
            Action(kind=kind, tool=tool, command=command, command_class=klass, step=position)
        )
    return actions


def _type_name(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")


@dataclass(frozen=True)
class PrecisionRecall:
    """How many actions and reference steps were paired, and the two shares that follow."""

    matched: int
    actions: int
    reference: int

    @property
    def precision(self) -> float:
        """Matched / actions (1.0 when there were no actions: nothing was done wrongly)."""
        return self.matched / self.actions if self.actions else 1.0

    @property
    def recall(self) -> float:
        """Matched / reference steps."""
        return self.matched / self.reference if self.reference else 1.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with both shares."""
        return {
            "matched": self.matched,
            "actions": self.actions,
            "reference": self.reference,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
        }


@dataclass(frozen=True)
class TrajectoryMatch:
    """The outcome of matching one run's actions against a reference."""

    reference: TrajectoryReference
    mode_holds: bool
    """True when the mode holds (before the precision and recall floors)."""
    passed: bool
    """True when the mode holds and the floors are met."""
    in_order: PrecisionRecall
    any_order: PrecisionRecall
    missing: tuple[int, ...]
    """Reference steps (from 0) no action was paired with (any order)."""
    extra: tuple[Action, ...]
    """Actions paired with no reference step (any order)."""
    actions: tuple[Action, ...]
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the mode, the outcome, both precision/recall pairs, what is missing."""
        return {
            "mode": self.reference.mode,
            "mode_holds": self.mode_holds,
            "passed": self.passed,
            "in_order": self.in_order.as_dict(),
            "any_order": self.any_order.as_dict(),
            "missing": [self.reference.steps[index].text() for index in self.missing],
            "extra": [action.text() for action in self.extra],
        }


def _in_order(actions: Sequence[Action], steps: Sequence[ReferenceStep]) -> int:
    """Length of the longest common subsequence, a step and an action being equal on a match."""
    previous = [0] * (len(steps) + 1)
    for action in actions:
        current = [0]
        for position, step in enumerate(steps):
            if step.matches(action):
                current.append(previous[position] + 1)
            else:
                current.append(max(previous[position + 1], current[position]))
        previous = current
    return previous[-1]


def _any_order(actions: Sequence[Action], steps: Sequence[ReferenceStep]) -> list[int]:
    """For each reference step, the action paired with it in a maximum matching (-1: none)."""
    if not actions or not steps:
        return [-1] * len(steps)
    import numpy as np
    from scipy.sparse import csr_array  # type: ignore[import-untyped]
    from scipy.sparse.csgraph import maximum_bipartite_matching  # type: ignore[import-untyped]

    rows, cols = [], []
    for row, step in enumerate(steps):
        for col, action in enumerate(actions):
            if step.matches(action):
                rows.append(row)
                cols.append(col)
    if not rows:
        return [-1] * len(steps)
    graph = csr_array(
        (np.ones(len(rows), dtype=np.int8), (np.array(rows), np.array(cols))),
        shape=(len(steps), len(actions)),
    )
    paired = maximum_bipartite_matching(graph, perm_type="column")
    return [int(col) for col in paired]


def match_trajectory(reference: TrajectoryReference, actions: Sequence[Action]) -> TrajectoryMatch:
    """Match `actions` (in order) against `reference`: the mode, precision and recall, why."""
    steps = reference.steps
    if not reference.include_denied:
        actions = [action for action in actions if not action.denied]
    in_order = PrecisionRecall(_in_order(actions, steps), len(actions), len(steps))
    pairing = _any_order(actions, steps)
    paired_actions = {col for col in pairing if col >= 0}
    any_order = PrecisionRecall(len(paired_actions), len(actions), len(steps))
    missing = tuple(row for row, col in enumerate(pairing) if col < 0)
    extra = tuple(action for col, action in enumerate(actions) if col not in paired_actions)
    mode = reference.mode
    same_length = len(actions) == len(steps)
    if mode == "strict":
        holds = same_length and all(
            step.matches(action) for step, action in zip(steps, actions, strict=False)
        )
    elif mode == "unordered":
        holds = same_length and not missing
    elif mode == "subset":
        holds = not extra
    else:
        holds = not missing
    scores = in_order if reference.order == "in-order" else any_order
    floors = []
    if reference.min_precision is not None and scores.precision < reference.min_precision:
        floors.append(
            f"{reference.order} precision {scores.precision:.2f} is below "
            f"{reference.min_precision:.2f}"
        )
    if reference.min_recall is not None and scores.recall < reference.min_recall:
        floors.append(
            f"{reference.order} recall {scores.recall:.2f} is below {reference.min_recall:.2f}"
        )
    reason = _reason(reference, actions, holds, in_order, any_order, missing, extra)
    if floors:
        reason += "; " + "; ".join(floors)
    return TrajectoryMatch(
        reference=reference,
        mode_holds=holds,
        passed=holds and not floors,
        in_order=in_order,
        any_order=any_order,
        missing=missing,
        extra=extra,
        actions=tuple(actions),
        reason=reason,
    )


def _reason(
    reference: TrajectoryReference,
    actions: Sequence[Action],
    holds: bool,
    in_order: PrecisionRecall,
    any_order: PrecisionRecall,
    missing: tuple[int, ...],
    extra: tuple[Action, ...],
) -> str:
    mode = reference.mode
    steps = reference.steps
    head = (
        f"{mode} match {'holds' if holds else 'fails'}: {len(actions)} action(s) against "
        f"{len(steps)} reference step(s); in order {in_order.matched} paired "
        f"(precision {in_order.precision:.2f}, recall {in_order.recall:.2f}), any order "
        f"{any_order.matched} (precision {any_order.precision:.2f}, recall "
        f"{any_order.recall:.2f})"
    )
    details: list[str] = []
    if mode == "strict" and not holds:
        for position, (step, action) in enumerate(zip(steps, actions, strict=False)):
            if not step.matches(action):
                details.append(
                    f"reference step {position} ({step.text()}) does not match {action.text()}"
                )
                break
        else:
            details.append(f"{len(actions)} action(s) where {len(steps)} were expected")
    elif mode == "unordered" and not holds and not missing and not extra:
        details.append(f"{len(actions)} action(s) where {len(steps)} were expected")
    if missing and mode in ("strict", "unordered", "superset"):
        shown = ", ".join(f"{index} ({steps[index].text()})" for index in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        details.append(f"missing reference step(s) {shown}{more}")
    if extra and mode in ("strict", "unordered", "subset"):
        shown = "; ".join(action.text() for action in extra[:5])
        more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        details.append(f"action(s) outside the reference: {shown}{more}")
    return head + ("; " + "; ".join(details) if details else "")
