"""`agentledger collect`'s receiver: OTLP/HTTP ``POST /v1/traces`` in, a sealed run per trace.

A request is read (`decode.decode_request`), its spans flushed to the spool (`spool.Spool`) and
only then answered 200. A sealing thread turns each trace into a run when its root span has
ended (and `settle` seconds passed without more of its spans), or after `quiet` seconds without
new spans (said in the run's notes), through the same planning and sealing as
``agentledger import --format otel`` of the spooled file: one mapping for both.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentledger.collector.decode import PROTOBUF_TYPES, RequestRefused, decode_request
from agentledger.collector.spool import Limits, PendingTrace, Spool
from agentledger.errors import AgentLedgerError
from agentledger.importers.directory import plan_runs, write_plan
from agentledger.importers.otel import FORMAT
from agentledger.importers.plan import ImportOptions, ImportPlan
from agentledger.store import Ledger

__all__ = ["CollectSettings", "Collector", "create_app"]

_TRACE_SEPARATOR = "#trace="


@dataclass(frozen=True)
class CollectSettings:
    """How the receiver seals: when, and with which identity fields the spans lack."""

    settle: float = 1.0
    """Seconds after a trace's root span arrived with no more of its spans, before sealing."""
    quiet: float = 300.0
    """Seconds without new spans after which a trace without a root span is sealed."""
    poll: float = 0.2
    scenario: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)


class Collector:
    """The spool and the sealing thread of one ledger."""

    def __init__(
        self,
        ledger_root: Path,
        settings: CollectSettings | None = None,
        *,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.ledger_root = ledger_root
        self.settings = settings or CollectSettings()
        self.spool = Spool(ledger_root, self.settings.limits)
        self.on_event = on_event or (lambda _message: None)
        self.sealed_runs: list[str] = []
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Collector:
        self._thread = threading.Thread(target=self._run, name="collect-sealer", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, flush: bool = True) -> None:
        """Stop sealing; with `flush`, seal what is ready first (never what is not)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        if flush:
            with Ledger.open(self.ledger_root) as ledger:
                self.seal_ready(ledger)

    def receive(self, body: bytes, content_type: str, content_encoding: str) -> int:
        """Take one export request; returns how many spans were accepted."""
        limits = self.settings.limits
        batches = decode_request(
            body,
            content_type,
            content_encoding,
            max_bytes=limits.max_request_bytes,
            max_span_bytes=limits.max_span_bytes,
        )
        self.spool.accept(batches)
        if any(batch.root_ended for batch in batches):
            self._wake.set()
        return sum(batch.spans for batch in batches)

    def _run(self) -> None:
        with Ledger.open(self.ledger_root) as ledger:
            while not self._stop.is_set():
                self._wake.wait(self.settings.poll)
                self._wake.clear()
                if self._stop.is_set():
                    break
                try:
                    self.seal_ready(ledger)
                except Exception as exc:  # a full disk: said, and tried again next time
                    self.on_event(f"sealing failed, will retry: {exc}")

    def seal_ready(self, ledger: Ledger) -> list[str]:
        """Seal every trace that is ready; returns the run ids sealed."""
        ready = self.spool.ready(self.settings.settle, self.settings.quiet)
        if not ready:
            return []
        try:
            return self._seal(ledger, ready)
        except AgentLedgerError as exc:
            if len(ready) == 1:
                self._fail(ready[0][0], exc)
                return []
        sealed: list[str] = []  # one bad trace in the batch: each alone, the bad one kept aside
        for one in ready:
            try:
                sealed += self._seal(ledger, [one])
            except AgentLedgerError as exc:
                self._fail(one[0], exc)
        return sealed

    def _fail(self, trace: PendingTrace, exc: AgentLedgerError) -> None:
        kept = self.spool.failed(trace, str(exc))
        self.on_event(f"trace {trace.trace_id} not sealed, kept in {kept}: {exc}")

    def _seal(self, ledger: Ledger, ready: list[tuple[PendingTrace, str | None]]) -> list[str]:
        options = ImportOptions(
            format=FORMAT,
            scenario=self.settings.scenario,
            tags=self.settings.tags,
            workers=1,
        )
        paths = [Path(f"{trace.path}{_TRACE_SEPARATOR}{trace.trace_id}") for trace, _n in ready]
        plan = plan_runs(paths, options, ledger=ledger)
        try:
            _note_in(plan, [note for _trace, note in ready])
            write_plan(ledger, plan)
        finally:
            plan.discard()
        run_ids = [run.run_id for run in plan.runs]
        for (trace, _note), run_id in zip(ready, run_ids, strict=True):
            self.spool.done(trace, run_id)
            self.on_event(f"trace {trace.trace_id}: {trace.spans} spans sealed as run {run_id}")
        self.sealed_runs += run_ids
        return run_ids


def _note_in(plan: ImportPlan, notes: list[str | None]) -> None:
    """Add each run's note (sealed after the quiet time) to its summary."""
    for position, (run, note) in enumerate(zip(plan.runs, notes, strict=True)):
        if note is not None:
            summary = run.summary.model_copy(update={"notes": [*run.summary.notes, note]})
            plan.runs[position] = replace(run, summary=summary)


def _answer(status: int, message: str | None, protobuf: bool) -> Any:
    from starlette.responses import JSONResponse, Response

    if status == 200 and protobuf:
        # An empty ExportTraceServiceResponse: all accepted.
        return Response(b"", status_code=200, media_type="application/x-protobuf")
    if status == 200:
        return JSONResponse({})
    headers = {"Retry-After": "5"} if status == 429 else None
    return JSONResponse({"code": status, "message": message}, status_code=status, headers=headers)


def create_app(collector: Collector, *, token: str | None = None) -> Any:
    """The ASGI app: ``POST /v1/traces``; every request carries `token` when one is set
    (``Authorization: Bearer`` or ``X-Agentledger-Token``)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.routing import Route

    limit = collector.settings.limits.max_request_bytes

    async def traces(request: Request) -> Any:
        content_type = request.headers.get("content-type", "")
        protobuf = content_type.split(";", 1)[0].strip().lower() in PROTOBUF_TYPES
        if token is not None:
            given = request.headers.get("x-agentledger-token") or ""
            bearer = request.headers.get("authorization", "")
            if bearer.lower().startswith("bearer "):
                given = given or bearer[7:].strip()
            if not hmac.compare_digest(given.encode(), token.encode()):
                return _answer(401, "a token is required: Authorization: Bearer <token>", False)
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _answer(413, f"the body is larger than {limit} bytes", protobuf)
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return _answer(413, f"the body is larger than {limit} bytes", protobuf)
            chunks.append(chunk)
        try:
            await run_in_threadpool(
                collector.receive,
                b"".join(chunks),
                content_type,
                request.headers.get("content-encoding", ""),
            )
        except RequestRefused as refused:
            return _answer(refused.status, refused.reason, protobuf)
        return _answer(200, None, protobuf)

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
