"""What a run's agent works in, made before it starts: the scenario's snapshot, and for a
scenario with a lab.yaml a fresh lab (each run, each repeat, its own) and its snapshot."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path

from agentledger.labs import LAB_FILE, Lab, LoadedLab, load_lab, start_lab, take_snapshot
from agentledger.runner.lab_shell import LAB_TARGET, LabEntry, LabTarget
from agentledger.runner.process import run_process
from agentledger.runner.scenario import LoadedScenario
from agentledger.runner.shell_gate.execute import find_shell
from agentledger.runner.workspace import RunWorkspace

__all__ = ["lab_snapshot", "scenario_snapshot", "start_run_lab"]


def scenario_snapshot(
    scenario: LoadedScenario, work: RunWorkspace, env: dict[str, str], cancel: threading.Event
) -> tuple[Path | None, str | None]:
    """The scenario's snapshot in the run's folder: its file copied, or its command's output."""
    spec = scenario.spec.snapshot
    if spec is None:
        return None, None
    source = scenario.snapshot_file()
    if source is not None:
        target = work.root / f"snapshot{source.suffix or '.txt'}"
        target.write_bytes(source.read_bytes())
        return target, None
    target = work.root / "snapshot.txt"
    with target.open("wb") as out, (work.logs_dir / "environment.log").open("ab") as log:
        log.write(f"$ {spec.command}  # snapshot\n".encode())
        outcome = run_process(
            [find_shell(), "-c", spec.command or ""],
            cwd=scenario.directory,
            env=env,
            timeout=spec.timeout,
            stdout=out,
            stderr=log,
            cancel=cancel,
        )
    if outcome.status != "ok":
        return target, f"snapshot command: {outcome.error}"
    return target, None


def start_run_lab(
    scenario: LoadedScenario, run_id: str, work: RunWorkspace, stack: ExitStack
) -> tuple[Lab, LabTarget] | None:
    """Bring up a fresh lab for a scenario with a lab.yaml (each run, each repeat, its own),
    stopped when `stack` closes; the lab and the target the gated shell reaches it by,
    written where the gated shell finds it."""
    lab_file = scenario.directory / LAB_FILE
    if not lab_file.is_file():
        return None
    loaded = load_lab(lab_file)
    running = stack.enter_context(start_lab(loaded, name=f"run-{run_id[-24:]}"))
    rootless = running.privilege.mode == "rootless"
    entry = LabEntry(running.pid1, rootless, running.privilege.user)
    hosts, tools = loaded.spec.host_names(), loaded.spec.tool_knowledge()
    target = LabTarget.entering(running.name, entry, hosts, _default_host(scenario, loaded), tools)
    target.write(work.input_dir / LAB_TARGET, loaded.spec.model_dump(mode="json"))
    return running, target


def _default_host(scenario: LoadedScenario, loaded: LoadedLab) -> str:
    """The host an agent's commands run in unless they name one: the scenario's `lab_host`
    tag, else the host the fault is injected in."""
    named = scenario.spec.tags.get("lab_host")
    if named in loaded.spec.host_names():
        return str(named)
    return loaded.spec.fault.steps[0].host


def lab_snapshot(running: Lab, work: RunWorkspace) -> tuple[Path | None, str | None]:
    """snapshot.txt from the running lab: its real state at the start of the run."""
    target = work.root / "snapshot.txt"
    try:
        target.write_text(take_snapshot(running).to_text(), encoding="utf-8")
    except Exception as exc:  # a snapshot that fails is noted; the run goes on
        return None, f"lab snapshot: {type(exc).__name__}: {exc}"
    return target, None
