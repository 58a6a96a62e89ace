"""Benchmark of labelling a run from the CLI (issue 17): whole-process time of `agentledger label`.

    .venv/bin/python bench/label.py                  # 20 repeats
    .venv/bin/python bench/label.py --repeats 50 --json results.json
    .venv/bin/python bench/label.py --before /tmp/base/src   # also an older source, alternately

A person labels run after run, so the figure is the median wall time of
`agentledger label RUN --verdict unsafe --criterion C2 --fired yes --by bench` (the installed
console script: open the ledger, check the run and the criteria its judge assessed, write the
label, index it) against `python -c pass` with the same interpreter, measured alternately in
the same run, on a ledger of 200 runs each scored by one judge. Goal: under 300 ms and within
15x `python -c pass` (issue 38), with min / median / max and the load average. The CPU
time of each process too (user + system), which other processes on a loaded machine move less
than the wall time (a label's wall time also waits for its fsyncs). Then the
import time of the command (`python -X importtime`), the modules that cost the most first, to
keep the path lazy.

The package's bytecode is compiled first, as an installed package has it.

With `--large N` (10,000 by default; 0 leaves it out) the same label is timed too on a ledger
of N runs (a journal of 2N segments): what opening a large ledger costs a label, against the
same label on the small ledger (a label reads the journal on from the head this machine saw,
not from its start). Each command's state directory (the heads seen) is the benchmark's own.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import small_ledger

GOAL_MS = 300.0
GOAL_RATIO = 15.0  # times `python -c pass` (issue 38)


def timed_runs(
    commands: dict[str, list[list[str]]],
    repeats: int,
    envs: dict[str, dict[str, str]] | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU milliseconds of each run of each command, run alternately; each repeat runs the
    next argv of its list (labels are write-once: every call labels another run). CPU time
    (user + system, of the child) weighs other processes on a loaded machine less than wall
    time does. `envs`: the environment of a command, by name (the before's PYTHONPATH)."""
    envs = envs or {}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for name, argvs in commands.items():  # warm-up: page cache
        for argv in argvs[:3]:
            subprocess.run(
                argv,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
                env=envs.get(name),
            )
    for n in range(repeats):
        for name, argvs in commands.items():
            argv = argvs[3 + n] if len(argvs) > 1 else argvs[0]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                argv, capture_output=True, text=True, check=False, env=envs.get(name)
            )
            samples[name].append((time.perf_counter() - started) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu[name].append(used * 1000)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
    return samples, cpu


def import_times(argv: list[str], top: int) -> list[tuple[str, int]]:
    """The `top` modules with the largest cumulative import time (µs) of `argv`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, check=False
    )
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if match and not match.group(3).strip() and len(match.group(3)) <= 2:
            rows.append((match.group(4), int(match.group(2))))
    return sorted(rows, key=lambda row: row[1], reverse=True)[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--before",
        type=Path,
        help="the src/ directory of another agentledger (an older commit): its label is timed "
        "too, alternately, on other runs of the same ledger",
    )
    parser.add_argument(
        "--large",
        type=int,
        default=10_000,
        help="also time the label on a ledger of this many runs (0: not)",
    )
    options = parser.parse_args()
    script = Path(sys.executable).parent / "agentledger"
    if not script.exists():
        raise SystemExit(f"{script} not found: install agentledger in this environment first")
    import agentledger

    compileall.compile_dir(str(Path(agentledger.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-label-") as work:
        root = Path(work) / "ledger"
        per_command = max(200, options.repeats + 3)
        ids = small_ledger(root, 2 * per_command if options.before else per_command, scored=True)

        def label(run_id: str) -> list[str]:
            return [
                str(script), "label", run_id, "--ledger", str(root), "--verdict", "unsafe",
                "--criterion", "C2", "--fired", "yes", "--by", "bench",
            ]  # fmt: skip

        large = Path(work) / "large"
        large_ids = []
        if options.large:
            large_ids = small_ledger(large, max(options.large, 2 * per_command))

        def label_large(run_id: str) -> list[str]:
            return [
                str(script), "label", run_id, "--ledger", str(large), "--verdict", "unsafe",
                "--by", "bench",
            ]  # fmt: skip

        env = {**os.environ, "AGENTLEDGER_STATE_DIR": str(Path(work) / "state")}
        load_before = os.getloadavg()
        commands = {
            "python -c pass": [[sys.executable, "-c", "pass"]],
            "agentledger label": [label(run_id) for run_id in ids[:per_command]],
        }
        envs = {name: env for name in commands}
        big = f"label, {options.large:,} runs"
        if options.large:
            commands[big] = [label_large(run_id) for run_id in large_ids[:per_command]]
            envs[big] = env
        if options.before:
            compileall.compile_dir(str(options.before / "agentledger"), quiet=1)
            before_env = {**env, "PYTHONPATH": str(options.before.resolve())}
            commands["label (before)"] = [label(run_id) for run_id in ids[per_command:]]
            envs["label (before)"] = before_env
            if options.large:
                argvs = [label_large(run_id) for run_id in large_ids[per_command:]]
                commands[f"{big} (before)"] = argvs
                envs[f"{big} (before)"] = before_env
        wall_ms, cpu_ms = timed_runs(commands, options.repeats, envs)
        load_after = os.getloadavg()
        modules = import_times(["-m", "agentledger", *label(ids[-1])[1:]], 12)
    medians = {name: statistics.median(values) for name, values in wall_ms.items()}
    cpu = {name: statistics.median(values) for name, values in cpu_ms.items()}
    baseline = medians["python -c pass"]
    took = medians["agentledger label"]
    print(f"label start to finish (median of {options.repeats}, whole processes, ms)")
    for name, value in medians.items():
        print(f"  {name:<28} {value:7.1f}   {value / baseline:5.2f}x python")
    for name, values in wall_ms.items():
        print(
            f"  {name:<28} min {min(values):.1f} / median {statistics.median(values):.1f} / max "
            f"{max(values):.1f}"
        )
    print(
        "  load average (1, 5, 15 min) before: "
        f"{', '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{', '.join(f'{x:.2f}' for x in load_after)} ({os.cpu_count()} CPUs)"
    )
    print("the same, CPU time of each process (user + system, ms)")
    for name, value in cpu.items():
        print(f"  {name:<28} {value:7.1f}   {value / cpu['python -c pass']:5.2f}x python")
    ratio = took / baseline
    verdict = "met" if took <= GOAL_MS and ratio <= GOAL_RATIO else "NOT met"
    print(
        f"  goal: label under {GOAL_MS:g} ms and within {GOAL_RATIO:g}x python: {took:.1f} ms, "
        f"{ratio:.2f}x ({verdict})"
    )
    if options.large:
        print(
            f"  a label on a ledger of {options.large:,} runs: CPU "
            f"{cpu[big] / cpu['agentledger label']:.2f}x the same label on {per_command} runs"
        )
    print("largest imports of `agentledger label` (cumulative, ms; python -X importtime)")
    for name, micros in modules:
        print(f"  {name:<40} {micros / 1000:7.1f}")
    if options.json:
        figures = {
            "wall_ms": medians,
            "wall_ms_rounds": wall_ms,
            "loadavg_before": list(load_before),
            "loadavg_after": list(load_after),
            "cpu_ms": cpu,
            "goal_ms": GOAL_MS,
            "repeats": options.repeats,
            "imports_ms": {name: micros / 1000 for name, micros in modules},
            "large_runs": options.large,
        }
        options.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
