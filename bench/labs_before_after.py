"""Labs: this tree's lab cycle against another tree's, alternating, at the same moment's load.

On a shared machine a lab cycle's wall time follows the load (most of it is waiting for a
CPU), which moves by a factor of two within minutes: two runs of bench/labs.py minutes apart
compare loads, not code. Here two worker processes, one importing this tree's `src` and one
another checkout's (`--before SRC`), each run one cycle in turn (up, fault verified, snapshot,
down: `lab_f2b_chain`, rootless as bench/labs.py runs it), the order swapped every round, so
both see the same load.

    python bench/labs_before_after.py --before /path/to/old/checkout/src --cycles 30
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _worker() -> None:
    """One cycle per line read on stdin; prints [wall, cpu, snapshot wall] for each."""
    import resource

    from agentledger.labs import choose_privilege, resolve_labs, start_lab, take_snapshot

    def cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    privilege, loaded = choose_privilege(), resolve_labs("lab_f2b_chain")[0]
    for _ in sys.stdin:
        used, started = cpu(), time.perf_counter()
        with start_lab(loaded, privilege=privilege) as lab:
            snapping = time.perf_counter()
            take_snapshot(lab)
            snapshot = time.perf_counter() - snapping
        print(json.dumps([time.perf_counter() - started, cpu() - used, snapshot]), flush=True)


def _figures(rows: list[list[float]]) -> dict[str, float]:
    walls = sorted(r[0] for r in rows)
    return {
        "cycle_median_s": round(statistics.median(walls), 3),
        "cycle_p95_s": round(walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))], 3),
        "cpu_median_s": round(statistics.median(r[1] for r in rows), 3),
        "snapshot_median_s": round(statistics.median(r[2] for r in rows), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="The other tree's src directory.")
    parser.add_argument("--cycles", type=int, default=20, help="Cycles of each [20].")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker()
        return 0
    if args.before is None or not (args.before / "agentledger" / "labs").is_dir():
        parser.error("--before SRC: a src directory holding agentledger/labs")
    workers = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd="/",
            env={**os.environ, "PYTHONPATH": str(src)},
        )
        for name, src in (("before", args.before.resolve()), ("after", ROOT / "src"))
    }
    rows: dict[str, list[list[float]]] = {name: [] for name in workers}
    loads = []
    for i in range(args.cycles):
        for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
            worker = workers[name]
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
            rows[name].append(json.loads(worker.stdout.readline()))
        loads.append(os.getloadavg()[0])
    for worker in workers.values():
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    figures = {
        "machine": {"cpus": os.cpu_count(), "load_1min_median": statistics.median(loads)},
        "cycles_each": args.cycles,
        **{name: _figures(found) for name, found in rows.items()},
    }
    for key, value in figures.items():
        print(f"{key:12} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
