"""One ledger for a fleet: the shared backends against the embedded default, in one run.

    .venv/bin/python bench/scale.py                 # 10,000 runs imported, 100,000 queried
    .venv/bin/python bench/scale.py --scale 0.1     # a smoke run: 1,000 and 10,000

A local PostgreSQL server (tests/pg_server.py: initdb + pg_ctl in a temporary directory,
fsync on) is started for the run; each backend pair gets its own new database. Figures:

- import: `write_plan` of 10,000 synthetic runs (bench/synth.py) into a new ledger, per pair:
  runs/s, the ratio to the embedded default (local + sqlite), and the index's round trips per
  run (`PostgresIndex.round_trips`: a statement, or a pipeline of them).
- query: `runs --model X --prompt-hash P` over an index of 100,000 runs: median ms of
  `RunIndex.query` over 50 (X, P) pairs, SQLite and PostgreSQL, the same answers from both.
- verify: `verify_ledger` of each imported ledger: runs/s.
- writers: 8 processes, each with its own ledger handle (`agentledger import` of its own
  1/8 of the runs), into one shared ledger at once: total runs/s, then `verify` clean and
  every run indexed once.

Data lives in bench/.work/scale/ (git-ignored) and is removed at the end unless --keep;
results go to bench/.work/scale-results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import synth
from measure import loadavg, median, percentile, settle, timed_block, warm_up

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "scale"
sys.path.insert(0, str(HERE.parent / "tests"))

from pg_server import PostgresServer, start_server  # noqa: E402  (tests/ is on the path now)

WRITERS = 8


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Pair:
    """A storage and an index backend, as `agentledger init` takes them."""

    name: str
    storage: str
    index: Callable[[], str]
    """Makes the index URI (a new database for each ledger)."""


def _index_round_trips(ledger: Any) -> int | None:
    return getattr(ledger.index, "round_trips", None)


def bench_import(pair: Pair, source: Path, runs: int) -> dict[str, Any]:
    from agentledger.importers.directory import plan_import, write_plan
    from agentledger.store import Ledger, verify_ledger

    target = WORK / f"import-{pair.name}"
    shutil.rmtree(target, ignore_errors=True)
    with Ledger.init(target, storage=pair.storage, index=pair.index()) as ledger:
        plan = plan_import([source], ledger=ledger)
        before = _index_round_trips(ledger)
        warm_up(source)
        settle()
        with timed_block() as took:
            report = write_plan(ledger, plan)
        after = _index_round_trips(ledger)
        if len(report.imported) != runs:
            raise RuntimeError(f"{pair.name}: imported {len(report.imported)} of {runs} runs")
        settle()
        with timed_block() as checked:
            verified = verify_ledger(ledger)
        if not verified.ok:
            raise RuntimeError(f"{pair.name}: verify found {verified.problems[:3]}")
    result: dict[str, Any] = {
        "seconds": round(took.seconds, 3),
        "runs_per_s": round(runs / took.seconds, 1),
        "verify_s": round(checked.seconds, 3),
        "verify_runs_per_s": round(runs / checked.seconds, 1),
    }
    if before is not None and after is not None:
        result["index_round_trips_per_run"] = round((after - before) / runs, 3)
    shutil.rmtree(target, ignore_errors=True)
    return result


def fill_index(index: Any, runs: int) -> None:
    """`runs` synthetic runs straight into an index, 2,000 a transaction."""
    from agentledger.records import AgentInfo, FileEntry, Manifest, RunMetadata, RunSummary
    from agentledger.store.index import IndexEntry

    batch = []
    for number in range(runs):
        spec = synth.run_spec(number)
        metadata = RunMetadata(
            run_id=spec.run_id,
            scenario=spec.scenario,
            model=spec.model,
            model_served=spec.model_served,
            provider=spec.provider,
            system_prompt_hash=spec.prompt.system_prompt_hash,
            base_prompt_hash=spec.prompt.base_prompt_hash,
            variant=spec.prompt.addon,
            agent=AgentInfo(name="ghost", commit=spec.agent_commit, dirty=False),
            started_at=spec.started_at,
            ended_at=spec.ended_at,
            tags={"suite": "netops" if number % 3 else "sentinel"},
        )
        manifest = Manifest(
            run_id=spec.run_id,
            sealed_at=spec.ended_at,
            files={"metadata.json": FileEntry(sha256="sha256:" + "0" * 64, size=1)},
        )
        summary = RunSummary(commands_run=spec.commands_run, exit_status=spec.exit_status)
        batch.append(IndexEntry(metadata, summary, manifest, "sha256:" + "1" * 64))
        if len(batch) == 2000:
            index.add(batch)
            batch = []
    if batch:
        index.add(batch)


def bench_query(server: PostgresServer, runs: int, reps: int) -> dict[str, Any]:
    from agentledger.store import RunFilter, SQLiteIndex
    from agentledger.store.postgres_index import PostgresIndex

    pairs = synth.query_pairs(reps)
    filters = [RunFilter(models=(m,), prompt_hash=f"sha256:{p}") for m, p in pairs]
    path = WORK / "query.sqlite"
    path.unlink(missing_ok=True)
    indexes = {
        "sqlite": SQLiteIndex(path),
        "postgresql": PostgresIndex(server.url(server.create_database("scale_query"))),
    }
    result: dict[str, Any] = {"runs": runs, "queries": reps}
    answers = {}
    try:
        for name, index in indexes.items():
            log(f"query: {runs:,} runs into {name}")
            with timed_block() as filled:
                fill_index(index, runs)
            if isinstance(index, PostgresIndex):
                index.db.execute("ANALYZE")  # what autovacuum does on its own after a load
            index.query(filters[-1])  # warm the statement and page caches
            times, found = [], []
            for run_filter in filters:
                started = time.perf_counter()
                rows = index.query(run_filter)
                times.append((time.perf_counter() - started) * 1000)
                found.append([row.run_id for row in rows])
            answers[name] = found
            result[name] = {
                "fill_s": round(filled.seconds, 2),
                "median_ms": round(median(times), 3),
                "p90_ms": round(percentile(times, 0.9), 3),
                "rows_median": median([float(len(f)) for f in found]),
            }
    finally:
        for index in indexes.values():
            index.close()
        path.unlink(missing_ok=True)
    result["same_answers"] = answers["sqlite"] == answers["postgresql"]
    return result


def bench_writers(pair: Pair, sources: list[Path], runs: int) -> dict[str, Any]:
    """WRITERS `agentledger import` processes into one ledger at once."""
    from agentledger.store import Ledger, verify_ledger

    target = WORK / f"writers-{pair.name}"
    shutil.rmtree(target, ignore_errors=True)
    Ledger.init(target, storage=pair.storage, index=pair.index()).close()
    command = str(Path(sys.executable).parent / "agentledger")
    env = {**os.environ, "CI": "1"}
    for source in sources:
        warm_up(source)
    settle()
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [command, "import", str(source), "--ledger", str(target)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for source in sources
    ]
    failures = [(p.wait(), p.stderr.read().decode()[-500:] if p.stderr else "") for p in procs]
    seconds = time.perf_counter() - started
    if any(code for code, _ in failures):
        raise RuntimeError(f"{pair.name}: a writer failed: {failures}")
    with Ledger.open(target) as ledger:
        verified = verify_ledger(ledger)
        indexed = ledger.count()
        entries = len(ledger.storage.journal.entries())
    if not verified.ok or indexed != runs:
        raise RuntimeError(f"{pair.name}: {indexed} of {runs} indexed, {verified.problems[:3]}")
    shutil.rmtree(target, ignore_errors=True)
    return {
        "writers": len(sources),
        "runs": runs,
        "seconds": round(seconds, 3),
        "runs_per_s": round(runs / seconds, 1),
        "journal_entries": entries,
        "verify_ok": verified.ok,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--query-reps", type=int, default=50)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    runs = max(WRITERS * 10, round(10_000 * args.scale))
    query_runs = max(1000, round(100_000 * args.scale))
    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / f"source-{runs}"
    shares = [WORK / f"source-{runs}-writer{n}" for n in range(WRITERS)]
    if not source.exists():
        log(f"generating {runs:,} runs")
        synth.write_seed_runs(source, range(runs))
        for n, share in enumerate(shares):
            synth.write_seed_runs(share, range(n, runs, WRITERS))

    log("starting PostgreSQL")
    server = start_server(durable=True)
    os.environ.update(server.environ())
    databases = iter(range(1_000_000))

    def new_database() -> str:
        return server.url(server.create_database(f"scale_{next(databases)}"))

    pairs = [
        Pair("local+sqlite", "local", lambda: "sqlite"),
        Pair("local+postgresql", "local", new_database),
    ]
    result: dict[str, Any] = {"runs": runs, "loadavg_before": loadavg(), "import": {}}
    try:
        for pair in pairs:
            log(f"import + verify: {runs:,} runs, {pair.name}")
            result["import"][pair.name] = bench_import(pair, source, runs)
        embedded = result["import"]["local+sqlite"]["runs_per_s"]
        for figures in result["import"].values():
            figures["ratio_to_embedded"] = round(figures["runs_per_s"] / embedded, 3)
        result["query"] = bench_query(server, query_runs, args.query_reps)
        result["writers"] = {}
        for pair in pairs[1:]:
            log(f"writers: {WRITERS} processes, {runs:,} runs, {pair.name}")
            result["writers"][pair.name] = bench_writers(pair, shares, runs)
    finally:
        server.stop()
    result["loadavg_after"] = loadavg()
    (WORK.parent / "scale-results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if not args.keep:
        shutil.rmtree(WORK, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
