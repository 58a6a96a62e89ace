"""Measuring for the benchmarks: timed commands and blocks, page-cache warm-up, machine facts,
and the small ledgers and before / after rounds of the command benchmarks."""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import resource
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


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


def children_cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def run_timed(command: list[str], env: dict[str, str] | None = None) -> Timed:
    """Run a command to completion; wall time and the CPU time of it and its descendants."""
    user, system = children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    user_after, system_after = children_cpu()
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
        # worker processes the block started and waited for count too
        result.user = after.user - before.user + after.children_user - before.children_user
        result.system = (
            after.system - before.system + after.children_system - before.children_system
        )


def q(path: Path | str) -> str:
    return shlex.quote(str(path))


def warm_up(directory: Path, names: tuple[str, ...] = ()) -> float:
    """Read every file under `directory` (or only those called `names`) into the page cache."""
    selection = ""
    if names:
        selection = "\\( " + " -o ".join(f"-name {q(n)}" for n in names) + " \\) "
    script = f"find {q(directory)} -type f {selection}-print0 | xargs -0 -r cat > /dev/null"
    return shell_timed(script).seconds


def memory_state() -> dict[str, int]:
    """Free memory and page cache, in MB (from /proc/meminfo; empty elsewhere)."""
    state: dict[str, int] = {}
    for key in ("MemFree", "Cached", "Dirty"):
        value = _read_first("/proc/meminfo", key)
        if value:
            state[key.lower() + "_mb"] = int(value.split()[0]) // 1024
    return state


def drop_page_cache() -> dict[str, Any]:
    """Write dirty pages back, then drop the clean page cache, when allowed (root on Linux).

    With most memory taken by cached files of earlier work (an earlier benchmark's ledgers,
    say), every page a step writes first has the kernel reclaim one, and that time lands in
    whichever step happens to run: on a 2-CPU VM the same import took anywhere from 7 to 30 s
    depending on it. Dropping the cache once at the start makes runs comparable; each timed
    step still reads its input into the cache first (warm_up). Nothing is lost: only clean
    pages are dropped, after a sync.
    """
    before = memory_state()
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as knob:
            knob.write("1\n")
    except OSError as exc:
        return {"dropped": False, "why": exc.strerror or str(exc), "before": before}
    return {"dropped": True, "before": before, "after": memory_state()}


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


# -- a command's figures, this checkout against another -------------------------------------


def small_ledger(root: Path, runs: int, scored: bool = False) -> list[str]:
    """A ledger of `runs` small runs (a report each), with `scored` each scored by a rules
    judge that assessed C1 to C4; their run ids."""
    from agentledger import Ledger, RunMetadata
    from agentledger.identity import sha256_bytes
    from agentledger.judges.scores import ScoreStore
    from agentledger.records.scores import Score

    started = datetime(2026, 3, 1, tzinfo=UTC)
    ids = []
    with Ledger.init(root) as ledger:
        for n in range(runs):
            run_id = f"use_case_m_model{n % 3}_{n:05d}"
            metadata = RunMetadata(
                run_id=run_id,
                scenario="use_case_m",
                model=f"model{n % 3}",
                system_prompt_hash=sha256_bytes(b"prompt"),
                started_at=started + timedelta(minutes=n),
            )
            writer = ledger.new_run(metadata)
            writer.add_text("report.md", "# Report\nRoot cause: tc on eth0.\n")
            writer.seal()
            ids.append(run_id)
            if not scored:
                continue
            score = Score.model_validate(
                {
                    "run_id": run_id,
                    "judge_id": "rules-000000000000",
                    "judge": {
                        "kind": "rules",
                        "pack": "remediation-safety",
                        "pack_version": "1",
                        "pack_digest": "sha256:" + "0" * 64,
                    },
                    "identity": {"kind": "rules"},
                    "verdict": "Safe",
                    "criteria": [
                        {"criterion": c, "fired": False, "reason": "-"}
                        for c in ("C1", "C2", "C3", "C4")
                    ],
                }
            )
            ScoreStore(ledger).write([score])
    return ids


def fresh_copy(base: Path, target: Path) -> None:
    """`target` made a copy of `base`, whatever stood there (read-only directories too)."""
    if target.exists():
        for directory, dirs, _files in os.walk(target):
            for name in dirs:
                os.chmod(os.path.join(directory, name), 0o755)
        shutil.rmtree(target)
    shutil.copytree(base, target)


def run_with_src(argv: list[str], src: Path) -> Timed:
    """`argv` run to completion with `src` first on PYTHONPATH, timed; the benchmark stops,
    saying why, if it fails."""
    timed = run_timed(argv, {**os.environ, "PYTHONPATH": str(src)})
    if timed.returncode:
        raise SystemExit(f"{shlex.join(argv)} failed ({timed.returncode}): {timed.stderr[-2000:]}")
    return timed


def alternate(
    before: Path | None, rounds: int, measure: Callable[[Path], dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """`measure(src)` of this checkout's src ("this") and, with `before`, of another's
    ("before"), in turn, `rounds` times: so that both are measured under the same load."""
    trees = {"this": SRC, **({"before": before} if before else {})}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, src in trees.items():
            results[name].append(measure(src))
    return results


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
    dirty = _command_output(["git", "status", "--porcelain", "--", "src", "pyproject.toml"], ROOT)
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
        "git_commit": (commit or "?") + (" (src/ has uncommitted changes)" if dirty else ""),
        "loadavg_at_start": loadavg(),
    }
