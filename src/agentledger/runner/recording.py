"""Recording a run from inside an agent written in Python: validated steps, sealed on exit.

    import agentledger

    with agentledger.record("./.agentledger", scenario="use_case_m", model="gpt-4o",
                            system_prompt=SYSTEM) as run:
        run.message("user", task)
        run.command("tc qdisc show dev eth0", output=shown, exit_code=0)
        run.command("ip -s link", execute=True)     # through the gated shell
        run.report("Root cause: ...")

Each call makes trace steps (`agentledger.records.trace.TraceStep`, the steps the importers
write), validated at once, so a bad value fails at the call that gave it. Nothing reaches the
ledger before the block ends: then trace.jsonl, the shell log derived from its command steps
(as an import derives it), the prompt, system prompt and report are sealed in one run by the
ledger's `RunWriter`. A block that raises is sealed too, ``failed`` with the exception; a
process killed inside the block leaves no run and nothing staged.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from pydantic import ValidationError

from agentledger.errors import InputError
from agentledger.identity import make_run_id, sha256_bytes
from agentledger.importers.openhands_events import command_class
from agentledger.importers.trace_runs import BuiltTrace
from agentledger.records import AgentInfo, RunMetadata, RunSummary, check_tags
from agentledger.records.trace import TRACE, GateDecision, TraceStep, step_text
from agentledger.store import Ledger
from agentledger.store.writer import PROMPT, REPORT, SHELL_AUDIT, SYSTEM_PROMPT, SealedRun

__all__ = ["CommandResult", "Recording", "record", "recorded"]

_ROLES = {
    "user": "user",
    "assistant": "agent",
    "agent": "agent",
    "tool": "tool",
    "environment": "environment",
}
_ERROR_CHARS = 2000
P = ParamSpec("P")
R = TypeVar("R")


class CommandResult:
    """What `Recording.command` recorded: the gate's decision (when it went through the gated
    shell), the exit code and the output, as stored (redacted and cut by the gate)."""

    __slots__ = ("decision", "exit_code", "output", "ran", "reason")

    def __init__(
        self,
        *,
        ran: bool,
        exit_code: int | None,
        output: str | None,
        decision: str | None = None,
        reason: str | None = None,
    ) -> None:
        self.ran = ran
        self.exit_code = exit_code
        self.output = output
        self.decision = decision
        self.reason = reason

    def __repr__(self) -> str:
        return (
            f"CommandResult(ran={self.ran}, exit_code={self.exit_code}, decision={self.decision!r})"
        )


class Recording:
    """One run being recorded. Use through `record` (a context manager)."""

    def __init__(
        self,
        ledger: Ledger | str | Path,
        *,
        scenario: str,
        model: str,
        system_prompt: str | None,
        model_served: str | None = None,
        provider: str | None = None,
        agent_name: str | None = None,
        agent_commit: str | None = None,
        variant: str | None = None,
        tags: Mapping[str, str] | None = None,
        run_id: str | None = None,
        policy: str | Path | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        if not scenario or not model:
            raise InputError("record() needs a scenario and a model, both non-empty")
        if not isinstance(system_prompt, str):
            raise InputError(
                "record() needs the system_prompt the agent runs with: its hash is the run's "
                "identity (give '' for an agent that has none)"
            )
        self._ledger_arg = ledger
        self.scenario = scenario
        self.model = model
        self.model_served = model_served
        self.system_prompt = system_prompt
        checked_tags = dict(tags or {})
        try:
            check_tags(checked_tags)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        self._identity: dict[str, Any] = {
            "provider": provider,
            "agent": AgentInfo(name=agent_name, commit=agent_commit),
            "variant": variant,
            "tags": checked_tags,
        }
        self.run_id = run_id or make_run_id(scenario, model)
        self._policy = policy
        self._cwd = cwd
        self._gate: Any = None
        self._gate_dir: str | None = None
        self.steps: list[TraceStep] = []
        self._prompt: str | None = None
        self._report: str | None = None
        self._tokens: list[int | None] = [None, None]
        self._cost: float | None = None
        self._calls = 0
        self.started_at: datetime | None = None
        self.sealed: SealedRun | None = None

    # -- steps ---------------------------------------------------------------------------

    def _add(self, **values: Any) -> int:
        if self.sealed is not None:
            raise InputError(f"run {self.run_id} is sealed already; steps can no longer be added")
        index = len(self.steps)
        values = {name: value for name, value in values.items() if value is not None}
        try:
            step = TraceStep(index=index, time=datetime.now(UTC), **values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InputError(f"run {self.run_id}: step {index}: {where}: {first['msg']}") from None
        self.steps.append(step)
        return index

    def message(
        self,
        role: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        cost_usd: float | None = None,
    ) -> int:
        """A message of `role` (user, assistant or agent, tool, environment); a model's answer
        may carry its model served, tokens and cost, which the run's summary adds up. Returns
        the step's index."""
        actor = _ROLES.get(role)
        if actor is None:
            raise InputError(
                f"role {role!r} is not one of {', '.join(sorted(_ROLES))} (the system prompt "
                "is given to record())"
            )
        if not isinstance(text, str):
            raise InputError(f"a message's text must be a string, not {type(text).__name__}")
        index = self._add(
            actor=actor,
            kind="message",
            content=step_text(text),
            model=model,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost_usd,
        )
        if actor == "user" and self._prompt is None:
            self._prompt = text
        if actor == "agent" and (model or tokens_in is not None or tokens_out is not None):
            self._calls += 1
            if model and self.model_served is None:
                self.model_served = model
        for at, count in enumerate((tokens_in, tokens_out)):
            if count is not None:
                self._tokens[at] = (self._tokens[at] or 0) + count
        if cost_usd is not None:
            self._cost = (self._cost or 0.0) + cost_usd
        return index

    def tool_call(
        self, name: str, arguments: Mapping[str, Any] | None = None, result: Any = None
    ) -> int:
        """A call of the tool `name` with its arguments, and its result when given (a string,
        or anything JSON can hold). Returns the call's step index."""
        call = self._add(
            actor="agent",
            kind="tool_call",
            tool=name,
            arguments=dict(arguments) if arguments is not None else None,
        )
        if result is not None:
            self._add(
                actor="tool", kind="tool_result", tool=name, cause=call, content=_text(result)
            )
        return call

    def command(
        self,
        command: str,
        output: str | None = None,
        exit_code: int | None = None,
        *,
        execute: bool = False,
    ) -> CommandResult:
        """A shell command the agent ran, classified; with `execute=True` it is run now through
        the gated shell (the packaged policy, or the `policy` given to record()), and what the
        gate decided and the command printed are recorded."""
        if not isinstance(command, str) or not command.strip():
            raise InputError("a command must be a non-empty string")
        if execute:
            if output is not None or exit_code is not None:
                raise InputError("execute=True runs the command: give no output or exit code")
            return self._execute(command)
        call = self._add(
            actor="agent",
            kind="command",
            tool="shell",
            command=command,
            command_class=command_class(command),
        )
        if output is not None or exit_code is not None:
            self._add(
                actor="tool",
                kind="command_output",
                tool="shell",
                cause=call,
                exit_code=exit_code,
                content=step_text(output),
            )
        return CommandResult(ran=True, exit_code=exit_code, output=output)

    def _execute(self, command: str) -> CommandResult:
        if self._gate is None:
            from agentledger.runner.shell_gate import Gate, load_policy

            if self._cwd is None:
                self._gate_dir = tempfile.mkdtemp(prefix="agentledger-record-")
            self._gate = Gate(load_policy(self._policy), cwd=self._cwd or self._gate_dir)
        result = self._gate.run(command)
        event = result.event
        gate = GateDecision(
            decision=event["decision"],
            decided_by=event.get("decided_by"),
            reason=event.get("reason"),
            policy=event.get("policy"),
        )
        call = self._add(
            actor="agent",
            kind="command",
            tool="shell",
            command=command,
            command_class=event.get("classification"),
            gate=gate,
            cwd=event.get("cwd"),
        )
        output = None
        if result.ran:
            # What the gate logged: redacted, cut to its limit.
            output = (event.get("stdout") or "") + (event.get("stderr") or "")
            self._add(
                actor="tool",
                kind="command_output",
                tool="shell",
                cause=call,
                exit_code=result.exit_code,
                content=step_text(output),
            )
        return CommandResult(
            ran=result.ran,
            exit_code=result.exit_code,
            output=output,
            decision=gate.decision,
            reason=gate.reason,
        )

    def reasoning(self, text: str) -> int:
        """What the agent thought between actions."""
        return self._add(actor="agent", kind="reasoning", content=step_text(text))

    def report(self, text: str) -> int:
        """The agent's final report (report.md), recorded as the finish step."""
        if not isinstance(text, str):
            raise InputError(f"a report must be a string, not {type(text).__name__}")
        self._report = text
        return self._add(actor="agent", kind="finish", content=step_text(text))

    @property
    def has_report(self) -> bool:
        return self._report is not None

    # -- sealing -------------------------------------------------------------------------

    def __enter__(self) -> Recording:
        self.started_at = datetime.now(UTC)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None or issubclass(exc_type, Exception):
                self.seal(exc)
            # KeyboardInterrupt, SystemExit: the run was stopped, not finished; nothing kept.
        finally:
            if self._gate_dir is not None:
                shutil.rmtree(self._gate_dir, ignore_errors=True)

    def seal(self, error: BaseException | None = None) -> SealedRun:
        """Seal the run now (the block's end does it): ``ok``, or ``failed`` with `error`."""
        if self.sealed is not None:
            return self.sealed
        ended = datetime.now(UTC)
        failure = None
        if error is not None:
            failure = f"{type(error).__name__}: {error}"[:_ERROR_CHARS]
            self._add(actor="environment", kind="error", content=step_text(failure))
        built = BuiltTrace.of_steps(self.steps)
        system = (self.system_prompt or "").encode("utf-8")
        metadata = RunMetadata(
            run_id=self.run_id,
            scenario=self.scenario,
            model=self.model,
            model_served=self.model_served,
            system_prompt_hash=sha256_bytes(system),
            started_at=self.started_at or ended,
            ended_at=ended,
            silent_update_detectable=bool(self.model_served and self.model_served != self.model),
            source={"recorder": "agentledger.record"},
            **self._identity,
        )
        notes = []
        if self._report is None:
            notes.append("no finish step: the run has no report")
        summary = RunSummary(
            commands_run=built.counts.ran,
            commands_denied=built.counts.denied,
            duration_s=(ended - metadata.started_at).total_seconds()
            if metadata.started_at
            else None,
            tokens_in=self._tokens[0],
            tokens_out=self._tokens[1],
            cost_usd=self._cost,
            model_calls=self._calls or None,
            exit_status="failed" if failure else "ok",
            error=failure,
            notes=notes,
        )
        ledger, opened = _ledger(self._ledger_arg)
        try:
            with ledger.new_run(metadata) as writer:
                writer.add_bytes(TRACE, built.jsonl, checked=True)
                if built.shell_log:
                    writer.add_bytes(SHELL_AUDIT, built.shell_log, checked=True)
                writer.add_bytes(SYSTEM_PROMPT, system)
                for name, text in ((PROMPT, self._prompt), (REPORT, self._report)):
                    if text is not None:
                        writer.add_text(name, text)
                writer.set_summary(summary)
                sealed = writer.seal()
        finally:
            if opened:
                ledger.close()
        self.sealed = sealed
        return sealed


def _text(value: Any) -> Any:
    if isinstance(value, str):
        return step_text(value)
    import json

    try:
        return step_text(json.dumps(value, ensure_ascii=False, default=str))
    except ValueError:
        return step_text(repr(value))


def _ledger(ledger: Ledger | str | Path) -> tuple[Ledger, bool]:
    """The ledger to seal into, and whether it was opened here (and is closed after)."""
    if isinstance(ledger, Ledger):
        return ledger, False
    opened, _created = Ledger.open_or_init(ledger)
    return opened, True


def record(
    ledger: Ledger | str | Path,
    *,
    scenario: str,
    model: str,
    system_prompt: str | None = None,
    **identity: Any,
) -> Recording:
    """Record one run into `ledger` (a path, created if absent, or an open Ledger)::

        with record(ledger, scenario="s", model="gpt-4o", system_prompt=SYSTEM) as run:
            run.message("user", task)
            ...

    `system_prompt` is required (its hash is the run's identity). `identity`:
    model_served, provider, agent_name, agent_commit, variant, tags,
    run_id; policy (the gated shell's policy file for ``execute=True``) and cwd (where such
    commands run; a fresh empty directory by default)."""
    return Recording(
        ledger, scenario=scenario, model=model, system_prompt=system_prompt, **identity
    )


def recorded(
    ledger: Ledger | str | Path, *, scenario: str, model: str, **identity: Any
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """A decorator for a function that is an agent: each call is recorded as one run, the
    function given the `Recording` as its first argument. A string it returns is the report
    when it recorded none; the last run's id is kept as ``function.last_run_id``."""

    def decorate(function: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> R:
            with record(ledger, scenario=scenario, model=model, **identity) as run:
                wrapper.last_run_id = run.run_id  # type: ignore[attr-defined]
                result = function(run, *args, **kwargs)
                if isinstance(result, str) and not run.has_report:
                    run.report(result)
            return result

        wrapper.last_run_id = None  # type: ignore[attr-defined]
        return wrapper

    return decorate
