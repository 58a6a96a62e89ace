"""Benchmark of judging runs a pack does not apply to: time per run, before and after.

    .venv/bin/python bench/judge_not_applicable.py                 # 200 runs, 3 rounds
    .venv/bin/python bench/judge_not_applicable.py --runs 500 --before /path/to/old/src

The runs are synthetic OpenHands trajectories (bench/traces.py's, median about 200 KB, general
tasks with no infrastructure fault), imported once. Each round judges a fresh copy of that
ledger with the default pack (remediation-safety, which applies to none of them) as the
console script does, a process of its own, and reports wall and CPU time per run; with
`--before SRC` the same with another checkout's `src` first on PYTHONPATH, alternating with
this one, so both see the same load. For reference, the judge's start-up alone (`judge` on the
same ledger once every run is scored) is measured too and taken off the per-run figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from measure import SRC, alternate, fresh_copy, run_with_src
from traces import make_data


def one_round(base: Path, src: Path, work: Path, runs: int) -> dict[str, float]:
    ledger = work / "ledger"
    fresh_copy(base, ledger)
    judge = [sys.executable, "-m", "agentledger", "judge", "--ledger", str(ledger)]
    first = run_with_src(judge, src)
    if f"not-applicable {runs}" not in first.stdout:
        raise SystemExit(f"expected {runs} not-applicable runs: {first.stdout}")
    idle = run_with_src(judge, src)  # every run scored: start-up and lookup only
    cpu = first.user + first.system - idle.user - idle.system
    return {
        "wall_ms_per_run": (first.seconds - idle.seconds) * 1000 / runs,
        "cpu_ms_per_run": cpu * 1000 / runs,
        "wall_s": first.seconds,
        "startup_s": idle.seconds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout's src to compare with")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-judge-na-") as scratch:
        work = Path(scratch)
        size = make_data(work / "data", args.runs)
        base = work / "base"
        argv = [sys.executable, "-m", "agentledger", "import", "--ledger", str(base)]
        argv += ["--format", "openhands", str(work / "data"), "--model", "m"]
        run_with_src(argv, SRC)
        print(f"{args.runs} trajectories ({size / 1e6:.0f} MB) imported")
        results = alternate(
            args.before, args.rounds, lambda src: one_round(base, src, work, args.runs)
        )
        summary: dict[str, dict[str, Any]] = {}
        for name, rounds in results.items():
            summary[name] = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
            figures = summary[name]
            print(
                f"{name:>6}: {figures['wall_ms_per_run']:.1f} ms wall and "
                f"{figures['cpu_ms_per_run']:.1f} ms CPU per not-applicable run "
                f"(whole judge {figures['wall_s']:.2f}s, start-up {figures['startup_s']:.2f}s)"
            )
        if args.json:
            args.json.write_text(json.dumps({"runs": args.runs, "results": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
