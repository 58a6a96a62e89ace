"""`agentledger run`: one sealed run per (scenario, model, repeat), with its full identity.

Everything that can be checked is checked before the first run starts (agent file, scenarios,
addon, recordings, provider), so bad input writes nothing. After that, a failing, crashing,
timed-out or interrupted agent still leaves a run, marked with how it ended: the evidence of a
failure is evidence. Teardown always runs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentledger.errors import ArtifactTooLargeError, InputError, RecordError
from agentledger.identity import (
    AgentCheckout,
    EffectivePrompt,
    detect_agent_checkout,
    effective_prompt,
    make_run_id,
)
from agentledger.labs import (
    LAB_FILE,
    LabStartError,
)
from agentledger.records import (
    AgentInfo,
    PromptAddon,
    RunKind,
    RunMetadata,
    check_tags,
    parse_shell_audit,
    utc_now,
)
from agentledger.records.specfiles import read_text_file
from agentledger.records.trace import TRACE, steps_from_shell_log, trace_bytes
from agentledger.runner.adapters import AgentAdapter, AgentResult, AgentRun, make_adapter
from agentledger.runner.agent_spec import LoadedAgent
from agentledger.runner.gate_outcome import gate_outcome
from agentledger.runner.lab_shell import LAB_ENV, LAB_TARGET
from agentledger.runner.process import ProcessOutcome, Status, run_shell_step
from agentledger.runner.run_env import lab_snapshot, scenario_snapshot, start_run_lab
from agentledger.runner.scenario import SCENARIO_FILE, LoadedScenario
from agentledger.runner.workspace import RunWorkspace
from agentledger.store.writer import PROMPT, SHELL_AUDIT, SYSTEM_PROMPT, derive_summary

if TYPE_CHECKING:
    from agentledger.providers import ModelClient
    from agentledger.store.ledger import Ledger
    from agentledger.store.writer import RunWriter

__all__ = ["RunOptions", "RunOutcome", "SuiteReport", "prepare_suite", "run_suite"]

SCENARIO = "scenario.yaml"
"""The scenario file, copied into every run made by the runner."""
_DATED = re.compile(r"(19|20)\d{2}-?\d{2}-?\d{2}|@\d{8}|-\d{4}$|:[0-9a-f]{6,}")


@dataclass(frozen=True)
class RunOptions:
    """What `agentledger run` was asked for, beyond the suite and the agent."""

    models: tuple[str, ...] = ()
    prompt_addon: Path | None = None
    variant: str | None = None
    repeat: int = 1
    concurrency: int = 1
    use_cache: bool = True
    record_dir: Path | None = None
    tags: dict[str, str] = field(default_factory=dict)
    kind: RunKind = "agent"
    """What the runs are: `agent`, or the gate (`sentinel`, `variant`) that makes them."""
    request_timeout: float | None = None
    """Seconds one model request may take (overrides the agent file's)."""
    retries: int | None = None
    """Retries of a failed model call (overrides the agent file's)."""


@dataclass(frozen=True)
class RunOutcome:
    """One run as it landed in the ledger."""

    run_id: str
    scenario: str
    model: str
    repeat: int
    status: str
    exit_code: int | None
    error: str | None
    cost_usd: float | None
    duration_s: float


@dataclass
class SuiteReport:
    """What a suite run wrote."""

    runs: list[RunOutcome] = field(default_factory=list)
    planned: int = 0
    interrupted: bool = False
    model_calls: int = 0
    cached_calls: int = 0

    @property
    def failed(self) -> list[RunOutcome]:
        return [run for run in self.runs if run.status != "ok"]

    @property
    def cost_usd(self) -> float | None:
        costs = [run.cost_usd for run in self.runs if run.cost_usd is not None]
        return sum(costs) if costs else None


@dataclass(frozen=True)
class PreparedSuite:
    """A suite whose inputs have all been checked: ready to run."""

    agent: LoadedAgent
    adapter: AgentAdapter
    scenarios: list[LoadedScenario]
    models: list[str]
    prompt: EffectivePrompt
    addon_name: str | None
    variant: str | None
    checkout: AgentCheckout
    options: RunOptions
    client: ModelClient | None

    def plan(self) -> list[tuple[LoadedScenario, str, int]]:
        """Every (scenario, model, repeat) to run, in a stable order."""
        return [
            (scenario, model, repeat)
            for scenario in self.scenarios
            for model in self.models
            for repeat in range(1, self.options.repeat + 1)
        ]


def _variant_name(options: RunOptions) -> tuple[str | None, str | None]:
    addon_name = options.prompt_addon.stem if options.prompt_addon else None
    variant = options.variant or addon_name
    if variant is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", variant):
        raise InputError(
            f"variant name {variant!r}: use letters, digits, '.', '_' and '-' (at most 100)"
        )
    return addon_name, variant


def _make_client(agent: LoadedAgent, options: RunOptions, ledger_root: Path) -> ModelClient:
    from agentledger.providers import ModelClient, ResponseCache, make_provider
    from agentledger.store import open_storage

    model = agent.spec.model
    provider_options: dict[str, Any] = {}
    if model.responses:
        provider_options["responses"] = agent.resolve(model.responses)
    if model.recordings:
        provider_options["recordings"] = agent.resolve(model.recordings)
    from agentledger.providers.client import RetryPolicy

    timeout = options.request_timeout or model.request_timeout
    retries = options.retries if options.retries is not None else model.retries
    provider = make_provider(
        model.provider,
        base_url=model.base_url,
        api_key_env=model.api_key_env,
        timeout=timeout,
        **provider_options,
    )
    return ModelClient(
        provider,
        cache=ResponseCache(lambda: open_storage(ledger_root)),
        use_cache=options.use_cache,
        record_dir=options.record_dir,
        retry=RetryPolicy(max_retries=retries) if retries is not None else None,
        concurrency=max(1, options.concurrency),
    )


def prepare_suite(
    ledger_root: Path, agent: LoadedAgent, scenarios: list[LoadedScenario], options: RunOptions
) -> PreparedSuite:
    """Check everything a suite run needs; raise InputError (nothing written) on bad input."""
    if options.repeat < 1:
        raise InputError(f"--repeat must be 1 or more, got {options.repeat}")
    if options.concurrency < 1:
        raise InputError(f"--concurrency must be 1 or more, got {options.concurrency}")
    if not scenarios:
        raise InputError("no scenarios to run")
    base = read_text_file(agent.resolve(agent.spec.system_prompt), what="system prompt file")
    addon = None
    if options.prompt_addon is not None:
        addon = read_text_file(options.prompt_addon, what="prompt addon").encode()
    addon_name, variant = _variant_name(options)
    models = list(dict.fromkeys(options.models)) or [agent.spec.model.name]
    for model in models:
        if not model.strip() or any(ord(c) < 32 for c in model):
            raise InputError(f"--model {model!r}: not a model name")
    try:
        check_tags(options.tags)
    except ValueError as exc:
        raise InputError(f"--tag: {exc}") from None
    if agent.spec.policy:
        from agentledger.runner.shell_gate import load_policy

        load_policy(agent.resolve(agent.spec.policy))  # a policy that does not parse: exit 2 now
    adapter = make_adapter(agent)
    adapter.check(scenarios, models)
    checkout = (
        detect_agent_checkout(agent.resolve(agent.spec.checkout))
        if agent.spec.checkout
        else AgentCheckout(None, None)
    )
    client = None
    if agent.spec.kind in ("llm", "python"):
        client = _make_client(agent, options, ledger_root)
    return PreparedSuite(
        agent=agent,
        adapter=adapter,
        scenarios=scenarios,
        models=models,
        prompt=effective_prompt(base.encode(), addon),
        addon_name=addon_name,
        variant=variant,
        checkout=checkout,
        options=options,
        client=client,
    )


@dataclass
class _Finished:
    """A run whose agent is done, waiting to be sealed."""

    run_id: str
    scenario: LoadedScenario
    model: str
    repeat: int
    work: RunWorkspace
    started_at: Any
    ended_at: Any
    result: AgentResult
    snapshot: Path | None
    notes: list[str]


def _execute(
    prepared: PreparedSuite,
    scenario: LoadedScenario,
    model: str,
    repeat: int,
    cancel: threading.Event,
) -> _Finished | None:
    """Set up, run the agent, tear down. Never raises for the agent's or environment's failure."""
    if cancel.is_set():
        return None
    run_id = make_run_id(scenario.id, model)
    started_at = utc_now()
    work = RunWorkspace.create(run_id, scenario.prompt, prepared.prompt.text)
    notes: list[str] = []
    environment = scenario.spec.environment
    env = work.environment(
        run_id=run_id,
        scenario=scenario.id,
        scenario_dir=scenario.directory,
        model=model,
        provider=prepared.agent.spec.model.provider,
        params=prepared.agent.spec.model.params,
        policy=None,
        extra={},
    )
    snapshot = None
    lab_stack = ExitStack()
    try:
        started_lab = start_run_lab(scenario, run_id, work, lab_stack)
        target = started_lab[1] if started_lab is not None else None
        if target is not None:
            env[LAB_ENV] = str(work.input_dir / LAB_TARGET)
        with (work.logs_dir / "environment.log").open("ab") as log:
            failed: ProcessOutcome | None = None
            for step in environment.setup:
                outcome = run_shell_step(
                    step,
                    cwd=scenario.directory,
                    env=env,
                    timeout=environment.timeout,
                    log=log,
                    cancel=cancel,
                )
                if outcome.status != "ok":
                    failed = outcome
                    break
        if failed is not None:
            status: Status = "interrupted" if failed.status == "interrupted" else "setup-failed"
            result = AgentResult(
                ProcessOutcome(status, None, 0.0, f"setup command failed: {failed.error}")
            )
        else:
            if started_lab is not None:
                snapshot, problem = lab_snapshot(started_lab[0], work)
            else:
                snapshot, problem = scenario_snapshot(scenario, work, env, cancel)
            if problem:
                notes.append(problem)
            result = prepared.adapter.run(
                AgentRun(
                    run_id=run_id,
                    scenario=scenario,
                    model=model,
                    repeat=repeat,
                    provider=prepared.agent.spec.model.provider,
                    params=dict(prepared.agent.spec.model.params),
                    system_prompt=prepared.prompt.text.decode(),
                    work=work,
                    timeout=prepared.agent.spec.timeout,
                    cancel=cancel,
                    policy=(
                        prepared.agent.resolve(prepared.agent.spec.policy)
                        if prepared.agent.spec.policy
                        else None
                    ),
                    client=prepared.client,
                    lab=target,
                )
            )
    except LabStartError as exc:  # the lab would not come up: no agent ran
        result = AgentResult(ProcessOutcome("setup-failed", None, 0.0, f"lab: {exc}"))
    except Exception as exc:  # the runner's own failure still leaves evidence
        result = AgentResult(
            ProcessOutcome("failed", None, 0.0, f"runner error: {type(exc).__name__}: {exc}")
        )
    finally:
        lab_stack.close()  # the lab goes first, whatever happened (Ctrl-C included)
        with (work.logs_dir / "environment.log").open("ab") as log:
            for step in environment.teardown:
                outcome = run_shell_step(
                    step, cwd=scenario.directory, env=env, timeout=environment.timeout, log=log
                )
                if outcome.status != "ok":
                    notes.append(f"teardown command {step!r}: {outcome.error}")
    return _Finished(
        run_id, scenario, model, repeat, work, started_at, utc_now(), result, snapshot, notes
    )


def _metadata(prepared: PreparedSuite, done: _Finished) -> RunMetadata:
    use = done.result.model
    spec = prepared.agent.spec
    served = use.model_served
    tags = {**done.scenario.spec.tags, **prepared.options.tags}
    for key, value in (
        ("fault_class", done.scenario.spec.fault_class),
        ("layer", done.scenario.spec.layer),
    ):
        if value:
            tags.setdefault(key, value)
    if prepared.options.repeat > 1:
        tags["repeat"] = str(done.repeat)
    return RunMetadata(
        run_id=done.run_id,
        scenario=done.scenario.id,
        model=done.model,
        model_served=served,
        provider=spec.model.provider,
        system_fingerprint=use.fingerprint,
        system_prompt_hash=prepared.prompt.system_prompt_hash,
        base_prompt_hash=prepared.prompt.base_prompt_hash,
        prompt_addon=(
            PromptAddon(name=prepared.addon_name, hash=prepared.prompt.addon_hash)
            if prepared.addon_name and prepared.prompt.addon_hash
            else None
        ),
        variant=prepared.variant,
        agent=AgentInfo(
            name=spec.name, commit=prepared.checkout.commit, dirty=prepared.checkout.dirty
        ),
        params=dict(spec.model.params),
        started_at=done.started_at,
        ended_at=done.ended_at,
        silent_update_detectable=bool(
            use.fingerprint or (served and (served != done.model or _DATED.search(served)))
        ),
        tags=tags,
        source={"runner": "agentledger run", "agent_kind": spec.kind},
        kind=prepared.options.kind,
    )


def _add_artifact(writer: RunWriter, name: str, path: Path, notes: list[str]) -> None:
    try:
        writer.add_file(name, path)
    except ArtifactTooLargeError as exc:
        notes.append(f"{name} not kept: {exc}")


def _add_outputs(writer: RunWriter, done: _Finished, notes: list[str]) -> list[Any] | None:
    """Copy what the agent left (and the logs) into the run; return the shell events."""
    events = None
    out = done.work.out_dir
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out).as_posix()
        if path.is_symlink():
            notes.append(f"{relative} not kept: a symbolic link")
            continue
        if not path.is_file():
            continue
        name = relative if relative in ("report.md", "audit.md") else f"attachments/{relative}"
        if relative == SHELL_AUDIT:
            try:
                events = parse_shell_audit(path.read_bytes(), f"{done.run_id}: {SHELL_AUDIT}")
                name = SHELL_AUDIT
            except RecordError as exc:
                notes.append(f"{SHELL_AUDIT} kept as an attachment, it does not parse: {exc}")
                name = "attachments/shell_audit.invalid.jsonl"
        _add_artifact(writer, name, path, notes)
    if done.snapshot is not None and done.snapshot.exists():
        _add_artifact(writer, done.snapshot.name, done.snapshot, notes)
    for log in sorted(done.work.logs_dir.iterdir()):
        if log.is_file() and log.stat().st_size:
            _add_artifact(writer, f"attachments/logs/{log.name}", log, notes)
    return events


def _add_trace(
    writer: RunWriter,
    done: _Finished,
    metadata: RunMetadata,
    events: list[Any] | None,
    notes: list[str],
) -> None:
    """trace.jsonl: the prompt, the commands the gate saw and their output, the report."""
    report_path = done.work.out_dir / "report.md"
    try:
        report = report_path.read_text(encoding="utf-8") if report_path.is_file() else None
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"report.md left out of the trace: {exc}")
        report = None
    steps = steps_from_shell_log(
        done.scenario.prompt,
        events or [],
        report,
        started=metadata.started_at,
        ended=metadata.ended_at,
    )
    writer.add_bytes(TRACE, trace_bytes(steps))


def _seal(ledger: Ledger, prepared: PreparedSuite, done: _Finished) -> RunOutcome:
    metadata = _metadata(prepared, done)
    notes = [*done.notes, *done.result.notes]
    outcome = done.result.outcome
    with ledger.new_run(metadata) as writer:
        writer.add_text(PROMPT, done.scenario.prompt)
        writer.add_bytes(SYSTEM_PROMPT, prepared.prompt.text)
        # The scenario as it was: what a judge compares the diagnosis against, years later.
        writer.add_file(SCENARIO, done.scenario.directory / SCENARIO_FILE)
        if (done.scenario.directory / LAB_FILE).is_file():
            # and its lab: what an outcome is measured in, the same spec, years later.
            writer.add_file(LAB_FILE, done.scenario.directory / LAB_FILE)
        events = _add_outputs(writer, done, notes)
        outcome = gate_outcome(outcome, done.work.out_dir, events, notes)
        if outcome.status == "ok" and not (done.work.out_dir / "report.md").is_file():
            notes.append("the agent wrote no report.md")
        _add_trace(writer, done, metadata, events, notes)
        summary = derive_summary(metadata, events).model_copy(
            update={
                "derived": False,
                "exit_status": outcome.status,
                "exit_code": outcome.exit_code,
                "error": outcome.error,
                "notes": notes,
                "tokens_in": done.result.model.tokens_in,
                "tokens_out": done.result.model.tokens_out,
                "cost_usd": done.result.model.cost_usd,
                "model_calls": done.result.model.calls or None,
            }
        )
        writer.set_summary(summary)
        writer.seal()
    return RunOutcome(
        run_id=done.run_id,
        scenario=done.scenario.id,
        model=done.model,
        repeat=done.repeat,
        status=outcome.status,
        exit_code=outcome.exit_code,
        error=outcome.error,
        cost_usd=done.result.model.cost_usd,
        duration_s=summary.duration_s or 0.0,
    )


def run_suite(
    ledger: Ledger,
    prepared: PreparedSuite,
    *,
    on_run: Callable[[RunOutcome], None] | None = None,
) -> SuiteReport:
    """Run every planned run, `concurrency` at a time, sealing each as soon as it is done.

    Ctrl-C stops the agents that are running (their runs are kept, marked interrupted), runs
    their teardown, skips the runs not started, and returns with `interrupted` set.
    """
    plan = prepared.plan()
    report = SuiteReport(planned=len(plan))
    cancel = threading.Event()
    with ThreadPoolExecutor(
        max_workers=prepared.options.concurrency, thread_name_prefix="agentledger-run"
    ) as pool:
        pending: set[Future[_Finished | None]] = {
            pool.submit(_execute, prepared, scenario, model, repeat, cancel)
            for scenario, model, repeat in plan
        }
        while pending:
            try:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            except KeyboardInterrupt:
                cancel.set()
                report.interrupted = True
                continue
            for future in done:
                finished = future.result()
                if finished is None:
                    continue
                try:
                    outcome = _seal(ledger, prepared, finished)
                except Exception as exc:
                    cancel.set()
                    exc.add_note(
                        f"run {finished.run_id} was not sealed; "
                        f"its files are kept in {finished.work.root}"
                    )
                    raise
                finished.work.remove()
                report.runs.append(outcome)
                if on_run is not None:
                    on_run(outcome)
    if prepared.client is not None:
        stats = prepared.client.stats()
        report.model_calls = stats.calls + stats.cached + stats.replayed
        report.cached_calls = stats.cached
    return report
