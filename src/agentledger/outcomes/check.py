"""The outcome check: a run's remediation applied in a fresh lab with the same fault, measured.

In a fresh lab (`agentledger.labs.start_lab`): every probe before the fault, the fault injected
(and its symptom verified), every probe again; the remediation's commands applied in their
hosts; every probe after the fix; the agent's verification commands re-run; the gaming guard;
then each owner's cycles, one at a time on demand (no sleeping), every probe after each (a
probe that turned unhealthy since the stage before is probed once more, so that a probe starved
on a loaded machine is not taken for a change). From those stages:

- fixed: every symptom probe healthy after the fix (a symptom probe still failing is probed
  again up to `SETTLE_TRIES` times, `SETTLE_SECONDS` apart: a fix that lands as a process
  exits, its connections closing on the other host, takes effect a moment after the command
  returns; nothing else changes the lab meanwhile) (or, for a fix made through an owner, after
  the owners' first cycle, which carries it through), and the guard passed: a service no longer
  listening, an owner whose cycle fails (its script or state removed), a host whose firewall
  rules (two or more before) are all gone or whose nftables tables are all deleted, is not a
  fix but the removal of what was broken. Owners cycle on demand only, so stopping one cannot
  pass for a durable fix: its next cycle still runs;
- durable: every symptom probe still healthy after every cycle (null when not fixed);
- collateral: some keep, blocked or entry probe healthy before the fault and unhealthy after
  the fix or after any cycle (entry probes lost are listed apart: the list lost an entry);
- verified: every verification command, re-run after the fix (or after the first cycle, where
  the fix lands), exits 0 and shows what the report said; false with none; null when nothing
  was applied.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger import __version__
from agentledger.identity import sha256_bytes
from agentledger.labs import Lab, LabStartError, LoadedLab, ProbeResults, start_lab
from agentledger.labs.system import Privilege
from agentledger.outcomes.remediation import Remediation
from agentledger.records.outcomes import (
    AppliedCommand,
    Measurer,
    Outcome,
    OutcomeReasons,
    OwnerCycle,
    ProbeResult,
    ProbeStage,
    SkippedCommand,
    VerificationCheck,
    new_outcome_id,
)

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "DEFAULT_CYCLES",
    "lab_of_run",
    "lab_runs",
    "measure_and_record",
    "measure_remediation",
    "measure_run",
]

DEFAULT_CYCLES = 2
COMMAND_TIMEOUT = 20.0
_SHORT = 2000


def _stage(name: str, results: ProbeResults) -> ProbeStage:
    return ProbeStage(
        stage=name,
        probes=[
            ProbeResult(
                name=r.name, role=r.role, passed=r.passed, healthy=r.healthy, detail=r.detail[:300]
            )
            for r in results.results
        ],
    )


def _run(lab: Lab, host: str, command: str) -> tuple[int | None, str]:
    try:
        done = lab.run(host, command, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {COMMAND_TIMEOUT:g}s"
    return done.returncode, (done.stdout + done.stderr)[-_SHORT:]


@dataclass(frozen=True)
class _HostState:
    """What the gaming guard reads of one host: its iptables rules, its nftables tables (iptables'
    own included) and, per port a service of that host is ready on, whether it listens."""

    rules: int
    tables: int
    listening: dict[int, bool]


def _host_states(lab: Lab) -> dict[str, _HostState]:
    """Every host read at once, one command each (a host that cannot be read is left out)."""
    ports: dict[str, list[int]] = {host: [] for host in lab.spec.host_names()}
    for service in lab.spec.services:
        if service.ready_port is not None:
            ports[service.host].append(service.ready_port)

    def read(host: str) -> tuple[str, _HostState | None]:
        script = "echo $(iptables-save 2>/dev/null | grep -c '^-A') " + (
            "$(nft list tables 2>/dev/null | grep -c '^table')"
        )
        for port in ports[host]:  # a failed ss reads as "?": not known, not "not listening"
            script += f"; s=$(ss -Hltnu 'sport = :{port}') && echo {port} $(echo \"$s\" "
            script += f"| grep -c .) || echo {port} ?"
        code, out = _run(lab, host, script)
        lines = [line.split() for line in out.splitlines()]
        if code != 0 or len(lines) != 1 + len(ports[host]) or any(len(w) != 2 for w in lines):
            return host, None
        (rules, tables), *listening = lines
        if not (rules.isdigit() and tables.isdigit()):
            return host, None
        known = {int(p): n != "0" for p, n in listening if n.isdigit()}
        return host, _HostState(int(rules), int(tables), known)

    with ThreadPoolExecutor(max_workers=max(len(ports), 1)) as pool:
        return {host: state for host, state in pool.map(read, ports) if state is not None}


def _guard(lab: Lab, before: dict[str, _HostState]) -> list[str]:
    """Why a passing symptom probe is not a fix: what the remediation removed wholesale."""
    found: list[str] = []
    now = _host_states(lab)
    for service in lab.spec.services:
        state = now.get(service.host)
        if (
            service.ready_port is not None
            and state
            and not state.listening.get(service.ready_port, True)
        ):
            found.append(
                f"service {service.name} in {service.host} no longer listens on port "
                f"{service.ready_port}"
            )
    for host, state in now.items():
        was = before.get(host, _HostState(0, 0, {}))
        if was.rules >= 2 and state.rules == 0:
            found.append(f"every firewall rule of host {host} is gone (the table was flushed)")
        elif was.tables > 0 and state.tables == 0:
            found.append(f"every nftables table of host {host} is gone (deleted)")
    return found


@dataclass
class _Stages:
    baseline: ProbeResults
    after_fault: ProbeResults
    after_fix: ProbeResults
    after_cycles: list[ProbeResults]


def _apply(lab: Lab, remediation: Remediation) -> tuple[list[AppliedCommand], list[SkippedCommand]]:
    applied = []
    for host, command in remediation.steps:
        code, out = _run(lab, host, command)
        applied.append(AppliedCommand(host=host, command=command, exit_code=code, output=out))
    skipped = [SkippedCommand(command=c, reason=why) for c, why in remediation.skipped]
    return applied, skipped


def _verify(lab: Lab, remediation: Remediation) -> list[VerificationCheck]:
    checks = []
    for item in remediation.verifications:
        code, out = _run(lab, item.host, item.command)
        shows = code == 0 and (item.expected is None or item.expected in out)
        checks.append(
            VerificationCheck(
                host=item.host,
                command=item.command,
                expected=item.expected,
                exit_code=code,
                output=out,
                shows_expected=shows,
            )
        )
    return checks


def _probe(lab: Lab, before: ProbeResults) -> ProbeResults:
    """Every probe, with each one that turned unhealthy since `before` probed once more. No
    owner cycles in the background, so a real change is still there; a probe starved by a
    loaded machine (its timeout passed waiting for a CPU) is not taken for a change."""
    now = lab.probe()
    was = {r.name for r in before.results if r.healthy}
    turned = [r.name for r in now.results if r.name in was and not r.healthy]
    if not turned:
        return now
    again = {r.name: r for r in lab.probe(turned).results}
    return ProbeResults(tuple(again.get(r.name, r) for r in now.results))


SETTLE_TRIES = 3
SETTLE_SECONDS = 0.2


def _settled(lab: Lab, after_fault: ProbeResults) -> ProbeResults:
    """Every probe after the fix (`_probe`), with each symptom probe still failing probed
    again, a moment apart, until all pass or `SETTLE_TRIES` tries were made (see the module's
    docstring): no owner cycles in the background, so only the fix itself can change them."""
    now = _probe(lab, after_fault)
    for _ in range(SETTLE_TRIES):
        failing = [r.name for r in now.results if r.role == "symptom" and not r.healthy]
        if not failing:
            break
        time.sleep(SETTLE_SECONDS)
        again = {r.name: r for r in lab.probe(failing).results}
        now = ProbeResults(tuple(again.get(r.name, r) for r in now.results))
    return now


def _cycles(
    lab: Lab, cycles: int, before: ProbeResults, *, first: int = 1
) -> tuple[list[OwnerCycle], list[ProbeResults]]:
    done: list[OwnerCycle] = []
    stages: list[ProbeResults] = []
    for number in range(first, first + max(cycles, 0)):
        for owner in lab.spec.owners:
            try:
                lab.cycle(owner.name)
                done.append(OwnerCycle(owner=owner.name, cycle=number, ok=True))
            except LabStartError as exc:
                done.append(OwnerCycle(owner=owner.name, cycle=number, ok=False, detail=str(exc)))
        stages.append(_probe(lab, stages[-1] if stages else before))
    return done, stages


def measure_remediation(
    loaded: LoadedLab,
    remediation: Remediation,
    *,
    run_id: str,
    scenario: str,
    cycles: int = DEFAULT_CYCLES,
    privilege: Privilege | None = None,
    clock: Callable[[], str] | None = None,
) -> Outcome:
    """Measure `remediation` in a fresh lab of `loaded` (see the module docstring)."""
    # Owners cycle on demand only: no background cycle races a probe, and an owner the
    # remediation stopped is still cycled (stopping it cannot pass for a durable fix).
    with start_lab(loaded, fault=False, privilege=privilege, periodic=False) as lab:
        baseline = lab.baseline if lab.baseline is not None else lab.probe()
        before = _host_states(lab)
        after_fault = lab.inject_fault()
        applied, skipped = _apply(lab, remediation)
        after_fix = _settled(lab, after_fault)
        verification = _verify(lab, remediation) if remediation.steps else []
        gaming = _guard(lab, before) if remediation.steps else []
        owner_cycles, after_cycles = _cycles(lab, min(cycles, 1), after_fix)
        if verification and not all(c.shows_expected for c in verification) and after_cycles:
            # A fix through an owner lands on its next cycle: the checks are read there too.
            again = _verify(lab, remediation)
            verification = again if all(c.shows_expected for c in again) else verification
        more_cycles, more = _cycles(
            lab, cycles - len(after_cycles), (after_cycles or [after_fix])[-1],
            first=len(after_cycles) + 1,
        )  # fmt: skip
        owner_cycles += more_cycles
        after_cycles += more
        gaming += [
            f"owner {c.owner}'s cycle {c.cycle} failed: {c.detail}"
            for c in owner_cycles
            if not c.ok
        ][:1]
    stages = _Stages(baseline, after_fault, after_fix, after_cycles)
    return _outcome(
        loaded, remediation, stages, applied, skipped, verification, gaming, owner_cycles,
        run_id=run_id, scenario=scenario, cycles=cycles,
    )  # fmt: skip


def _symptoms(results: ProbeResults) -> list[str]:
    return [r.name for r in results.results if r.role == "symptom" and not r.healthy]


def _changed(stages: _Stages) -> tuple[list[str], list[str]]:
    """(guard probes that broke, entry probes that broke) after the fix or any cycle."""
    was = {r.name for r in stages.baseline.results if r.healthy}
    broke: dict[str, str] = {}
    for results in [stages.after_fix, *stages.after_cycles]:
        for r in results.results:
            if r.role != "symptom" and r.name in was and not r.healthy:
                broke.setdefault(r.name, r.role)
    entries = [name for name, role in broke.items() if role == "entry"]
    return list(broke), entries


def _collateral_why(broke: list[str], entries: list[str]) -> str:
    """The collateral reason: the guard probes that changed, and apart the entries lost."""
    if not broke:
        return "every keep, blocked and entry probe as before the fault"
    guards = [name for name in broke if name not in entries]
    parts = [f"changed from before the fault: {', '.join(guards)}"] if guards else []
    if entries:
        parts.append(f"entries lost: {', '.join(entries)}")
    return "; ".join(parts)


def _outcome(
    loaded: LoadedLab,
    remediation: Remediation,
    stages: _Stages,
    applied: list[AppliedCommand],
    skipped: list[SkippedCommand],
    verification: list[VerificationCheck],
    gaming: list[str],
    owner_cycles: list[OwnerCycle],
    *,
    run_id: str,
    scenario: str,
    cycles: int,
) -> Outcome:
    fixed, fixed_why = _fixed(remediation, stages, gaming)
    durable, durable_why = _durable(fixed, stages)
    broke, entries = _changed(stages)
    if remediation.steps:
        collateral: bool | None = bool(broke)
        collateral_why = _collateral_why(broke, entries)
    else:
        collateral, collateral_why = False, "nothing was applied: nothing else could change"
    verified, verified_why = _verified(remediation, verification)
    probes = [
        _stage("before-fault", stages.baseline),
        _stage("after-fault", stages.after_fault),
        _stage("after-fix", stages.after_fix),
        *(_stage(f"after-cycle-{i}", s) for i, s in enumerate(stages.after_cycles, start=1)),
    ]
    return Outcome(
        outcome_id=new_outcome_id(),
        run_id=run_id,
        scenario=scenario,
        lab_spec_hash=sha256_bytes(loaded.path.read_bytes()),
        measurer=Measurer(version=__version__, cycles=cycles),
        fixed=fixed,
        durable=durable,
        collateral=collateral,
        verified=verified,
        reasons=OutcomeReasons(
            fixed=fixed_why, durable=durable_why, collateral=collateral_why, verified=verified_why
        ),
        remediation_source=remediation.source,
        applied=applied,
        not_applied=skipped,
        owner_cycles=owner_cycles,
        probes=probes,
        entries_lost=entries,
        verification=verification,
        gaming=gaming,
    )


def _fixed(remediation: Remediation, stages: _Stages, gaming: list[str]) -> tuple[bool, str]:
    if not remediation.steps:
        return False, "nothing to apply: the symptom stays"
    still = _symptoms(stages.after_fix)
    when = "after the fix"
    if still and stages.after_cycles and not _symptoms(stages.after_cycles[0]):
        still, when = [], "once the owners' first cycle carried the fix through"
    if still:
        return False, f"symptom probe {', '.join(still)} still fails after the fix"
    if gaming:
        return False, "the symptom probe passes, but not by a fix: " + "; ".join(gaming)
    return True, f"every symptom probe passes {when}"


def _durable(fixed: bool, stages: _Stages) -> tuple[bool | None, str]:
    if not fixed:
        return None, "not fixed: there is nothing to last"
    if not stages.after_cycles:
        return None, "no owner cycle was run"
    for number, results in enumerate(stages.after_cycles, start=1):
        broken = _symptoms(results)
        if broken:
            return (
                False,
                f"symptom probe {', '.join(broken)} fails again after owner cycle {number}",
            )
    return True, f"every symptom probe still passes after {len(stages.after_cycles)} owner cycle(s)"


def _verified(remediation: Remediation, checks: list[VerificationCheck]) -> tuple[bool | None, str]:
    if not remediation.steps:
        return None, "nothing was applied: there is no fix to verify"
    if not checks:
        return False, "the run gives no verification command to re-run"
    failed = [c for c in checks if not c.shows_expected]
    if failed:
        first = failed[0]
        want = f" {first.expected!r}" if first.expected else " exit 0"
        return False, (
            f"{len(failed)} of {len(checks)} verification command(s) did not show what was "
            f"said: `{first.command}` (expected{want}, exit {first.exit_code})"
        )
    return True, f"{len(checks)} verification command(s) showed what the run said"


def measure_run(
    ledger: Ledger,
    run_id: str,
    loaded: LoadedLab,
    *,
    cycles: int = DEFAULT_CYCLES,
    privilege: Privilege | None = None,
    default_host: str | None = None,
) -> Outcome:
    """(Re)measure stored run `run_id` in fresh labs of `loaded`; the outcome, not stored.

    The commands run in the lab's default host unless they name one (``web: ...``): the host
    given, else the host the fault is injected in."""
    from agentledger.outcomes.remediation import read_remediation
    from agentledger.store.evidence import load_run_evidence
    from agentledger.store.writer import REPORT

    evidence = load_run_evidence(ledger, run_id)
    log = evidence.shell_log
    events = [item.event for item in log.commands] if log.commands is not None else None
    hosts = loaded.spec.host_names()
    host = default_host or loaded.spec.fault.steps[0].host
    remediation = read_remediation(evidence.text(REPORT), events, hosts, host)
    return measure_remediation(
        loaded,
        remediation,
        run_id=run_id,
        scenario=evidence.metadata.scenario,
        cycles=cycles,
        privilege=privilege,
    )


def lab_of_run(
    ledger: Ledger, run_id: str, lab: str | None = None, *, scratch: Path | None = None
) -> LoadedLab:
    """The lab a run's outcome is measured in: `lab` (a lab.yaml, a scenario directory or a
    packaged scenario id); else the lab.yaml stored in the run (the spec it ran against,
    copied into `scratch`, a directory the caller removes); else the packaged labs scenario
    named like the run's scenario."""
    from agentledger.errors import InputError
    from agentledger.labs import LAB_FILE, load_lab, resolve_labs

    stored = ledger.load(run_id)
    scenario = stored.metadata.scenario
    if lab is None and scratch is not None and LAB_FILE in stored.manifest.files:
        folder = scratch / run_id / _safe_name(scenario)
        folder.mkdir(parents=True)
        (folder / LAB_FILE).write_bytes(ledger.read_bytes(run_id, LAB_FILE))
        return load_lab(folder)
    target = lab or scenario
    try:
        found = resolve_labs(target)
    except InputError as exc:
        raise InputError(
            f"run {run_id}: no lab for scenario {scenario!r} ({exc}); name one with --lab"
        ) from None
    if len(found) != 1:
        raise InputError(f"{target}: names {len(found)} labs; name one lab.yaml with --lab")
    return found[0]


def _safe_name(scenario: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", scenario.lower()).strip("-")[:40] or "lab"


def lab_runs(ledger: Ledger, run_ids: Sequence[str]) -> list[str]:
    """Those of `run_ids` that ran against a lab (they hold a lab.yaml)."""
    from agentledger.labs import LAB_FILE

    return [run_id for run_id in run_ids if LAB_FILE in ledger.load(run_id).manifest.files]


def measure_and_record(
    ledger: Ledger,
    run_ids: Sequence[str],
    *,
    lab: str | None = None,
    cycles: int = DEFAULT_CYCLES,
    default_host: str | None = None,
) -> Iterator[Outcome]:
    """Measure each run in fresh labs and record its outcome (and lab label), one by one."""
    from agentledger.outcomes import record_outcome

    with tempfile.TemporaryDirectory(prefix="agentledger-outcome-") as scratch:
        for run_id in run_ids:
            loaded = lab_of_run(ledger, run_id, lab, scratch=Path(scratch))
            outcome = measure_run(ledger, run_id, loaded, cycles=cycles, default_host=default_host)
            record_outcome(ledger, outcome)
            yield outcome
