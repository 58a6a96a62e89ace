"""`agentledger collect`: what it takes, what it refuses, and that an acknowledged span is never
lost (a receiver killed with SIGKILL seals at its next start what it had answered 200 for)."""

from __future__ import annotations

import gzip
import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.testclient import TestClient

from agentledger import Ledger
from agentledger.collector.receiver import Collector, CollectSettings, create_app
from agentledger.collector.spool import Limits
from agentledger.identity import sha256_bytes
from agentledger.records.trace import parse_trace
from collect_support import collecting, wait_for_runs

TRACE = "5b8efff798038103d269b633813fc60c"
SYSTEM = "You are an ops agent."
JSON = {"content-type": "application/json"}
PROTOBUF = {"content-type": "application/x-protobuf"}


def _attrs(values: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, value in values.items():
        kind = (
            "intValue"
            if isinstance(value, int)
            else "doubleValue"
            if isinstance(value, float)
            else "stringValue"
        )
        out.append({"key": key, "value": {kind: value}})
    return out


def span(
    span_id: str, parent: str | None, start: int, attrs: dict[str, Any], trace: str = TRACE
) -> dict[str, Any]:
    made = {
        "traceId": trace,
        "spanId": span_id,
        "name": attrs.get("gen_ai.operation.name", "agent"),
        "startTimeUnixNano": str(1_760_000_000_000_000_000 + start * 1_000_000),
        "endTimeUnixNano": str(1_760_000_000_000_000_000 + start * 1_000_000 + 500_000),
        "attributes": _attrs(attrs),
    }
    if parent:
        made["parentSpanId"] = parent
    return made


def request(*spans: dict[str, Any], service: str = "ops-agent") -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs({"service.name": service})},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}],
            }
        ]
    }


ROOT = span("00f067aa0ba902b7", None, 0, {"gen_ai.operation.name": "invoke_agent"})
CHAT = span(
    "00f067aa0ba902b8",
    "00f067aa0ba902b7",
    1,
    {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.system_instructions": SYSTEM,
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Root cause: netem"}]}]
        ),
    },
)
TOOL = span(
    "00f067aa0ba902b9",
    "00f067aa0ba902b7",
    2,
    {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shell",
        "gen_ai.tool.call.arguments": json.dumps({"command": "ip -s link"}),
        "gen_ai.tool.call.result": "eth0: RX errors 0",
    },
)


def make(tmp_path: Path, **settings: Any) -> tuple[Collector, TestClient, Path]:
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    token = settings.pop("token", None)
    collector = Collector(root, CollectSettings(**settings))
    return collector, TestClient(create_app(collector, token=token)), root


def seal(collector: Collector) -> list[str]:
    with Ledger.open(collector.ledger_root) as ledger:
        return collector.seal_ready(ledger)


def nothing_written(collector: Collector) -> None:
    assert collector.spool.pending == {}
    assert not any(collector.spool.pending_dir.iterdir())
    with Ledger.open(collector.ledger_root) as ledger:
        assert ledger.count() == 0


def test_a_trace_in_json_becomes_a_run(tmp_path: Path) -> None:
    collector, client, root = make(tmp_path, settle=0)
    answer = client.post("/v1/traces", json=request(ROOT, CHAT, TOOL))
    assert answer.status_code == 200 and answer.json() == {}
    (run_id,) = seal(collector)
    with Ledger.open(root) as ledger:
        stored = ledger.load(run_id)
        steps = parse_trace(ledger.read_bytes(run_id, "trace.jsonl"), "t")
    assert stored.metadata.scenario == "ops-agent"  # the service's name
    assert stored.metadata.model == "gpt-4o"
    assert stored.metadata.model_served == "gpt-4o-2024-08-06"
    assert stored.metadata.system_prompt_hash == sha256_bytes(SYSTEM.encode())
    assert [s.kind for s in steps] == ["other", "message", "command", "command_output"]
    assert steps[2].command_class == "read-only"
    assert (stored.summary.tokens_in, stored.summary.commands_run) == (100, 1)
    assert not any(collector.spool.pending_dir.iterdir())  # the spool is emptied


def test_protobuf_gzip_and_spans_joined_across_requests_out_of_order(tmp_path: Path) -> None:
    collector, client, root = make(tmp_path, settle=3600)
    # The root first, its children after, each in its own request, protobuf then gzip JSON.
    body = ParseDict(request(ROOT), ExportTraceServiceRequest()).SerializeToString()
    assert client.post("/v1/traces", content=body, headers=PROTOBUF).status_code == 200
    assert (
        client.post(
            "/v1/traces",
            content=gzip.compress(
                ParseDict(request(TOOL), ExportTraceServiceRequest()).SerializeToString()
            ),
            headers={**PROTOBUF, "content-encoding": "gzip"},
        ).status_code
        == 200
    )
    zipped = gzip.compress(json.dumps(request(CHAT)).encode())
    answer = client.post("/v1/traces", content=zipped, headers={**JSON, "content-encoding": "gzip"})
    assert answer.status_code == 200
    assert seal(collector) == []  # still settling: its late spans may come
    collector.settings = CollectSettings(settle=0)
    (run_id,) = seal(collector)
    with Ledger.open(root) as ledger:
        steps = parse_trace(ledger.read_bytes(run_id, "trace.jsonl"), "t")
    assert [s.kind for s in steps] == ["other", "message", "command", "command_output"]


@pytest.mark.parametrize(
    ("body", "headers", "status", "reason"),
    [
        (b'{"resourceSpans": [', JSON, 400, "not OTLP JSON"),
        (b"\x0a\xff\xff\xff", PROTOBUF, 400, "not an OTLP ExportTraceServiceRequest"),
        (b"{}", {"content-type": "text/plain"}, 415, "'text/plain' is not OTLP"),
        (b"{}", {}, 415, "is not OTLP"),
        (b"\x1f\x8b\x08junk", {**JSON, "content-encoding": "gzip"}, 400, "not valid gzip"),
        (b"{}", {**JSON, "content-encoding": "br"}, 415, "'br' is not supported"),
        (json.dumps({"resourceSpans": 5}).encode(), JSON, 400, "resourceSpans"),
        (
            json.dumps(request({**CHAT, "traceId": ""})).encode(),
            JSON,
            400,
            "has no trace id",
        ),
        (
            json.dumps(request({k: v for k, v in CHAT.items() if k != "traceId"})).encode(),
            JSON,
            400,
            "has no trace id",
        ),
        (
            json.dumps(request({**CHAT, "endTimeUnixNano": "5"})).encode(),
            JSON,
            400,
            "ends before it starts",
        ),
    ],
)
def test_bad_requests_are_refused_with_the_reason_and_nothing_written(
    tmp_path: Path, body: bytes, headers: dict[str, str], status: int, reason: str
) -> None:
    collector, client, _root = make(tmp_path, settle=0)
    answer = client.post("/v1/traces", content=body, headers=headers)
    assert answer.status_code == status, answer.text
    assert reason in answer.json()["message"]
    nothing_written(collector)


def test_a_request_with_one_bad_span_is_refused_whole(tmp_path: Path) -> None:
    collector, client, _root = make(tmp_path, settle=0)
    other = {**TOOL, "traceId": "", "spanId": "00f067aa0ba90200"}
    answer = client.post("/v1/traces", json=request(ROOT, CHAT, other))
    assert answer.status_code == 400
    nothing_written(collector)


def test_sizes_past_the_limits_are_refused(tmp_path: Path) -> None:
    limits = Limits(
        max_request_bytes=50_000,
        max_span_bytes=5_000,
        max_trace_spans=3,
        max_pending_bytes=8_000,
        max_pending_traces=100,
    )
    collector, client, _root = make(tmp_path, settle=3600, limits=limits)
    huge = span("00f067aa0ba902c0", "00f067aa0ba902b7", 3, {"gen_ai.tool.name": "x" * 6000})
    answer = client.post("/v1/traces", json=request(huge))
    assert answer.status_code == 413 and "a span may hold" in answer.json()["message"]
    answer = client.post("/v1/traces", content=b"{" + b" " * 60_000 + b"}", headers=JSON)
    assert answer.status_code == 413 and "larger than 50000 bytes" in answer.json()["message"]
    bomb = gzip.compress(b"{" + b" " * 1_000_000 + b"}")
    answer = client.post("/v1/traces", content=bomb, headers={**JSON, "content-encoding": "gzip"})
    assert answer.status_code == 413 and "once decompressed" in answer.json()["message"]
    many = [span(f"00f067aa0ba903{n:02x}", "00f067aa0ba902b7", n, {}) for n in range(4)]
    answer = client.post("/v1/traces", json=request(*many))
    assert answer.status_code == 413 and "more than a trace may" in answer.json()["message"]
    nothing_written(collector)
    # A flood: traces wait to be sealed up to the limit, then 429 until some are sealed.
    statuses = []
    for n in range(30):
        trace = f"{n + 1:032x}"
        statuses.append(
            client.post("/v1/traces", json=request({**CHAT, "traceId": trace})).status_code
        )
    assert 200 in statuses and statuses[-1] == 429
    refused = client.post("/v1/traces", json=request({**CHAT, "traceId": "f" * 32}))
    assert refused.headers["retry-after"] == "5"
    assert collector.spool.pending_bytes <= limits.max_pending_bytes
    accepted = statuses.count(200)
    assert len(collector.spool.pending) == accepted


def test_a_late_span_of_a_sealed_trace_is_refused(tmp_path: Path) -> None:
    collector, client, _root = make(tmp_path, settle=0)
    client.post("/v1/traces", json=request(ROOT, CHAT))
    (run_id,) = seal(collector)
    answer = client.post("/v1/traces", json=request(TOOL))
    assert answer.status_code == 409 and run_id in answer.json()["message"]


def test_a_trace_without_its_root_is_sealed_after_the_quiet_time(tmp_path: Path) -> None:
    collector, client, root = make(tmp_path, settle=0, quiet=0.05)
    client.post("/v1/traces", json=request(CHAT))
    import time

    time.sleep(0.1)
    (run_id,) = seal(collector)
    with Ledger.open(root) as ledger:
        notes = ledger.load(run_id).summary.notes
    assert any("after 0.05 s without new spans" in note for note in notes)


def test_a_trace_that_cannot_be_a_run_is_kept_aside_with_the_reason(tmp_path: Path) -> None:
    collector, client, _root = make(tmp_path, settle=0)
    client.post("/v1/traces", json=request(ROOT))  # no model anywhere
    assert seal(collector) == []
    kept = collector.spool.failed_dir / TRACE
    assert "cannot determine the run's model" in (kept / "reason.txt").read_text()
    assert list(kept.glob("*.jsonl"))


def test_a_token_is_required_when_set(tmp_path: Path) -> None:
    token = "a-long-enough-token-1234"
    collector, client, _root = make(tmp_path, settle=0, token=token)
    answer = client.post("/v1/traces", json=request(ROOT, CHAT))
    assert answer.status_code == 401
    nothing_written(collector)
    answer = client.post(
        "/v1/traces", json=request(ROOT, CHAT), headers={"authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200


@pytest.mark.slow
def test_a_killed_receiver_loses_no_acknowledged_span(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    with collecting(root, "--settle", "3600") as running:
        first = httpx.post(running.endpoint, json=request(ROOT, CHAT), timeout=10)
        second = httpx.post(running.endpoint, json=request(TOOL), timeout=10)
        assert (first.status_code, second.status_code) == (200, 200)
        running.stop(signal.SIGKILL)
    with Ledger.open(root) as ledger:
        assert ledger.count() == 0  # not sealed yet: still settling when killed
    with collecting(root, "--settle", "0.1") as running:
        (run,) = wait_for_runs(root, 1)
    with Ledger.open(root) as ledger:
        steps = parse_trace(ledger.read_bytes(run.run_id, "trace.jsonl"), "t")
    assert [s.kind for s in steps] == ["other", "message", "command", "command_output"]
    assert "1 traces from before waiting" in running.log.read_text()


OLD_DIALECTS = {
    "genai-old": {
        "gen_ai.system": "openai",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.prompt": json.dumps(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "why?"}]
        ),
        "gen_ai.completion": json.dumps([{"role": "assistant", "content": "Root cause: netem"}]),
        "gen_ai.usage.prompt_tokens": 100,
        "gen_ai.usage.completion_tokens": 20,
    },
    "openllmetry-old": {
        "llm.request.type": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": SYSTEM,
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": "why?",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "Root cause: netem",
        "llm.usage.prompt_tokens": 100,
        "llm.usage.completion_tokens": 20,
    },
    "openinference": {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-2024-08-06",
        "llm.invocation_parameters": json.dumps({"model": "gpt-4o"}),
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "why?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Root cause: netem",
        "llm.token_count.prompt": 100,
        "llm.token_count.completion": 20,
        "llm.cost.total": 0.0042,
    },
}


@pytest.mark.parametrize("dialect", sorted(OLD_DIALECTS))
def test_each_dialect_gives_the_same_identity(tmp_path: Path, dialect: str) -> None:
    collector, client, root = make(tmp_path, settle=0)
    chat = span("00f067aa0ba902b8", "00f067aa0ba902b7", 1, OLD_DIALECTS[dialect])
    assert client.post("/v1/traces", json=request(ROOT, chat)).status_code == 200
    (run_id,) = seal(collector)
    with Ledger.open(root) as ledger:
        stored = ledger.load(run_id)
        prompt = ledger.read_bytes(run_id, "PROMPT.txt")
        report = ledger.read_bytes(run_id, "report.md")
    metadata = stored.metadata
    assert (metadata.model, metadata.model_served) == ("gpt-4o", "gpt-4o-2024-08-06")
    assert metadata.system_prompt_hash == sha256_bytes(SYSTEM.encode())
    assert (stored.summary.tokens_in, stored.summary.tokens_out) == (100, 20)
    assert (prompt, report) == (b"why?", b"Root cause: netem")
    assert stored.summary.cost_usd == (0.0042 if dialect == "openinference" else None)


def test_collect_refuses_a_bad_token_before_starting(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentledger.cli.app import main

    result = CliRunner().invoke(
        main, ["collect", "--ledger", str(tmp_path / "l"), "--token", "short"]
    )
    assert result.exit_code == 2 and "16 to 256" in result.output
    assert not (tmp_path / "l").exists()
