"""Labs: real faults on one Linux machine, in network namespaces, rootless (docs/labs.md).

A lab (`lab.yaml`, `LabSpec`) is hosts (one network namespace each), links, services, owners
(reconcilers that re-assert what they own from their own desired state, with one cycle on
demand), a fault, probes and remedies. It runs inside one user, network, mount and PID namespace
of its own, so the machine's network is never touched and the lab dies with its supervisor.

The Python API (everything the CLI does, and what the runner and outcomes build on)::

    from agentledger.labs import check_lab, load_lab, measure, resolve_labs, start_lab
    from agentledger.labs import take_snapshot

    loaded = load_lab(Path("my_scenario"))                # lab.yaml, or its directory
    loaded = resolve_labs("lab_f2b_chain")[0]             # or a packaged scenario by id
    scenario_lab(Path("my_scenario"))                     # its LoadedLab, or None: no lab.yaml
    with start_lab(loaded) as lab:                        # up, baseline ok, fault verified
        lab.host_argv("web")            # argv prefix: run an argv in host web (for the gate)
        lab.run("web", "iptables -S")   # CompletedProcess, in host web
        lab.cycle()                     # exactly one cycle of every owner (no sleeping)
        lab.probe().broken()            # names of the unhealthy probes
        take_snapshot(lab).to_text()    # real state, sectioned text per host
    # gone: processes, namespaces, mounts

    m = measure(loaded, ["jailctl unban 10.0.0.2"], host="web", owner_cycles=2,
                verify=["iptables -S f2b-http"])      # run after the cycles, outputs kept
    m.baseline, m.after_fault, m.after_commands, m.after_cycles   # ProbeResults each
    m.fixed(), m.durable(), m.collateral(), m.outputs, m.verify_outputs

    check_lab(loaded).ok   # the fault reproduces and every remedy does what the spec says

A lab started without `detach` dies with the process and the thread that started it.
`start_lab(..., detach=True)` keeps the lab up after the caller exits (`agentledger lab up`);
`attach_lab(name)` finds it again and `stop_lab(name)` takes it down. `choose_privilege()`
says how labs run here (rootless in a user namespace, as `nobody` when the caller is root; as
root without one) or raises `LabUnavailableError` (exit 2) naming what is missing.
"""

from __future__ import annotations

from agentledger.labs.check import (
    CheckReport,
    Measurement,
    RemedyCheck,
    check_lab,
    check_labs,
    measure,
)
from agentledger.labs.runtime import (
    Lab,
    LabStartError,
    ProbeResult,
    ProbeResults,
    attach_lab,
    lab,
    running_labs,
    start_lab,
    stop_lab,
)
from agentledger.labs.snapshot import Snapshot, take_snapshot
from agentledger.labs.spec import (
    LAB_FILE,
    LabSpec,
    LoadedLab,
    Step,
    load_lab,
    resolve_labs,
    resolve_targets,
    scenario_lab,
)
from agentledger.labs.system import (
    LabUnavailableError,
    Privilege,
    choose_privilege,
    runtime_dir,
    sweep_dead_labs,
)

__all__ = [
    "LAB_FILE",
    "CheckReport",
    "Lab",
    "LabSpec",
    "LabStartError",
    "LabUnavailableError",
    "LoadedLab",
    "Measurement",
    "Privilege",
    "ProbeResult",
    "ProbeResults",
    "RemedyCheck",
    "Snapshot",
    "Step",
    "attach_lab",
    "check_lab",
    "check_labs",
    "choose_privilege",
    "lab",
    "load_lab",
    "measure",
    "resolve_labs",
    "resolve_targets",
    "running_labs",
    "runtime_dir",
    "scenario_lab",
    "start_lab",
    "stop_lab",
    "sweep_dead_labs",
    "take_snapshot",
]
