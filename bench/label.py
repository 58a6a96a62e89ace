"""Benchmark of labelling a run from the CLI (issue 17): whole-process time of `agentledger label`.

    .venv/bin/python bench/label.py                  # 20 repeats
    .venv/bin/python bench/label.py --repeats 50 --json results.json

A person labels run after run, so the figure is the median wall time of
`agentledger label RUN --verdict unsafe --criterion C2 --fired yes --by bench` (the installed
console script: open the ledger, check the run and the criteria its judge assessed, write the
label, index it) against `python -c pass` with the same interpreter, measured alternately in
the same run, on a ledger of 200 runs each scored by one judge. Goal: under 300 ms. The CPU
time of each process too (user + system), which other processes on a loaded machine move less
than the wall time (a label's wall time also waits for its fsyncs). Then the
import time of the command (`python -X importtime`), the modules that cost the most first, to
keep the path lazy.

The package's bytecode is compiled first, as an installed package has it.
"""

from __future__ import annotations

import argparse
import compileall
import json
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


def timed_runs(
    commands: dict[str, list[list[str]]], repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU milliseconds of each command, run alternately; each repeat runs the
    next argv of its list (labels are write-once: every call labels another run). CPU time
    (user + system, of the child) weighs other processes on a loaded machine less than wall
    time does."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for argvs in commands.values():  # warm-up: page cache
        for argv in argvs[:3]:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    for n in range(repeats):
        for name, argvs in commands.items():
            argv = argvs[3 + n] if len(argvs) > 1 else argvs[0]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            samples[name].append((time.perf_counter() - started) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu[name].append(used * 1000)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
    return (
        {name: statistics.median(values) for name, values in samples.items()},
        {name: statistics.median(values) for name, values in cpu.items()},
    )


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
    options = parser.parse_args()
    script = Path(sys.executable).parent / "agentledger"
    if not script.exists():
        raise SystemExit(f"{script} not found: install agentledger in this environment first")
    import agentledger

    compileall.compile_dir(str(Path(agentledger.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-label-") as work:
        root = Path(work) / "ledger"
        ids = small_ledger(root, max(200, options.repeats + 3), scored=True)

        def label(run_id: str) -> list[str]:
            return [
                str(script), "label", run_id, "--ledger", str(root), "--verdict", "unsafe",
                "--criterion", "C2", "--fired", "yes", "--by", "bench",
            ]  # fmt: skip

        medians, cpu = timed_runs(
            {
                "python -c pass": [[sys.executable, "-c", "pass"]],
                "agentledger label": [label(run_id) for run_id in ids],
            },
            options.repeats,
        )
        modules = import_times(["-m", "agentledger", *label(ids[-1])[1:]], 12)
    baseline = medians["python -c pass"]
    took = medians["agentledger label"]
    print(f"label start to finish (median of {options.repeats}, whole processes, ms)")
    for name, value in medians.items():
        print(f"  {name:<28} {value:7.1f}   {value / baseline:5.2f}x python")
    print("the same, CPU time of each process (user + system, ms)")
    for name, value in cpu.items():
        print(f"  {name:<28} {value:7.1f}   {value / cpu['python -c pass']:5.2f}x python")
    verdict = "met" if took <= GOAL_MS else "NOT met"
    print(f"  goal: label under {GOAL_MS:g} ms: {took:.1f} ms ({verdict})")
    print("largest imports of `agentledger label` (cumulative, ms; python -X importtime)")
    for name, micros in modules:
        print(f"  {name:<40} {micros / 1000:7.1f}")
    if options.json:
        figures = {
            "wall_ms": medians,
            "cpu_ms": cpu,
            "goal_ms": GOAL_MS,
            "repeats": options.repeats,
            "imports_ms": {name: micros / 1000 for name, micros in modules},
        }
        options.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
