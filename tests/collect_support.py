"""A running `agentledger collect` for tests: a real process on a free port, and OTLP HTTP
exporters pointed at it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RunningCollector:
    """`agentledger collect` in a process of its own."""

    def __init__(self, ledger: Path, *options: str) -> None:
        self.ledger = ledger
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.log = ledger.parent / f"collect-{self.port}.log"
        with self.log.open("wb") as log:
            self.process = self._start(env, log, options)
        self._wait()

    def _start(self, env: dict[str, str], log: Any, options: tuple[str, ...]) -> Any:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentledger",
                "collect",
                "--ledger",
                str(self.ledger),
                "--port",
                str(self.port),
                *options,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )

    def _wait(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"collect exited: {self.log.read_text()}")
            try:
                httpx.get(self.url + "/", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("collect did not start")

    @property
    def endpoint(self) -> str:
        return self.url + "/v1/traces"

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)


@contextmanager
def collecting(ledger: Path, *options: str) -> Iterator[RunningCollector]:
    running = RunningCollector(ledger, *options)
    try:
        yield running
    finally:
        running.stop()


def tracer_provider(endpoint: str, service: str) -> Any:
    """A TracerProvider exporting with the OTLP HTTP (protobuf) exporter to `endpoint`."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def wait_for_runs(ledger: Path, count: int, timeout: float = 30) -> list[Any]:
    """The ledger's runs once it holds `count` (or fail after `timeout` seconds)."""
    from agentledger import Ledger

    deadline = time.monotonic() + timeout
    while True:
        if (ledger / "ledger.json").exists():
            with Ledger.open(ledger) as opened:
                runs = opened.runs()
            if len(runs) >= count or time.monotonic() > deadline:
                return runs
        elif time.monotonic() > deadline:
            return []
        time.sleep(0.1)
