"""Benchmark of `agentledger collect` (issue 37): live OTLP/HTTP ingestion against the import of
the same spans from a file, in the same run.

    .venv/bin/python bench/collect.py            # 100,000 spans of 1,000 traces, 4 exporters
    .venv/bin/python bench/collect.py --quick    # 10,000 spans of 100 traces
    .venv/bin/python bench/collect.py --json results.json

Each trace is an agent's run as the OpenTelemetry SDK makes it: an ``invoke_agent`` root span
and 99 children, model calls (``chat``, GenAI attributes: models, tokens, input and output
messages) and shell tool calls (``execute_tool`` with a command and its output) in turn.
Four exporter processes each make their share of the traces with the SDK (not timed), then
send them with the OTLP HTTP exporter (protobuf, batches of 512 spans, as BatchSpanProcessor
does) to one running `agentledger collect`, all at once.

Figures:
- collect: spans per second from the first request sent to the last of the 1,000 runs sealed
  and indexed (the receiver's whole work: decode, check, spool to disk durably, answer, then
  plan and seal each trace as a run);
- import: spans per second of ``agentledger import --format otel`` of the same spans written
  as OTLP JSON lines (one export request per line), into a new ledger, the whole process.
  Goal: collect within 2x of import (the ratio import/collect is printed);
- the receiver's peak resident memory (VmHWM). Goal: under 300 MB.

Data lives in bench/.work/collect/ (git-ignored) and is removed at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "collect"
BIN = Path(sys.executable).parent
RATIO_GOAL = 2.0
MEMORY_GOAL_MB = 300
SPANS_PER_TRACE = 100
EXPORTERS = 4
BATCH = 512
COMMANDS = ("tc qdisc show dev eth0", "ip -s link", "iptables -L -n", "ss -tan", "uptime")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _chat_attributes(number: int, step: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.system_instructions": "You are an ops agent.",
        "gen_ai.usage.input_tokens": 1200 + step,
        "gen_ai.usage.output_tokens": 80,
        "gen_ai.input.messages": _messages(
            "user", f"Trace {number}: users see packet loss on eth0."
        ),
        "gen_ai.output.messages": _messages(
            "assistant", f"Step {step}: looking at the qdiscs and counters next."
        ),
    }


def _make_spans(first: int, count: int) -> list[Any]:
    """`count` traces of SPANS_PER_TRACE spans each, made by the SDK, kept in memory."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("bench")
    for number in range(first, first + count):
        with tracer.start_as_current_span("invoke_agent ops") as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            root.set_attribute("gen_ai.agent.name", f"ops-{number}")
            for step in range(SPANS_PER_TRACE - 1):
                if step % 2 == 0:
                    with tracer.start_as_current_span("chat gpt-4o") as span:
                        span.set_attributes(_chat_attributes(number, step))
                else:
                    with tracer.start_as_current_span("execute_tool shell") as span:
                        command = COMMANDS[step % len(COMMANDS)]
                        span.set_attributes(
                            {
                                "gen_ai.operation.name": "execute_tool",
                                "gen_ai.tool.name": "shell",
                                "gen_ai.tool.call.id": f"call_{step}",
                                "gen_ai.tool.call.arguments": json.dumps({"command": command}),
                                "gen_ai.tool.call.result": f"{command}: ok\n" * 4,
                            }
                        )
    provider.shutdown()
    return list(kept.get_finished_spans())


def _exporter(endpoint: str, first: int, count: int, ready: Any, go: Any, out: Any) -> None:
    """One exporter process: make its traces, wait for the start, send them all."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    spans = _make_spans(first, count)
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=60)
    ready.put(len(spans))
    go.wait()
    failed = 0
    for start in range(0, len(spans), BATCH):
        while exporter.export(spans[start : start + BATCH]) != SpanExportResult.SUCCESS:
            failed += 1  # a 429 the exporter gave up on: sent again
            time.sleep(0.5)
    out.put(failed)


def _write_file(path: Path, traces: int) -> int:
    """The same spans as OTLP JSON lines (one export request of BATCH spans per line)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    written = 0
    share = traces // EXPORTERS
    with path.open("w") as handle:
        for worker in range(EXPORTERS):
            spans = _make_spans(worker * share, share)
            for start in range(0, len(spans), BATCH):
                request = MessageToDict(encode_spans(spans[start : start + BATCH]))
                handle.write(json.dumps(request) + "\n")
            written += len(spans)
    return written


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _runs(ledger: Path) -> int:
    from agentledger import Ledger

    with Ledger.open(ledger) as opened:
        return opened.count()


def bench_collect(traces: int) -> dict[str, Any]:
    ledger = WORK / "collect-ledger"
    port = _free_port()
    log = (WORK / "collect.log").open("wb")
    receiver = subprocess.Popen(
        [
            str(BIN / "agentledger"),
            "collect",
            "--ledger",
            str(ledger),
            "--port",
            str(port),
            "--settle",
            "0.2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        endpoint = f"http://127.0.0.1:{port}/v1/traces"
        context = multiprocessing.get_context("spawn")
        ready, out, go = context.Queue(), context.Queue(), context.Event()
        share = traces // EXPORTERS
        workers = [
            context.Process(target=_exporter, args=(endpoint, n * share, share, ready, go, out))
            for n in range(EXPORTERS)
        ]
        for worker in workers:
            worker.start()
        spans = sum(ready.get(timeout=600) for _ in workers)
        while not (ledger / "ledger.json").exists():
            time.sleep(0.05)
        started = time.perf_counter()
        go.set()
        retries = sum(out.get(timeout=1800) for _ in workers)
        sent = time.perf_counter() - started
        while _runs(ledger) < traces:
            if receiver.poll() is not None:
                raise RuntimeError("collect stopped: see bench/.work/collect/collect.log")
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        for worker in workers:
            worker.join()
        peak = _peak_rss_mb(receiver.pid)
    finally:
        receiver.terminate()
        receiver.wait(timeout=60)
        log.close()
    return {
        "spans": spans,
        "traces": traces,
        "seconds": round(elapsed, 2),
        "sent_seconds": round(sent, 2),
        "spans_per_second": round(spans / elapsed),
        "exports_retried": retries,
        "peak_rss_mb": round(peak, 1),
    }


def bench_import(traces: int) -> dict[str, Any]:
    source = WORK / "spans.jsonl"
    spans = _write_file(source, traces)
    ledger = WORK / "import-ledger"
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(BIN / "agentledger"),
            "import",
            "--ledger",
            str(ledger),
            "--format",
            "otel",
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"import failed: {done.stderr}")
    return {
        "spans": spans,
        "file_mb": round(source.stat().st_size / 1e6, 1),
        "seconds": round(elapsed, 2),
        "spans_per_second": round(spans / elapsed),
        "runs": _runs(ledger),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 spans of 100 traces")
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--keep", action="store_true", help="keep bench/.work/collect")
    args = parser.parse_args()
    traces = 100 if args.quick else args.traces
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    try:
        imported = bench_import(traces)
        collected = bench_collect(traces)
    finally:
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)
    ratio = imported["spans_per_second"] / collected["spans_per_second"]
    figures = {
        "collect": collected,
        "import": imported,
        "ratio_import_over_collect": round(ratio, 2),
        "ratio_goal": RATIO_GOAL,
        "memory_goal_mb": MEMORY_GOAL_MB,
        "cpus": os.cpu_count(),
    }
    print(
        f"collect: {collected['spans']:,} spans of {traces:,} traces from {EXPORTERS} exporters "
        f"in {collected['seconds']} s: {collected['spans_per_second']:,} spans/s "
        f"(all sent after {collected['sent_seconds']} s; {collected['exports_retried']} "
        "exports sent again after a 429)"
    )
    print(
        f"import --format otel of the same spans ({imported['file_mb']} MB of OTLP JSON): "
        f"{imported['seconds']} s: {imported['spans_per_second']:,} spans/s"
    )
    verdict = "within" if ratio <= RATIO_GOAL else "NOT within"
    print(f"ratio import/collect: {ratio:.2f}x ({verdict} the {RATIO_GOAL}x goal)")
    memory = "under" if collected["peak_rss_mb"] < MEMORY_GOAL_MB else "NOT under"
    print(
        f"collect's peak resident memory: {collected['peak_rss_mb']} MB ({memory} the "
        f"{MEMORY_GOAL_MB} MB goal)"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent / "src"))
    main()
