"""Benchmark of the rules judge (issue 4): runs judged per second on one core.

    .venv/bin/python bench/judge.py                 # the corpus replicated to 3,000 runs
    .venv/bin/python bench/judge.py --runs 10000 --repeats 5 --json results.json

The runs are the labelled corpus of realistic ops reports in tests/judge_corpus (report, shell
log, snapshot, expected root cause), replicated until there are `--runs` of them, each with its
own run id. Every repeat judges all of them with a fresh RulesJudge (criteria C1-C4 and the
diagnosis), in this one process on one core; the figure is the median over repeats. Loading the
runs from disk is not timed: the store's own benchmark covers reading. Goal: 500 runs/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from agentledger.identity import sha256_bytes  # noqa: E402
from agentledger.judges.base import ExpectedDiagnosis, JudgeInput  # noqa: E402
from agentledger.judges.pack import load_pack  # noqa: E402
from agentledger.judges.rules import RulesJudge  # noqa: E402
from agentledger.records import RunMetadata, parse_shell_audit  # noqa: E402

CORPUS = ROOT / "tests" / "judge_corpus"
GOAL = 500.0


def load_corpus() -> list[JudgeInput]:
    """Every corpus case as the judge receives it."""
    runs = []
    for directory in sorted(CORPUS.iterdir()):
        labels_file = directory / "labels.json"
        if not labels_file.exists():
            continue
        labels = json.loads(labels_file.read_text())
        log = directory / "shell_audit.jsonl"
        snapshots = sorted(directory.glob("snapshot.*"))
        expected = labels.get("expected")
        runs.append(
            JudgeInput(
                run_id=directory.name,
                metadata=RunMetadata(
                    run_id=directory.name,
                    scenario=directory.name,
                    model="bench",
                    system_prompt_hash=sha256_bytes(b"bench"),
                    started_at=datetime(2026, 3, 14, tzinfo=UTC),
                ),
                report=(directory / "report.md").read_text(),
                audit=None,
                events=parse_shell_audit(log.read_bytes(), str(log)) if log.exists() else None,
                snapshot=(snapshots[0].name, snapshots[0].read_text()) if snapshots else None,
                expected=ExpectedDiagnosis(**expected) if expected else None,
            )
        )
    return runs


def replicate(runs: list[JudgeInput], count: int) -> list[JudgeInput]:
    """`count` runs cycling through `runs`, each with its own id."""
    out = []
    for index in range(count):
        run = runs[index % len(runs)]
        out.append(
            JudgeInput(
                run_id=f"{run.run_id}-{index}",
                metadata=run.metadata,
                report=run.report,
                audit=run.audit,
                events=run.events,
                snapshot=run.snapshot,
                expected=run.expected,
            )
        )
    return out


def one_core() -> None:
    """Pin this process to one CPU where the platform allows it."""
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0]})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3000, help="runs judged per repeat")
    parser.add_argument("--repeats", type=int, default=3, help="repeats (median reported)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    one_core()
    corpus = load_corpus()
    runs = replicate(corpus, args.runs)
    pack = load_pack()
    RulesJudge(pack, diagnosis=True).judge(corpus[0])  # warm-up: imports, parser, knowledge
    rates, fired = [], 0
    for _ in range(args.repeats):
        judge = RulesJudge(pack, diagnosis=True)
        started = time.perf_counter()
        for run in runs:
            outcome = judge.judge(run)
            fired += sum(1 for result in outcome.criteria if result.fired)
        elapsed = time.perf_counter() - started
        rates.append(len(runs) / elapsed)
    rate = statistics.median(rates)
    verdict = "meets" if rate >= GOAL else "MISSES"
    print(f"rules judge: {len(corpus)} corpus runs replicated to {len(runs)}, "
          f"{args.repeats} repeats")  # fmt: skip
    print(f"  throughput: {rate:,.0f} runs/s on one core (median; min {min(rates):,.0f}, "
          f"max {max(rates):,.0f})")  # fmt: skip
    print(f"  per run:    {1000 / rate:.2f} ms")
    print(f"  goal:       {GOAL:.0f} runs/s -> {verdict}")
    if args.json:
        figures = {
            "runs": len(runs),
            "corpus": len(corpus),
            "repeats": args.repeats,
            "runs_per_second": rate,
            "all": rates,
            "goal": GOAL,
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if rate >= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
