"""Peak memory of importing one large trace: resident set size of `agentledger import --dry-run`.

    .venv/bin/python bench/import_memory.py                    # 50,000 / 200,000 / 1,000,000 events
    .venv/bin/python bench/import_memory.py --events 50000 --json out.json
    .venv/bin/python bench/import_memory.py --events --within-limits   # the largest accepted

Each size is an OpenHands trajectory of that many events (a command and its output, in
turn: about 190 bytes an event), imported by a fresh `agentledger import --dry-run` process with
the artifact limit raised to 1 GB, so that only the trace limits apply; the figure is that
process's peak resident set size (`wait4`'s ru_maxrss) and wall time. Goal: every size under
500 MB, a trace over `MAX_TRACE_STEPS` events refused (exit 2) before it is parsed whole.
`--within-limits` adds the largest trajectory the default limits accept: `MAX_TRACE_STEPS`
events whose outputs make its trace.jsonl just under the default artifact limit (outputs
3 kB longer: about 1.7 kB an event), imported with the default limits.
Exit code 1 when a size misses it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOAL_MB = 500


def trajectory(path: Path, events: int, output_bytes: int = 0) -> None:
    """An OpenHands trajectory of `events` events, written as one JSON list (each output
    `output_bytes` longer than the usual few lines)."""
    with path.open("w") as handle:
        handle.write("[")
        for i in range(events):
            if i:
                handle.write(",")
            if i % 2 == 0:
                event: dict[str, Any] = {
                    "id": i, "timestamp": "2026-03-12T10:15:00", "source": "agent",
                    "action": "run", "message": "Running command: ls -la /etc",
                    "args": {"command": "ls -la /etc", "thought": "look at etc"},
                }  # fmt: skip
            else:
                event = {
                    "id": i, "timestamp": "2026-03-12T10:15:01", "source": "agent",
                    "observation": "run", "cause": i - 1,
                    "content": "total 12\ndrwxr-xr-x 2 root root 4096 a\n" + "x" * output_bytes,
                    "extras": {"exit_code": 0},
                }  # fmt: skip
            handle.write(json.dumps(event))
        handle.write("]")


def measure(path: Path, work: Path, limit: str | None = "1GB") -> dict[str, Any]:
    """Import `path` in a fresh process; its exit code, peak RSS (MB) and wall time (s)."""
    argv = [
        sys.executable, "-m", "agentledger", "import", str(path), "--model", "m",
        "--dry-run", "--ledger", str(work / "ledger"),
    ]  # fmt: skip
    if limit is not None:
        argv += ["--max-artifact-size", limit]
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    error = process.stderr.read().decode(errors="replace").strip()
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit": process.returncode,
        "rss_mb": round(usage.ru_maxrss / 1024, 1),
        "seconds": round(time.perf_counter() - started, 2),
        "error": error[:120],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="*", default=[50_000, 200_000, 1_000_000])
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    parser.add_argument(
        "--within-limits", action="store_true", help="Also the largest trajectory accepted."
    )
    args = parser.parse_args()
    results = []
    sizes = [(events, 0, "1GB") for events in args.events]
    if args.within_limits:
        # MAX_TRACE_STEPS events, outputs 3,000 bytes longer: a trace.jsonl just under 100 MiB.
        sizes.append((50_000, 3_000, None))
    with tempfile.TemporaryDirectory(prefix="agentledger-memory-") as temporary:
        work = Path(temporary)
        for events, padding, limit in sizes:
            path = work / f"traj_n{events}.json"
            trajectory(path, events, padding)
            figures = {
                "events": events,
                "bytes": path.stat().st_size,
                "limits": "default" if limit is None else f"artifact limit {limit}",
                **measure(path, work, limit),
            }
            path.unlink()
            results.append(figures)
            print(
                f"{events:>9,} events ({figures['bytes'] / 1e6:6.1f} MB, {figures['limits']}): "
                f"exit {figures['exit']}, "
                f"peak RSS {figures['rss_mb']:7.1f} MB, {figures['seconds']:6.2f} s"
                + (f"  ({figures['error']})" if figures["exit"] else "")
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    missed = [r for r in results if r["rss_mb"] > GOAL_MB or r["exit"] not in (0, 2)]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
