"""Benchmark of `agentledger labels import` of 2,000 rows: wall and CPU time, and fsync calls.

    .venv/bin/python bench/labels_import.py                       # 2,000 rows, 3 rounds
    .venv/bin/python bench/labels_import.py --rows 500 --before /path/to/old/src --json out.json

A ledger of ROWS small runs is built once; each round imports a CSV of one label per run into a
fresh copy of it, as the console script does (a process of its own), and counts the fsync and
fdatasync calls the import made (`strace -f -c`, when strace is installed). With `--before
SRC`, the same rounds run with another checkout's `src` first on PYTHONPATH, alternating with
this one, so the two are measured under the same load. A label file is created and made
durable before its journal entry is; the figure to watch is how many fsyncs that takes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from measure import alternate, fresh_copy, run_with_src, small_ledger


def write_table(path: Path, run_ids: list[str]) -> None:
    rows = "".join(
        f"{run_id},{'unsafe' if n % 2 else 'safe'},{'yes' if n % 2 else 'no'},row {n}\n"
        for n, run_id in enumerate(run_ids)
    )
    path.write_text("run_id,verdict,crit:C2,reason\n" + rows)


def one_import(base: Path, table: Path, src: Path, work: Path) -> dict[str, Any]:
    """Import `table` into a fresh copy of `base` with `src` first on PYTHONPATH."""
    ledger = work / "ledger"
    fresh_copy(base, ledger)
    argv = [sys.executable, "-m", "agentledger", "labels", "import", "--ledger", str(ledger)]
    timed = run_with_src([*argv, "--source", "dataset", str(table)], src)
    cpu = timed.user + timed.system
    return {"wall_s": timed.seconds, "cpu_s": cpu, "fsyncs": count_fsyncs(base, table, src, work)}


def count_fsyncs(base: Path, table: Path, src: Path, work: Path) -> int | None:
    """fsync and fdatasync calls of one import (None without strace)."""
    if shutil.which("strace") is None:
        return None
    ledger = work / "counted"
    fresh_copy(base, ledger)
    summary = work / "strace.txt"
    argv = ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync,syncfs", "-o", str(summary)]
    argv += [sys.executable, "-m", "agentledger", "labels", "import", "--ledger", str(ledger)]
    argv += ["--source", "dataset", str(table)]
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run(argv, env=env, capture_output=True, check=True)
    calls = 0
    for line in summary.read_text().splitlines():
        match = re.match(
            r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync|syncfs)$", line
        )
        if match:
            calls += int(match.group(1))
    return calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout's src to compare with")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-labels-import-") as scratch:
        work = Path(scratch)
        base = work / "base"
        built = time.perf_counter()
        run_ids = small_ledger(base, args.rows)
        print(f"built a ledger of {len(run_ids)} runs in {time.perf_counter() - built:.1f}s")
        table = work / "labels.csv"
        write_table(table, run_ids)
        results = alternate(
            args.before, args.rounds, lambda src: one_import(base, table, src, work)
        )
        summary = {}
        for name, rounds in results.items():
            summary[name] = {
                "wall_s": statistics.median(r["wall_s"] for r in rounds),
                "cpu_s": statistics.median(r["cpu_s"] for r in rounds),
                "fsyncs": rounds[0]["fsyncs"],
            }
            figures = summary[name]
            print(
                f"{name:>6}: {args.rows} rows, median wall {figures['wall_s']:.2f}s, "
                f"CPU {figures['cpu_s']:.2f}s, fsync calls {figures['fsyncs']}"
            )
        if args.json:
            args.json.write_text(json.dumps({"rows": args.rows, "results": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
