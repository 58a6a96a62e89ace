"""Reading OTLP/JSON: the spans of a file (an export request, or one a line), each made plain.

Ids are checked (hex, or the base64 of protobuf's JSON mapping, never zeros), times are
nanoseconds OTLP and `datetime` can hold, and attributes are read as GenAI's current names
whatever convention wrote them (`otel_dialects.canonical_attributes`). A span given twice with
the same content is taken once; and the values spans hold read as plain ones (a span's time in
the zone agentledger's export marked, GenAI messages as text, JSON objects given as text).
`agentledger.importers.otel` makes runs of what this reads.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from agentledger.errors import InputError, RecordError
from agentledger.importers.otel_dialects import canonical_attributes
from agentledger.importers.source_files import check_json_containers, read_regular
from agentledger.importers.trace_runs import trace_files
from agentledger.records import DEFAULT_MAX_ARTIFACT_BYTES, decode_json, otlp

__all__ = [
    "SEPARATOR",
    "find_otel_traces",
    "hex_id",
    "json_object",
    "messages_text",
    "read_spans",
    "requests_of",
    "span_time",
]

SEPARATOR = "#trace="
"""Between a file and a trace id in the path of one trace of a file (``file#trace=ID``)."""
_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")
_MAX_NANOS = 2**63 - 1  # 2262-04-11: what a signed 64-bit count of nanoseconds holds


def requests_of(raw: bytes, origin: str) -> list[Any]:
    """The export requests of a file: the whole file, or one per line (refused before it is
    parsed when it holds more objects and arrays than memory should: `check_json_containers`)."""
    check_json_containers(raw, origin)
    text = raw.lstrip()
    if text.startswith(b"{") and b"\n{" not in text.rstrip():
        return [decode_json(raw, origin)]
    return [
        decode_json(line, origin, line=number)
        for number, line in enumerate(raw.split(b"\n"), start=1)
        if line.strip()
    ]


_HEX = frozenset("0123456789abcdefABCDEF")


def hex_id(value: Any, origin: str, where: str) -> str:
    """A trace id (16 bytes) or span id (8 bytes) as lowercase hex. OTLP/JSON writes ids as
    hex (32 or 16 digits); the Protobuf JSON mapping (what `MessageToDict` makes of an export
    request) writes them base64 (24 or 12 characters): taken too, but only when it decodes
    to an id of the right size, so that a short word ("AAAA") is never read as an id. An id
    of zeros is no id (the spec calls it invalid)."""
    size = 16 if where.endswith("traceId") else 8
    if not isinstance(value, str) or not value:
        raise RecordError(origin, f"expected a {size}-byte id in hex", field=where)
    if len(value) == 2 * size and _HEX.issuperset(value):
        decoded = bytes.fromhex(value)
    else:
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if len(decoded) != size or len(value) != 4 * -(-size // 3):
            raise RecordError(
                origin,
                f"{value[:40]!r} is not a {size}-byte id: OTLP/JSON writes {2 * size} hex digits",
                field=where,
            )
    if not decoded.strip(b"\0"):
        raise RecordError(origin, f"an id of zeros ({value[:40]!r}) is invalid", field=where)
    return decoded.hex()


def _status(value: Any) -> tuple[bool, str | None]:
    """Whether a span's status is an error (``2``, or ``STATUS_CODE_ERROR`` in protobuf's JSON
    mapping), and its message."""
    if not isinstance(value, dict):
        return False, None
    message = value.get("message")
    return value.get("code") in (2, "2", "STATUS_CODE_ERROR"), (
        message if isinstance(message, str) and message else None
    )


def _events(items: Any, origin: str, where: str) -> list[dict[str, Any]]:
    """A span's events (name and attributes), as given."""
    if not isinstance(items, list):
        return []
    return [
        {
            "name": item.get("name") if isinstance(item.get("name"), str) else "",
            "attributes": otlp.attribute_map(
                item.get("attributes"), origin, f"{where}[{n}].attributes"
            ),
        }
        for n, item in enumerate(items)
        if isinstance(item, dict)
    ]


def read_spans(raw: bytes, origin: str) -> dict[str, list[dict[str, Any]]]:
    """Every span of the file by trace id, each with its attributes made plain.

    A span given more than once (the same request exported twice) is taken once; a span id
    that a trace repeats with other content is malformed input."""
    traces: dict[str, list[dict[str, Any]]] = {}
    seen: dict[tuple[str, str], str] = {}  # the sha256 of each span's content, as given
    requests = requests_of(raw, origin)
    for number, request in enumerate(requests):
        if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
            raise RecordError(
                origin, "expected an OTLP export request with 'resourceSpans'", line=number + 1
            )
        for r, resource in enumerate(request["resourceSpans"]):
            for s, scope in enumerate((resource or {}).get("scopeSpans") or []):
                for n, span in enumerate((scope or {}).get("spans") or []):
                    where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                    if not isinstance(span, dict):
                        raise RecordError(origin, "expected a span object", field=where)
                    trace_id = hex_id(span.get("traceId"), origin, f"{where}.traceId")
                    try:
                        start = int(span.get("startTimeUnixNano", 0))
                        end = int(span.get("endTimeUnixNano", start))
                    except (TypeError, ValueError):
                        raise RecordError(
                            origin,
                            "expected nanoseconds since the epoch",
                            field=f"{where}.startTimeUnixNano",
                        ) from None
                    for name, nanos in (("startTimeUnixNano", start), ("endTimeUnixNano", end)):
                        if not 0 <= nanos <= _MAX_NANOS:  # OTLP's fixed64; and datetime's range
                            raise RecordError(
                                origin,
                                f"{nanos} is no time: nanoseconds since 1970 up to year 2262",
                                field=f"{where}.{name}",
                            )
                    if end < start:
                        raise RecordError(
                            origin,
                            "the span ends before it starts",
                            field=f"{where}.endTimeUnixNano",
                        )
                    failed, message = _status(span.get("status"))
                    span_id = hex_id(span.get("spanId"), origin, f"{where}.spanId")
                    given = span.get("name")
                    name = given if isinstance(given, str) else ""
                    parent = bool(span.get("parentSpanId"))
                    entry: dict[str, Any] = {
                        "span_id": span_id,
                        "parent": parent,
                        "name": name,
                        "start": start,
                        "end": end,
                        # GenAI, OpenInference and OpenLLMetry, read as GenAI's current names
                        "attributes": canonical_attributes(
                            otlp.attribute_map(
                                span.get("attributes"), origin, f"{where}.attributes"
                            ),
                            name,
                            not parent,
                        ),
                        "failed": failed,
                        "status_message": message,
                        "events": _events(span.get("events"), origin, f"{where}.events"),
                    }
                    key = (trace_id, span_id)
                    content = hashlib.sha256(
                        json.dumps(span, sort_keys=True, ensure_ascii=False).encode(
                            "utf-8", "surrogatepass"
                        )
                    ).hexdigest()
                    before = seen.get(key)
                    if before is not None:
                        if before == content:
                            continue  # the same span given again
                        raise RecordError(
                            origin,
                            f"span {span_id} of trace {trace_id} is given twice with "
                            "different content",
                            field=where,
                            line=number + 1 if len(requests) > 1 else None,
                        )
                    seen[key] = content
                    traces.setdefault(trace_id, []).append({**entry, "where": where})
    return traces


def find_otel_traces(
    paths: Sequence[Path], limit: int = DEFAULT_MAX_ARTIFACT_BYTES
) -> list[tuple[Path, str]]:
    """One entry per trace id of every OTLP JSON file under `paths` (``file#trace=ID``); a
    file over `limit` bytes is refused before it is read."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        for file, real in trace_files(path, (".json", ".jsonl"), "OTLP JSON file"):
            traces = read_spans(read_regular(real, limit, file), str(file))
            if not traces:
                raise InputError(f"no spans in {file}: nothing to import")
            for trace_id in sorted(traces):
                found.append(
                    (
                        Path(f"{file}{SEPARATOR}{trace_id}"),
                        f"{real}{SEPARATOR}{trace_id}",
                    )
                )
    return found


def messages_text(value: Any, role: str | None = None) -> str | None:
    """The text parts of GenAI messages (a JSON string or a list), of one role if given."""
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except ValueError:
            return text
    if not isinstance(value, list):
        return None
    texts = []
    for message in value:
        if not isinstance(message, dict) or (role and message.get("role") != role):
            continue
        for part in message.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("content"), str):
                texts.append(part["content"])
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
    return "\n".join(texts) if texts else None


def _zone(zone: Any) -> tzinfo | None:
    """The UTC offset agentledger's export gives a step's time (``+02:00``), if any."""
    match = _OFFSET.match(zone) if isinstance(zone, str) else None
    if match is None:
        return None
    sign = -1 if match[1] == "-" else 1
    return timezone(sign * timedelta(hours=int(match[2]), minutes=int(match[3])))


def span_time(nanos: int, zone: Any = None) -> datetime | None:
    """A span time; agentledger's own export marks times that had no zone (``unknown``: kept
    without one), steps that had no time (``none``) and the offset a time was given in."""
    if nanos <= 0 or zone == "none":
        return None
    moment = datetime.fromtimestamp(nanos // 1_000_000_000, UTC).replace(
        microsecond=nanos % 1_000_000_000 // 1000
    )
    if zone == "unknown":
        return moment.replace(tzinfo=None)
    offset = _zone(zone)
    return moment.astimezone(offset) if offset is not None else moment


def json_object(value: Any) -> dict[str, Any] | None:
    """A JSON object given as text or as itself (text that is no JSON: ``{"raw": text}``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"raw": value}
    return value if isinstance(value, dict) else None
