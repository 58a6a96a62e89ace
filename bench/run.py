"""The agentledger benchmarks (`make bench`): import, verify, query and reindex at realistic sizes.

    .venv/bin/python bench/run.py                   # the full sizes of issue 2 (10 to 15 minutes)
    .venv/bin/python bench/run.py --scale 0.1       # a smoke run: 1,000 / 10,000 runs
    .venv/bin/python bench/run.py --only query      # one benchmark (repeatable, or a,b)
    .venv/bin/python bench/run.py --keep            # keep the synthetic data for the next run
    .venv/bin/python bench/run.py --show            # print the table of the last results again

Benchmarks (sizes at --scale 1; docs/benchmarks.md explains each figure):

- import: `agentledger import SRC` of 10,000 runs in the seed's layout (subprocess), the
  library's import_runs(), and plan_import + write_plan in one process (where the time goes),
  against `cp -r` + `sha256sum` of the same files, measured three times between them (median).
  Goal: within 1.5x.
- verify: `agentledger verify` and verify_ledger() of the 10,000 imported runs, a rules score
  of each and 100 decisions (journal, records and every index column checked) against
  `sha256sum` of the same files (runs/, scores/, decisions/, journal/; median of three).
  Goal: within 1.3x.
- query: `runs --model X --prompt-hash P` over an index of 100,000 runs sealed through the
  library: median milliseconds of Ledger.runs() over 50 (X, P) pairs (goal under 10 ms), and of
  the whole command over 10.
- reindex: `agentledger reindex` of the 100,000-run ledger: seconds, and whether the query
  answers are the same afterwards.

The clean page cache is dropped once at the start when that is allowed (root on Linux; see
measure.drop_page_cache; --keep-page-cache leaves it), and every timed step reads its input
into the cache first.

All synthetic data lives in bench/.work/ (git-ignored); results go to bench/.work/results.json
(the latest run) and results-<date>-scale<N>.json (kept).
Big data is removed at the end unless --keep, and only at the end, never between measurements:
on this VM deleting many files slows file creation down for minutes afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import report
import synth
from measure import (
    Timed,
    children_cpu,
    drop_page_cache,
    loadavg,
    machine_facts,
    median,
    percentile,
    q,
    run_timed,
    settle,
    shell_timed,
    timed_block,
    tree_size,
    warm_up,
)

HERE = Path(__file__).resolve().parent
DEFAULT_WORK = HERE / ".work"
BENCHMARKS = ("import", "verify", "query", "reindex")
# Written afresh by every session (datasets are the reusable rest).
TARGETS = (
    *(f"import-cli-{n}" for n in range(1, 10)),
    *(f"import-lib-{n}" for n in range(1, 10)),
    *(f"copy-{n}" for n in range(1, 10)),
    "import-cli",
    "import-lib",
    "import-single",
    "import-volatile",
    "copy-sync",
)
FULL_SIZES = {"import": 10_000, "verify": 10_000, "index": 100_000}
VERIFY_DECISIONS = 100
VERIFY_AREAS = ("runs", "scores", "labels", "decisions", "journal")
"""What verify checks and its baseline hashes: every record area and the journal."""


def _median_run(measured: list[dict[str, Any]], runs: int) -> dict[str, Any]:
    """The round with the median time (its CPU figures with it), and every round's time."""
    timed = sorted((m for m in measured if "seconds" in m), key=lambda m: m["seconds"])
    if not timed:
        return measured[0] if measured else {"unavailable": "not measured"}
    chosen = dict(timed[(len(timed) - 1) // 2])  # its CPU figures: the lower middle
    chosen["seconds"] = round(median([m["seconds"] for m in timed]), 4)
    chosen["runs_per_s"] = round(runs / chosen["seconds"], 1)
    chosen["rounds_seconds"] = [m["seconds"] for m in measured if "seconds" in m]
    return chosen


# -- the benchmark session -----------------------------------------------------------------


class Session:
    """One invocation: sizes, the work directory, datasets, results and the log."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work: Path = args.work
        self.seed: int = args.seed
        self.scale: float = args.scale
        self.started = time.perf_counter()
        self.trash = self.work / "trash"
        self.results: dict[str, Any] = {}
        self.datasets: dict[str, Any] = {}
        bin_dir = Path(sys.executable).parent
        cli = bin_dir / "agentledger"
        self.cli = [str(cli)] if cli.exists() else [sys.executable, "-m", "agentledger"]
        self.env = {k: v for k, v in os.environ.items() if k != "AGENTLEDGER_DIR"}
        self.env["CI"] = "1"  # no progress bars
        self.imported_ledger: Path | None = None

    def size(self, name: str) -> int:
        return max(1, round(FULL_SIZES[name] * self.scale))

    def log(self, message: str) -> None:
        print(
            f"[{time.perf_counter() - self.started:7.1f}s] {message}", file=sys.stderr, flush=True
        )

    def agentledger(self, *args: str) -> Timed:
        return run_timed([*self.cli, *args], env=self.env)

    # -- the work directory ----------------------------------------------------------------

    def discard(self, path: Path) -> None:
        """Move `path` into the trash; the trash is emptied at the end, after all timings."""
        if not path.exists():
            return
        self.trash.mkdir(parents=True, exist_ok=True)
        target = self.trash / f"{path.name}.{time.time_ns()}"
        path.rename(target)

    def fresh(self, name: str) -> Path:
        path = self.work / name
        self.discard(path)
        return path

    def _dataset(self, kind: str, runs: int) -> tuple[Path, Path]:
        name = f"{kind}-{runs}-seed{self.seed}-gen{synth.GENERATOR_VERSION}"
        return self.work / name, self.work / f"{name}.done"

    def reusable(self, directory: Path, done: Path) -> bool:
        """Whether a complete dataset from an earlier run may be used (not with --fresh,
        except for one generated earlier in this same session)."""
        if not (done.exists() and directory.is_dir()):
            return False
        if self.args.fresh and directory.name not in self.datasets:
            self.discard(directory)
            done.unlink()
            return False
        return True

    def ensure_source(self, runs: int) -> Path:
        """Runs 0..runs-1 in the seed's layout (reused from an earlier --keep run if complete)."""
        directory, done = self._dataset("source", runs)
        if self.reusable(directory, done):
            info = json.loads(done.read_text())
            self.log(f"reusing {directory.name} ({runs:,} runs)")
            info["reused"] = True
        else:
            self.discard(directory)
            self.log(f"generating {runs:,} runs in the seed's layout into {directory.name}")
            with timed_block() as took:
                total = synth.write_seed_runs(directory, range(runs), self.seed)
            files, _ = tree_size(directory)
            info = {
                "runs": runs,
                "files": files,
                "bytes": total,
                "generated_in_s": round(took.seconds, 2),
            }
            done.write_text(json.dumps(info))
            info["reused"] = False
        self.datasets.setdefault(directory.name, info)
        return directory

    def ensure_index(self, runs: int) -> Path:
        """A ledger of `runs` recorded runs sealed through the library (the 100,000-run index)."""
        directory, done = self._dataset("index", runs)
        if self.reusable(directory, done):
            info = json.loads(done.read_text())
            self.log(f"reusing {directory.name} ({runs:,} runs)")
            info["reused"] = True
            self.datasets.setdefault(directory.name, info)
            return directory
        from agentledger.store import Ledger

        self.discard(directory)
        Ledger.init(directory).close()
        workers = max(1, min(self.args.workers, runs // 1000 or 1))
        bounds = [runs * k // workers for k in range(workers + 1)]
        self.log(
            f"building the {runs:,}-run index: sealing runs through Ledger.seal_batch "
            f"with {workers} worker process(es)"
        )
        probe = self.probe_create()
        settle()
        user, system = children_cpu()
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "_seal",
                    str(directory),
                    str(bounds[k]),
                    str(bounds[k + 1]),
                    str(self.seed),
                ],
                env=self.env,
            )
            for k in range(workers)
        ]
        codes = [proc.wait() for proc in procs]
        elapsed = time.perf_counter() - started
        user_after, system_after = children_cpu()
        if any(codes):
            raise RuntimeError(f"building the index failed (worker exit codes {codes})")
        with Ledger.open(directory) as ledger:
            count = ledger.count()
        if count != runs:
            raise RuntimeError(f"the index holds {count} runs, expected {runs}")
        files, size = tree_size(directory / "runs")
        info = {
            "runs": runs,
            "built_in_s": round(elapsed, 1),
            "build_user_s": round(user_after - user, 1),
            "build_system_s": round(system_after - system, 1),
            "workers": workers,
            "runs_per_s": round(runs / elapsed, 1),
            "files": files,
            "bytes": size,
            "fs_create_probe_us_per_file": probe,
        }
        done.write_text(json.dumps(info))
        info["reused"] = False
        self.datasets.setdefault(directory.name, info)
        self.log(f"built in {elapsed:.1f}s ({runs / elapsed:.0f} runs/s)")
        return directory

    def probe_create(self, files: int = 600) -> float:
        """Microseconds to create a small file right now (the disk is shared and noisy)."""
        directory = self.trash / f"probe.{time.time_ns()}"
        directory.mkdir(parents=True)
        data = b"x" * 3000
        started = time.perf_counter()
        for n in range(files):
            if n % 6 == 0:
                sub = directory / f"d{n}"
                sub.mkdir()
            fd = os.open(sub / f"f{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, data)
            os.close(fd)
        return round((time.perf_counter() - started) / files * 1e6, 1)

    def wait_for_quiet_filesystem(self, max_wait: float | None = None) -> dict[str, Any]:
        """Wait (up to --max-wait seconds) until creating a file costs what it normally does.

        After many files are deleted, ext4 skips their inode numbers for a few minutes when it
        allocates new ones (recently_deleted() in find_inode_bit), and creating a file then
        costs several times more kernel CPU. A run started right after a big `rm -rf` (the
        cleanup of a previous run, say) would measure that, not agentledger. The skipping lasts
        several minutes while the inode tables holding those inodes are not yet written back,
        about one once they are: hence a `sync` before each probe.
        """
        started = time.perf_counter()
        os.sync()
        probes = [self.probe_create()]
        while probes[-1] > self.args.quiet_us and time.perf_counter() - started < (
            max_wait or self.args.max_wait
        ):
            if len(probes) == 1:
                self.log(
                    f"creating a file costs {probes[-1]:.0f} us (normally under "
                    f"{self.args.quiet_us:.0f}): waiting for the filesystem to settle, as it "
                    "does for a few minutes after many files are deleted"
                )
            time.sleep(15)
            os.sync()
            probes.append(self.probe_create())
        waited = time.perf_counter() - started
        if len(probes) > 1:
            self.log(f"file creation at {probes[-1]:.0f} us after {waited:.0f} s")
        return {"probes_us_per_file": probes, "waited_s": round(waited, 1)}

    # -- baselines ---------------------------------------------------------------------------

    def copy_and_hash(self, source: Path, name: str, *, sync: bool = False) -> Timed:
        """`cp -r SRC DST` then sha256sum of every copied file, timed together (and `sync`)."""
        target = self.fresh(name)
        warm_up(source)
        settle()
        return shell_timed(
            f"cp -r {q(source)} {q(target)} && "
            f"find {q(target)} -type f -print0 | xargs -0 sha256sum > /dev/null"
            + (" && sync" if sync else "")
        )

    def hash_trees(self, directories: list[Path]) -> Timed:
        """sha256sum of every file under `directories` (after a warm-up read of them)."""
        for directory in directories:
            warm_up(directory)
        settle()
        listed = " ".join(q(directory) for directory in directories)
        return shell_timed(f"find {listed} -type f -print0 | xargs -0 sha256sum > /dev/null")

    # -- benchmarks ----------------------------------------------------------------------------

    def bench_import(self) -> dict[str, Any]:
        runs = self.size("import")
        source = self.ensure_source(runs)
        files, size = tree_size(source)
        result: dict[str, Any] = {
            "runs": runs,
            "source_files": files,
            "source_bytes": size,
            "loadavg_before": loadavg(),
            "fs_create_probe_us_per_file": self.probe_create(),
        }
        # Rounds of baseline, command, library: each figure is the median of its rounds, and
        # each ratio compares medians measured side by side (the disk's speed drifts).
        rounds = self.args.rounds
        baselines: list[Timed] = []
        cli_runs: list[dict[str, Any]] = []
        library_runs: list[dict[str, Any]] = []
        waits = []
        for number in range(1, rounds + 1):
            if number > 1:  # the first round follows the check at the start
                waits.append(self.wait_for_quiet_filesystem(max_wait=self.args.max_wait / 3))
            self.log(f"import: baseline cp -r + sha256sum (round {number} of {rounds})")
            baselines.append(self.copy_and_hash(source, f"copy-{number}"))
            cli_runs.append(self._cli_import(source, runs, number))
            library_runs.append(self._library_import(source, runs, number))
        result["single_process"] = self._single_process_import(source, runs)
        baseline = median([b.seconds for b in baselines])
        self.log("import: cp -r + sha256sum + sync (for reference: the baseline made durable)")
        synced = self.copy_and_hash(source, "copy-sync", sync=True)
        result["baseline"] = {
            "command": "cp -r SRC DST && find DST -type f -print0 | xargs -0 sha256sum",
            "runs": [b.as_dict() for b in baselines],
            "median_seconds": round(baseline, 4),
            "with_sync": synced.as_dict(),
        }
        result["filesystem_before_rounds"] = waits
        result["cli"] = _median_run(cli_runs, runs)
        result["library"] = _median_run(library_runs, runs)
        for key in ("cli", "library", "single_process"):
            if "seconds" in result[key]:
                result[key]["ratio_to_baseline"] = round(result[key]["seconds"] / baseline, 2)
        result["loadavg_after"] = loadavg()
        return result

    def _cli_import(self, source: Path, runs: int, number: int) -> dict[str, Any]:
        """`agentledger import SRC` into a new ledger (a subprocess)."""
        ledger = self.fresh(f"import-cli-{number}")
        init = self.agentledger("init", str(ledger))
        if init.returncode != 0:
            raise RuntimeError(f"agentledger init failed: {init.stderr}")
        warm_up(source)
        settle()
        self.log(f"import: agentledger import of {runs:,} runs (subprocess, round {number})")
        cli = self.agentledger("import", str(source), "--ledger", str(ledger))
        if cli.returncode != 0:
            reason = (cli.stderr.strip().splitlines() or ["(no message)"])[-1]
            self.log(f"import: the CLI import is not usable: {reason}")
            return {"unavailable": reason}
        count = self._count(ledger)
        if count != runs:
            raise RuntimeError(f"the CLI import indexed {count} runs, expected {runs}")
        self.imported_ledger = ledger
        return cli.as_dict()

    def _library_import(self, source: Path, runs: int, number: int) -> dict[str, Any]:
        """The library's import_runs() with its default options (worker processes included)."""
        import_runs = _library_import_runs()
        if import_runs is None:
            return {"unavailable": "the library has no import_runs()"}
        from agentledger.store import Ledger

        target = self.fresh(f"import-lib-{number}")
        warm_up(source)
        settle()
        self.log(f"import: import_runs() of {runs:,} runs (library, round {number})")
        with Ledger.init(target) as ledger, timed_block() as took:
            report = import_runs(ledger, [source])
        if len(report.imported) != runs:
            raise RuntimeError(f"the library import sealed {len(report.imported)} runs")
        if self.imported_ledger is None:
            self.imported_ledger = target
        return took.as_dict()

    def _single_process_import(self, source: Path, runs: int) -> dict[str, Any]:
        """plan_import + write_plan in this process: where the time of one worker goes."""
        try:
            from agentledger.importers.directory import plan_import, write_plan
        except ImportError as exc:
            return {"unavailable": f"agentledger.importers.directory: {exc}"}
        from agentledger.store import Ledger

        target = self.fresh("import-single")
        warm_up(source)
        settle()
        self.log(f"import: plan_import + write_plan of {runs:,} runs (one process)")
        with Ledger.init(target) as ledger:
            with timed_block() as plan_took:
                plan = plan_import([source], ledger=ledger)
            with timed_block() as write_took:
                report = write_plan(ledger, plan)
        if len(report.imported) != runs:
            raise RuntimeError(f"the single-process import sealed {len(report.imported)} runs")
        seconds = plan_took.seconds + write_took.seconds
        result = {
            "seconds": round(seconds, 4),
            "user_seconds": round(plan_took.user + write_took.user, 3),
            "system_seconds": round(plan_took.system + write_took.system, 3),
            "runs_per_s": round(runs / seconds, 1),
            "plan_seconds": round(plan_took.seconds, 4),
            "write_seconds": round(write_took.seconds, 4),
        }
        # The same plan sealed once more into an empty ledger without the flushes to disk
        # (LocalStorage(durable=False)): what crash safety costs in the write phase.
        from agentledger.store import LocalStorage

        try:
            volatile_target = self.fresh("import-volatile")
            with Ledger.init(volatile_target) as ledger:
                ledger.storage = LocalStorage(ledger.root, durable=False)
                settle()
                with timed_block() as volatile_took:
                    write_plan(ledger, plan)
            result["write_without_flush_seconds"] = round(volatile_took.seconds, 4)
        except (TypeError, AttributeError) as exc:  # the storage seam changed
            result["write_without_flush_seconds"] = None
            self.log(f"import: cannot measure sealing without flushes: {exc}")
        return result

    def _count(self, ledger_path: Path) -> int:
        from agentledger.store import Ledger

        with Ledger.open(ledger_path) as ledger:
            return ledger.count()

    def verify_ledger_path(self, runs: int) -> tuple[Path, str]:
        """The ledger `verify` checks: this session's import if it has the right size."""
        if self.imported_ledger is not None and self._count(self.imported_ledger) == runs:
            return self.imported_ledger, "the ledger written by the import benchmark"
        directory, done = self._dataset("verify", runs)
        if self.reusable(directory, done):
            return directory, "reused from an earlier --keep run"
        from agentledger.store import Ledger

        source = self.ensure_source(runs)
        self.discard(directory)
        self.log(f"verify: importing {runs:,} runs to have a ledger to verify")
        import_runs = _library_import_runs()
        with Ledger.init(directory) as ledger:
            if import_runs is not None:
                import_runs(ledger, [source])
                how = "imported through the library (import_runs)"
        if import_runs is None:
            synth.seal_runs(directory, range(runs), self.seed)
            how = "sealed through the library (no importer available)"
        done.write_text(json.dumps({"runs": runs, "how": how}))
        return directory, how

    def bench_verify(self) -> dict[str, Any]:
        from agentledger.store import Ledger, verify_ledger

        runs = self.size("verify")
        ledger_path, how = self.verify_ledger_path(runs)
        if not (ledger_path / "scores").exists():
            self.log(
                f"verify: a score for each of the {runs:,} runs and {VERIFY_DECISIONS} decisions"
            )
            synth.add_scores_and_decisions(ledger_path, VERIFY_DECISIONS, self.seed)
            settle()
        areas = [ledger_path / area for area in VERIFY_AREAS if (ledger_path / area).exists()]
        files = size = 0
        for area in areas:
            found, total = tree_size(area)
            files, size = files + found, size + total
        result: dict[str, Any] = {
            "runs": runs,
            "ledger": how + f", a score each and {VERIFY_DECISIONS} decisions",
            "files": files,
            "bytes": size,
            "loadavg_before": loadavg(),
        }
        self.log(f"verify: baseline sha256sum of {files:,} files (1 of 3)")
        baselines = [self.hash_trees(areas)]
        warm_up(ledger_path)
        settle()
        self.log(f"verify: agentledger verify of {runs:,} runs (subprocess)")
        cli = self.agentledger("verify", "--ledger", str(ledger_path))
        if cli.returncode != 0:
            raise RuntimeError(f"agentledger verify exited {cli.returncode}: {cli.stderr[-2000:]}")
        result["cli"] = cli.as_dict() | {"summary": (cli.stdout + cli.stderr).strip()[-300:]}
        self.log("verify: baseline sha256sum (2 of 3)")
        baselines.append(self.hash_trees(areas))
        warm_up(ledger_path)
        settle()
        self.log("verify: verify_ledger() (library, in process)")
        with Ledger.open(ledger_path) as ledger, timed_block() as took:
            report = verify_ledger(ledger)
        if not report.ok:
            raise RuntimeError(f"verify_ledger found problems: {report.problems[:3]}")
        result["library"] = took.as_dict() | {
            "files_checked": report.files_checked,
            "bytes_checked": report.bytes_checked,
        }
        self.log("verify: baseline sha256sum (3 of 3)")
        baselines.append(self.hash_trees(areas))
        baseline = median([b.seconds for b in baselines])
        result["baseline"] = {
            "command": "find LEDGER/{runs,scores,decisions,journal} -type f -print0 "
            "| xargs -0 sha256sum",
            "runs": [b.as_dict() for b in baselines],
            "median_seconds": round(baseline, 4),
        }
        for key in ("cli", "library"):
            result[key]["ratio_to_baseline"] = round(result[key]["seconds"] / baseline, 2)
            result[key]["runs_per_s"] = round(runs / result[key]["seconds"], 1)
        result["loadavg_after"] = loadavg()
        return result

    def query_answers(self, ledger_path: Path, pairs: list[tuple[str, str]]) -> list[list[str]]:
        from agentledger.store import Ledger

        with Ledger.open(ledger_path) as ledger:
            return [
                [run.run_id for run in ledger.runs(_query_filter(model, prefix))]
                for model, prefix in pairs
            ]

    def bench_query(self) -> dict[str, Any]:
        from agentledger.store import Ledger, SQLiteIndex

        runs = self.size("index")
        ledger_path = self.ensure_index(runs)
        pairs = synth.query_pairs(self.args.query_reps, self.seed)
        result: dict[str, Any] = {"runs": runs, "loadavg_before": loadavg()}
        self.log(f"query: {len(pairs)} Ledger.runs() queries over {runs:,} runs")
        times: list[float] = []
        rows: list[int] = []
        with Ledger.open(ledger_path) as ledger:
            ledger.runs(_query_filter(*pairs[-1]))  # opens the statement cache
            for model, prefix in pairs:
                started = time.perf_counter()
                found = ledger.runs(_query_filter(model, prefix))
                times.append((time.perf_counter() - started) * 1000)
                rows.append(len(found))
            plan = None
            if isinstance(ledger.index, SQLiteIndex):
                plan = [
                    row[3]
                    for row in ledger.index.db.execute(
                        "EXPLAIN QUERY PLAN SELECT run_id FROM runs WHERE model = ? AND "
                        "system_prompt_hash GLOB ? "
                        "ORDER BY started_at IS NULL, started_at DESC, run_id",
                        (pairs[0][0], f"sha256:{pairs[0][1]}*"),
                    )
                ]
        result["library"] = {
            "queries": len(times),
            "median_ms": round(median(times), 3),
            "p90_ms": round(percentile(times, 0.9), 3),
            "min_ms": round(min(times), 3),
            "max_ms": round(max(times), 3),
            "rows_min": min(rows),
            "rows_median": median([float(r) for r in rows]),
            "rows_max": max(rows),
            "query_plan": plan,
        }
        cli_pairs = pairs[: self.args.cli_reps]
        self.log(f"query: {len(cli_pairs)} `agentledger runs --model X --prompt-hash P` commands")
        cli_times = []
        for model, prefix in cli_pairs:
            timed = self.agentledger(
                "runs", "--model", model, "--prompt-hash", prefix, "--ledger", str(ledger_path)
            )
            if timed.returncode != 0:
                raise RuntimeError(f"agentledger runs failed: {timed.stderr[-2000:]}")
            cli_times.append(timed.seconds * 1000)
        startup = []
        for _ in range(5):
            timed = self.agentledger("--version")
            startup.append(timed.seconds * 1000)
        # `agentledger --help` lists every command without importing one (goal: under 3x the
        # start of a bare interpreter, measured alternately in the same loop).
        helps, bare = [], []
        for _ in range(10):
            helps.append(self.agentledger("--help").seconds * 1000)
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append((time.perf_counter() - began) * 1000)
        result["cli"] = {
            "commands": len(cli_times),
            "median_ms": round(median(cli_times), 1),
            "min_ms": round(min(cli_times), 1),
            "max_ms": round(max(cli_times), 1),
            "output": "table (default limit 50, plus a count when cut)",
            "startup_median_ms": round(median(startup), 1),
            "help_median_ms": round(median(helps), 1),
            "python_median_ms": round(median(bare), 1),
        }
        result["loadavg_after"] = loadavg()
        return result

    def bench_reindex(self) -> dict[str, Any]:
        runs = self.size("index")
        ledger_path = self.ensure_index(runs)
        pairs = synth.query_pairs(10, self.seed)
        before = self.query_answers(ledger_path, pairs)
        result: dict[str, Any] = {"runs": runs, "loadavg_before": loadavg()}
        warm_up(ledger_path / "runs", ("MANIFEST.json", "metadata.json", "run_summary.json"))
        settle()
        self.log(f"reindex: agentledger reindex of {runs:,} runs (subprocess)")
        timed = self.agentledger("reindex", "--ledger", str(ledger_path))
        if timed.returncode != 0:
            raise RuntimeError(f"agentledger reindex exited {timed.returncode}: {timed.stderr}")
        after = self.query_answers(ledger_path, pairs)
        result["cli"] = timed.as_dict() | {
            "runs_per_s": round(runs / timed.seconds, 1),
            "output": timed.stdout.strip()[-200:],
        }
        result["same_answers"] = before == after
        result["count_after"] = self._count(ledger_path)
        result["loadavg_after"] = loadavg()
        return result

    # -- cleaning up ---------------------------------------------------------------------------

    def clean_up(self, keep: bool) -> float:
        """Empty the trash; without --keep also every dataset (the results files stay)."""
        if not keep and self.work.is_dir():
            for entry in sorted(self.work.iterdir()):
                if not (entry.name == "trash" or entry.name.startswith("results")):
                    self.discard(entry)
        started = time.perf_counter()
        if self.trash.exists():
            self.log("removing the synthetic data" if not keep else "emptying bench/.work/trash")
            # sealed runs are read-only directories: give write permission back first
            subprocess.run(["chmod", "-R", "u+w", str(self.trash)], check=False)
            shutil.rmtree(self.trash, ignore_errors=True)
            os.sync()  # so that the next run (and everyone else) finds a settled filesystem
        return time.perf_counter() - started


def _library_import_runs() -> Any:
    """The library's import function, wherever this version keeps it (None if it has none)."""
    try:
        from agentledger.importers import import_runs
    except ImportError:
        try:
            from agentledger.importers.directory import import_runs
        except ImportError:
            return None
    return import_runs


def _query_filter(model: str, prefix: str) -> Any:
    from agentledger.store import RunFilter

    return RunFilter(models=(model,), prompt_hash=f"sha256:{prefix}")


# -- entry points ----------------------------------------------------------------------------


def seal_worker(argv: list[str]) -> int:
    """`run.py _seal LEDGER START STOP SEED`: seal runs START..STOP-1 (index build worker)."""
    ledger, start, stop, seed = Path(argv[0]), int(argv[1]), int(argv[2]), int(argv[3])
    synth.seal_runs(ledger, range(start, stop), seed)
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="agentledger benchmarks: import, verify, query, reindex (issue 2)."
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every size by this (0.1: 1,000 / 10,000 runs); default 1",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help=f"run only these benchmarks ({', '.join(BENCHMARKS)}); repeatable or comma-separated",
    )
    parser.add_argument("--keep", action="store_true", help="keep the synthetic data for reuse")
    parser.add_argument(
        "--fresh", action="store_true", help="regenerate the data even if a kept copy exists"
    )
    parser.add_argument("--seed", type=int, default=synth.DEFAULT_SEED, help="data generator seed")
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="processes that build the 100,000-run index (default: nproc)",
    )
    parser.add_argument("--query-reps", type=int, default=50, help="library queries (default 50)")
    parser.add_argument("--cli-reps", type=int, default=10, help="`runs` commands (default 10)")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="work directory")
    parser.add_argument(
        "--quiet-us",
        type=float,
        default=100.0,
        help="file creation cost (us) under which the filesystem counts as settled (100)",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=420.0,
        help="longest wait for the filesystem to settle before measuring, seconds (420)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of baseline, command and library import (medians are reported; 3)",
    )
    parser.add_argument(
        "--keep-page-cache",
        action="store_true",
        help="do not drop the clean page cache at the start (it is dropped when allowed: root)",
    )
    parser.add_argument(
        "--show", action="store_true", help="print the table of the last results.json and exit"
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for item in args.only for name in item.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHMARKS)}")
    args.only = [name for name in BENCHMARKS if not chosen or name in chosen]
    if args.scale <= 0:
        parser.error("--scale must be more than 0")
    if not 1 <= args.rounds <= 9:
        parser.error("--rounds must be from 1 to 9")
    return args


def save_results(work: Path, results: dict[str, Any]) -> None:
    """results.json (the latest run) and a copy named after the run, which later runs keep."""
    text = json.dumps(results, indent=2) + "\n"
    (work / "results.json").write_text(text)
    stamp = results["machine"]["date"].replace(" UTC", "").replace(" ", "T").replace(":", "")
    (work / f"results-{stamp}-scale{results['scale']:g}.json").write_text(text)


def main(argv: list[str]) -> int:
    if argv[:1] == ["_seal"]:
        return seal_worker(argv[1:])
    args = parse_args(argv)
    if args.show:
        print(report.render_table(json.loads((args.work / "results.json").read_text())))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    session = Session(args)
    # leftovers of a crashed earlier run that are not reusable datasets
    for name in TARGETS:
        session.discard(args.work / name)
    results: dict[str, Any] = {
        "machine": machine_facts(args.work),
        "scale": args.scale,
        "seed": args.seed,
        "sizes": {name: session.size(name) for name in FULL_SIZES},
        "benchmarks": {},
        "datasets": session.datasets,
        "path": str(args.work / "results.json"),
    }
    session.log(
        f"benchmarks {', '.join(args.only)} at scale {args.scale:g} in {args.work} "
        f"({results['machine']['nproc']} CPUs, Python {results['machine']['python']})"
    )
    if args.keep_page_cache:
        results["page_cache_at_start"] = {"dropped": False, "why": "--keep-page-cache"}
    else:
        results["page_cache_at_start"] = drop_page_cache()
        if results["page_cache_at_start"]["dropped"]:
            before = results["page_cache_at_start"]["before"]
            session.log(
                f"dropped the clean page cache ({before.get('cached_mb', '?')} MB cached, "
                f"{before.get('memfree_mb', '?')} MB free before)"
            )
    results["filesystem_at_start"] = session.wait_for_quiet_filesystem()
    runners = {
        "import": session.bench_import,
        "verify": session.bench_verify,
        "query": session.bench_query,
        "reindex": session.bench_reindex,
    }
    failed = False
    try:
        for name in args.only:
            try:
                results["benchmarks"][name] = runners[name]()
            except Exception as exc:  # report and carry on with the others
                failed = True
                session.log(f"{name}: FAILED: {exc}")
                results.setdefault("failures", {})[name] = str(exc)
    finally:
        results["total_seconds"] = round(time.perf_counter() - session.started, 1)
        save_results(args.work, results)
        cleanup = session.clean_up(args.keep)
        results["cleanup_seconds"] = round(cleanup, 1)
        save_results(args.work, results)
    print(report.render_table(results))
    for name, problem in results.get("failures", {}).items():
        print(f"FAILED {name}: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
