"""Benchmark of `agentledger report`: every report over an index of 100,000 scored runs.

    .venv/bin/python bench/reports.py                # 100,000 runs, median of 3 per report
    .venv/bin/python bench/reports.py --runs 20000 --repeat 5
    .venv/bin/python bench/reports.py --json out.json

This measures the query side: the runs and their scores are inserted straight into the index of
a temporary ledger with SQL (no run directories, no score files), which is what reports read.
Each run has one score by the main rules judge and four criteria results; a third of the runs
also have an older score by another rules judge, which the reports pass over, except with
`--judge rules`, where each run's newest score of the two judges counts. Each figure is the
median wall time of building the report from the index and rendering it (text; `all` as HTML),
with the median CPU time of the process beside it (on a shared machine, the steadier figure).
Goal: every report under 2 s (`all`, five reports on one page, is shown for information).
Exit code 1 when a report misses the goal.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentledger.analysis import build_reports
from agentledger.report import render
from agentledger.store import Ledger, RunFilter
from agentledger.store.index import format_time, packed_criteria

GOAL_SECONDS = 2.0
MODELS = (
    ("claude-haiku-4-5", (0.45, 0.35, 0.20)),
    ("gemini-2.5-flash", (0.20, 0.20, 0.60)),
    ("gpt-4o", (0.40, 0.30, 0.30)),
    ("claude-sonnet-4-5", (0.55, 0.30, 0.15)),
    ("o3-mini", (0.35, 0.35, 0.30)),
    ("gemini-2.5-pro", (0.50, 0.30, 0.20)),
)
SCENARIOS = tuple(f"use_case_{letter}" for letter in "abcdefghijklmnopqrstuvwxyz")
PROMPTS = tuple(f"sha256:{random.Random(i).getrandbits(256):064x}" for i in range(120))
FIRST_DAY = datetime(2025, 10, 1, tzinfo=UTC)
JUDGE, OLD_JUDGE = "rules-0dee56eaef3e", "rules-1a2b3c4d5e6f"
CRITERIA = ("C1", "C2", "C3", "C4")
# The JSON columns at their size in a real ledger (the demo's: 1.4 KB, 0.2 KB and 2.1 KB), so
# that table scans read as many pages as they would.
METADATA_JSON = json.dumps({"padding": "m" * 1350})
SUMMARY_JSON = json.dumps({"padding": "s" * 200})
SCORE_PADDING = "j" * 2000


def score_json(run_id: str, judge_id: str, verdict: str, created_at: str) -> str:
    """A score's JSON column as readers of the index see it (the review queue reads a score's
    judge, verdict and refusal from it), padded to a real score's size."""
    skipped = verdict == "skipped"
    return json.dumps(
        {
            "schema_version": 1,
            "run_id": run_id,
            "judge_id": judge_id,
            "created_at": created_at,
            "verdict": verdict,
            "skipped_reason": "the judge's model made the run" if skipped else None,
            "padding": SCORE_PADDING,
        }
    )


def fill_index(path: Path, runs: int, seed: int = 20260312) -> None:
    """Insert `runs` runs with scores into the index at `path` (a fresh ledger's)."""
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")
    run_rows, score_rows, criteria_rows = [], [], []
    for i in range(runs):
        model, weights = MODELS[rng.randrange(len(MODELS))]
        started = FIRST_DAY + timedelta(seconds=int(182 * 86400 * i / runs))
        prompt = PROMPTS[min(len(PROMPTS) - 1, i * len(PROMPTS) // runs + rng.randrange(2))]
        run_id = f"{SCENARIOS[i % 26]}_{model}_{i:06d}"
        when = format_time(started)
        run_rows.append(
            (
                run_id,
                rng.choice(SCENARIOS),
                model,
                f"{model}-2025{1 + i * 3 // runs:02d}01",
                prompt,
                rng.choice((None, "variant-a", "variant-b")),
                when,
                when,
                METADATA_JSON,
                SUMMARY_JSON,
            )
        )
        verdict = rng.choices(("Safe", "Uncertain", "Unsafe"), weights)[0]
        if rng.random() < 0.02:
            verdict = "skipped"
        diagnosis = None if rng.random() < 0.2 else int(rng.random() < 0.85)
        scored_at = format_time(started + timedelta(days=1))
        results: list[tuple[str, bool | None]] = []
        if verdict != "skipped":
            for criterion, p in zip(
                CRITERIA, (0.05, 0.15 + 0.3 * weights[2], 0.2, 0.4), strict=True
            ):
                results.append((criterion, None if rng.random() < 0.01 else rng.random() < p))
        score_rows.append(
            (
                run_id,
                JUDGE,
                "rules",
                verdict,
                diagnosis,
                scored_at,
                score_json(run_id, JUDGE, verdict, scored_at),
                packed_criteria(results),
            )
        )
        criteria_rows.extend(
            (run_id, JUDGE, c, None if fired is None else int(fired)) for c, fired in results
        )
        if i % 3 == 0:
            old = score_json(run_id, OLD_JUDGE, "Safe", when)
            old_criteria = packed_criteria((c, False) for c in CRITERIA)
            score_rows.append((run_id, OLD_JUDGE, "rules", "Safe", None, when, old, old_criteria))
            criteria_rows.extend((run_id, OLD_JUDGE, c, 0) for c in CRITERIA)
    db.executemany(
        "INSERT INTO runs (run_id, scenario, model, model_served, system_prompt_hash, variant, "
        "started_at, silent_update_detectable, backfilled, sealed_at, manifest_sha256, "
        "metadata_json, summary_json) VALUES (?, ?, ?, ?, ?, ?, ?, 1, 0, ?, 'x', ?, ?)",
        run_rows,
    )
    db.executemany(
        "INSERT INTO scores (run_id, judge_id, kind, pack, verdict, diagnosis, created_at, "
        "score_json, criteria_packed) VALUES (?, ?, ?, 'remediation-safety', ?, ?, ?, ?, ?)",
        score_rows,
    )
    db.executemany(
        "INSERT INTO score_criteria (run_id, judge_id, criterion, fired) VALUES (?, ?, ?, ?)",
        criteria_rows,
    )
    db.commit()
    # No ANALYZE: a ledger's index is never analyzed, so the benches plan as users' do.
    db.close()


CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("verdicts", "verdicts", {}, "text"),
    ("criteria", "criteria", {}, "text"),
    ("gap", "gap", {}, "text"),
    ("drift", "drift", {}, "text"),
    (
        "drift --criterion C2 --before-after P",
        "drift",
        {"criterion": "C2", "prompt": PROMPTS[60]},
        "text",
    ),
    (
        "compare gemini vs haiku",
        "compare",
        {"a": "model=gemini-2.5-flash", "b": "model=claude-haiku-4-5"},
        "text",
    ),
    ("verdicts --model gpt-4o", "verdicts", {"models": ("gpt-4o",)}, "text"),
    ("verdicts --judge rules (newest of 2 judges)", "verdicts", {"judge": "rules"}, "text"),
    (
        "all --format html (with compare)",
        "all",
        {"a": "model=gemini-2.5-flash", "b": "model=o3-mini"},
        "html",
    ),
]


def measure(ledger: Ledger, repeat: int) -> list[dict[str, Any]]:
    results = []
    for label, kind, options, fmt in CASES:
        models = options.pop("models", ())
        run_filter = RunFilter(models=models)
        times, cpu_times = [], []
        for _ in range(repeat):
            start, cpu_start = time.perf_counter(), time.process_time()
            reports = build_reports(kind, ledger.index, run_filter, **options)
            render(reports, fmt)
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu_start)
        options["models"] = models
        seconds = statistics.median(times)
        # `all` is five reports in one page: the goal is per report, so it has none.
        met = None if kind == "all" else seconds < GOAL_SECONDS
        results.append(
            {
                "report": label,
                "seconds": seconds,
                "cpu_seconds": statistics.median(cpu_times),
                "met": met,
            }
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    parser.add_argument("--keep", type=Path, help="Build the ledger here and keep it.")
    parser.add_argument("--only-build", action="store_true", help="Build, do not measure.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-reports-") as tmp:
        root = args.keep or Path(tmp) / "ledger"
        with Ledger.init(root) as ledger:
            index_path = ledger.root / "index.sqlite"
        start = time.perf_counter()
        fill_index(index_path, args.runs)
        print(
            f"index of {args.runs:,} runs with scores built in {time.perf_counter() - start:.1f} s"
        )
        if args.only_build:
            return 0
        with Ledger.open(root) as ledger:
            results = measure(ledger, args.repeat)
    width = max(len(r["report"]) for r in results)
    print(f"{'report':<{width}}  seconds      cpu  goal < {GOAL_SECONDS:g} s")
    for r in results:
        verdict = {True: "met", False: "MISSED", None: "(no goal: five reports)"}[r["met"]]
        print(f"{r['report']:<{width}}  {r['seconds']:7.3f}  {r['cpu_seconds']:7.3f}  {verdict}")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "results": results}, indent=2) + "\n")
    return 0 if all(r["met"] is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
