"""The agentledger benchmarks (`make bench`): import, query, verify and reindex at realistic sizes.

    .venv/bin/python bench/run.py                   # the full sizes of issue 2 (about 15 minutes)
    .venv/bin/python bench/run.py --scale 0.1       # a smoke run: 1,000 / 10,000 runs
    .venv/bin/python bench/run.py --only query      # one benchmark (repeatable, or a,b)
    .venv/bin/python bench/run.py --keep            # keep the synthetic data for the next run

Benchmarks (sizes at --scale 1):

- import: `agentledger import SRC` of 10,000 runs in the seed's layout, as a subprocess and
  through the library (plan_import + write_plan), against `cp -r` + `sha256sum` of the same
  files measured before and after it. Goal: within 1.5x.
- verify: `agentledger verify` of the 10,000 imported runs against `sha256sum` of the same files.
  Goal: within 1.3x.
- query: `runs --model X --prompt-hash P` over an index of 100,000 runs: median milliseconds of
  Ledger.runs() over 50 (X, P) pairs (goal under 10 ms), and of the whole command over 10.
- reindex: `agentledger reindex` of the 100,000-run ledger: seconds, and whether the answers of
  the query benchmark are unchanged afterwards.

All synthetic data lives in bench/.work/ (git-ignored); results go to bench/.work/results.json.
Big data is removed at the end unless --keep. Removal happens only at the end, never between
measurements: on this VM deleting many files slows file creation down for minutes afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import report
import synth

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_WORK = HERE / ".work"
BENCHMARKS = ("import", "verify", "query", "reindex")
FULL_SIZES = {"import": 10_000, "verify": 10_000, "index": 100_000}


# -- measuring -----------------------------------------------------------------------------


@dataclass
class Timed:
    """One timed command or block: wall seconds and CPU seconds (user, system)."""

    seconds: float
    user: float
    system: float
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 4),
            "user_seconds": round(self.user, 3),
            "system_seconds": round(self.system, 3),
        }


def _children_cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def run_timed(command: list[str], env: dict[str, str] | None = None) -> Timed:
    """Run a command to completion; wall time and the CPU time of it and its descendants."""
    user, system = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    user_after, system_after = _children_cpu()
    return Timed(
        elapsed,
        user_after - user,
        system_after - system,
        proc.returncode,
        proc.stdout,
        proc.stderr,
    )


def shell_timed(script: str) -> Timed:
    """A bash pipeline, timed as one command; fails loudly if any part fails."""
    timed = run_timed(["bash", "-c", "set -euo pipefail; " + script])
    if timed.returncode != 0:
        raise RuntimeError(
            f"baseline command failed ({timed.returncode}): {script}\n{timed.stderr}"
        )
    return timed


@contextlib.contextmanager
def timed_block() -> Iterator[Timed]:
    """Time a block of this process: wall and CPU seconds (filled in when the block ends)."""
    result = Timed(0.0, 0.0, 0.0)
    gc.collect()
    before = os.times()
    started = time.perf_counter()
    try:
        yield result
    finally:
        result.seconds = time.perf_counter() - started
        after = os.times()
        result.user = after.user - before.user
        result.system = after.system - before.system


def q(path: Path | str) -> str:
    return shlex.quote(str(path))


def warm_up(directory: Path, names: tuple[str, ...] = ()) -> float:
    """Read every file under `directory` (or only those called `names`) into the page cache."""
    selection = ""
    if names:
        selection = "\\( " + " -o ".join(f"-name {q(n)}" for n in names) + " \\) "
    script = f"find {q(directory)} -type f {selection}-print0 | xargs -0 -r cat > /dev/null"
    return shell_timed(script).seconds


def settle() -> None:
    """Flush dirty pages left by earlier steps so their writeback does not land in a timing."""
    os.sync()
    time.sleep(0.5)


def tree_size(directory: Path) -> tuple[int, int]:
    """(files, bytes) under a directory."""
    files = size = 0
    for root, _dirs, names in os.walk(directory):
        for name in names:
            files += 1
            size += os.lstat(os.path.join(root, name)).st_size
    return files, size


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


# -- the machine ---------------------------------------------------------------------------


def _read_first(path: str, prefix: str) -> str | None:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _command_output(command: list[str], cwd: Path | None = None) -> str | None:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def machine_facts(work: Path) -> dict[str, Any]:
    mem_kb = _read_first("/proc/meminfo", "MemTotal")
    commit = _command_output(["git", "rev-parse", "--short", "HEAD"], ROOT)
    dirty = _command_output(["git", "status", "--porcelain", "--untracked-files=no"], ROOT)
    try:
        import agentledger

        version = agentledger.__version__
    except ImportError:
        version = None
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": int(_command_output(["nproc"]) or os.cpu_count() or 0),
        "cpu": _read_first("/proc/cpuinfo", "model name") or platform.processor(),
        "memory_gb": round(int(mem_kb.split()[0]) / 1024**2, 1) if mem_kb else None,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "kernel": platform.release(),
        "filesystem": _command_output(["stat", "-f", "-c", "%T", str(work)]),
        "agentledger": version,
        "git_commit": (commit or "?") + (" (with uncommitted changes)" if dirty else ""),
        "loadavg_at_start": loadavg(),
    }


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
        user, system = _children_cpu()
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
        user_after, system_after = _children_cpu()
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

    # -- baselines ---------------------------------------------------------------------------

    def copy_and_hash(self, source: Path, name: str) -> Timed:
        """`cp -r SRC DST` then sha256sum of every copied file, timed together."""
        target = self.fresh(name)
        warm_up(source)
        settle()
        return shell_timed(
            f"cp -r {q(source)} {q(target)} && "
            f"find {q(target)} -type f -print0 | xargs -0 sha256sum > /dev/null"
        )

    def hash_tree(self, directory: Path) -> Timed:
        """sha256sum of every file under `directory` (after a warm-up read of them)."""
        warm_up(directory)
        settle()
        return shell_timed(f"find {q(directory)} -type f -print0 | xargs -0 sha256sum > /dev/null")

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
        self.log("import: baseline cp -r + sha256sum (1 of 3)")
        baselines = [self.copy_and_hash(source, "copy-1")]

        ledger = self.fresh("import-cli")
        init = self.agentledger("init", str(ledger))
        if init.returncode != 0:
            raise RuntimeError(f"agentledger init failed: {init.stderr}")
        warm_up(source)
        settle()
        self.log(f"import: agentledger import of {runs:,} runs (subprocess)")
        cli = self.agentledger("import", str(source), "--ledger", str(ledger))
        if cli.returncode == 0:
            count = self._count(ledger)
            if count != runs:
                raise RuntimeError(f"the CLI import indexed {count} runs, expected {runs}")
            result["cli"] = cli.as_dict() | {"runs_per_s": round(runs / cli.seconds, 1)}
            self.imported_ledger = ledger
        else:
            reason = (cli.stderr.strip().splitlines() or ["(no message)"])[-1]
            self.log(f"import: the CLI import is not usable: {reason}")
            result["cli"] = {"unavailable": reason}

        self.log("import: baseline cp -r + sha256sum (2 of 3)")
        baselines.append(self.copy_and_hash(source, "copy-2"))

        result["library"] = self._library_import(source, runs)

        self.log("import: baseline cp -r + sha256sum (3 of 3)")
        baselines.append(self.copy_and_hash(source, "copy-3"))
        baseline = median([b.seconds for b in baselines])
        result["baseline"] = {
            "command": "cp -r SRC DST && find DST -type f -print0 | xargs -0 sha256sum",
            "runs": [b.as_dict() for b in baselines],
            "median_seconds": round(baseline, 4),
        }
        for key in ("cli", "library"):
            if "seconds" in result[key]:
                result[key]["ratio_to_baseline"] = round(result[key]["seconds"] / baseline, 2)
        result["loadavg_after"] = loadavg()
        return result

    def _library_import(self, source: Path, runs: int) -> dict[str, Any]:
        try:
            from agentledger.importers.directory import plan_import, write_plan
        except ImportError as exc:
            return {"unavailable": f"agentledger.importers.directory: {exc}"}
        from agentledger.store import Ledger

        target = self.fresh("import-lib")
        warm_up(source)
        settle()
        self.log(f"import: plan_import + write_plan of {runs:,} runs (library, in process)")
        with Ledger.init(target) as ledger:
            with timed_block() as plan_took:
                plan = plan_import([source], ledger=ledger)
            with timed_block() as write_took:
                report = write_plan(ledger, plan)
        if len(report.imported) != runs:
            raise RuntimeError(f"the library import sealed {len(report.imported)} runs")
        seconds = plan_took.seconds + write_took.seconds
        if self.imported_ledger is None:
            self.imported_ledger = target
        return {
            "seconds": round(seconds, 4),
            "user_seconds": round(plan_took.user + write_took.user, 3),
            "system_seconds": round(plan_took.system + write_took.system, 3),
            "runs_per_s": round(runs / seconds, 1),
            "plan_seconds": round(plan_took.seconds, 4),
            "write_seconds": round(write_took.seconds, 4),
        }

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
        with Ledger.init(directory) as ledger:
            try:
                from agentledger.importers.directory import import_runs

                import_runs(ledger, [source])
                how = "imported through the library (import_runs)"
            except ImportError:
                ledger.close()
                synth.seal_runs(directory, range(runs), self.seed)
                how = "sealed through the library (no importer available)"
        done.write_text(json.dumps({"runs": runs, "how": how}))
        return directory, how

    def bench_verify(self) -> dict[str, Any]:
        from agentledger.store import Ledger, verify_ledger

        runs = self.size("verify")
        ledger_path, how = self.verify_ledger_path(runs)
        files, size = tree_size(ledger_path / "runs")
        result: dict[str, Any] = {
            "runs": runs,
            "ledger": how,
            "files": files,
            "bytes": size,
            "loadavg_before": loadavg(),
        }
        self.log(f"verify: baseline sha256sum of {files:,} files (1 of 3)")
        baselines = [self.hash_tree(ledger_path / "runs")]
        warm_up(ledger_path)
        settle()
        self.log(f"verify: agentledger verify of {runs:,} runs (subprocess)")
        cli = self.agentledger("verify", "--ledger", str(ledger_path))
        if cli.returncode != 0:
            raise RuntimeError(f"agentledger verify exited {cli.returncode}: {cli.stderr[-2000:]}")
        result["cli"] = cli.as_dict() | {"summary": (cli.stdout + cli.stderr).strip()[-300:]}
        self.log("verify: baseline sha256sum (2 of 3)")
        baselines.append(self.hash_tree(ledger_path / "runs"))
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
        baselines.append(self.hash_tree(ledger_path / "runs"))
        baseline = median([b.seconds for b in baselines])
        result["baseline"] = {
            "command": "find LEDGER/runs -type f -print0 | xargs -0 sha256sum",
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
        result["cli"] = {
            "commands": len(cli_times),
            "median_ms": round(median(cli_times), 1),
            "min_ms": round(min(cli_times), 1),
            "max_ms": round(max(cli_times), 1),
            "output": "table (default limit 50, plus a count when cut)",
            "startup_median_ms": round(median(startup), 1),
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
        """Empty the trash; without --keep also every dataset (results.json stays)."""
        if not keep and self.work.is_dir():
            for entry in sorted(self.work.iterdir()):
                if entry.name not in ("results.json", "trash"):
                    self.discard(entry)
        started = time.perf_counter()
        if self.trash.exists():
            self.log("removing the synthetic data" if not keep else "emptying bench/.work/trash")
            # sealed runs are read-only directories: give write permission back first
            subprocess.run(["chmod", "-R", "u+w", str(self.trash)], check=False)
            shutil.rmtree(self.trash, ignore_errors=True)
        return time.perf_counter() - started


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
    return args


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
    for name in ("import-cli", "import-lib", "copy-1", "copy-2", "copy-3"):
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
        (args.work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        cleanup = session.clean_up(args.keep)
        results["cleanup_seconds"] = round(cleanup, 1)
        (args.work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(report.render_table(results))
    for name, problem in results.get("failures", {}).items():
        print(f"FAILED {name}: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
