"""Measuring commands against a lab, and `lab check`: does each remedy do what its spec says.

`measure` is the one experiment everything here repeats: a fresh lab with its fault, then
commands, then owner cycles, with every probe read at each stage. `check_lab` runs it once per
remedy the spec names (each in a fresh lab) and compares what broke with what the spec says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentledger.labs.runtime import LabStartError, ProbeResults, start_lab
from agentledger.labs.spec import LabSpec, LoadedLab, RemedySpec, Step
from agentledger.labs.system import Privilege

__all__ = ["CheckReport", "Measurement", "RemedyCheck", "check_lab", "measure"]


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
) -> Measurement:
    """Apply `commands` (plain ones run in `host`) in a fresh lab with its fault, then run
    `owner_cycles` cycles of every owner; the probes at each stage. A command that fails is
    recorded, not raised: a remedy may well fail."""
    steps = _steps(commands, host)
    with start_lab(lab, fault=False, privilege=privilege) as running:
        baseline = running.probe()
        after_fault = running.inject_fault()
        outputs = []
        for step in steps:
            done = running.run(step.host, step.run)
            outputs.append(
                (step.host, step.run, done.returncode, (done.stdout + done.stderr)[-2000:])
            )
        after_commands = running.probe()
        running.cycle(times=owner_cycles)
        after_cycles = running.probe() if owner_cycles else after_commands
    return Measurement(
        baseline, after_fault, after_commands, after_cycles, owner_cycles, tuple(outputs)
    )


@dataclass(frozen=True)
class RemedyCheck:
    """One remedy: what the spec says breaks, what did, and the differences in words."""

    remedy: RemedySpec
    measurement: Measurement | None
    problems: list[str] = field(default_factory=list)

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
    progress: Callable[[str], None] | None = None,
) -> CheckReport:
    """Prove the fault reproduces and each remedy (all, or those named) does what the spec
    says, each in a fresh lab."""
    chosen = [loaded.spec.remedy(n) for n in remedies] if remedies else list(loaded.spec.remedies)
    try:
        with start_lab(loaded, privilege=privilege):
            pass
    except LabStartError as exc:
        return CheckReport(loaded.name, str(exc), [])
    checks: list[RemedyCheck] = []
    for remedy in chosen:
        if progress:
            progress(remedy.name)
        try:
            m = measure(loaded, remedy.steps, owner_cycles=remedy.cycles, privilege=privilege)
        except LabStartError as exc:
            checks.append(RemedyCheck(remedy, None, [f"remedy {remedy.name}: {exc}"]))
            continue
        checks.append(RemedyCheck(remedy, m, _compare(remedy, m)))
    return CheckReport(loaded.name, None, checks)
