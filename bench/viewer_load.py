"""The viewer under a heavy page (issue 35, cause 7): a static file's latency while K requests
for the run page of a 100,000-step trace are in flight, and that page's own time and memory.

    .venv/bin/python bench/viewer.py --huge                         # this checkout alone
    .venv/bin/python bench/viewer.py --huge --before /tmp/base/src  # and another src, in turn

The ledger: one sealed run of `STEPS` trace steps (commands and reasoning, as
tests/test_viewer_concurrency.py makes it), scored by a judge whose evidence cites a step near the
end by its line and another by its quote only. Each source tree serves it with `agentledger
serve` (its src first on PYTHONPATH), in turn, `--rounds` times, so both meet the same load.
In each round: the static file with nothing else asked (this machine's floor); the run page
alone `PAGE_ALONE` times (wall ms, the server's CPU ms, its size); then K client threads ask for
run pages (the first, the last and a middle part, in turn) without pause while this thread asks
for /static/viewer.css every `STATIC_GAP` s for `--seconds` s: the static file's p50/p95/max, and
the run pages answered meanwhile. The server's resident memory once started (VmRSS) and its peak
(VmHWM) at the end of the round: the pages' own memory is the difference.
Goal (issue 35): p95 under 200 ms.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from agentledger import Ledger, RunMetadata
from agentledger.identity import sha256_bytes
from agentledger.records.trace import TraceStep, step_text, trace_bytes
from measure import SRC, percentile

STEPS = 100_000
GOAL_STATIC_P95_MS = 200.0
PAGE_ALONE = 3
STATIC_GAP = 0.05
RUN_ID = "huge_run_gpt-4o_20260312T101500Z_0001"


def build_huge(root: Path) -> None:
    """A ledger at `root` with one run of `STEPS` steps and a score citing two of them."""
    steps = [
        TraceStep(index=i, actor="agent", kind="reasoning", content=step_text(f"thought {i}"))
        if i % 2
        else TraceStep(index=i, actor="agent", kind="command", command=f"echo {i}")
        for i in range(STEPS)
    ]
    started = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)
    metadata = RunMetadata(
        run_id=RUN_ID,
        scenario="huge",
        model="gpt-4o",
        system_prompt_hash=sha256_bytes(b"huge"),
        started_at=started,
        ended_at=started,
    )
    with Ledger.init(root) as ledger, ledger.new_run(metadata) as run:
        run.add_bytes("trace.jsonl", trace_bytes(steps))
        run.add_text("report.md", "done\n")
    _score(root)


def _score(root: Path) -> None:
    """A rules judge's score citing step `STEPS - 3` by its line and a middle step by its quote."""
    from agentledger.judges.scores import ScoreStore
    from agentledger.records.scores import Score

    score = Score.model_validate(
        {
            "run_id": RUN_ID,
            "judge_id": "rules-000000000005",
            "judge": {
                "kind": "rules",
                "pack": "remediation-safety",
                "pack_version": "1",
                "pack_digest": "sha256:" + "0" * 64,
            },
            "identity": {"kind": "rules"},
            "verdict": "Unsafe",
            "criteria": [
                {
                    "criterion": "C2",
                    "fired": True,
                    "reason": "cites two steps",
                    "evidence": [
                        {"quote": "echo", "file": "trace.jsonl", "line": STEPS - 3},
                        {"quote": f"thought {STEPS // 2 + 1}", "file": "trace.jsonl"},
                    ],
                }
            ],
        }
    )
    with Ledger.open(root) as ledger:
        ScoreStore(ledger).write([score])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _serve(root: Path, src: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentledger", "serve", "--ledger", str(root),
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "AGENTLEDGER_USER": "bench", "PYTHONPATH": str(src)},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "/static/viewer.css", timeout=2).raise_for_status()
            return server, url
        except httpx.HTTPError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"agentledger serve ({src}) did not start") from None
            time.sleep(0.1)


def one_round(root: Path, src: Path, clients: int, seconds: float) -> dict[str, Any]:
    """The figures of one source tree: its server started, measured, stopped."""
    server, url = _serve(root, src)
    start_mb = _status_kb(server.pid, "VmRSS") / 1024
    parts = -(-STEPS // 500)
    paths = [f"/runs/{RUN_ID}", f"/runs/{RUN_ID}?part={parts}", f"/runs/{RUN_ID}?part={parts // 2}"]
    try:
        with httpx.Client(timeout=600) as client:
            quiet = []
            for _ in range(20):  # the static file with nothing else asked: this machine's floor
                started = time.perf_counter()
                client.get(url + "/static/viewer.css").raise_for_status()
                quiet.append((time.perf_counter() - started) * 1000)
                time.sleep(STATIC_GAP)
            alone, cpu, size = [], [], 0
            for _ in range(PAGE_ALONE):
                before_cpu = _cpu_ms(server.pid)
                started = time.perf_counter()
                response = client.get(url + paths[0])
                alone.append((time.perf_counter() - started) * 1000)
                cpu.append(_cpu_ms(server.pid) - before_cpu)
                response.raise_for_status()
                size = len(response.content)
        stop = threading.Event()
        pages: list[float] = []
        failures: list[str] = []

        def ask(number: int) -> None:
            with httpx.Client(timeout=600) as own:
                turn = number
                while not stop.is_set():
                    started = time.perf_counter()
                    response = own.get(url + paths[turn % len(paths)])
                    if response.status_code != 200:
                        failures.append(f"{response.status_code} {paths[turn % len(paths)]}")
                    pages.append((time.perf_counter() - started) * 1000)
                    turn += 1

        threads = [threading.Thread(target=ask, args=(n,), daemon=True) for n in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)  # every client's first page is in flight by now
        static: list[float] = []
        with httpx.Client(timeout=600) as client:
            client.get(url + "/static/viewer.css").raise_for_status()
            ends = time.monotonic() + seconds
            while time.monotonic() < ends:
                started = time.perf_counter()
                client.get(url + "/static/viewer.css").raise_for_status()
                static.append((time.perf_counter() - started) * 1000)
                time.sleep(STATIC_GAP)
        stop.set()
        for thread in threads:
            thread.join(600)
        peak_mb = _status_kb(server.pid, "VmHWM") / 1024
    finally:
        server.terminate()
        server.wait(30)
    return {
        "src": str(src),
        "clients": clients,
        "page_alone_ms": statistics.median(alone),
        "page_alone_cpu_ms": statistics.median(cpu),
        "page_bytes": size,
        "static_alone_p50_ms": statistics.median(quiet),
        "static_alone_p95_ms": percentile(quiet, 0.95),
        "static_requests": len(static),
        "static_p50_ms": statistics.median(static),
        "static_p95_ms": percentile(static, 0.95),
        "static_max_ms": max(static),
        "pages_during": len(pages),
        "page_during_median_ms": statistics.median(pages) if pages else None,
        "page_failures": failures[:5],
        "server_start_mb": start_mb,
        "server_peak_mb": peak_mb,
    }


def run(root: Path, before: Path | None, clients: int, seconds: float, rounds: int) -> int:
    """Every round of each tree, printed; exit 1 when this tree's p95 misses the goal."""
    if not (root / "ledger.json").exists():
        built = time.perf_counter()
        build_huge(root)
        print(f"ledger with one run of {STEPS} steps built in {time.perf_counter() - built:.1f} s")
    trees = {"this": SRC, **({"before": before} if before else {})}
    rows: list[tuple[str, dict[str, Any]]] = []
    for _ in range(rounds):
        for name, src in trees.items():
            rows.append((name, one_round(root, src, clients, seconds)))
    print(
        f"static file while {clients} run pages of a {STEPS}-step trace are in flight "
        f"({seconds:g} s a round; ms)"
    )
    print(
        f"  {'tree':<7} {'quiet p50':>9} {'p95':>6} | {'static p50':>10} {'p95':>8} {'max':>8} "
        f"{'n':>4} | {'page alone':>10} "
        f"{'cpu':>8} {'KB':>6} {'during':>8} {'pages':>5} | {'start MB':>8} {'peak MB':>7}"
    )
    for name, row in rows:
        during = row["page_during_median_ms"]
        print(
            f"  {name:<7} {row['static_alone_p50_ms']:9.1f} {row['static_alone_p95_ms']:6.1f} | "
            f"{row['static_p50_ms']:10.1f} {row['static_p95_ms']:8.1f} "
            f"{row['static_max_ms']:8.1f} {row['static_requests']:4d} | "
            f"{row['page_alone_ms']:10.1f} {row['page_alone_cpu_ms']:8.1f} "
            f"{row['page_bytes'] / 1024:6.0f} {during if during is not None else 0:8.1f} "
            f"{row['pages_during']:5d} | {row['server_start_mb']:8.0f} {row['server_peak_mb']:7.0f}"
            + (f"  failures: {row['page_failures']}" if row["page_failures"] else "")
        )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"  (load average {load} on {os.cpu_count()} cores)")
    worst = max(row["static_p95_ms"] for name, row in rows if name == "this")
    met = worst < GOAL_STATIC_P95_MS
    print(
        f"  goal: static p95 under {GOAL_STATIC_P95_MS:g} ms for this tree: "
        f"{'met' if met else 'NOT met'} (worst round {worst:.1f} ms)"
    )
    return 0 if met else 1
