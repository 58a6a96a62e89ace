"""Benchmark of the outcome check (issue 32): one run's check against a lab cycle, and re-measuring.

    .venv/bin/python bench/outcomes.py               # 7 alternating repeats, 1,000 stored runs
    .venv/bin/python bench/outcomes.py --quick       # 3 repeats, 20 stored runs
    .venv/bin/python bench/outcomes.py --repeats 10 --runs 200 --json results.json

First figure: the outcome check of one run (a fresh lab of the packaged `lab_f2b_chain`, the
fault, the careful remediation applied, every probe at each stage, its verification re-run, the
guard, two owner cycles, teardown) against a lab cycle alone (up, fault verified, snapshot,
down), measured alternately in the same run: median and p95 of each, and the ratio of the
medians. Goal: within 3x.

Second: re-measuring N stored runs of that scenario (half careful, half hasty remediations)
with `agentledger.outcomes.check.measure_and_record`, two at a time (two cores): the wall time
and the runs per second (with `--runs` below 1,000, the time 1,000 would take at that rate,
labelled as extrapolated). Skipped, saying why, where this machine cannot run labs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

GOAL = 3.0
CAREFUL = (
    "# Report\n\n## Remediation\n\n```bash\njailctl unban 10.0.0.2\n```\n\n## Verification\n"
    "From the client, expect 200:\n\n```bash\n"
    "client: curl -s -o /dev/null -w '%{http_code}' http://10.0.0.1/\n```\n"
)
HASTY = (
    "# Report\n\n## Remediation\n\n```bash\n"
    "iptables -D f2b-http -s 10.0.0.2/32 -p tcp -j REJECT --reject-with tcp-reset\n```\n"
)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def one_check(repeats: int) -> dict[str, object]:
    """The outcome check of one run against a lab cycle alone, alternately."""
    from agentledger.labs import resolve_labs, start_lab, take_snapshot
    from agentledger.outcomes.check import measure_remediation
    from agentledger.outcomes.remediation import read_remediation

    (loaded,) = resolve_labs("lab_f2b_chain")
    remediation = read_remediation(CAREFUL, [], loaded.spec.host_names(), "web")
    cycle: list[float] = []
    check: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        with start_lab(loaded) as lab:
            take_snapshot(lab)
        cycle.append(time.perf_counter() - started)
        started = time.perf_counter()
        outcome = measure_remediation(loaded, remediation, run_id="bench_x_20260101T000000Z_abcd",
                                      scenario="lab_f2b_chain")  # fmt: skip
        check.append(time.perf_counter() - started)
        assert outcome.fixed and outcome.durable, outcome.reasons
    ratio = statistics.median(check) / statistics.median(cycle)
    return {
        "repeats": repeats,
        "lab_cycle_median_s": round(statistics.median(cycle), 3),
        "lab_cycle_p95_s": round(_p95(cycle), 3),
        "outcome_check_median_s": round(statistics.median(check), 3),
        "outcome_check_p95_s": round(_p95(check), 3),
        "ratio_of_medians": round(ratio, 2),
        "goal": GOAL,
        "within_goal": ratio <= GOAL,
    }


def remeasure(runs: int, workers: int) -> dict[str, object]:
    """Re-measure `runs` stored runs of lab_f2b_chain, `workers` at a time."""
    from agentledger.identity import effective_prompt, make_run_id
    from agentledger.labs import LAB_FILE, resolve_labs
    from agentledger.outcomes.check import measure_and_record
    from agentledger.records import RunMetadata
    from agentledger.store.ledger import Ledger

    (loaded,) = resolve_labs("lab_f2b_chain")
    prompt = effective_prompt(b"You fix network faults.\n", None)
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp, Ledger.init(Path(tmp) / "ledger") as ledger:
        ids = []
        for n in range(runs):
            model = "scripted-careful" if n % 2 == 0 else "scripted-hasty"
            started = t0 + timedelta(seconds=n)
            metadata = RunMetadata(
                run_id=make_run_id("lab_f2b_chain", model, started),
                scenario="lab_f2b_chain",
                model=model,
                system_prompt_hash=prompt.system_prompt_hash,
                started_at=started,
            )
            with ledger.new_run(metadata) as run:
                run.add_text("report.md", CAREFUL if n % 2 == 0 else HASTY)
                run.add_bytes(LAB_FILE, loaded.path.read_bytes())
            ids.append(metadata.run_id)
        chunks = [ids[i::workers] for i in range(workers)]
        started_at = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            counts = list(pool.map(lambda chunk: sum(1 for _ in measure_and_record(ledger, chunk)),
                                   chunks))  # fmt: skip
        wall = time.perf_counter() - started_at
    return {
        "runs": sum(counts),
        "workers": workers,
        "wall_s": round(wall, 1),
        "runs_per_second": round(sum(counts) / wall, 3),
        "runs_per_minute": round(60 * sum(counts) / wall, 1),
        "extrapolated_1000_runs_s": round(1000 * wall / max(1, sum(counts)), 0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats and 20 stored runs.")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    args = parser.parse_args()
    from agentledger.labs import LabUnavailableError, choose_privilege

    try:
        choose_privilege()
    except LabUnavailableError as exc:
        print(f"outcomes bench skipped: this machine cannot run labs: {exc}")
        return 0
    repeats = args.repeats or (3 if args.quick else 7)
    runs = args.runs or (20 if args.quick else 1000)
    figures = {"one_check": one_check(repeats), "remeasure": remeasure(runs, args.workers)}
    one = figures["one_check"]
    again = figures["remeasure"]
    print(
        f"outcome check of one run: median {one['outcome_check_median_s']} s, p95 "
        f"{one['outcome_check_p95_s']} s; lab cycle alone: median {one['lab_cycle_median_s']} s, "
        f"p95 {one['lab_cycle_p95_s']} s; ratio {one['ratio_of_medians']}x (goal {GOAL}x)"
    )
    print(
        f"re-measuring {again['runs']} stored lab runs, {again['workers']} at a time: "
        f"{again['wall_s']} s ({again['runs_per_second']} runs/s, "
        f"{again['runs_per_minute']} runs/minute)"
        + (
            ""
            if again["runs"] >= 1000
            else f"; 1,000 runs at this rate (extrapolated): {again['extrapolated_1000_runs_s']} s"
        )
    )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
