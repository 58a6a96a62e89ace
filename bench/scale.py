"""One ledger for a fleet: the shared backends against the embedded default, in one run.

    .venv/bin/python bench/scale.py                 # 10,000 runs imported, 100,000 queried
    .venv/bin/python bench/scale.py --scale 0.1     # a smoke run: 1,000 and 10,000
    .venv/bin/python bench/scale.py --s3-runs 10000 --pairs s3+postgresql --no-query --no-writers

A local PostgreSQL server (tests/pg_server.py: initdb + pg_ctl in a temporary directory,
fsync on) and a local S3 API server (tests/s3_server.py: moto's standalone server, one request
at a time) are started for the run; each ledger gets a new database and a new bucket. The S3
pairs import --s3-runs runs (default 200: moto answers tens of requests a second, where a
real S3 or MinIO answers thousands). Figures:

- import: `write_plan` of 10,000 synthetic runs (bench/synth.py) into a new ledger, per pair:
  runs/s, the ratio to the embedded default (local + sqlite), the index's own share of the
  time (its `add`, timed), and its round trips per run (`PostgresIndex.round_trips`: a
  statement, or a pipeline of them).
- query: `runs --model X --prompt-hash P` over an index of 100,000 runs: median ms of
  `RunIndex.query` over 50 (X, P) pairs, SQLite and PostgreSQL, the same answers from both.
- verify: `verify_ledger` of each imported ledger: runs/s.
- score: `score_runs` with the rules judge over the first --s3-runs runs of each imported
  ledger (after verify, so that verify's figure is the one it always was): runs/s.
- S3 requests: on the S3 pairs, the requests per run of import, verify and score by
  operation (PutObject, GetObject, HeadObject, ListObjectsV2, ...), counted on the storage's
  boto3 client through botocore's ``before-send`` event (`ObjectStore.requests`: every HTTP
  request, retries included): where an S3 import's time goes.
- writers: 8 processes, each with its own ledger handle (`agentledger import` of its own
  1/8 of the runs), into one shared ledger at once: total runs/s, then `verify` clean and
  every run indexed once.

Data lives in bench/.work/scale/ (git-ignored) and is removed at the end unless --keep;
results go to bench/.work/scale-results.json.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
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
PAIRS = ("local+sqlite", "local+postgresql", "s3+sqlite", "s3+postgresql")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Pair:
    """A storage and an index backend, as `agentledger init` takes them."""

    name: str
    storage: Callable[[], str]
    """Makes the storage URI (a new bucket for each ledger)."""
    index: Callable[[], str]
    """Makes the index URI (a new database for each ledger)."""


@contextlib.contextmanager
def s3_server() -> Iterator[Callable[[], str]]:
    """moto's S3 server for the run, its client settings in the environment; yields a maker
    of new buckets (as ``s3://<bucket>/ledger``)."""
    server = subprocess.Popen(
        [sys.executable, str(HERE.parent / "tests" / "s3_server.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    port = int(server.stdout.readline().split()[-1])
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
    )
    buckets = itertools.count(1)

    def new_bucket() -> str:
        import boto3

        name = f"scale-bench-{next(buckets)}"
        boto3.client("s3").create_bucket(Bucket=name)
        return f"s3://{name}/ledger"

    try:
        yield new_bucket
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def _index_round_trips(ledger: Any) -> int | None:
    return getattr(ledger.index, "round_trips", None)


class S3Requests:
    """The S3 requests a ledger's storage sends, by operation, step by step: a view of its
    `ObjectStore.requests` (botocore's ``before-send`` event on the storage's client). None of
    it on a storage that is not S3."""

    def __init__(self, ledger: Any) -> None:
        store = getattr(ledger.storage, "store", None)
        self.counts: Counter[str] | None = getattr(store, "requests", None)
        self.mark: Counter[str] = Counter(self.counts or {})

    def step(self, runs: int) -> dict[str, float] | None:
        """Requests per run since the last step, by operation, and their total."""
        if self.counts is None:
            return None
        now = Counter(self.counts)
        sent = now - self.mark
        self.mark = now
        figures = {op: round(count / runs, 3) for op, count in sorted(sent.items())}
        return figures | {"total": round(sum(sent.values()) / runs, 3)}


def _describe(requests: dict[str, float]) -> str:
    ops = ", ".join(f"{op} {count}" for op, count in requests.items() if op != "total")
    return f"{requests['total']} requests per run ({ops})"


def bench_score(ledger: Any, runs: int) -> float:
    """Score the first `runs` runs of `ledger` with the rules judge; the seconds it took."""
    from agentledger.judges.pack import load_pack
    from agentledger.judges.rules import RulesJudge
    from agentledger.judges.scoring import score_runs

    run_ids = sorted(run.run_id for run in ledger.runs())[:runs]
    judge = RulesJudge(load_pack())
    settle()
    with timed_block() as took:
        report = score_runs(ledger, judge, run_ids)
    if len(report.scored) != runs:
        raise RuntimeError(f"scored {len(report.scored)} of {runs} runs: {report.failed[:3]}")
    return took.seconds


def bench_import(pair: Pair, source: Path, runs: int, scored: int) -> dict[str, Any]:
    from agentledger.importers.directory import plan_import, write_plan
    from agentledger.store import Ledger, verify_ledger

    target = WORK / f"import-{pair.name}"
    shutil.rmtree(target, ignore_errors=True)
    with Ledger.init(target, storage=pair.storage(), index=pair.index()) as ledger:
        plan = plan_import([source], ledger=ledger)
        before = _index_round_trips(ledger)
        # The index's own share of the import: its `add` timed on this instance.
        index_seconds = [0.0]
        add = ledger.index.add

        def timed_add(entries: Any) -> None:
            started = time.perf_counter()
            add(entries)
            index_seconds[0] += time.perf_counter() - started

        ledger.index.add = timed_add  # type: ignore[method-assign]
        warm_up(source)
        settle()
        requests = S3Requests(ledger)
        with timed_block() as took:
            report = write_plan(ledger, plan)
        after = _index_round_trips(ledger)
        imported = requests.step(runs)
        if len(report.imported) != runs:
            raise RuntimeError(f"{pair.name}: imported {len(report.imported)} of {runs} runs")
        settle()
        requests.step(runs)  # what the settling sent (a lease renewed, perhaps): not verify's
        with timed_block() as checked:
            verified = verify_ledger(ledger)
        verifying = requests.step(runs)
        if not verified.ok:
            raise RuntimeError(f"{pair.name}: verify found {verified.problems[:3]}")
        score_seconds = bench_score(ledger, scored)
        scoring = requests.step(scored)
    result: dict[str, Any] = {
        "seconds": round(took.seconds, 3),
        "runs_per_s": round(runs / took.seconds, 1),
        "index_s": round(index_seconds[0], 3),
        "verify_s": round(checked.seconds, 3),
        "verify_runs_per_s": round(runs / checked.seconds, 1),
        "score_runs": scored,
        "score_runs_per_s": round(scored / score_seconds, 1),
    }
    if before is not None and after is not None:
        result["index_round_trips_per_run"] = round((after - before) / runs, 3)
    if imported is not None and verifying is not None and scoring is not None:
        result["s3_requests_per_run"] = {
            "import": imported,
            "verify": verifying,
            "score": scoring,
        }
        for step, figures in result["s3_requests_per_run"].items():
            log(f"  {pair.name} {step}: {_describe(figures)}")
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
    from agentledger.store.index.postgres import PostgresIndex

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
    Ledger.init(target, storage=pair.storage(), index=pair.index()).close()
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


def _sources(runs: int) -> tuple[Path, list[Path]]:
    """`runs` synthetic runs in one directory, and the same runs shared among the writers."""
    source = WORK / f"source-{runs}"
    shares = [WORK / f"source-{runs}-writer{n}" for n in range(WRITERS)]
    if not source.exists():
        log(f"generating {runs:,} runs")
        synth.write_seed_runs(source, range(runs))
        for n, share in enumerate(shares):
            synth.write_seed_runs(share, range(n, runs, WRITERS))
    return source, shares


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--s3-runs", type=int, default=200)
    parser.add_argument("--query-reps", type=int, default=50)
    parser.add_argument(
        "--score-runs", type=int, default=200, help="runs scored per pair (at most those imported)"
    )
    parser.add_argument(
        "--pairs",
        default=",".join(PAIRS),
        help="the pairs to import into, comma-separated (the embedded default is measured at "
        "each size anyway, for the ratio)",
    )
    parser.add_argument("--no-query", action="store_true", help="skip the query figures")
    parser.add_argument("--no-writers", action="store_true", help="skip the 8 writers")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    chosen = [name for name in args.pairs.split(",") if name]
    if not chosen or set(chosen) - set(PAIRS):
        parser.error(f"--pairs: choose among {', '.join(PAIRS)}")
    runs = max(WRITERS * 10, round(10_000 * args.scale))
    s3_runs = max(WRITERS, min(runs, args.s3_runs))
    scored = max(1, min(s3_runs, args.score_runs))
    query_runs = max(1000, round(100_000 * args.scale))
    WORK.mkdir(parents=True, exist_ok=True)

    log("starting PostgreSQL and the S3 server")
    server = start_server(durable=True)
    os.environ.update(server.environ())
    databases = itertools.count(1)

    def new_database() -> str:
        return server.url(server.create_database(f"scale_{next(databases)}"))

    result: dict[str, Any] = {
        "runs": runs,
        "s3_runs": s3_runs,
        "score_runs": scored,
        "loadavg_before": loadavg(),
        "import": {},
        "writers": {},
    }
    try:
        with s3_server() as new_bucket:
            local: Callable[[], str] = lambda: "local"  # noqa: E731
            sqlite: Callable[[], str] = lambda: "sqlite"  # noqa: E731
            pairs = [
                (Pair("local+sqlite", local, sqlite), runs),
                (Pair("local+postgresql", local, new_database), runs),
                (Pair("s3+sqlite", new_bucket, sqlite), s3_runs),
                (Pair("s3+postgresql", new_bucket, new_database), s3_runs),
            ]
            embedded = {}  # the embedded default's runs/s at each size measured
            for pair, count in pairs:
                if pair.name not in chosen:
                    continue
                source, _ = _sources(count)
                if count not in embedded and pair.name != "local+sqlite":
                    log(f"import + verify: {count:,} runs, local+sqlite (for the ratio)")
                    figures = bench_import(pairs[0][0], source, count, scored)
                    embedded[count] = figures["runs_per_s"]
                log(f"import + verify + score: {count:,} runs, {pair.name}")
                figures = bench_import(pair, source, count, scored) | {"runs": count}
                if pair.name == "local+sqlite":
                    embedded[count] = figures["runs_per_s"]
                figures["ratio_to_embedded"] = round(figures["runs_per_s"] / embedded[count], 3)
                result["import"][pair.name] = figures
            result["embedded_runs_per_s"] = embedded
            if not args.no_query:
                result["query"] = bench_query(server, query_runs, args.query_reps)
            for pair, count in pairs[1:2] + pairs[3:]:
                if args.no_writers or pair.name not in chosen:
                    continue
                _, shares = _sources(count)
                log(f"writers: {WRITERS} processes, {count:,} runs, {pair.name}")
                result["writers"][pair.name] = bench_writers(pair, shares, count)
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
