"""Measuring commands against a lab, and `lab check`: does each remedy do what its spec says.

`measure` is the one experiment everything here repeats: a fresh lab with its fault, then
commands, then owner cycles, with every probe read at each stage. `check_lab` runs it once per
remedy the spec names (each in a fresh lab) and compares what broke with what the spec says.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from agentledger.labs.runtime import Lab, LabStartError, ProbeResults, start_lab
from agentledger.labs.spec import LabSpec, LoadedLab, RemedySpec, Step
from agentledger.labs.system import Privilege, choose_privilege

__all__ = ["CheckReport", "Measurement", "RemedyCheck", "check_lab", "check_labs", "measure"]


@dataclass(frozen=True)
class Measurement:
    """Every probe before the fault, after it, right after the commands, and after the cycles."""

    baseline: ProbeResults
    after_fault: ProbeResults
    after_commands: ProbeResults
    after_cycles: ProbeResults
    cycles: int
    outputs: tuple[tuple[str, str, int, str], ...] = ()
    """(host, command, exit status, output) of each command applied."""
    verify_outputs: tuple[tuple[str, str, int, str], ...] = ()
    """The same for each `verify` command, run after the cycles (a fixer's own checks)."""

    def fixed(self) -> bool:
        """Every symptom probe is healthy after the commands, before any cycle."""
        return _symptoms_healthy(self.after_commands)

    def durable(self) -> bool:
        """Every symptom probe is still healthy after the owners' cycles."""
        return _symptoms_healthy(self.after_cycles)

    def collateral(self) -> list[str]:
        """Non-symptom probes healthy before the fault and unhealthy after the cycles."""
        was = set(self.baseline.broken())
        return [
            r.name
            for r in self.after_cycles.results
            if r.role != "symptom" and not r.healthy and r.name not in was
        ]


def _symptoms_healthy(results: ProbeResults) -> bool:
    return all(r.healthy for r in results.results if r.role == "symptom")


def _steps(commands: Sequence[str | Step], host: str | None) -> list[Step]:
    steps: list[Step] = []
    for command in commands:
        if isinstance(command, Step):
            steps.append(command)
        elif host is None:
            raise ValueError("plain commands need a host")
        else:
            steps.append(Step(host=host, run=command))
    return steps


def measure(
    lab: LoadedLab | LabSpec,
    commands: Sequence[str | Step],
    host: str | None = None,
    *,
    owner_cycles: int = 2,
    privilege: Privilege | None = None,
    verify: Sequence[str | Step] = (),
) -> Measurement:
    """Apply `commands` (plain ones run in `host`) in a fresh lab with its fault, then run
    `owner_cycles` cycles of every owner; the probes at each stage. A command that fails is
    recorded, not raised: a remedy may well fail. `verify` commands run last, after the
    cycles, and their outputs are kept: what a fixer's own checks show once the owners ran."""
    steps = _steps(commands, host)
    checks = _steps(verify, host)
    with start_lab(lab, fault=False, privilege=privilege, periodic=False) as running:
        assert running.baseline is not None
        baseline = running.baseline
        after_fault = running.inject_fault()
        outputs = _apply(running, steps)
        after_commands = running.probe()
        running.cycle(times=owner_cycles)
        after_cycles = running.probe() if owner_cycles else after_commands
        verify_outputs = _apply(running, checks)
    return Measurement(
        baseline,
        after_fault,
        after_commands,
        after_cycles,
        owner_cycles,
        outputs,
        verify_outputs,
    )


def _apply(running: Lab, steps: list[Step]) -> tuple[tuple[str, str, int, str], ...]:
    outputs = []
    for step in steps:
        done = running.run(step.host, step.run)
        outputs.append((step.host, step.run, done.returncode, (done.stdout + done.stderr)[-2000:]))
    return tuple(outputs)


@dataclass(frozen=True)
class RemedyCheck:
    """One remedy: what the spec says breaks, what did, and the differences in words."""

    remedy: RemedySpec
    measurement: Measurement | None
    problems: list[str] = field(default_factory=list)
    start_problem: str | None = None
    """Why the lab did not come up with its fault (then the remedy was not tried)."""

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class CheckReport:
    """`lab check`: whether the fault reproduces, and each remedy's check."""

    name: str
    fault_problem: str | None
    remedies: list[RemedyCheck]

    @property
    def ok(self) -> bool:
        return self.fault_problem is None and all(r.ok for r in self.remedies)


def _compare(remedy: RemedySpec, m: Measurement) -> list[str]:
    problems: list[str] = []
    expected = [(f"after {m.cycles} owner cycles", set(remedy.broken), m.after_cycles)]
    if remedy.broken_before_cycles is not None:
        expected.insert(0, ("before any cycle", set(remedy.broken_before_cycles), m.after_commands))
    for stage, want, results in expected:
        for result in results.results:
            should_break = result.name in want
            if should_break == result.healthy:
                wanted = "unhealthy" if should_break else "healthy"
                problems.append(
                    f"remedy {remedy.name}: probe {result.name} is not {wanted} {stage} "
                    f"({result.detail})"
                )
    return problems


def check_lab(
    loaded: LoadedLab,
    *,
    remedies: Sequence[str] | None = None,
    privilege: Privilege | None = None,
    jobs: int = 4,
) -> CheckReport:
    """Prove the fault reproduces and each remedy (all, or those named) does what the spec
    says, each in a fresh lab (`jobs` labs at a time: most of a check is probe timeouts)."""
    chosen = [loaded.spec.remedy(n) for n in remedies] if remedies else None
    return check_labs([loaded], remedies=chosen, privilege=privilege, jobs=jobs)[0]


def check_labs(
    labs: Sequence[LoadedLab],
    *,
    remedies: Sequence[RemedySpec] | None = None,
    privilege: Privilege | None = None,
    jobs: int = 4,
) -> list[CheckReport]:
    """`check_lab` over several labs, all their remedies sharing one pool of `jobs` labs."""
    privilege = privilege or choose_privilege()
    tasks: list[tuple[LoadedLab, RemedySpec | None]] = []
    for loaded in labs:
        chosen = list(remedies if remedies is not None else loaded.spec.remedies)
        tasks += [(loaded, remedy) for remedy in chosen] or [(loaded, None)]

    def run(task: tuple[LoadedLab, RemedySpec | None]) -> RemedyCheck | str | None:
        loaded, remedy = task
        if remedy is not None:
            return _check_remedy(loaded, remedy, privilege)
        try:
            with start_lab(loaded, privilege=privilege, periodic=False):
                return None
        except LabStartError as exc:
            return str(exc)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(run, tasks))
    reports = []
    for loaded in labs:
        mine = [r for (lab, _), r in zip(tasks, results, strict=True) if lab is loaded]
        checks = [r for r in mine if isinstance(r, RemedyCheck)]
        fault = next((r for r in mine if isinstance(r, str)), None)
        fault = fault or next((c.start_problem for c in checks if c.start_problem), None)
        reports.append(CheckReport(loaded.name, fault, [] if fault else checks))
    return reports


def _check_remedy(loaded: LoadedLab, remedy: RemedySpec, privilege: Privilege) -> RemedyCheck:
    try:
        m = measure(loaded, remedy.steps, owner_cycles=remedy.cycles, privilege=privilege)
    except LabStartError as exc:
        return RemedyCheck(remedy, None, [f"remedy {remedy.name}: {exc}"], start_problem=str(exc))
    return RemedyCheck(remedy, m, _compare(remedy, m))
