"""Benchmark of `agentledger agreement` over 100,000 runs labelled by two sources.

    .venv/bin/python bench/agreement.py                # 100,000 runs, median of 3
    .venv/bin/python bench/agreement.py --runs 20000 --repeat 5 --json out.json

The runs and the rules judge's scores are inserted straight into the index of a temporary
ledger (as bench/reports.py does: `fill_index`), and every run gets a label from two outside
sources, indexed through the index's own `add_labels` (no label files: agreement reads the
index). Each figure is the median wall time of the whole library call (resolving both sources,
comparing the verdict, its binary collapse and four criteria, --by model) and rendering it as
text, with its CPU time beside it. Goal: under 2 s. Exit code 1 when a case misses it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentledger.analysis.agreement import agreement_report
from agentledger.labels import label_row
from agentledger.records.labels import CriterionLabel, Label, LabelSource
from agentledger.report import render
from agentledger.store import Ledger
from reports import CRITERIA, fill_index

GOAL_SECONDS = 2.0
VERDICTS = ("Safe", "Uncertain", "Unsafe")
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("labels:dataset-a vs labels:dataset-b", "labels:dataset-a", "labels:dataset-b", {}),
    ("judge:rules vs labels:dataset-a", "judge:rules", "labels:dataset-a", {}),
    (
        "... --by model --target-width 0.1",
        "judge:rules",
        "labels:dataset-b",
        {"by": "model", "target_width": 0.1},
    ),
    ("... --bootstrap 1000", "labels:dataset-a", "labels:dataset-b", {"bootstrap": 1000}),
]


def add_labels(ledger: Ledger, seed: int = 7) -> int:
    """Label every indexed run by two outside sources that mostly agree."""
    rng = random.Random(seed)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    run_ids = ledger.index.run_facets(_every()).run_ids
    for i, run_id in enumerate(run_ids):
        truth = rng.choice(VERDICTS)
        for source in ("dataset-a", "dataset-b"):
            verdict = truth if rng.random() < 0.75 else rng.choice(VERDICTS)
            label = Label(
                label_id=f"lbl_20260101T000000Z_{i:07x}{source[-1]}",
                run_id=run_id,
                by=LabelSource(kind="external", name=source),
                created_at=when + timedelta(seconds=i),
                verdict=verdict,  # type: ignore[arg-type]
                criteria=[CriterionLabel(criterion=c, fired=rng.random() < 0.3) for c in CRITERIA],
            )
            rows.append(label_row(label))
    ledger.index.add_labels(rows)
    return len(rows)


def _every() -> Any:
    from agentledger.store import RunFilter

    return RunFilter()


def measure(ledger: Ledger, repeat: int) -> list[dict[str, Any]]:
    results = []
    for name, a, b, options in CASES:
        times, cpu = [], []
        for _ in range(repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            report = agreement_report(ledger, a, b, **options)
            render([report], "text")
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        seconds = statistics.median(times)
        results.append(
            {
                "case": name,
                "seconds": seconds,
                "cpu_seconds": statistics.median(cpu),
                "met": seconds < GOAL_SECONDS,
            }
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-agreement-") as tmp:
        root = Path(tmp) / "ledger"
        with Ledger.init(root) as ledger:
            index_path = ledger.root / "index.sqlite"
        start = time.perf_counter()
        fill_index(index_path, args.runs)
        with Ledger.open(root) as ledger:
            labels = add_labels(ledger)
            print(
                f"index of {args.runs:,} runs with scores and {labels:,} labels built in "
                f"{time.perf_counter() - start:.1f} s"
            )
            results = measure(ledger, args.repeat)
    width = max(len(r["case"]) for r in results)
    print(f"{'agreement':<{width}}  seconds      cpu  goal < {GOAL_SECONDS:g} s")
    for r in results:
        print(
            f"{r['case']:<{width}}  {r['seconds']:7.3f}  {r['cpu_seconds']:7.3f}  "
            f"{'met' if r['met'] else 'MISSED'}"
        )
    print(
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (a shared machine "
        "makes wall times longer; the CPU time of the process is the steadier figure)"
    )
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "results": results}, indent=2) + "\n")
    return 0 if all(r["met"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
