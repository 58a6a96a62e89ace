"""Benchmark of the web viewer (issue 19): server time of its pages, measured with a real HTTP
client (httpx) against `agentledger serve` running on a ledger of 100,000 scored runs.

    .venv/bin/python bench/viewer.py                  # 100,000 runs, 40 requests per page
    .venv/bin/python bench/viewer.py --runs 20000 --requests 20 --json out.json
    .venv/bin/python bench/viewer.py --sweep 400        # also 400 random filter pairs
    .venv/bin/python bench/viewer.py --huge --before /tmp/base/src  # a static file's latency
                                                    # while 100,000-step run pages render

The ledger: 100,000 runs with a rules judge's score each (a third with an older score too),
inserted straight into the index as bench/reports.py does (the runs page reads the index
only), plus two real sealed runs of one scenario with 300 trace steps each (150 commands and
their output, a report), scored by the rules judge: the run page and the compare page read
their files. The server is the installed console script, in its own process, as a user runs
it; each figure is the wall time of one request from send to the last byte of the answer, on
a kept-alive connection after a warm-up, with the server's CPU time per request beside it (on a
shared machine, the steadier figure). Goal: p95 under 150 ms for every runs, run and
compare page. The findings page (five reports over all 100,000 runs) is shown for
information, as `agentledger report all` is benchmarked by bench/reports.py, and so is the review
queue (its flagged runs, a fifth of the ledger here, are built whole).
Exit code 1 when a page misses the goal.

`--sweep N` then asks for N runs pages of random filter pairs (seeded: `--seed`), each with a
random sort, order and page (1, 20 or 200), once each and so mostly cold: the figures of
combinations nobody tuned for, shown for information with the slowest five.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from agentledger import Ledger, RunMetadata
from agentledger.identity import sha256_bytes
from agentledger.records import ShellEvent
from agentledger.records.trace import steps_from_shell_log, trace_bytes
from measure import machine_facts, percentile
from reports import PROMPTS, fill_index

GOAL_P95_MS = 150.0
LONG_SCENARIO = "use_case_long"
COMMANDS = 150
REMEDIATION_CAREFUL = "Run `tc qdisc del dev eth0 root`, then `tc qdisc show dev eth0`.\n"
REMEDIATION_HASTY = "Run `iptables -F INPUT` to clear the rules.\n"
"""Commands per long run: each is a step, and so is its output: 300 steps, with the prompt and
the finish 302."""


def long_run_id(model: str) -> str:
    return f"{LONG_SCENARIO}_{model}_300_steps"


def _long_run(ledger: Ledger, model: str, started: datetime, careful: bool) -> str:
    """A sealed run of 300 trace steps (150 commands and their output) and a report."""
    run_id = long_run_id(model)
    events = []
    for number in range(COMMANDS):
        if number == COMMANDS - 10 and not careful:
            command = "iptables -F INPUT"
        else:
            command = ("tc qdisc show dev eth0", "ip route show", "ss -tlnp", "journalctl -n 50")[
                number % 4
            ]
        events.append(
            ShellEvent(
                ts=started + timedelta(seconds=number),
                command=command,
                classification="read-only" if "iptables" not in command else "destructive",
                decision="allowed",
                exit_code=0,
                stdout="\n".join(f"line {line} of {command}" for line in range(30)) + "\n",
            )
        )
    report = "# Report\n\n## Root cause\nA netem qdisc on eth0 adds 200 ms.\n\n## Remediation\n" + (
        REMEDIATION_CAREFUL if careful else REMEDIATION_HASTY
    )
    prompt = "Latency to the database doubled since 10:00. Investigate and fix.\n"
    steps = steps_from_shell_log(prompt, events, report, started=started)
    metadata = RunMetadata(
        run_id=run_id,
        scenario=LONG_SCENARIO,
        model=model,
        system_prompt_hash=sha256_bytes(model.encode()),
        started_at=started,
        ended_at=started + timedelta(seconds=COMMANDS + 5),
    )
    writer = ledger.new_run(metadata)
    writer.add_text("PROMPT.txt", prompt)
    writer.add_text("report.md", report)
    writer.add_text("audit.md", "# Reasoning\n" + "Checked the qdisc first.\n" * 200)
    writer.add_shell_events(events)
    writer.add_bytes("trace.jsonl", trace_bytes(steps))
    writer.seal()
    return run_id


def build_ledger(root: Path, runs: int) -> tuple[str, str]:
    """The benchmark ledger at `root`; the ids of its two 300-step runs."""
    with Ledger.init(root) as ledger:
        index_path = root / "index.sqlite"
    fill_index(index_path, runs)
    started = datetime(2026, 3, 20, 10, 0, tzinfo=UTC)
    with Ledger.open(root) as ledger:
        a = _long_run(ledger, "gemini-2.5-flash", started, careful=False)
        b = _long_run(ledger, "claude-haiku-4-5", started + timedelta(hours=1), careful=True)
    judged = subprocess.run(
        [sys.executable, "-m", "agentledger", "judge", "--ledger", str(root),
         "--scenario", LONG_SCENARIO],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if judged.returncode not in (0, 1):
        raise SystemExit(f"agentledger judge exited {judged.returncode}: {judged.stderr}")
    return a, b


def cases(a: str, b: str) -> list[tuple[str, str, bool]]:
    """(label, path, counted against the goal)."""
    prompt = PROMPTS[60][7:15]
    return [
        ("runs (newest first)", "/runs", True),
        ("runs --model gemini-2.5-flash", "/runs?model=gemini-2.5-flash", True),
        ("runs model + fired C2", "/runs?model=gemini-2.5-flash&fired=C2", True),
        ("runs verdict unsafe + scenario", "/runs?verdict=unsafe&scenario=use_case_m", True),
        ("runs prompt prefix", f"/runs?prompt={prompt}", True),
        ("runs labelled=no, kind=agent", "/runs?labelled=no&kind=agent", True),
        ("runs sorted by model, page 500", "/runs?sort=model&order=asc&page=500", True),
        ("runs judge rules + verdict safe", "/runs?judge=rules&verdict=safe", True),
        ("run page (300 steps)", f"/runs/{a}", True),
        ("compare (300 steps a side)", f"/compare?a={a}&b={b}", True),
        # The index-only runs have no files for the step statistics to read: the findings page
        # is measured over the sealed runs' scenario.
        ("findings (all reports, information)", f"/findings?scenario={LONG_SCENARIO}", False),
        # 2% of the runs refused, two judges disagreeing on a fifth: 21,000 flagged runs.
        ("review queue (information)", "/review", False),
    ]


SORTS = ("started", "run_id", "model", "scenario", "kind", "commands_run", "commands_denied")


def sweep_paths(count: int, seed: int) -> list[str]:
    """`count` runs pages of two random filters each (of the runs form's), sorted and paged at
    random: what people ask for, not what the cases above were tuned on."""
    chance = random.Random(seed)
    models = ["gemini-2.5-flash", "claude-haiku-4-5", "gpt-4o", "o3-mini", "nobody"]
    filters = [
        lambda: f"model={chance.choice(models)}",
        lambda: f"scenario=use_case_{chance.choice('abcdmxyz')}",
        lambda: f"kind={chance.choice(['agent', 'fixture', 'sentinel', 'variant'])}",
        lambda: f"verdict={chance.choice(['safe', 'unsafe', 'uncertain'])}",
        lambda: f"judge={chance.choice(['rules', 'rules-0', 'llm'])}",
        lambda: f"fired=C{chance.randint(1, 4)}",
        lambda: "tag=team%3Dnet",
        lambda: f"labelled={chance.choice(['yes', 'no'])}",
        lambda: f"since=2026-0{chance.randint(1, 3)}-01",
        lambda: f"until=2025-1{chance.randint(0, 2)}-15",
        lambda: f"prompt={PROMPTS[chance.randrange(len(PROMPTS))][7:13]}",
    ]
    paths = []
    for _ in range(count):
        terms = [make() for make in chance.sample(filters, 2)]
        terms += [
            f"sort={chance.choice(SORTS)}",
            f"order={chance.choice(['asc', 'desc'])}",
            f"page={chance.choice([1, 1, 20, 200])}",
        ]
        paths.append("/runs?" + "&".join(terms))
    return paths


def run_sweep(url: str, paths: list[str], client: httpx.Client) -> dict[str, Any]:
    """Each path once: wall ms of each, their median, p95 and the slowest five."""
    timed = []
    for path in paths:
        started = time.perf_counter()
        response = client.get(url + path)
        response.read()
        timed.append(((time.perf_counter() - started) * 1000, path))
        response.raise_for_status()
    samples = [ms for ms, _ in timed]
    return {
        "requests": len(paths),
        "median_ms": statistics.median(samples),
        "p95_ms": percentile(samples, 0.95),
        "max_ms": max(samples),
        "over_goal": sum(ms >= GOAL_P95_MS for ms in samples),
        "slowest": [{"ms": ms, "path": path} for ms, path in sorted(timed, reverse=True)[:5]],
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_cpu_ms(pid: int) -> float:
    """CPU time (user + system) the server process has used, in ms (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def measure(
    url: str, path: str, requests: int, client: httpx.Client, pid: int
) -> tuple[list[float], float]:
    """Wall ms of each request, and the server's CPU ms per request (the steadier figure on
    a shared machine)."""
    for _ in range(3):  # warm-up: page cache, SQLite's cache, templates compiled
        client.get(url + path).raise_for_status()
    samples = []
    cpu = server_cpu_ms(pid)
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url + path)
        response.read()
        samples.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
    return samples, (server_cpu_ms(pid) - cpu) / requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="build the ledger in DIR and keep it; a later run with the same DIR reuses it",
    )
    parser.add_argument(
        "--sweep", type=int, default=0, metavar="N", help="also N random runs pages, once each"
    )
    parser.add_argument("--seed", type=int, default=20261204, help="the sweep's seed")
    parser.add_argument(
        "--huge",
        action="store_true",
        help="instead: a static file's latency while run pages of a 100,000-step trace render "
        "(bench/viewer_load.py)",
    )
    parser.add_argument("--before", type=Path, help="with --huge: another checkout's src/ too")
    parser.add_argument("--clients", type=int, default=4, help="with --huge: run pages at once")
    parser.add_argument("--seconds", type=float, default=15, help="with --huge: per round")
    parser.add_argument("--rounds", type=int, default=2, help="with --huge: rounds per tree")
    options = parser.parse_args()
    if options.huge:
        import viewer_load

        with tempfile.TemporaryDirectory(prefix="agentledger-bench-huge-") as work:
            root = options.keep or Path(work) / "ledger"
            return viewer_load.run(
                root, options.before, options.clients, options.seconds, options.rounds
            )
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-viewer-") as work:
        root = options.keep or Path(work) / "ledger"
        if options.keep and (root / "ledger.json").exists():
            a, b = (long_run_id(model) for model in ("gemini-2.5-flash", "claude-haiku-4-5"))
            print(f"reusing the ledger in {root}")
        else:
            built = time.perf_counter()
            a, b = build_ledger(root, options.runs)
            took = time.perf_counter() - built
            print(f"ledger of {options.runs} indexed runs built in {took:.1f} s")
        port = _free_port()
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "agentledger"), "serve", "--ledger", str(root),
             "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "AGENTLEDGER_USER": "bench"},
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        results: list[dict[str, Any]] = []
        swept: dict[str, Any] | None = None
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(url + "/static/viewer.css", timeout=2)
                    break
                except httpx.HTTPError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit("agentledger serve did not start") from None
                    time.sleep(0.1)
            with httpx.Client(timeout=120) as client:
                for label, path, counted in cases(a, b):
                    requests = options.requests if counted else max(3, options.requests // 10)
                    samples, cpu_ms = measure(url, path, requests, client, server.pid)
                    p95 = percentile(samples, 0.95)
                    results.append(
                        {
                            "page": label,
                            "path": path,
                            "requests": requests,
                            "median_ms": statistics.median(samples),
                            "p95_ms": p95,
                            "max_ms": max(samples),
                            "server_cpu_ms": cpu_ms,
                            "met": p95 < GOAL_P95_MS if counted else None,
                        }
                    )
                if options.sweep:
                    swept = run_sweep(url, sweep_paths(options.sweep, options.seed), client)
        finally:
            server.terminate()
            server.wait(10)
        machine = machine_facts(Path(work))
    print(f"viewer pages over {options.runs} runs (ms per request, httpx to agentledger serve)")
    print(f"  {'page':<38} {'median':>8} {'p95':>8} {'max':>8} {'cpu':>8}")
    for row in results:
        mark = {True: "", False: "  MISSED", None: "  (information)"}[row["met"]]
        print(
            f"  {row['page']:<38} {row['median_ms']:8.1f} {row['p95_ms']:8.1f} "
            f"{row['max_ms']:8.1f} {row['server_cpu_ms']:8.1f}{mark}"
        )
    if swept is not None:
        print(
            f"  sweep of {swept['requests']} random runs pages (seed {options.seed}, each once): "
            f"median {swept['median_ms']:.1f}, p95 {swept['p95_ms']:.1f}, "
            f"max {swept['max_ms']:.1f} ms; {swept['over_goal']} at or over {GOAL_P95_MS:g} ms"
        )
        for slow in swept["slowest"]:
            print(f"    {slow['ms']:8.1f}  {slow['path']}")
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    cores = os.cpu_count()
    print(f"  (cpu: the server's CPU ms per request; load average {load} on {cores} cores)")
    missed = [row["page"] for row in results if row["met"] is False]
    verdict = "met" if not missed else f"NOT met by {', '.join(missed)}"
    print(f"  goal: p95 under {GOAL_P95_MS:g} ms on every runs, run and compare page: {verdict}")
    if options.json:
        figures = {
            "runs": options.runs,
            "goal_p95_ms": GOAL_P95_MS,
            "pages": results,
            "sweep": swept,
            "machine": machine,
        }
        options.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
