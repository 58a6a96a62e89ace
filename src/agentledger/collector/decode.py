"""Reading one OTLP/HTTP trace export request: protobuf or JSON, gzip or not, checked whole.

A request is refused whole with the reason (`RequestRefused`: a status and a message) when it
cannot be read or when any span in it is not one the OTLP importer takes (no trace id, times
that are no times); nothing of it is kept. A good request is split by trace: for each trace
id, an OTLP JSON export request holding that trace's spans only, in their resource and scope,
ids in hex, as the collector's file exporter writes it (one line each).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass
from typing import Any

from agentledger.errors import RecordError
from agentledger.importers.otel import read_spans
from agentledger.records import decode_json

__all__ = ["RequestRefused", "TraceBatch", "decode_request"]

PROTOBUF_TYPES = ("application/x-protobuf", "application/protobuf")
JSON_TYPES = ("application/json",)


class RequestRefused(Exception):
    """A request the receiver does not take: its HTTP status and the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class TraceBatch:
    """One trace's spans of a request: its OTLP JSON line, span count, whether its root span
    (one without a parent) is among them, and the service that sent them."""

    trace_id: str
    line: bytes
    spans: int
    root_ended: bool
    service: str


def _gunzip(body: bytes, limit: int) -> bytes:
    """`body` decompressed, refused past `limit` bytes (a small bomb stays small)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise RequestRefused(400, f"the body is not valid gzip: {exc}") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise RequestRefused(413, f"the body is larger than {limit} bytes once decompressed")
    if not inflater.eof:
        raise RequestRefused(400, "the gzip body is cut short")
    return data


def _from_protobuf(body: bytes) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError) as exc:
        raise RequestRefused(
            400, f"the body is not an OTLP ExportTraceServiceRequest: {exc}"
        ) from None
    decoded: dict[str, Any] = MessageToDict(request)  # ids in base64, as JSON mapping has bytes
    return decoded


def _hex(value: Any) -> Any:
    """An id as OTLP JSON writes it (hex), from hex or base64; anything else as it is (the
    importer's check names it)."""
    if not isinstance(value, str) or not value:
        return value
    if len(value) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value


def _service(resource: dict[str, Any]) -> str:
    for item in (resource.get("resource") or {}).get("attributes") or []:
        if isinstance(item, dict) and item.get("key") == "service.name":
            value = (item.get("value") or {}).get("stringValue")
            if isinstance(value, str) and value:
                return value
    return "otel"


def decode_request(
    body: bytes,
    content_type: str,
    content_encoding: str,
    *,
    max_bytes: int,
    max_span_bytes: int,
) -> list[TraceBatch]:
    """The traces of one export request, checked as the OTLP importer checks a file."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind not in PROTOBUF_TYPES + JSON_TYPES:
        raise RequestRefused(
            415,
            f"content type {kind or '(none)'!r} is not OTLP: send application/x-protobuf or "
            "application/json",
        )
    encoding = content_encoding.strip().lower()
    if encoding == "gzip":
        body = _gunzip(body, max_bytes)
    elif encoding not in ("", "identity"):
        raise RequestRefused(415, f"content encoding {encoding!r} is not supported (gzip is)")
    if kind in JSON_TYPES:
        try:
            request = decode_json(body, "request")
        except RecordError as exc:
            raise RequestRefused(400, f"the body is not OTLP JSON: {exc}") from None
    else:
        request = _from_protobuf(body)
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans", []), list):
        raise RequestRefused(400, "expected an OTLP export request with 'resourceSpans'")
    batches: dict[str, TraceBatch] = {}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for resource in request.get("resourceSpans") or []:
        if not isinstance(resource, dict):
            raise RequestRefused(400, "resourceSpans: expected objects")
        outer = {k: v for k, v in resource.items() if k != "scopeSpans"}
        service = _service(resource)
        for scope in resource.get("scopeSpans") or []:
            if not isinstance(scope, dict):
                raise RequestRefused(400, "scopeSpans: expected objects")
            by_trace: dict[str, list[Any]] = {}
            for span in scope.get("spans") or []:
                if not isinstance(span, dict):
                    raise RequestRefused(400, "spans: expected objects")
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _hex(span[key])
                trace_id = span.get("traceId")
                if not isinstance(trace_id, str) or not trace_id or not trace_id.strip("0"):
                    raise RequestRefused(
                        400, f"span {span.get('name')!r} has no trace id: nothing was written"
                    )
                size = len(json.dumps(span, ensure_ascii=False))
                if size > max_span_bytes:
                    raise RequestRefused(
                        413,
                        f"span {span.get('name')!r} of trace {trace_id} is {size} bytes, more "
                        f"than the {max_span_bytes} a span may hold: nothing was written",
                    )
                by_trace.setdefault(trace_id, []).append(span)
            scope_fields = {k: v for k, v in scope.items() if k != "spans"}
            for trace_id, spans in by_trace.items():
                grouped.setdefault(trace_id, []).append(
                    {**outer, "scopeSpans": [{**scope_fields, "spans": spans}]}
                )
                batch = batches.get(trace_id)
                roots = any(not span.get("parentSpanId") for span in spans)
                if batch is None:
                    batches[trace_id] = TraceBatch(trace_id, b"", len(spans), roots, service)
                else:
                    batch.spans += len(spans)
                    batch.root_ended = batch.root_ended or roots
    for trace_id, resources in grouped.items():
        line = json.dumps({"resourceSpans": resources}, ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )
        try:
            read_spans(line, f"trace {trace_id}")  # what the import would refuse, refused now
        except RecordError as exc:
            raise RequestRefused(400, f"{exc}: nothing was written") from None
        batches[trace_id].line = line + b"\n"
    return list(batches.values())
