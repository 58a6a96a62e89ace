"""The collector's spool: accepted spans on disk before they are acknowledged, until sealed.

Each trace's accepted spans are appended to ``collect/spool/<trace id>/<service>.jsonl`` in the
ledger's directory (one OTLP JSON export request per line, as the collector's file exporter
writes them) and flushed to disk before the request is answered, so a receiver killed at any
point loses no span it acknowledged: at its next start it finds them there and seals their
runs. (Not under the storage's staging place: `gc` takes an unlocked entry there for a dead
writer's debris.) A trace whose run cannot be made (its spans name no model) is moved to
``collect/failed/<trace id>/`` with the reason beside it, never dropped.

Memory holds a few numbers per pending trace; the spans themselves stay on disk. Limits per
trace and in all refuse a request that would pass them (413 for a trace too large, 429 while
too much waits to be sealed), whole: nothing of a refused request is written.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from agentledger.collector.decode import RequestRefused, TraceBatch

__all__ = ["Limits", "PendingTrace", "Spool"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SEALED_REMEMBERED = 100_000


@dataclass(frozen=True)
class Limits:
    """What the receiver takes: per request, per span, per trace and waiting in all."""

    max_request_bytes: int = 32 * 1024 * 1024
    max_span_bytes: int = 4 * 1024 * 1024
    max_trace_spans: int = 50_000
    max_trace_bytes: int = 64 * 1024 * 1024
    """Below the ledger's default largest artifact (100 MB): a trace's spans are kept whole."""
    max_pending_bytes: int = 512 * 1024 * 1024
    max_pending_traces: int = 20_000


@dataclass
class PendingTrace:
    """A trace whose spans wait on disk: where, how many, and since when."""

    trace_id: str
    path: Path
    bytes: int
    spans: int
    root_ended_at: float | None
    last_seen: float


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Spool:
    """The spool directory of a ledger and what waits in it (thread-safe)."""

    def __init__(self, ledger_root: Path, limits: Limits) -> None:
        self.root = ledger_root / "collect"
        self.pending_dir = self.root / "spool"
        self.failed_dir = self.root / "failed"
        self.limits = limits
        self.pending: dict[str, PendingTrace] = {}
        self.pending_bytes = 0
        self.sealed: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()
        self.pending_dir.mkdir(parents=True, exist_ok=True)
        self._recover()

    def _recover(self) -> None:
        """What a receiver before this one accepted and did not seal: pending again, its
        root span taken as ended when a line holds a span without a parent."""
        now = time.monotonic()
        for folder in sorted(self.pending_dir.iterdir()):
            files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
            if not files:
                shutil.rmtree(folder, ignore_errors=True)
                continue
            path = files[0]
            data = path.read_bytes()
            # A line cut by the crash was never acknowledged: dropped.
            complete = data[: data.rfind(b"\n") + 1]
            if len(complete) != len(data):
                with open(path, "r+b") as handle:
                    handle.truncate(len(complete))
            spans = complete.count(b'"spanId"')
            root = _has_root(complete)
            self.pending[folder.name] = PendingTrace(
                folder.name, path, len(complete), spans, now if root else None, now
            )
            self.pending_bytes += len(complete)

    def accept(self, batches: list[TraceBatch]) -> None:
        """Write every trace of a request to disk (flushed), or refuse it whole."""
        with self.lock:
            self._check(batches)
            now = time.monotonic()
            made: list[Path] = []
            for batch in batches:
                trace = self.pending.get(batch.trace_id)
                if trace is None:
                    folder = self.pending_dir / batch.trace_id
                    folder.mkdir(exist_ok=True)
                    service = _SAFE.sub("-", batch.service).strip("-.") or "otel"
                    trace = PendingTrace(
                        batch.trace_id, folder / f"{service[:80]}.jsonl", 0, 0, None, now
                    )
                    self.pending[batch.trace_id] = trace
                    made.append(folder)
                with open(trace.path, "ab") as handle:
                    handle.write(batch.line)
                    handle.flush()
                    os.fsync(handle.fileno())
                trace.bytes += len(batch.line)
                trace.spans += batch.spans
                trace.last_seen = now
                if batch.root_ended and trace.root_ended_at is None:
                    trace.root_ended_at = now
                self.pending_bytes += len(batch.line)
            for folder in made:
                _fsync_dir(folder)
            if made:
                _fsync_dir(self.pending_dir)

    def _check(self, batches: list[TraceBatch]) -> None:
        limits = self.limits
        adding = sum(len(batch.line) for batch in batches)
        new = sum(1 for batch in batches if batch.trace_id not in self.pending)
        for batch in batches:
            run_id = self.sealed.get(batch.trace_id)
            if run_id is not None:
                raise RequestRefused(
                    409,
                    f"trace {batch.trace_id} was sealed already as run {run_id}; spans that "
                    "come after their run is sealed are refused: nothing was written",
                )
            trace = self.pending.get(batch.trace_id)
            spans = batch.spans + (trace.spans if trace else 0)
            size = len(batch.line) + (trace.bytes if trace else 0)
            if spans > limits.max_trace_spans or size > limits.max_trace_bytes:
                raise RequestRefused(
                    413,
                    f"trace {batch.trace_id} would hold {spans} spans in {size} bytes, more "
                    f"than a trace may ({limits.max_trace_spans} spans, "
                    f"{limits.max_trace_bytes} bytes): nothing was written",
                )
        if (
            self.pending_bytes + adding > limits.max_pending_bytes
            or len(self.pending) + new > limits.max_pending_traces
        ):
            raise RequestRefused(
                429,
                f"{len(self.pending)} traces ({self.pending_bytes} bytes) wait to be sealed, "
                "the most the receiver holds: retry later; nothing was written",
            )

    def ready(self, settle: float, quiet: float) -> list[tuple[PendingTrace, str | None]]:
        """Traces to seal now: root span ended `settle` seconds ago (no note), or nothing new
        for `quiet` seconds without a root span (with the note saying so)."""
        now = time.monotonic()
        found: list[tuple[PendingTrace, str | None]] = []
        with self.lock:
            for trace in self.pending.values():
                if trace.root_ended_at is not None:
                    if now - max(trace.root_ended_at, trace.last_seen) >= settle:
                        found.append((trace, None))
                elif now - trace.last_seen >= quiet:
                    found.append(
                        (
                            trace,
                            f"sealed by the collector after {quiet:g} s without new spans: "
                            "the trace's root span had not arrived, so the run may lack steps",
                        )
                    )
        return found

    def done(self, trace: PendingTrace, run_id: str) -> None:
        """The trace is sealed as `run_id`: its spool is removed."""
        with self.lock:
            self._forget(trace)
            self.sealed[trace.trace_id] = run_id
            while len(self.sealed) > _SEALED_REMEMBERED:
                self.sealed.popitem(last=False)
        shutil.rmtree(trace.path.parent, ignore_errors=True)

    def failed(self, trace: PendingTrace, reason: str) -> Path:
        """The trace cannot be made a run: kept in collect/failed/ with the reason."""
        with self.lock:
            self._forget(trace)
        self.failed_dir.mkdir(parents=True, exist_ok=True)
        target = self.failed_dir / trace.trace_id
        if target.exists():
            shutil.rmtree(target)
        os.replace(trace.path.parent, target)
        (target / "reason.txt").write_text(reason + "\n", encoding="utf-8")
        return target

    def _forget(self, trace: PendingTrace) -> None:
        if self.pending.pop(trace.trace_id, None) is not None:
            self.pending_bytes -= trace.bytes


def _has_root(data: bytes) -> bool:
    """Whether a spool file holds a span without a parent (its root span ended)."""
    import json

    for line in data.splitlines():
        try:
            request = json.loads(line)
        except ValueError:
            continue
        for resource in request.get("resourceSpans") or []:
            for scope in resource.get("scopeSpans") or []:
                for span in scope.get("spans") or []:
                    if not span.get("parentSpanId"):
                        return True
    return False
