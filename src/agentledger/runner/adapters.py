"""Agent adapters: one way of running an agent per kind, behind one small interface.

- `command`: any executable, told what to do through environment variables (workspace.ENV);
- `python`: `module:function(context)` called in-process with an `AgentContext`;
- `llm`: one model call, system prompt + scenario prompt; the answer is the report;
- `replay`: outputs recorded earlier, copied from a directory (CI and tests).

An adapter never raises for the agent's own failure: a crash, a non-zero exit or a timeout is
returned as an outcome, because the evidence of a failure is evidence.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import shutil
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentledger.errors import InputError
from agentledger.records.specfiles import validation_problem
from agentledger.runner.agent_spec import LoadedAgent
from agentledger.runner.lab_shell import LAB_ENV, LAB_TARGET, LabTarget
from agentledger.runner.process import ProcessOutcome, Status, run_process
from agentledger.runner.scenario import LoadedScenario
from agentledger.runner.workspace import RunWorkspace

if TYPE_CHECKING:
    from agentledger.providers import Completion, ModelClient
    from agentledger.providers.tools import ToolSpec, ToolTurn, Turn
    from agentledger.runner.shell_gate import GateResult

__all__ = [
    "RESULT_FILE",
    "AgentAdapter",
    "AgentContext",
    "AgentResult",
    "AgentRun",
    "ModelUse",
    "RunCancelledError",
    "make_adapter",
]

RESULT_FILE = "result.json"
REPORT = "report.md"
AUDIT = "audit.md"
_import_lock = threading.Lock()


class AgentResultFile(BaseModel):
    """result.json, optionally written by a command agent: what the provider told it."""

    model_config = ConfigDict(extra="allow")

    model_served: str | None = None
    system_fingerprint: str | None = None
    provider: str | None = None
    tokens_in: int | None = Field(default=None, ge=0)
    tokens_out: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)


@dataclass
class ModelUse:
    """What the model calls of one run added up to."""

    calls: int = 0
    model_served: str | None = None
    fingerprint: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None

    def add(self, completion: Completion) -> None:
        """Count one completion (cached ones too: they are what the agent saw)."""
        self.calls += 1
        self.model_served = completion.model_served or self.model_served
        self.fingerprint = completion.fingerprint or self.fingerprint
        if completion.usage is not None:
            self.tokens_in = (self.tokens_in or 0) + completion.usage.input_tokens
            self.tokens_out = (self.tokens_out or 0) + completion.usage.output_tokens
        if completion.cost_usd is not None and not completion.cached:
            self.cost_usd = (self.cost_usd or 0.0) + completion.cost_usd

    def merge_file(self, result: AgentResultFile) -> None:
        """Take what a command agent reported in result.json."""
        self.model_served = result.model_served or self.model_served
        self.fingerprint = result.system_fingerprint or self.fingerprint
        self.tokens_in = result.tokens_in if result.tokens_in is not None else self.tokens_in
        self.tokens_out = result.tokens_out if result.tokens_out is not None else self.tokens_out
        self.cost_usd = result.cost_usd if result.cost_usd is not None else self.cost_usd


@dataclass
class AgentRun:
    """Everything an adapter needs for one run."""

    run_id: str
    scenario: LoadedScenario
    model: str
    repeat: int
    provider: str
    params: dict[str, Any]
    system_prompt: str
    work: RunWorkspace
    timeout: float
    cancel: threading.Event
    policy: Path | None
    client: ModelClient | None
    lab: LabTarget | None = None
    """The run's lab, when its scenario has one: the gated shell runs commands in its hosts."""


@dataclass
class AgentResult:
    """How the agent ended, and what its model calls told us."""

    outcome: ProcessOutcome
    model: ModelUse = field(default_factory=ModelUse)
    notes: list[str] = field(default_factory=list)


class RunCancelledError(Exception):
    """Raised inside a python agent's context calls once the run timed out or was cancelled."""


class AgentContext:
    """What a `python` agent function receives: prompts, a model client and the gated shell."""

    def __init__(self, run: AgentRun, use: ModelUse) -> None:
        self._run = run
        self._use = use
        self._deadline = time.monotonic() + run.timeout
        self._gate: Any = None
        self.run_id = run.run_id
        self.scenario = run.scenario.spec
        self.scenario_dir = run.scenario.directory
        self.prompt = run.scenario.prompt
        self.system_prompt = run.system_prompt
        self.model = run.model
        self.params = dict(run.params)
        self.run_dir = run.work.out_dir

    def check(self) -> None:
        """Raise RunCancelledError when the run's time is up or it was cancelled."""
        if self._run.cancel.is_set():
            raise RunCancelledError("the run was interrupted")
        if time.monotonic() > self._deadline:
            raise RunCancelledError(f"the run timed out after {self._run.timeout:g} s")

    def complete(self, user: str, *, system: str | None = None, **params: Any) -> Completion:
        """One model call: the effective system prompt (unless `system` is given) and `user`."""
        from agentledger.providers import CompletionRequest, Message

        self.check()
        if self._run.client is None:
            raise InputError("this agent has no model client")
        request = CompletionRequest(
            model=self.model,
            system=self.system_prompt if system is None else system,
            messages=[Message(role="user", content=user)],
            params={**self.params, **params},
            sample=self._run.repeat - 1,
        )
        from agentledger.providers.client import CallLimit, CallStopped

        try:
            completion = self._run.client.complete(
                request, limit=CallLimit(self._deadline, self._run.cancel)
            )
        except CallStopped as exc:
            self.check()  # says why: interrupted or timed out
            raise RunCancelledError(str(exc)) from None
        self._use.add(completion)
        return completion

    def complete_tools(self, turns: list[Turn], tools: list[ToolSpec]) -> ToolTurn:
        """One turn of a tool-calling conversation (the effective system prompt, the run's
        parameters and repeat), through the client's cache and recordings; counted in the
        run's model use (tokens, cost) like `complete`."""
        from agentledger.providers.client import CallLimit, CallStopped
        from agentledger.providers.tools import ToolTurn as Answer

        self.check()
        if self._run.client is None:
            raise InputError("this agent has no model client")
        try:
            completion = self._run.client.complete_tools(
                self.model, self.system_prompt, turns, tools, dict(self.params),
                sample=self._run.repeat - 1, limit=CallLimit(self._deadline, self._run.cancel),
            )  # fmt: skip
        except CallStopped as exc:
            self.check()
            raise RunCancelledError(str(exc)) from None
        self._use.add(completion)
        return Answer.from_completion(completion)

    def shell(self, command: str) -> GateResult:
        """Run `command` through the gated shell; it is logged whether it runs or not."""
        self.check()
        if self._gate is None:
            from agentledger.runner.shell_gate import Gate, load_policy
            from agentledger.runner.shell_gate.ask import has_terminal, terminal_approver

            rules = load_policy(self._run.policy)
            # The agent runs in a worker thread and Ctrl-C reaches the main one: the question
            # at the terminal watches the run's cancel, so that Ctrl-C ends it at once.
            approver = (
                functools.partial(
                    terminal_approver, timeout=rules.prompt_timeout, cancel=self._run.cancel
                )
                if has_terminal()
                else None
            )
            self._gate = Gate(
                rules,
                self._run.work.audit_path,
                cwd=self._run.work.out_dir,
                approver=approver,
                lab=self._run.lab,
            )
        try:
            result: GateResult = self._gate.run(command)
        except KeyboardInterrupt:
            # Ctrl-C at the prompt or while the command ran (it is logged): the run stops.
            raise RunCancelledError("the run was interrupted") from None
        return result

    def write_report(self, text: str) -> None:
        """Write the final report (report.md)."""
        (self.run_dir / REPORT).write_text(text, encoding="utf-8")

    def log(self, text: str) -> None:
        """Append a paragraph to the reasoning trace (audit.md)."""
        with (self.run_dir / AUDIT).open("a", encoding="utf-8") as trace:
            trace.write(text.rstrip("\n") + "\n\n")


def _with_result_file(result: AgentResult, run: AgentRun) -> AgentResult:
    """Merge the agent's result.json, if any; a bad one is noted in the run, not fatal."""
    path = run.work.out_dir / RESULT_FILE
    if path.is_file():
        try:
            result.model.merge_file(AgentResultFile.model_validate_json(path.read_bytes()))
        except ValidationError as exc:
            loc, problem = validation_problem(exc)
            where = ".".join(map(str, loc)) or "top level"
            result.notes.append(f"{RESULT_FILE} ignored: {where}: {problem}")
    return result


class AgentAdapter(ABC):
    """Runs one kind of agent."""

    def __init__(self, agent: LoadedAgent) -> None:
        self.agent = agent

    def check(self, scenarios: list[LoadedScenario], models: list[str]) -> None:  # noqa: B027
        """Refuse, before anything runs, what cannot work (a missing executable or recording)."""

    @abstractmethod
    def run(self, run: AgentRun) -> AgentResult:
        """Run the agent once; the outcome says how it ended."""


class CommandAdapter(AgentAdapter):
    """Any executable, with the contract in environment variables."""

    def argv(self) -> list[str]:
        command = list(self.agent.spec.command or [])
        program = command[0]
        if "/" in program:
            # Symbolic links are kept: a virtualenv's python is a link to the base interpreter,
            # and it finds its environment from the path it was started by.
            resolved = Path(os.path.abspath(self.agent.directory / Path(program).expanduser()))
            if not resolved.is_file():
                raise InputError(
                    f"{self.agent.path}: field 'command': no such executable: {resolved}"
                )
            command[0] = str(resolved)
        elif shutil.which(program) is None:
            raise InputError(f"{self.agent.path}: field 'command': {program!r} is not on PATH")
        return command

    def check(self, scenarios: list[LoadedScenario], models: list[str]) -> None:
        self.argv()

    def run(self, run: AgentRun) -> AgentResult:
        env = run.work.environment(
            run_id=run.run_id,
            scenario=run.scenario.id,
            scenario_dir=run.scenario.directory,
            model=run.model,
            provider=run.provider,
            params=run.params,
            policy=run.policy,
            extra=self.agent.spec.env,
        )
        if run.lab is not None:
            env[LAB_ENV] = str(run.work.input_dir / LAB_TARGET)
        with (
            (run.work.logs_dir / "agent_stdout.log").open("wb") as out,
            (run.work.logs_dir / "agent_stderr.log").open("wb") as err,
        ):
            outcome = run_process(
                self.argv(),
                cwd=self.agent.directory,
                env=env,
                timeout=run.timeout,
                stdout=out,
                stderr=err,
                cancel=run.cancel,
            )
        return _with_result_file(AgentResult(outcome), run)


def _crash(started: float, exc: BaseException, run: AgentRun) -> ProcessOutcome:
    (run.work.logs_dir / "agent_error.txt").write_text(
        "".join(traceback.format_exception(exc)), encoding="utf-8"
    )
    duration = time.monotonic() - started
    if isinstance(exc, RunCancelledError):
        status: Status = "interrupted" if run.cancel.is_set() else "timeout"
        return ProcessOutcome(status, None, duration, str(exc))
    return ProcessOutcome("failed", None, duration, f"{type(exc).__name__}: {exc}")


class PythonAdapter(AgentAdapter):
    """`module:function(context)`, called in-process."""

    def function(self) -> Any:
        module_name, _, attr = (self.agent.spec.entry or "").partition(":")
        with _import_lock:
            for entry in reversed(self.agent.spec.python_path):
                where = str(self.agent.resolve(entry))
                if where not in sys.path:
                    sys.path.insert(0, where)
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise InputError(
                    f"{self.agent.path}: field 'entry': cannot import {module_name!r}: {exc}"
                ) from None
        function = getattr(module, attr, None)
        if not callable(function):
            raise InputError(
                f"{self.agent.path}: field 'entry': {module_name} has no function {attr!r}"
            )
        return function

    def check(self, scenarios: list[LoadedScenario], models: list[str]) -> None:
        self.function()

    def run(self, run: AgentRun) -> AgentResult:
        use = ModelUse()
        context = AgentContext(run, use)
        started = time.monotonic()
        try:
            answer = self.function()(context)
        except Exception as exc:
            return AgentResult(_crash(started, exc, run), use)
        if isinstance(answer, str):
            context.write_report(answer)
        return AgentResult(ProcessOutcome("ok", 0, time.monotonic() - started), use)


class LlmAdapter(AgentAdapter):
    """One model call; the answer is the report (and report.json when it is a JSON object)."""

    def run(self, run: AgentRun) -> AgentResult:
        use = ModelUse()
        context = AgentContext(run, use)
        started = time.monotonic()
        if self.agent.spec.tools:
            from agentledger.runner.tool_agent import run_tool_loop

            try:
                run_tool_loop(context, use, max_turns=self.agent.spec.max_turns)
            except Exception as exc:
                return AgentResult(_crash(started, exc, run), use)
            return AgentResult(ProcessOutcome("ok", 0, time.monotonic() - started), use)
        try:
            completion = context.complete(run.scenario.prompt)
        except Exception as exc:
            return AgentResult(_crash(started, exc, run), use)
        context.write_report(completion.text)
        try:
            answer = json.loads(completion.text)
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            (run.work.out_dir / "report.json").write_text(
                json.dumps(answer, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        return AgentResult(ProcessOutcome("ok", 0, time.monotonic() - started), use)


class ReplayAdapter(AgentAdapter):
    """Outputs recorded earlier, from `<recordings>/<scenario>/<model>/` or `.../<scenario>/`."""

    def source(self, scenario: str, model: str) -> Path | None:
        root = self.agent.resolve(self.agent.spec.recordings or ".")
        for candidate in (root / scenario / model, root / scenario):
            if candidate.is_dir() and (candidate / REPORT).is_file():
                return candidate
        return None

    def check(self, scenarios: list[LoadedScenario], models: list[str]) -> None:
        missing = [f"{s.id}/{m}" for s in scenarios for m in models if self.source(s.id, m) is None]
        if missing:
            raise InputError(
                f"{self.agent.path}: field 'recordings': no recording (a directory holding "
                f"{REPORT}) for {', '.join(missing)}"
            )

    def run(self, run: AgentRun) -> AgentResult:
        started = time.monotonic()
        source = self.source(run.scenario.id, run.model)
        if source is None:
            return AgentResult(
                ProcessOutcome("not-started", None, 0.0, "no recording for this run")
            )
        for item in sorted(source.iterdir()):
            if item.is_file() and not item.is_symlink():
                shutil.copyfile(item, run.work.out_dir / item.name)
        return _with_result_file(
            AgentResult(ProcessOutcome("ok", 0, time.monotonic() - started)), run
        )


ADAPTERS: dict[str, type[AgentAdapter]] = {
    "command": CommandAdapter,
    "python": PythonAdapter,
    "llm": LlmAdapter,
    "replay": ReplayAdapter,
}


def make_adapter(agent: LoadedAgent) -> AgentAdapter:
    """The adapter for the agent's kind."""
    return ADAPTERS[agent.spec.kind](agent)
