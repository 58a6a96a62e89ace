"""An OpenTelemetry span processor that seals each trace of the agent's own process as a run,
with no receiver: what `agentledger collect` does, inside the process.

    from opentelemetry.sdk.trace import TracerProvider
    from agentledger.collector.processor import LedgerSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(LedgerSpanProcessor(".agentledger"))

Ended spans wait in memory by trace; when a trace's root span ends, its spans are encoded as
the OTLP exporter encodes them, taken through the receiver's own checks and spool, and the run
is sealed before `on_end` returns (the same mapping as ``import --format otel``). Spans of a
trace whose root had not ended at `shutdown` are spooled and sealed by the next
``agentledger collect`` (or processor) on this ledger, after its quiet time.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from agentledger.collector.receiver import Collector, CollectSettings
from agentledger.store import Ledger

__all__ = ["LedgerSpanProcessor"]


class LedgerSpanProcessor:
    """A SpanProcessor (duck-typed: the SDK calls these methods) sealing traces as runs."""

    def __init__(
        self,
        ledger: str | Path,
        *,
        scenario: str | None = None,
        tags: dict[str, str] | None = None,
        quiet: float = 300.0,
    ) -> None:
        root = Path(ledger)
        Ledger.open_or_init(root).ledger.close()
        settings = CollectSettings(settle=0.0, quiet=quiet, scenario=scenario, tags=tags or {})
        self.collector = Collector(root, settings)
        self._spans: dict[int, list[Any]] = {}
        self._lock = threading.Lock()

    @property
    def sealed_runs(self) -> list[str]:
        """The run ids sealed so far, in order."""
        return list(self.collector.sealed_runs)

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Nothing to do when a span starts."""

    def _on_ending(self, span: Any) -> None:
        """Nothing to do before a span ends (newer SDKs call this)."""

    def on_end(self, span: Any) -> None:
        """Keep the span; seal its trace when it is the root."""
        trace_id = span.context.trace_id
        with self._lock:
            self._spans.setdefault(trace_id, []).append(span)
            done = self._spans.pop(trace_id) if span.parent is None else None
        if done is not None:
            self._send(done)
            with Ledger.open(self.collector.ledger_root) as ledger:
                self.collector.seal_ready(ledger)

    def _send(self, spans: list[Any]) -> None:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        body = encode_spans(spans).SerializeToString()
        self.collector.receive(body, "application/x-protobuf", "")

    def shutdown(self) -> None:
        """Spool what waits for a root span (sealed later, after the quiet time)."""
        with self._lock:
            waiting = list(self._spans.values())
            self._spans.clear()
        for spans in waiting:
            self._send(spans)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Traces are sealed when their root ends: nothing is held back."""
        return True
