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

from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentledger.errors import RecordError
from agentledger.importers.openhands_events import (
    ACTIONS,
    ACTORS,
    OBSERVATIONS,
    QUIET_OBSERVATIONS,
    action_type,
    command_class,
    count_or_none,
    events_of,
    note_action,
    observation_type,
    runtime_notices,
    state_changed,
    step_content,
    str_or_none,
    without_echo,
)
from agentledger.importers.openhands_files import (
    Doubt,
    check_event_count,
    find_trajectories,
    scenario_of,
    siblings,
    streamed_events,
)
from agentledger.importers.openhands_table import StepTable
from agentledger.importers.plan import PlannedRun
from agentledger.importers.run_plan import PlanContext
from agentledger.importers.trace_runs import (
    BuiltTrace,
    TraceFacts,
    attachment_of,
    plan_trace_run,
    read_trace_file,
)
from agentledger.records import NOT_EXECUTED, decode_json
from agentledger.records.trace import STEPS, TraceStep, exact_time, time_zone_of

__all__ = [
    "FORMAT",
    "find_trajectories",
    "plan_trajectory",
    "scenario_of",
    "trajectory_steps",
    "trajectory_trace",
]

FORMAT = "openhands"


_NO_VALUES: dict[str, Any] = {}
_NOTED = frozenset(("system", "message", "finish"))  # the actions note_action reads
_REFUSED = "is NOT executed"  # the runtime's notice: another command still runs
_REASON_CHARS = 300
_fromisoformat = datetime.fromisoformat


# isinstance with a tuple: an `int | float` union would be made anew on every event.
_NUMBERS = (int, float)
_CONTAINERS = (dict, list)


class _Reader:
    """Turns a trajectory's events into steps, gathering the run's facts on the way.

    Each step is built as the JSON fields of its TraceStep (see
    `records.trace.trace_bytes_of_values`): the event's untrusted values are checked here,
    once, and what this code computes of them has the record's types by construction, so the
    trace is written without a model per step, each step's line as soon as it is built
    (`StepTable`; with `keep`, every step's fields are kept too, for `checked`).
    """

    def __init__(self, origin: str, attachment: str, keep: bool = False) -> None:
        self.origin = origin
        self.attachment = attachment
        self.steps = StepTable(keep)
        self.facts = TraceFacts(importer=FORMAT, agent_name="openhands")
        self.index_of_id: dict[Any, int] = {}
        self.responses: set[str] = set()
        self.usages: set[str] = set()
        self.tokens = [0, 0]
        self.cost = 0.0
        self.costed = False
        self.zones: dict[Any, str] = {}
        self.exact = True  # False: a time only the record's serialiser writes right
        self.unanswered: list[int] = []  # events whose cause names no earlier event
        self.repeated_ids = 0  # events with the id of an earlier one (causes take the first)

    def fail(self, position: int, problem: str, field: str | None = None) -> RecordError:
        where = f"event {position}" + (f".{field}" if field else "")
        return RecordError(self.origin, problem, field=where)

    def _not_a(self, kind: type, value: Any, position: int, field: str) -> RecordError:
        expected = "a string" if kind is str else "an object"
        return self.fail(position, f"expected {expected}, found {type(value).__name__}", field)

    def time(self, value: Any, position: int) -> datetime:
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

    def zone(self, moment: datetime) -> str:
        """The step's time_zone (one per distinct zone of the trajectory, usually one)."""
        tzinfo = moment.tzinfo
        zone = self.zones.get(tzinfo)
        if zone is None:
            zone = self.zones[tzinfo] = time_zone_of(moment)
            if not exact_time(moment):
                self.exact = False
        return zone

    def metrics(self, response: Any, metrics: Any) -> tuple[int | None, int | None, float | None]:
        """Tokens and cost this event states for the first time (each response counted once):
        `response` is its tool_call_metadata.model_response (None when not an object)."""
        tokens_in = tokens_out = None
        if response is not None:
            get = response.get
            facts = self.facts
            if facts.model_served is None:
                facts.model_served = str_or_none(get("model"))
            if facts.system_fingerprint is None:
                fingerprint = get("system_fingerprint")
                if fingerprint is not None:
                    facts.system_fingerprint = str_or_none(fingerprint)
            rid = get("id")
            if isinstance(rid, str) and rid not in self.responses:
                usage = get("usage")
                if isinstance(usage, dict):
                    self.responses.add(rid)
                    tokens_in = count_or_none(usage.get("prompt_tokens"))
                    tokens_out = count_or_none(usage.get("completion_tokens"))
        if metrics is None:
            return tokens_in, tokens_out, None
        cost = None
        if isinstance(metrics, dict):
            total = metrics.get("accumulated_cost")
            if isinstance(total, _NUMBERS) and not isinstance(total, bool) and total >= 0:
                if total > self.cost:
                    cost = total - self.cost
                    self.cost = float(total)
                self.costed = True
            usages = metrics.get("token_usages")
            for usage in usages if isinstance(usages, list) else ():
                if not isinstance(usage, dict):
                    continue
                if self.facts.model is None:
                    self.facts.model = str_or_none(usage.get("model"))
                rid = usage.get("response_id")
                if isinstance(rid, str) and rid not in self.usages:
                    self.usages.add(rid)
                    self.tokens[0] += count_or_none(usage.get("prompt_tokens")) or 0
                    self.tokens[1] += count_or_none(usage.get("completion_tokens")) or 0
        return tokens_in, tokens_out, cost

    def step(self, event: Any, position: int) -> dict[str, Any]:
        """The JSON fields of the step of `event`, in the record's order, unset ones left out.

        The hot loop of an import (one call per event): the common shapes are tested with
        `type(...) is` and dict lookups, the rare ones fall back to the checks that name the
        field. The fields up to the tool's are written here, what an action, an observation
        or another event says by `_action`, `_observation` and `_other`, the rest here again,
        all in TraceStep's order."""
        if type(event) is not dict and not isinstance(event, dict):
            raise self.fail(position, f"expected an object, found {type(event).__name__}")
        get = event.get
        action = get("action")
        observation = get("observation")
        args = get("args")
        extras = get("extras")
        if action is not None and type(action) is not str and not isinstance(action, str):
            raise self._not_a(str, action, position, "action")
        if (
            observation is not None
            and type(observation) is not str
            and not isinstance(observation, str)
        ):
            raise self._not_a(str, observation, position, "observation")
        if not args:  # None or empty
            if args is not None and not isinstance(args, dict):
                raise self._not_a(dict, args, position, "args")
            args = _NO_VALUES
        elif type(args) is not dict and not isinstance(args, dict):
            raise self._not_a(dict, args, position, "args")
        if extras is not None and type(extras) is not dict and not isinstance(extras, dict):
            raise self._not_a(dict, extras, position, "extras")
        index = len(self.steps)
        meta = get("tool_call_metadata")
        response = None
        if type(meta) is dict:
            response = meta.get("model_response")
            if not isinstance(response, dict):
                response = None
            tool = meta.get("function_name")
            if tool is not None and (type(tool) is not str or not tool):
                tool = str_or_none(tool)
            call_id = meta.get("tool_call_id")
            if call_id is not None and (type(call_id) is not str or not call_id):
                call_id = str_or_none(call_id)
        else:
            tool = call_id = None
        metrics = get("llm_metrics")
        if response is None and metrics is None:
            tokens_in = tokens_out = cost = None
        else:
            tokens_in, tokens_out, cost = self.metrics(response, metrics)
        step: dict[str, Any] = {"schema_version": 1, "index": index}
        stamp = get("timestamp")
        if stamp is not None:
            self._time_fields(step, stamp, position)
        if action is not None:
            self._action(step, event, action, args, position, tool, call_id)
        elif observation is not None:
            self._observation(step, event, observation, extras, position, tool, call_id)
        else:
            self._other(step, event, tool, call_id)
        if response is not None:
            model = response.get("model")
            if isinstance(model, str) and model:
                step["model"] = model
        if tokens_in is not None:
            step["tokens_in"] = tokens_in
        if tokens_out is not None:
            step["tokens_out"] = tokens_out
        if cost is not None:
            step["cost_usd"] = cost
        step["source"] = self._source(get("id"), index)
        return step

    def _time_fields(self, step: dict[str, Any], stamp: Any, position: int) -> None:
        """The step's time and time_zone, from the event's timestamp."""
        if type(stamp) is not str:
            moment = self.time(stamp, position)
        else:
            try:
                moment = _fromisoformat(stamp)
            except ValueError:
                moment = self.time(stamp, position)
        step["time"] = moment
        zone = self.zones.get(moment.tzinfo)
        step["time_zone"] = zone if zone is not None else self.zone(moment)

    def _action(
        self,
        step: dict[str, Any],
        event: dict[str, Any],
        action: str,
        args: dict[str, Any],
        position: int,
        tool: str | None,
        call_id: str | None,
    ) -> None:
        """The fields of an agent's (or user's) action, from its actor to its content: a
        command is its args.command."""
        get = event.get
        kind = ACTIONS.get(action, "other")
        source = get("source")
        actor = ACTORS.get(source, "environment") if isinstance(source, str) else "agent"
        text = args.get("content")
        if type(text) is not str or not text:
            text = (
                str_or_none(text)
                or str_or_none(args.get("final_thought"))
                or str_or_none(args.get("thought"))
                or str_or_none(args.get("code"))
                or str_or_none(get("message"))
            )
        command = None
        if kind == "command":
            command = args.get("command")
            if not isinstance(command, str):
                raise self.fail(position, "a run action needs a command string", "args.command")
        if action in _NOTED:
            note_action(self.facts, action, args, text, actor)
        _said_by(step, actor, kind, action_type(action), tool or action, call_id)
        if args is not _NO_VALUES:
            step["arguments"] = args
        if command is not None:
            step["command"] = command
            step["command_class"] = command_class(command)
        if text is not None:
            step["content"] = step_content(text)

    def _observation(
        self,
        step: dict[str, Any],
        event: dict[str, Any],
        observation: str,
        extras: Any,
        position: int,
        tool: str | None,
        call_id: str | None,
    ) -> None:
        """The fields of an observation, from its actor to its cause (the step it answers):
        for a command's output its exit code, working directory and the runtime's notices."""
        get = event.get
        kind = OBSERVATIONS.get(observation, "tool_result")
        if observation in QUIET_OBSERVATIONS:
            kind = "other"
        source = get("source")
        actor = "environment" if source == "environment" else "user" if source == "user" else "tool"
        _said_by(step, actor, kind, observation_type(observation), tool or observation, call_id)
        cause = None
        caused_by = get("cause")
        if caused_by is not None:
            if not isinstance(caused_by, _CONTAINERS):
                cause = self.index_of_id.get(caused_by)
            if cause is None:
                self.unanswered.append(position)  # answers no earlier event: no link is made
        text = get("content")
        if type(text) is not str or not text:
            # A command's output is its content only: the event's message is OpenHands'
            # summary of it ("Command `rm x` executed with exit code 0."), not output.
            text = str_or_none(text)
            if text is None and kind != "command_output":
                text = str_or_none(get("message"))
        if extras:
            # The fields are written as they are read, in TraceStep's order.
            if kind == "command_output":
                command = extras.get("command")
                if isinstance(command, str):
                    step["command"] = command
            detail = extras.get("metadata")
            if type(detail) is dict:
                code = detail.get("exit_code")
                if type(code) is int or (isinstance(code, int) and not isinstance(code, bool)):
                    step["exit_code"] = code
                cwd = str_or_none(detail.get("working_dir"))
                if cwd is not None:
                    step["cwd"] = cwd
                if kind == "command_output":
                    text = self._command_output(detail, text, cause)
            elif isinstance(extras.get("exit_code"), int):
                # true and false as the record reads them
                step["exit_code"] = int(extras["exit_code"])
            if observation == "agent_state_changed":
                text = state_changed(self.facts, extras) or text
        if kind == "error" and cause is not None and text is not None:
            # OpenHands answers a command with an error when its runtime would not run it
            # ("Cannot execute multiple commands at once"): the command did not run.
            self.not_executed(cause, text)
        if text is not None:
            step["content"] = step_content(text)
        if cause is not None:
            step["cause"] = cause

    def _command_output(
        self, detail: dict[str, Any], text: str | None, cause: int | None
    ) -> str | None:
        """A command's output as the agent saw it: without the echo of its command, with the
        runtime's notices; the command marked not executed when the runtime says so."""
        if text is not None and cause is not None:
            text = without_echo(text, self.steps.command_of(cause))
        text = runtime_notices(detail, text)
        suffix = str_or_none(detail.get("suffix"))
        if cause is not None and suffix is not None and _REFUSED in suffix:
            self.not_executed(cause, suffix)
        return text

    @staticmethod
    def _other(
        step: dict[str, Any], event: dict[str, Any], tool: str | None, call_id: str | None
    ) -> None:
        """The fields of an event that is neither an action nor an observation."""
        get = event.get
        source = get("source")
        actor = ACTORS.get(source, "environment") if isinstance(source, str) else "environment"
        text = str_or_none(get("message")) or str_or_none(get("content"))
        _said_by(step, actor, "other", "event", tool, call_id)
        if text is not None:
            step["content"] = step_content(text)

    def _source(self, event_id: Any, index: int) -> dict[str, str]:
        """The step's source (the file, the event's id); the id is kept for the causes that
        name it (the first event of an id, when several have it)."""
        if event_id is None:
            return {"file": self.attachment}
        if type(event_id) is int:
            if self.index_of_id.setdefault(event_id, index) != index:
                self.repeated_ids += 1
            return {"file": self.attachment, "event": str(event_id)}
        if (
            not isinstance(event_id, _CONTAINERS)
            and self.index_of_id.setdefault(event_id, index) != index
        ):
            self.repeated_ids += 1
        return {"file": self.attachment, "event": str(event_id)[:100]}

    def not_executed(self, cause: int, why: str) -> None:
        """Mark the command step `cause` as one the runtime did not run (`NOT_EXECUTED`: no
        safety gate refused it), the runtime's words as the reason."""
        reason = " ".join(why.strip().strip("[]").split())[:_REASON_CHARS]
        gate = {"decision": NOT_EXECUTED, "decided_by": "runtime", "reason": reason}
        self.steps.mark(cause, gate)

    def checked(self) -> list[TraceStep]:
        """The steps (kept: `keep`) validated all at once; on a problem, the first bad event
        is named."""
        kept = self.steps.kept
        assert kept is not None, "the steps' fields were not kept"
        try:
            return STEPS.validate_python(kept)
        except ValidationError:
            pass
        for position, values in enumerate(kept):
            try:
                TraceStep.model_validate(values)
            except ValidationError as exc:
                raise self.fail(position, str(exc).splitlines()[-1].strip()) from None
        raise AssertionError("a list of valid steps failed validation")  # pragma: no cover

    def trace(self) -> BuiltTrace:
        """trace.jsonl and the shell log of the steps, from their fields as built (the
        validated records' serialiser only when a value needs it: then the steps must have
        been kept)."""
        table = self.steps
        if table.unwritable is not None:
            # A lone surrogate in a string, which the trajectory's JSON may escape but no
            # UTF-8 file can store.
            raise self.fail(
                table.unwritable,
                "a text holds a lone surrogate (an escape such as \\ud800 without its "
                "pair), which cannot be stored as UTF-8",
            )
        if not self.exact:
            return BuiltTrace.of_steps(self.checked())
        jsonl = table.jsonl()
        shell, counts = table.shell_log()
        return BuiltTrace(jsonl, shell, counts, table.times)


def _said_by(
    step: dict[str, Any], actor: str, kind: str, raw_type: str, tool: str | None, call_id: Any
) -> None:
    """A step's fields from its actor to its call id, in TraceStep's order."""
    step["actor"] = actor
    step["kind"] = kind
    step["raw_type"] = raw_type
    if tool is not None:
        step["tool"] = tool
    if call_id is not None:
        step["call_id"] = call_id


def _read(
    raw: bytes, origin: str, attachment: str, keep: bool = False
) -> tuple[_Reader, dict[str, Any]]:
    """The trajectory `raw` read into a `_Reader`'s steps, and its metadata.

    The events are decoded a chunk at a time (`streamed_events`), so that an import holds the
    file's bytes, its steps' lines and one chunk of events, never every event at once; a file
    the streamed reading cannot vouch for is decoded whole, strictly, which names its problem.
    A problem of an event is said only once the rest of the file is known to be JSON, as when
    it is decoded first: a JSON problem anywhere is said before it."""
    streamed = None if keep else streamed_events(raw, origin)
    if streamed is None:
        return _read_whole(raw, origin, attachment, keep)
    events, meta = streamed
    reader = _Reader(origin, attachment)
    step, append = reader.step, reader.steps.append
    try:
        for position, event in enumerate(events):
            append(step(event, position))
    except Doubt:
        return _read_whole(raw, origin, attachment, keep)
    except RecordError:
        try:
            for _event in events:
                pass
        except Doubt:
            return _read_whole(raw, origin, attachment, keep)
        raise
    return reader, meta


def _read_whole(
    raw: bytes, origin: str, attachment: str, keep: bool
) -> tuple[_Reader, dict[str, Any]]:
    """`_read` of a trajectory decoded whole (strictly: `records.decode_json`)."""
    check_event_count(raw, origin)
    events, meta = events_of(decode_json(raw, origin), origin)
    reader = _Reader(origin, attachment, keep)
    steps = reader.steps
    for position, event in enumerate(events):
        steps.append(reader.step(event, position))
        events[position] = None  # each event let go once it is a step: not both held whole
    return reader, meta


def _finish_facts(reader: _Reader, meta: dict[str, Any]) -> TraceFacts:
    """The run's facts once every step is read."""
    facts = reader.facts
    model = meta.get("model_name") or (meta.get("llm_config") or {}).get("model")
    if isinstance(model, str) and model:
        facts.model = model
    if reader.usages:
        facts.tokens_in, facts.tokens_out = reader.tokens
        facts.model_calls = len(reader.usages)
    elif reader.responses:
        facts.model_calls = len(reader.responses)
        facts.tokens_in = reader.steps.tokens_in
        facts.tokens_out = reader.steps.tokens_out
    if reader.unanswered:
        first, n = reader.unanswered[0], len(reader.unanswered)
        facts.notes.append(
            f"{n} observation{'s' if n > 1 else ''} answer{'' if n > 1 else 's'} no earlier "
            f"event (its cause is not an earlier event's id; the first: event {first}): "
            "left unlinked"
        )
    if reader.repeated_ids:
        facts.notes.append(
            f"{reader.repeated_ids} event id{'s' if reader.repeated_ids > 1 else ''} repeated: "
            "an observation's cause is taken for the first event of that id"
        )
    errors = reader.steps.errors
    if reader.costed:
        facts.cost_usd = reader.cost
    if errors:
        facts.notes.append(f"{errors} error observation{'s' if errors > 1 else ''} in the trace")
    return facts


def trajectory_steps(
    raw: bytes, origin: str, attachment: str
) -> tuple[list[TraceStep], TraceFacts]:
    """The steps of the trajectory `raw` (from `origin`), each pointing at `attachment`, and
    what it says about its run. Raises RecordError naming the file and the event index."""
    reader, meta = _read(raw, origin, attachment, keep=True)
    steps = reader.checked()
    return steps, _finish_facts(reader, meta)


def trajectory_trace(raw: bytes, origin: str, attachment: str) -> tuple[BuiltTrace, TraceFacts]:
    """What `trajectory_steps` gives, as the trace ready to store (the same bytes), made
    without a model per step. Raises RecordError naming the file and the event index."""
    reader, meta = _read(raw, origin, attachment)
    if not reader.exact and reader.steps.kept is None:
        # A time only the record's serialiser writes right (an offset with seconds): the
        # steps are read again, their fields kept, and validated.
        reader, meta = _read(raw, origin, attachment, keep=True)
    trace = reader.trace()
    return trace, _finish_facts(reader, meta)


def plan_trajectory(path: Path, ctx: PlanContext, real: str | None = None) -> PlannedRun:
    """The checked plan of the run in the trajectory file `path`; writes nothing."""
    raw = read_trace_file(path, ctx, real)
    trace, facts = trajectory_trace(raw, str(path), attachment_of(path.name))
    facts.scenario, facts.scenario_from = scenario_of(path), "file name"
    return plan_trace_run(
        path, raw, trace, facts, ctx, attachments=siblings(path, facts.scenario, ctx)
    )
