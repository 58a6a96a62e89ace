"""Benchmark of CLI start-up (issues 34, 38): whole-process time of the commands a person or an
agent runs again and again, against `python -c pass` with the same interpreter.

    .venv/bin/python bench/startup.py                       # 7 rounds of 5 calls each
    .venv/bin/python bench/startup.py --rounds 9 --json results.json
    .venv/bin/python bench/startup.py --before /tmp/base/src  # also an older source, alternately

The commands: `agentledger --help` (goal: under 3x python, issue 34), `agentledger label RUN
--verdict unsafe --criterion C2 --fired yes --by bench` on a ledger of scored runs (goal:
under 300 ms and within 15x python, issue 38), `agentledger exec --run-dir D -- true` (the
gated shell) and `agentledger guard --expect E OUTPUT` (the production guard). Each round runs
every command `--calls` times alternately and keeps the median; the figures are the min /
median / max of the rounds' medians, with the load average before and after, then the CPU
time of each (user + system), which other work on a loaded machine moves less. `--before SRC`
runs the same commands from another source tree (PYTHONPATH) in the same rounds, on other runs
of the same ledger. The package's bytecode is compiled first, as an installed package has it.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from guard import WATCHDOG_EXPECT, watchdog_output
from measure import small_ledger

GOALS = {"--help": 3.0, "label": 15.0}
"""Command -> the most times `python -c pass` it may take (issues 34 and 38)."""
LABEL_GOAL_MS = 300.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5, help="calls of each command a round")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--before", type=Path, help="the src/ directory of another agentledger")
    options = parser.parse_args()
    script = Path(sys.executable).parent / "agentledger"
    if not script.exists():
        raise SystemExit(f"{script} not found: install agentledger in this environment first")
    import agentledger

    compileall.compile_dir(str(Path(agentledger.__file__).parent), quiet=1)
    trees = {"": None}
    if options.before:
        compileall.compile_dir(str(options.before / "agentledger"), quiet=1)
        trees[" (before)"] = str(options.before.resolve())
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-startup-") as work:
        folder = Path(work)
        labels_needed = len(trees) * (options.rounds * options.calls + 3)
        ids = iter(small_ledger(folder / "ledger", labels_needed, scored=True))
        (folder / "run").mkdir()
        (folder / "expect.json").write_text(json.dumps(WATCHDOG_EXPECT))
        (folder / "output.json").write_text(watchdog_output(1))
        commands: dict[str, list[str] | None] = {"python -c pass": [sys.executable, "-c", "pass"]}
        envs: dict[str, dict[str, str] | None] = {"python -c pass": None}
        for suffix, src in trees.items():
            env = {**os.environ, "PYTHONPATH": src} if src else None
            plain = {
                "--help": [str(script), "--help"],
                "label": None,  # another run each call
                "exec -- true": [
                    str(script), "exec", "--run-dir", str(folder / "run"), "--", "true",
                ],
                "guard": [
                    str(script), "guard", "--expect", str(folder / "expect.json"),
                    str(folder / "output.json"),
                ],
            }  # fmt: skip
            for name, argv in plain.items():
                commands[name + suffix] = argv
                envs[name + suffix] = env

        def argv_of(name: str) -> list[str]:
            argv = commands[name]
            if argv is not None:
                return argv
            return [
                str(script), "label", next(ids), "--ledger", str(folder / "ledger"),
                "--verdict", "unsafe", "--criterion", "C2", "--fired", "yes", "--by", "bench",
            ]  # fmt: skip

        for name in commands:  # warm-up: the page cache
            for _ in range(3):
                subprocess.run(argv_of(name), capture_output=True, env=envs[name], check=False)
        load_before = os.getloadavg()
        rounds: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(options.rounds):
            calls: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(options.calls):
                for name in commands:
                    argv = argv_of(name)
                    used = resource.getrusage(resource.RUSAGE_CHILDREN)
                    started = time.perf_counter()
                    done = subprocess.run(argv, capture_output=True, env=envs[name], check=False)
                    calls[name].append((time.perf_counter() - started) * 1000)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu[name].append(
                        (after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime) * 1000
                    )
                    if done.returncode != 0:
                        failed = f"{' '.join(argv)} exited {done.returncode}"
                        raise SystemExit(f"{failed}: {done.stderr!r}")
            for name, values in calls.items():
                rounds[name].append(statistics.median(values))
        load_after = os.getloadavg()
    baseline = statistics.median(rounds["python -c pass"])
    print(
        f"CLI start-up, whole processes (ms): min / median / max of {options.rounds} rounds, "
        f"each the median of {options.calls} calls"
    )
    for name, values in rounds.items():
        median = statistics.median(values)
        print(
            f"  {name:<22} {min(values):7.1f} {median:7.1f} {max(values):7.1f}   "
            f"{median / baseline:5.2f}x python"
        )
    print(
        "  load average (1, 5, 15 min) before: "
        f"{', '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{', '.join(f'{x:.2f}' for x in load_after)} ({os.cpu_count()} CPUs)"
    )
    calls_made = options.rounds * options.calls
    print(f"the same, CPU time of each process (user + system, ms, median of {calls_made} calls)")
    cpu_baseline = statistics.median(cpu["python -c pass"])
    for name, values in cpu.items():
        median = statistics.median(values)
        print(f"  {name:<22} {median:7.1f}   {median / cpu_baseline:5.2f}x python")
    for name, goal in GOALS.items():
        ratio = statistics.median(rounds[name]) / baseline
        print(f"  goal: {name} within {goal:g}x python: {ratio:.2f}x", end="")
        if name == "label":
            took = statistics.median(rounds[name])
            print(f", {took:.1f} ms (under {LABEL_GOAL_MS:g} ms)", end="")
            ratio = max(ratio, goal * took / LABEL_GOAL_MS)
        print(" (met)" if ratio <= goal else " (NOT met)")
    if options.json:
        figures = {
            "rounds_ms": rounds,
            "baseline_ms": baseline,
            "cpu_ms": cpu,
            "loadavg_before": list(load_before),
            "loadavg_after": list(load_after),
        }
        options.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
