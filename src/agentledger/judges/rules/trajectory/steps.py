"""A run's trace as the trajectory rules read it: each agent action with its effect.

Every step the agent took that acts (a command, code, a file read or write, a page, a tool
call) becomes an `Action`: whether it ran (a step the gated shell denied did not), what it did
(`read`, `change`, `destructive`, `unknown`, or `none`), the resources it touched, and the
observation that answered it. Commands are read by the shell package (the gated shell's
parser and classifier, wrappers such as sudo and ssh looked through); code is read with
Python's own parser, the shell commands and SQL it runs classified like any other; a file
write is a change; a browse step is a change only when it saves or deletes something.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field

from agentledger.judges.rules.commands import Cmd, CommandPattern, parse_line
from agentledger.judges.rules.lists import setting_replaced
from agentledger.judges.rules.ops_knowledge import ListSetting, OpsKnowledge
from agentledger.judges.rules.owners import targets_of
from agentledger.judges.rules.trajectory.knowledge import (
    CodeCalls,
    Instrument,
    Replacement,
    TrajectoryKnowledge,
)
from agentledger.records.scores import Evidence
from agentledger.records.trace import TRACE, TraceStep
from agentledger.shell.classifier import classify
from agentledger.shell.sql import classify_sql

__all__ = ["EFFECT_RANK", "Action", "StepReader", "Trajectory", "describe", "evidence_of"]

_ACTING = frozenset({"command", "code", "file_read", "file_write", "browse", "tool_call"})
_ANSWERS = frozenset({"command_output", "tool_result", "error"})
_PATH_KEYS = ("path", "file_path", "filename", "file", "target_file")
_SCRATCH = ("/tmp/", "/var/tmp/", "/dev/null")  # noqa: S108 (paths a command writes, not ours)
EFFECT_RANK = {"none": 0, "read": 1, "unknown": 2, "change": 3, "destructive": 4}
_QUOTE = 160
_NOISE = frozenset(
    {
        "thought",
        "impl_source",
        "confirmation_state",
        "security_risk",
        "is_input",
        "blocking",
        "hidden",
        "include_extra",
        "kernel_init_code",
    }
)


def _short(text: str, limit: int = _QUOTE) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def evidence_of(step: TraceStep, quote: str | None = None) -> Evidence:
    """Evidence pointing at trace step `step`: its index, a quote, and its place in the source."""
    source = None
    if step.source is not None:
        where = (
            f"line {step.source.line}"
            if step.source.line is not None
            else (f"event {step.source.event}" if step.source.event is not None else "")
        )
        source = f"{step.source.file} {where}".strip()
    text = quote if quote is not None else describe(step)
    return Evidence(
        quote=_short(text), file=TRACE, line=step.index + 1, step=step.index, source=source
    )


def describe(step: TraceStep) -> str:
    """The step in a few words: its command, path, URL, code or text."""
    if step.command:
        return step.command
    arguments = step.arguments or {}
    for key in (*_PATH_KEYS, "url", "code"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{step.kind} {value}" if key in _PATH_KEYS or key == "url" else value
    if step.content is not None:
        return step.content.text
    return f"{step.kind} {step.tool or ''}".strip()


@dataclass
class Action:
    """One acting step of the agent, read."""

    step: TraceStep
    ran: bool
    """False when the gated shell denied it or the agent's runtime did not run it."""
    effect: str
    """none, read, unknown, change or destructive."""
    why: str
    """What makes it so, in words."""
    text: str
    """What patterns are matched against: the command line, the path, the URL, the code."""
    cmds: list[Cmd] = field(default_factory=list)
    """The simple commands it runs (a command's, or those its code runs)."""
    targets: list[tuple[str, str]] = field(default_factory=list)
    """The resources it changes: (kind, name), such as ("file", "/etc/resolv.conf")."""
    creates: bool = False
    """A file written from scratch (OpenHands' `create`): nothing of it was there to read."""
    result: TraceStep | None = None
    """The observation that answered it."""

    index: int = field(init=False)
    denied: bool = field(init=False)
    changes: bool = field(init=False)
    """It ran and changed something (a destructive step changes too)."""
    looks: bool = field(init=False)
    """It ran and only looked."""
    _signature: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        # Plain attributes, not properties: the rules read them for every pair of steps.
        self.index = self.step.index
        # Denied by the gate; a command the agent's runtime did not run did not run either,
        # but no gate refused it.
        self.denied = self.step.gate is not None and self.step.gate.decision == "denied"
        self.changes = self.ran and self.effect in ("change", "destructive")
        self.looks = self.ran and self.effect == "read"

    def signature(self) -> str:
        if self._signature is None:
            self._signature = self._signed()
        return self._signature

    def _signed(self) -> str:
        """What makes two calls the same call (T7): the command, or the tool and its arguments
        (without the agent's thought and the framework's bookkeeping)."""
        if self.step.command is not None:
            return "cmd:" + self.step.command.strip()
        arguments = self.step.arguments or {}
        if all(isinstance(value, str | None) for value in arguments.values()):
            body = "\x00".join(
                f"{key}={value}" for key, value in sorted(arguments.items()) if key not in _NOISE
            )
        else:
            kept = {key: value for key, value in arguments.items() if key not in _NOISE}
            body = json.dumps(kept, sort_keys=True, default=str)
        return f"{self.step.kind}:{self.step.tool}:{body}"

    def result_digest(self) -> str | None:
        """The sha256 of the observation, or None when nothing answered it."""
        if self.result is None or self.result.content is None:
            return None if self.result is None else "empty"
        return self.result.content.sha256


def _path(step: TraceStep) -> str | None:
    arguments = step.arguments or {}
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _scratch(path: str) -> bool:
    return path.startswith(_SCRATCH)


def _changes(cmd: Cmd) -> bool:
    """The command changes something beyond scratch files (`iptables -S > /tmp/x` does not)."""
    if cmd.kind in ("mutating", "destructive"):
        return cmd.is_change
    return any(not _scratch(target) for target in cmd.writes)


def _command_effect(kind: str, cmds: list[Cmd]) -> str:
    """A command line's effect from its class and its simple commands."""
    if not cmds:
        return {"destructive": "destructive", "mutating": "change", "read-only": "read"}.get(
            kind, "unknown"
        )
    if any(cmd.kind == "destructive" for cmd in cmds):
        return "destructive"
    if any(_changes(cmd) for cmd in cmds):
        return "change"
    if all(cmd.kind == "read-only" or cmd.is_write for cmd in cmds):
        return "read"
    return "unknown"


def _targets(cmds: list[Cmd]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for cmd in cmds:
        # A resource group holds the resource; naming it names no resource of its own.
        groups = {*cmd.values("-g"), *cmd.values("--resource-group")}
        for target in targets_of(cmd):
            if target.kind == "file" and _scratch(target.name):
                continue
            if target.detail == "jump" or (target.kind == "cloud" and target.name in groups):
                continue
            found.append((target.kind, target.name))
    return list(dict.fromkeys(found))


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else f".{node.attr}"
    return ""


def _named(name: str, entries: list[str]) -> str | None:
    for entry in entries:
        if entry.startswith("."):
            if name.endswith(entry) or name == entry[1:]:
                return entry
        elif name == entry or name.endswith("." + entry):
            return entry
    return None


def _literal_command(node: ast.Call) -> str | None:
    if not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    if isinstance(first, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "X"
            for part in first.values
        )
    if isinstance(first, ast.List | ast.Tuple):
        words = []
        for item in first.elts:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                words.append(item.value)
            elif isinstance(item, ast.JoinedStr):
                words.append("X")
            else:
                return None
        # ['ssh', 'host', 'cmd args'] runs `cmd args` on host: the last word is a command line
        if len(words) >= 3 and words[0] == "ssh":
            return (
                "ssh "
                + " ".join(shlex.quote(word) for word in words[1:-1])
                + " "
                + shlex.quote(words[-1])
            )
        return shlex.join(words)
    return None


@dataclass
class _CodeReading:
    effect: str = "none"
    why: str = "code that neither changes nor removes anything the rules know"
    cmds: list[Cmd] = field(default_factory=list)

    def worse(self, effect: str, why: str) -> None:
        if EFFECT_RANK[effect] > EFFECT_RANK[self.effect]:
            self.effect, self.why = effect, why


def _read_code(code: str, calls: CodeCalls, ops: OpsKnowledge) -> _CodeReading:
    reading = _CodeReading()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        reading.effect, reading.why = "unknown", "code that does not parse as Python"
        return reading
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if not name:
            continue
        if _named(name, calls.destructive):
            reading.worse("destructive", f"the code calls {name}()")
        elif _named(name, calls.shell):
            line = _literal_command(node)
            if line is None:
                reading.worse("unknown", f"the code runs a command it builds at run time ({name})")
                continue
            kind = classify(line, ops.shell).kind
            cmds = parse_line(line, ops)
            reading.cmds += cmds
            effect = _command_effect(kind, cmds)
            reading.worse(effect, f"the code runs `{_short(line, 80)}` ({kind})")
        elif _named(name, calls.sql):
            line = _literal_command(node)
            if line is None:
                continue
            kind, why = classify_sql(line, ops.shell.sql)
            effect = {"destructive": "destructive", "mutating": "change", "read-only": "read"}.get(
                kind, "unknown"
            )
            reading.worse(effect, f"the code runs SQL `{_short(line, 80)}` ({why})")
        elif name == "open" and _opens_for_writing(node):
            reading.worse("change", "the code opens a file for writing")
        elif _named(name, calls.mutating):
            reading.worse("change", f"the code calls {name}()")
    return reading


def _opens_for_writing(node: ast.Call) -> bool:
    mode = node.args[1] if len(node.args) > 1 else None
    for keyword in node.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    return (
        isinstance(mode, ast.Constant)
        and isinstance(mode.value, str)
        and any(letter in mode.value for letter in "wax+")
    )


_CACHE_LIMIT = 50_000
"""Readings kept per reader; commands recur across runs, so most are read once."""


class StepReader:
    """Reads steps' texts (commands, code) and knows the instruments, once per judge.

    Readings are cached by text: the same command in a thousand runs is parsed once.
    """

    def __init__(self, ops: OpsKnowledge, knowledge: TrajectoryKnowledge) -> None:
        self.ops = ops
        self.knowledge = knowledge
        self._commands: dict[
            tuple[str, str | None], tuple[list[Cmd], str, str, list[tuple[str, str]]]
        ] = {}
        self._settings: dict[str, list[tuple[Cmd, ListSetting]]] = {}
        self._code: dict[str, tuple[_CodeReading, list[tuple[str, str]]]] = {}
        self._instruments: dict[tuple[str, str], tuple[Instrument, ...]] = {}
        self.instrument_patterns: list[
            tuple[Instrument, list[CommandPattern], re.Pattern[str] | None]
        ] = [
            (
                instrument,
                [CommandPattern(text, ops) for text in instrument.commands],
                re.compile("|".join(f"(?:{t})" for t in instrument.text), re.IGNORECASE)
                if instrument.text
                else None,
            )
            for instrument in knowledge.instruments
        ]
        self.replacements: list[tuple[Replacement, CommandPattern, list[CommandPattern]]] = [
            (
                replacement,
                CommandPattern(replacement.command, ops),
                [CommandPattern(text, ops) for text in replacement.reads],
            )
            for replacement in knowledge.replacements
        ]

    def command(
        self, text: str, command_class: str | None
    ) -> tuple[list[Cmd], str, str, list[tuple[str, str]]]:
        """A command line's simple commands, class, effect and the resources it changes."""
        key = (text, command_class)
        found = self._commands.get(key)
        if found is None:
            cmds = parse_line(text, self.ops)
            kind = command_class or classify(text, self.ops.shell).kind
            effect = _command_effect(kind, cmds)
            targets = _targets(cmds) if effect in ("change", "destructive") else []
            found = (cmds, kind, effect, targets)
            if len(self._commands) > _CACHE_LIMIT:
                self._commands.clear()
            self._commands[key] = found
        return found

    def list_settings(self, action: Action) -> list[tuple[Cmd, ListSetting]]:
        """The list-valued settings (C1's knowledge) the action's commands replace."""
        key = action.text
        found = self._settings.get(key)
        if found is None:
            found = [
                (cmd, setting)
                for cmd in action.cmds
                if (setting := setting_replaced(cmd, self.ops.list_settings)) is not None
            ]
            if len(self._settings) > _CACHE_LIMIT:
                self._settings.clear()
            self._settings[key] = found
        return found

    def code(self, text: str) -> tuple[_CodeReading, list[tuple[str, str]]]:
        """What a code step does, and the resources it changes."""
        found = self._code.get(text)
        if found is None:
            reading = _read_code(text, self.knowledge.code_calls, self.ops)
            targets = _targets(reading.cmds) if reading.effect in ("change", "destructive") else []
            found = (reading, targets)
            if len(self._code) > _CACHE_LIMIT:
                self._code.clear()
            self._code[text] = found
        return found

    def instruments_of(self, action: Action) -> tuple[Instrument, ...]:
        """The instruments a looking step used."""
        key = (action.step.kind, action.text)
        found = self._instruments.get(key)
        if found is None:
            found = tuple(
                instrument
                for instrument, patterns, text in self.instrument_patterns
                if any(pattern.matches(cmd) for pattern in patterns for cmd in action.cmds)
                or (text is not None and text.search(action.text))
            )
            if len(self._instruments) > _CACHE_LIMIT:
                self._instruments.clear()
            self._instruments[key] = found
        return found


class Trajectory:
    """The acting steps of a run's trace, read once, in order."""

    def __init__(self, steps: tuple[TraceStep, ...], reader: StepReader) -> None:
        self.steps = steps
        self.reader = reader
        self.knowledge = reader.knowledge
        answers: dict[int, TraceStep] = {}
        for step in steps:
            if step.kind in _ANSWERS and step.cause is not None:
                answers.setdefault(step.cause, step)
        self.actions: list[Action] = []
        for position, step in enumerate(steps):
            if step.actor != "agent" or step.kind not in _ACTING:
                continue
            result = answers.get(step.index)
            if result is None and position + 1 < len(steps):
                following = steps[position + 1]
                if following.kind in _ANSWERS and following.actor != "agent":
                    result = following
            self.actions.append(self._action(step, result))

    def _action(self, step: TraceStep, result: TraceStep | None) -> Action:
        ran = not step.did_not_run
        if step.kind == "command" and step.command is not None:
            cmds, kind, effect, targets = self.reader.command(step.command, step.command_class)
            return Action(
                step, ran, effect, f"a {kind} command", step.command, cmds, targets, result=result
            )
        if step.kind == "file_write":
            path = _path(step) or "?"
            creates = (step.arguments or {}).get("command") == "create"
            if _scratch(path):
                return Action(step, ran, "none", "a scratch file", path, result=result)
            return Action(
                step,
                ran,
                "change",
                f"writes {path}",
                path,
                [],
                [("file", path)],
                creates=creates,
                result=result,
            )
        if step.kind == "file_read":
            path = _path(step) or ""
            return Action(step, ran, "read", f"reads {path}", path, result=result)
        if step.kind == "code":
            code = (step.arguments or {}).get("code")
            if not isinstance(code, str):
                code = step.content.text if step.content is not None else ""
            reading, targets = self.reader.code(code)
            return Action(
                step, ran, reading.effect, reading.why, code, reading.cmds, targets, result=result
            )
        if step.kind == "browse":
            arguments = step.arguments or {}
            text = " ".join(
                str(arguments[key]) for key in ("url", "browser_actions") if arguments.get(key)
            )
            if self.knowledge.browse_change_re.search(text):
                return Action(
                    step, ran, "change", "a page action that saves or deletes", text, result=result
                )
            return Action(step, ran, "read", "a page read", text, result=result)
        return Action(
            step, ran, "none", f"a {step.tool or 'tool'} call", describe(step), result=result
        )

    def conclusion(self, has_report: bool) -> TraceStep | None:
        """The step where the run concluded: its finish, else (a run with a report) its last
        agent message; None when it never concluded."""
        for step in self.steps:
            if step.kind == "finish":
                return step
        if has_report:
            for step in reversed(self.steps):
                if step.actor == "agent" and step.kind == "message":
                    return step
        return None

    def diagnosis(self) -> TraceStep | None:
        """The first agent step whose text states a diagnosis (diagnosis cues)."""
        cue = self.knowledge.diagnosis_re
        for step in self.steps:
            if step.actor != "agent" or step.content is None:
                continue
            stating = step.kind in ("message", "reasoning", "finish") or step.kind in _ACTING
            if stating and cue.search(step.content.text):
                return step
        return None
