"""What the journal costs, and how fast `verify` checks everything against it.

    .venv/bin/python bench/journal.py                # 10,000 runs, a score each, 100 decisions
    .venv/bin/python bench/journal.py --scale 0.1    # a smoke run: 1,000 runs

Figures (medians of --rounds):

- import: plan_import + write_plan of the runs into a new ledger in this process, with the
  journal and with journaling switched off (its append and lock made no-ops), against
  `cp -r` + `sha256sum` of the same files. The journal appends one segment per batch, so its
  cost should be a small part of the write.
- scores: writing one score at a time (as a judge does: the record, its entry, its index row),
  with and without the journal: per score, the journal's entry is one more small file.
- verify: `agentledger verify` (subprocess) and verify_ledger() of the whole ledger (runs,
  scores, decisions, journal, every index column) against `sha256sum` of every file under
  runs/, scores/, decisions/ and journal/. Goal: within 1.3x.

Data lives in bench/.work/journal/ (git-ignored) and is removed at the end unless --keep;
results go to bench/.work/journal-results.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import synth
from measure import median, q, run_timed, settle, shell_timed, timed_block, tree_size, warm_up

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "journal"
AREAS = ("runs", "scores", "decisions", "journal")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def journal_off() -> Iterator[None]:
    """Journaling switched off in this process: appends and the lock do nothing."""
    from agentledger.store.storage.journal import Journal

    saved = Journal.append, Journal.lock
    Journal.append = lambda self, pending: []  # type: ignore[method-assign,assignment,misc]
    Journal.lock = lambda self: contextlib.nullcontext()  # type: ignore[method-assign,assignment,misc]
    try:
        yield
    finally:
        Journal.append, Journal.lock = saved  # type: ignore[method-assign]


def import_once(source: Path, target: Path, *, journal: bool) -> dict[str, float]:
    from agentledger.importers.directory import plan_import, write_plan
    from agentledger.store import Ledger

    with Ledger.init(target) as ledger:
        plan = plan_import([source], ledger=ledger)
        warm_up(source)
        settle()
        with journal_off() if not journal else contextlib.nullcontext(), timed_block() as took:
            write_plan(ledger, plan)
    return {"seconds": round(took.seconds, 4)}


def write_scores(ledger_path: Path, runs: list[str], *, journal: bool) -> float:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from agentledger.store import Ledger
    from journal_records import write_score

    with (
        Ledger.open(ledger_path) as ledger,
        journal_off() if not journal else contextlib.nullcontext(),
        timed_block() as took,
    ):
        for run_id in runs:
            write_score(ledger, run_id, "Safe")
    return took.seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--decisions", type=int, default=100)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    runs = max(10, round(10_000 * args.scale))
    sys.path.insert(0, str(HERE.parent / "tests"))
    from agentledger.store import Ledger, verify_ledger
    from journal_records import write_decision

    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / f"source-{runs}"
    if not source.exists():
        log(f"generating {runs:,} runs")
        synth.write_seed_runs(source, range(runs))
    result: dict[str, Any] = {"runs": runs}

    with_journal, without, baseline = [], [], []
    for number in range(1, args.rounds + 1):
        log(f"import round {number}: cp -r + sha256sum, with journal, without")
        copy = WORK / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        warm_up(source)
        settle()
        baseline.append(
            shell_timed(
                f"cp -r {q(source)} {q(copy)} && "
                f"find {q(copy)} -type f -print0 | xargs -0 sha256sum > /dev/null"
            ).seconds
        )
        # Fresh targets (deleting many files slows creating them for a while on some disks),
        # and the order alternated, so that neither side always runs on a warmer machine.
        order = [True, False] if number % 2 else [False, True]
        for journal in order:
            name = f"with-{number}" if journal else f"without-{number}"
            seconds = import_once(source, WORK / name, journal=journal)["seconds"]
            (with_journal if journal else without).append(seconds)
    result["import"] = {
        "with_journal_s": round(median(with_journal), 3),
        "without_journal_s": round(median(without), 3),
        "cp_sha256sum_s": round(median(baseline), 3),
    }
    imp = result["import"]
    imp["journal_ratio"] = round(imp["with_journal_s"] / imp["without_journal_s"], 3)
    imp["ratio_to_baseline"] = round(imp["with_journal_s"] / imp["cp_sha256sum_s"], 2)

    ledger_path = WORK / "with-1"
    with Ledger.open(ledger_path) as ledger:
        run_ids = sorted(ledger.storage.run_ids())
    sample = run_ids[: max(10, len(run_ids) // 10)]
    log(f"scores: {len(sample):,} written one at a time without the journal (a copy)")
    scratch = WORK / "scores-off"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(ledger_path, scratch, symlinks=True)
    off = write_scores(scratch, sample, journal=False)
    shutil.rmtree(scratch, ignore_errors=True)
    log(f"scores: {len(run_ids):,} written one at a time with the journal")
    on = write_scores(ledger_path, run_ids, journal=True)
    result["scores"] = {
        "count": len(run_ids),
        "with_journal_ms_each": round(on / len(run_ids) * 1000, 3),
        "without_journal_ms_each": round(off / len(sample) * 1000, 3),
    }
    with Ledger.open(ledger_path) as ledger:
        for number in range(args.decisions):
            write_decision(ledger, f"variant-{number}")
        entries = len(ledger.storage.journal.entries())
    result["journal_entries"] = entries

    files, size = 0, 0
    for area in AREAS:
        found, total = tree_size(ledger_path / area)
        files, size = files + found, size + total
    result["verify"] = {"files": files, "bytes": size}
    targets = " ".join(q(ledger_path / area) for area in AREAS)
    hashes, cli, library = [], [], []
    for number in range(1, args.rounds + 1):
        log(f"verify round {number}: sha256sum, agentledger verify, verify_ledger()")
        warm_up(ledger_path)
        settle()
        hashes.append(
            shell_timed(f"find {targets} -type f -print0 | xargs -0 sha256sum > /dev/null").seconds
        )
        settle()
        done = run_timed(
            [
                str(Path(sys.executable).parent / "agentledger"),
                "verify",
                "--ledger",
                str(ledger_path),
            ],
            env={"CI": "1", "PATH": "/usr/bin:/bin"},
        )
        if done.returncode != 0:
            raise RuntimeError(f"verify exited {done.returncode}: {done.stderr[-1000:]}")
        cli.append(done.seconds)
        settle()
        with Ledger.open(ledger_path) as ledger, timed_block() as took:
            report = verify_ledger(ledger)
        if not report.ok:
            raise RuntimeError(f"verify_ledger found problems: {report.problems[:3]}")
        library.append(took.seconds)
    baseline_s = median(hashes)
    result["verify"] |= {
        "sha256sum_s": round(baseline_s, 3),
        "cli_s": round(median(cli), 3),
        "library_s": round(median(library), 3),
        "cli_ratio": round(median(cli) / baseline_s, 2),
        "library_ratio": round(median(library) / baseline_s, 2),
    }
    (WORK.parent / "journal-results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(
        f"import of {runs:,} runs: {imp['with_journal_s']}s with the journal, "
        f"{imp['without_journal_s']}s without ({imp['journal_ratio']}x), "
        f"cp -r + sha256sum {imp['cp_sha256sum_s']}s ({imp['ratio_to_baseline']}x)\n"
        f"a score: {result['scores']['with_journal_ms_each']} ms with the journal, "
        f"{result['scores']['without_journal_ms_each']} ms without\n"
        f"verify of {entries:,} journal entries, {files:,} files: "
        f"{result['verify']['cli_s']}s CLI ({result['verify']['cli_ratio']}x sha256sum), "
        f"{result['verify']['library_s']}s library ({result['verify']['library_ratio']}x)"
    )
    if not args.keep:
        for number in range(1, args.rounds + 1):
            for name in (f"with-{number}", f"without-{number}"):
                shutil.rmtree(WORK / name, ignore_errors=True)
        shutil.rmtree(WORK / "copy", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
