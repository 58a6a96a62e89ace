"""Labs: how long a lab cycle takes against `unshare -Urn true`, the labs suite's check, leaks.

A lab cycle is what every lab check and every lab run pays: up (namespaces, links, services,
owners, baseline probes), the fault injected and verified, a snapshot, down. It is measured
against the cheapest possible namespace (`unshare -Urn true`, run the same way, as the same
user) in the same run, so the ratio means something on any machine. "Waiting" is the share of
a cycle's wall time not spent on a CPU (by this process and everything it started): readiness
polls, probe round trips and probe timeouts.

Then the whole `labs` suite is checked (`lab check labs`: every remedy of every scenario in a
fresh lab), and N more cycles of a small lab are run to see that nothing is left behind: no
process (so no namespace), mount, runtime record or open file of this process, and the
machine's own network state (iptables-save, nft, routes, rules, links, qdiscs) unchanged.

    python bench/labs.py                  # 20 measured cycles, the suite, 1,000 leak cycles,
                                          # the suite with two agents
    python bench/labs.py --quick          # 5 cycles, the suite, 50 leak cycles, the agents
    python bench/labs.py --quick --cycles-only   # the cycle figures alone
    python bench/labs.py --suite-agents   # only the suite with two agents

"Spawns" counts the programs one cycle starts (successful execve calls, strace -f), when
strace is installed: each costs a fork, an exec and a dynamic link, which on a loaded machine
is mostly waiting for a CPU.

Last, the `labs` suite with the two scripted agents (careful and hasty), five repeats each,
through `agentledger run --repeat 5` (each repeat a fresh lab, each run's outcome measured in
another): the whole wall time (goal: under two minutes on two cores), and where it goes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from agentledger.labs import (  # noqa: E402
    check_labs,
    choose_privilege,
    load_lab,
    resolve_labs,
    start_lab,
    take_snapshot,
)
from agentledger.records.outcomes import Outcome  # noqa: E402
from labs_support import write_small_lab  # noqa: E402


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(block: Callable[[], object]) -> tuple[float, float]:
    cpu, started = _cpu(), time.perf_counter()
    block()
    return time.perf_counter() - started, _cpu() - cpu


_ONE_CYCLE = """\
import sys
from agentledger.labs import Privilege, resolve_labs, start_lab, take_snapshot
privilege = Privilege(sys.argv[1], sys.argv[2] or None)  # type: ignore[arg-type]
with start_lab(resolve_labs("lab_f2b_chain")[0], privilege=privilege) as lab:
    take_snapshot(lab)
"""


def _spawns(mode: str, user: str | None) -> dict[str, int] | str:
    """The programs one cycle (up, fault verified, snapshot, down) starts, by name: execve
    calls that succeeded, seen by strace -f (the Python that runs the cycle not counted)."""
    strace = shutil.which("strace")
    if strace is None:
        return "strace is not installed"
    with tempfile.TemporaryDirectory() as temp:
        trace = Path(temp) / "trace"
        subprocess.run(
            [strace, "-f", "-qq", "-z", "-e", "trace=execve", "-e", "signal=none", "-o", str(trace),
             sys.executable, "-c", _ONE_CYCLE, mode, user or ""],
            check=True, cwd="/", env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )  # fmt: skip
        counts: dict[str, int] = {}
        for line in trace.read_text().splitlines()[1:]:
            found = re.search(r'execve\("([^"]+)"', line)  # -z: successful calls only
            if found:
                name = found[1].rsplit("/", 1)[-1]
                counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


MARKER = b"agentledger-lab:benchleak"
"""The leak cycles' labs are named benchleakN: other labs on the machine are not counted."""


def _lab_processes() -> int:
    """Supervisors and inits of the leak cycles' labs still alive (not zombies). While one
    lives, so may its lab; once none does, the kernel has killed every process of those labs,
    and their namespaces and mounts went with them."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and MARKER in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
                count += state not in ("Z", "X")
        except (OSError, IndexError):
            continue
    return count


def _host_network() -> str:
    """The machine's own network state, read-only, without timestamps and counters."""
    out = []
    for argv in (
        ["iptables-save"],
        ["nft", "list", "ruleset"],
        ["ip", "route", "show", "table", "all"],
        ["ip", "rule"],
        ["ip", "-o", "link"],
        ["tc", "qdisc"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        text = re.sub(r"(?m)^#.*\n", "", done.stdout)
        out.append(re.sub(r"\[\d+:\d+\]|packets \d+ bytes \d+", "", text))
    return "\n".join(out)


def _leak_state(runtime: Path) -> dict[str, int]:
    for _ in range(200):  # the last supervisors may still be on their way out
        if not _lab_processes():
            break
        time.sleep(0.01)
    return {
        "lab processes": _lab_processes(),
        "mounts (this process)": len(Path("/proc/self/mountinfo").read_text().splitlines()),
        "open files (this process)": len(os.listdir("/proc/self/fd")),
        "runtime records": len(list(runtime.glob("*"))),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer cycles.")
    parser.add_argument("--cycles", type=int, help="Measured lab cycles [20; quick 5].")
    parser.add_argument("--leak-cycles", type=int, help="Leak-check cycles [1000; quick 50].")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    parser.add_argument(
        "--cycles-only", action="store_true", help="Only the cycle figures: no suite, no leaks."
    )
    parser.add_argument(
        "--suite-agents", action="store_true", help="Only the labs suite with two agents."
    )
    parser.add_argument("--repeat", type=int, default=5, help="Repeats of the agents [5].")
    parser.add_argument("--concurrency", type=int, default=6, help="Runs at a time [6].")
    args = parser.parse_args()
    if args.suite_agents:
        return _print(suite_agents(args.repeat, args.concurrency), args.json)
    cycles = args.cycles or (5 if args.quick else 20)
    leak_cycles = args.leak_cycles or (50 if args.quick else 1000)

    with tempfile.TemporaryDirectory() as temp:
        runtime = Path(temp) / "xdg"
        runtime.mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        privilege = choose_privilege()
        baseline_argv = [*privilege.prefix(), "unshare", "-Urn", "true"]
        if privilege.mode == "root":
            baseline_argv = ["unshare", "-n", "true"]
        loaded = resolve_labs("lab_f2b_chain")[0]

        baseline, lab_walls, lab_cpus, snapshot_walls = [], [], [], []
        for _ in range(cycles):
            wall, _cpu_used = _timed(lambda: subprocess.run(baseline_argv, check=True, cwd="/"))
            baseline.append(wall)

            def cycle() -> None:
                with start_lab(loaded, privilege=privilege) as lab:
                    snapshot_walls.append(_timed(lambda: take_snapshot(lab))[0])

            wall, cpu = _timed(cycle)
            lab_walls.append(wall)
            lab_cpus.append(cpu)
        waiting = [max(0.0, 1 - c / w) for w, c in zip(lab_walls, lab_cpus, strict=True)]
        cycle_figures = {
            "machine": {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0]},
            "privilege": f"{privilege.mode}" + (f" as {privilege.user}" if privilege.user else ""),
            "lab": "lab_f2b_chain (4 hosts, a bridge, 2 services, 1 owner, 4 probes)",
            "cycles": cycles,
            "lab_cycle_median_s": round(statistics.median(lab_walls), 3),
            "lab_cycle_p95_s": round(_percentile(lab_walls, 0.95), 3),
            "unshare_median_s": round(statistics.median(baseline), 4),
            "unshare_p95_s": round(_percentile(baseline, 0.95), 4),
            "ratio_median": round(statistics.median(lab_walls) / statistics.median(baseline), 1),
            "snapshot_median_s": round(statistics.median(snapshot_walls), 3),
            "waiting_share_median": round(statistics.median(waiting), 2),
            "cpu_per_cycle_median_s": round(statistics.median(lab_cpus), 3),
        }
        spawns = _spawns(privilege.mode, privilege.user)
        cycle_figures["spawns_per_cycle"] = (
            sum(spawns.values()) if isinstance(spawns, dict) else spawns
        )
        cycle_figures["spawns_by_program"] = spawns
        if args.cycles_only:
            _print(cycle_figures, args.json)
            return 0

        suite = resolve_labs("labs")
        suite_wall, _ = _timed(lambda: check_labs(suite, privilege=privilege, jobs=6))
        remedies = sum(len(loaded.spec.remedies) for loaded in suite)

        small = load_lab(write_small_lab(Path(temp) / "small"))
        before, host_before = _leak_state(runtime / "agentledger-labs"), _host_network()

        def small_cycle(i: int) -> None:
            with start_lab(small, name=f"benchleak{i}", privilege=privilege, periodic=False):
                pass

        leak_wall, _ = _timed(
            lambda: list(ThreadPoolExecutor(max_workers=4).map(small_cycle, range(leak_cycles)))
        )
        after = _leak_state(runtime / "agentledger-labs")
        host_unchanged = _host_network() == host_before

    figures = {
        **cycle_figures,
        "suite": f"{len(suite)} scenarios, {remedies} remedies, one fresh lab each, 6 at a time",
        "suite_check_s": round(suite_wall, 1),
        "leak_cycles": leak_cycles,
        "leak_cycles_s": round(leak_wall, 1),
        "leak_before": before,
        "leak_after": after,
        "leaked": {k: after[k] - before[k] for k in before if after[k] != before[k]},
        "host_network_unchanged": host_unchanged,
    }
    figures.update(suite_agents(args.repeat, args.concurrency))
    failed = _print(figures, args.json)
    return 1 if failed or figures["leaked"] or not host_unchanged else 0


def _print(figures: dict[str, object], as_json: bool) -> int:
    if as_json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:24} {value}")
    return 1 if figures.get("agents_failed") else 0


AGENT_MODELS = ("scripted-careful", "scripted-hasty")
AGENTS_GOAL_S = 120.0


def _clean(outcome: Outcome) -> bool:
    """Fixed, durable, without collateral and verified: what careful's every fix should be."""
    measured = (outcome.fixed, outcome.durable, outcome.collateral, outcome.verified)
    return measured == (True, True, False, True)


def suite_agents(repeat: int, concurrency: int) -> dict[str, object]:
    """The labs suite with the two scripted agents, `repeat` runs of each per scenario, through
    the real `agentledger run --repeat` (a subprocess): its whole wall time against the goal,
    and where the time goes (read back from the ledger it wrote): the runs (lab up, the
    agent's commands through the gate, snapshot, down) and the outcome checks (a fresh lab
    each), and the CPU all of it used, against the two cores' worth of wall time."""
    from agentledger.outcomes import latest_outcomes
    from agentledger.store.ledger import Ledger

    agent = ROOT / "src/agentledger/data/examples/netops/agent/agent-remediate.toml"
    suite = ROOT / "src/agentledger/data/suites/labs"
    with tempfile.TemporaryDirectory() as temp:
        ledger_dir = Path(temp) / "ledger"
        argv = [sys.executable, "-m", "agentledger", "run", str(suite), "--agent", str(agent),
                "--ledger", str(ledger_dir), "--repeat", str(repeat),
                "--concurrency", str(concurrency), "--quiet"]  # fmt: skip
        for model in AGENT_MODELS:
            argv += ["--model", model]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        # Every gated command is a Python process of its own: as in an installed package, its
        # modules' bytecode is compiled once, not at each start (PYTHONDONTWRITEBYTECODE would
        # otherwise have every one compile them all: about half of its CPU).
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src/agentledger")],
                       env=env, capture_output=True, check=True)  # fmt: skip
        wall, cpu = _timed(lambda: subprocess.run(argv, env=env, capture_output=True, check=False))
        with Ledger.open(ledger_dir) as ledger:
            runs = [ledger.load(run.run_id) for run in ledger.runs()]
            outcomes = latest_outcomes(ledger, [run.metadata.run_id for run in runs])
    run_s = sum((r.metadata.ended_at - r.metadata.started_at).total_seconds() for r in runs
                if r.metadata.ended_at is not None)  # fmt: skip
    commands = sum(r.summary.commands_run or 0 for r in runs if r.summary is not None)
    not_ok = [
        f"{r.metadata.run_id}: {r.summary.error if r.summary else 'no summary'}"
        for r in runs
        if r.summary is None or r.summary.exit_status != "ok"
    ]
    careful = [o for o in outcomes.values() if "careful" in o.run_id]
    hasty = [o for o in outcomes.values() if "hasty" in o.run_id]
    expected = 10 * repeat * len(AGENT_MODELS)
    return {
        "agents": f"{', '.join(AGENT_MODELS)}; {repeat} repeats, {concurrency} at a time",
        "agents_runs": len(runs),
        "agents_runs_not_ok": not_ok,
        "agents_outcomes": len(outcomes),
        "agents_wall_s": round(wall, 1),
        "agents_goal_s": AGENTS_GOAL_S,
        "agents_within_goal": wall <= AGENTS_GOAL_S,
        "agents_runs_s_sum": round(run_s, 1),
        "agents_commands": commands,
        "agents_cpu_s": round(cpu, 1),
        "agents_cpu_share": round(cpu / (wall * (os.cpu_count() or 1)), 2),
        "agents_careful_clean": sum(map(_clean, careful)),
        "agents_careful_not_clean": [
            f"{o.run_id}: {o.reasons.model_dump()}" for o in careful if not _clean(o)
        ],
        "agents_hasty_durable": sum(bool(o.fixed and o.durable) for o in hasty),
        "agents_failed": len(runs) != expected or bool(not_ok) or len(outcomes) != expected,
    }


if __name__ == "__main__":
    sys.exit(main())
