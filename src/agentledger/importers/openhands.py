"""OpenHands trajectories: one run per trajectory file, every event a step.

A trajectory is a JSON list of events (or an object whose ``history`` is that list). Agent
actions carry an ``action`` (``run`` a bash command, ``run_ipython``, ``read``, ``edit``,
``browse``, ``chat``, ``message``, ``think``, ``finish``, ...) and their arguments in ``args``;
observations carry an ``observation`` and ``cause``, the id of the action they answer. Which
actions and fields appear varies between versions and models, so every event becomes a step:
an action or observation this module does not know is kind ``other`` with its raw type kept.

The scenario comes from the file name (``traj_<task>.json``), sibling files of the same task
(``eval_<task>.json``, ...) are kept as attachments, the report is the finish action's final
thought, tokens and cost come from the events' metrics. Times without a zone stay so.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentledger.errors import InputError, RecordError
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.trace_runs import TraceFacts, plan_trace_run, read_trace_file
from agentledger.records import decode_json
from agentledger.records.trace import STEPS, TraceStep, step_text_fields
from agentledger.shell.classifier import classify

__all__ = ["FORMAT", "find_trajectories", "plan_trajectory", "scenario_of", "trajectory_steps"]

FORMAT = "openhands"
_PREFIX = "traj_"

_ACTIONS = {
    "run": "command",
    "run_ipython": "code",
    "read": "file_read",
    "edit": "file_write",
    "write": "file_write",
    "browse": "browse",
    "browse_interactive": "browse",
    "think": "reasoning",
    "message": "message",
    "system": "message",
    "finish": "finish",
    "chat": "tool_call",
    "delegate": "tool_call",
    "call_tool_mcp": "tool_call",
    "mcp": "tool_call",
}
_OBSERVATIONS = {"run": "command_output", "error": "error"}
_QUIET_OBSERVATIONS = {"agent_state_changed", "null", "user_rejected"}
_ACTORS = {"agent": "agent", "user": "user", "environment": "environment"}


@functools.lru_cache(maxsize=4096)
def command_class(command: str) -> str:
    """The class of a command line by agentledger.shell; 'unknown' when it cannot be read."""
    try:
        return classify(command).kind
    except (ValueError, RecursionError):
        return "unknown"


def scenario_of(path: Path) -> str:
    """The task a trajectory file answers: ``traj_<task>.json`` gives ``<task>``."""
    stem = path.stem
    return stem[len(_PREFIX) :] if stem.startswith(_PREFIX) and len(stem) > len(_PREFIX) else stem


def find_trajectories(paths: Sequence[Path]) -> list[tuple[Path, str]]:
    """Every trajectory under `paths` (files given, or ``traj_*.json`` in directories), with
    its real path, in a stable order."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_file():
            found.append((path, str(path.resolve())))
            continue
        files = sorted(p for p in path.rglob(f"{_PREFIX}*.json") if p.is_file())
        if not files:
            raise InputError(
                f"{path}: no OpenHands trajectory (traj_*.json) here or below; give the "
                "trajectory files themselves, or another --format"
            )
        found += [(file, str(file.resolve())) for file in files]
    return found


def _siblings(path: Path, task: str) -> list[Path]:
    """Other files of the same task in the trajectory's folder: ``<kind>_<task>.json``."""
    if not path.name.startswith(_PREFIX):
        return []
    suffix = f"_{task}{path.suffix}"
    return sorted(
        other
        for other in path.parent.iterdir()
        if other.name != path.name
        and other.name.endswith(suffix)
        and "_" not in other.name[: -len(suffix)]
        and other.is_file()
    )


def _events(data: Any, origin: str) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(data, list):
        return data, {}
    if isinstance(data, dict) and isinstance(data.get("history"), list):
        meta = data.get("metadata")
        return data["history"], meta if isinstance(meta, dict) else {}
    raise RecordError(
        origin,
        f"expected a JSON list of events (or an object with a 'history' list), found "
        f"{type(data).__name__}",
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value != "" else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class _Reader:
    """Turns a trajectory's events into steps, gathering the run's facts on the way."""

    def __init__(self, origin: str, attachment: str) -> None:
        self.origin = origin
        self.attachment = attachment
        self.steps: list[dict[str, Any]] = []
        self.facts = TraceFacts(importer=FORMAT, agent_name="openhands")
        self.index_of_id: dict[Any, int] = {}
        self.responses: set[str] = set()
        self.usages: set[str] = set()
        self.tokens = [0, 0]
        self.cost = 0.0
        self.costed = False

    def fail(self, position: int, problem: str, field: str | None = None) -> RecordError:
        where = f"event {position}" + (f".{field}" if field else "")
        return RecordError(self.origin, problem, field=where)

    def time(self, event: dict[str, Any], position: int) -> datetime | None:
        value = event.get("timestamp")
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(
                position, f"expected an ISO 8601 time, found {type(value).__name__}", "timestamp"
            )
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(
                position, f"{value[:40]!r} is not an ISO 8601 time", "timestamp"
            ) from None

    def metrics(self, event: dict[str, Any]) -> tuple[int | None, int | None, float | None]:
        """Tokens and cost this event states for the first time (each response counted once)."""
        tokens_in = tokens_out = None
        meta = event.get("tool_call_metadata")
        response = meta.get("model_response") if isinstance(meta, dict) else None
        if isinstance(response, dict):
            served = _text(response.get("model"))
            if served and self.facts.model_served is None:
                self.facts.model_served = served
            fingerprint = _text(response.get("system_fingerprint"))
            if fingerprint and self.facts.system_fingerprint is None:
                self.facts.system_fingerprint = fingerprint
            rid = response.get("id")
            usage = response.get("usage")
            if isinstance(rid, str) and rid not in self.responses and isinstance(usage, dict):
                self.responses.add(rid)
                tokens_in, tokens_out = (
                    _int(usage.get("prompt_tokens")),
                    _int(usage.get("completion_tokens")),
                )
        cost = None
        metrics = event.get("llm_metrics")
        if isinstance(metrics, dict):
            total = metrics.get("accumulated_cost")
            if isinstance(total, int | float) and not isinstance(total, bool) and total >= 0:
                if total > self.cost:
                    cost = total - self.cost
                    self.cost = float(total)
                self.costed = True
            for usage in metrics.get("token_usages") or []:
                if not isinstance(usage, dict):
                    continue
                named = _text(usage.get("model"))
                if named and self.facts.model is None:
                    self.facts.model = named
                rid = usage.get("response_id")
                if isinstance(rid, str) and rid not in self.usages:
                    self.usages.add(rid)
                    self.tokens[0] += _int(usage.get("prompt_tokens")) or 0
                    self.tokens[1] += _int(usage.get("completion_tokens")) or 0
        return tokens_in, tokens_out, cost

    def step(self, event: Any, position: int) -> dict[str, Any]:
        if not isinstance(event, dict):
            raise self.fail(position, f"expected an object, found {type(event).__name__}")
        action, observation = event.get("action"), event.get("observation")
        for name, value in (("action", action), ("observation", observation)):
            if value is not None and not isinstance(value, str):
                raise self.fail(position, f"expected a string, found {type(value).__name__}", name)
        args = event.get("args")
        extras = event.get("extras")
        for name, value in (("args", args), ("extras", extras)):
            if value is not None and not isinstance(value, dict):
                raise self.fail(position, f"expected an object, found {type(value).__name__}", name)
        args = args or {}
        extras = extras or {}
        source = event.get("source")
        index = len(self.steps)
        meta = event.get("tool_call_metadata")
        meta = meta if isinstance(meta, dict) else {}
        tokens_in, tokens_out, cost = self.metrics(event)
        values: dict[str, Any] = {
            "index": index,
            "time": self.time(event, position),
            "tool": _text(meta.get("function_name")),
            "call_id": _text(meta.get("tool_call_id")),
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": cost,
            "source": {
                "file": self.attachment,
                "event": None if event.get("id") is None else str(event.get("id"))[:100],
            },
        }
        if isinstance(meta.get("model_response"), dict):
            values["model"] = _text(meta["model_response"].get("model"))
        if action is not None:
            kind = _ACTIONS.get(action, "other")
            actor = _ACTORS.get(source, "environment") if isinstance(source, str) else "agent"
            values.update(
                raw_type=f"action:{action}",
                kind=kind,
                actor=actor,
                arguments=args or None,
                tool=values["tool"] or action,
            )
            text = (
                _text(args.get("content"))
                or _text(args.get("final_thought"))
                or _text(args.get("thought"))
                or _text(args.get("code"))
                or _text(event.get("message"))
            )
            if kind == "command":
                command = args.get("command")
                if not isinstance(command, str):
                    raise self.fail(position, "a run action needs a command string", "args.command")
                values["command"] = command
                values["command_class"] = command_class(command)
            self.note_action(action, args, text, actor)
        elif observation is not None:
            kind = _OBSERVATIONS.get(observation, "tool_result")
            if observation in _QUIET_OBSERVATIONS:
                kind = "other"
            values.update(
                raw_type=f"observation:{observation}",
                kind=kind,
                actor="environment"
                if source == "environment"
                else ("user" if source == "user" else "tool"),
                tool=values["tool"] or observation,
            )
            text = _text(event.get("content")) or _text(event.get("message"))
            detail = extras.get("metadata")
            if isinstance(detail, dict):
                exit_code = detail.get("exit_code")
                if isinstance(exit_code, int) and not isinstance(exit_code, bool):
                    values["exit_code"] = exit_code
                values["cwd"] = _text(detail.get("working_dir"))
            elif isinstance(extras.get("exit_code"), int):
                values["exit_code"] = extras["exit_code"]
            if kind == "command_output" and isinstance(extras.get("command"), str):
                values["command"] = extras["command"]
            cause = self.index_of_id.get(event.get("cause"))
            if cause is not None:
                values["cause"] = cause
        else:
            values.update(raw_type="event", kind="other", actor="environment")
            text = _text(event.get("message")) or _text(event.get("content"))
        values["content"] = step_text_fields(text)
        if event.get("id") is not None and not isinstance(event["id"], dict | list):
            self.index_of_id.setdefault(event["id"], index)
        return values

    def checked(self) -> list[TraceStep]:
        """The steps validated all at once; on a problem, the first bad event is named."""
        try:
            return STEPS.validate_python(self.steps)
        except ValidationError:
            pass
        for position, values in enumerate(self.steps):
            try:
                TraceStep.model_validate(values)
            except ValidationError as exc:
                raise self.fail(position, str(exc).splitlines()[-1].strip()) from None
        raise AssertionError("a list of valid steps failed validation")  # pragma: no cover

    def note_action(self, action: str, args: dict[str, Any], text: str | None, actor: str) -> None:
        facts = self.facts
        if action == "system" and facts.system_prompt is None:
            facts.system_prompt = _text(args.get("content"))
            agent = _text(args.get("agent_class"))
            if agent:
                facts.agent_name = agent
        elif action == "message" and actor == "user" and facts.prompt is None:
            facts.prompt = text
        elif action == "finish":
            outputs = args.get("outputs")
            report = _text(args.get("final_thought"))
            if report is None and isinstance(outputs, dict):
                report = _text(outputs.get("content"))
            facts.report = report or text or ""


def trajectory_steps(
    raw: bytes, origin: str, attachment: str
) -> tuple[list[TraceStep], TraceFacts]:
    """The steps of the trajectory `raw` (from `origin`), each pointing at `attachment`, and
    what it says about its run. Raises RecordError naming the file and the event index."""
    events, meta = _events(decode_json(raw, origin), origin)
    reader = _Reader(origin, attachment)
    for position, event in enumerate(events):
        reader.steps.append(reader.step(event, position))
    steps = reader.checked()
    facts = reader.facts
    model = meta.get("model_name") or (meta.get("llm_config") or {}).get("model")
    if isinstance(model, str) and model:
        facts.model = model
    if reader.usages:
        facts.tokens_in, facts.tokens_out = reader.tokens
        facts.model_calls = len(reader.usages)
    elif reader.responses:
        facts.model_calls = len(reader.responses)
        facts.tokens_in = sum(s.tokens_in or 0 for s in steps)
        facts.tokens_out = sum(s.tokens_out or 0 for s in steps)
    if reader.costed:
        facts.cost_usd = reader.cost
    errors = sum(1 for step in steps if step.kind == "error")
    if errors:
        facts.notes.append(f"{errors} error observation{'s' if errors > 1 else ''} in the trace")
    return steps, facts


def plan_trajectory(path: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of the run in the trajectory file `path`; writes nothing."""
    raw = read_trace_file(path, ctx, real)
    steps, facts = trajectory_steps(raw, str(path), f"attachments/{path.name}")
    facts.scenario, facts.scenario_from = scenario_of(path), "file name"
    return plan_trace_run(path, raw, steps, facts, ctx, attachments=_siblings(path, facts.scenario))
