"""Importing OpenTelemetry GenAI spans (OTLP JSON) made by the OpenTelemetry SDK: one run per
trace id."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.records import RunMetadata, RunSummary, parse_record, parse_shell_audit
from agentledger.records.trace import parse_trace

pytest.importorskip("opentelemetry.sdk")
encoder = pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder")
from google.protobuf.json_format import MessageToDict  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _agent(tracer: Any, task: str, command: str) -> None:
    """A small instrumented agent: one model call, one shell tool call, a final answer."""
    with tracer.start_as_current_span(
        "invoke_agent ghost",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ghost"},
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": 1200,
                "gen_ai.usage.output_tokens": 30,
                "gen_ai.system_instructions": "You are Ghost.",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": task}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "checking"}]}]
                ),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool shell",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "shell",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": json.dumps({"command": command}),
                "gen_ai.tool.call.result": "Chain INPUT (policy ACCEPT)",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 1300,
                "gen_ai.usage.output_tokens": 50,
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Root cause: X"}]}]
                ),
            },
        ):
            pass


def _hex_ids(value: Any) -> Any:
    """OTLP JSON writes ids in hex (protobuf's JSON mapping writes base64)."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex()
            if k in ("traceId", "spanId", "parentSpanId")
            else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value


def _export(path: Path, hex_ids: bool = True) -> Path:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    _agent(tracer, "SSH is refused.", "iptables -L INPUT -n")
    _agent(tracer, "Packets drop.", "iptables -F INPUT")
    document = MessageToDict(encoder.encode_spans(exporter.get_finished_spans()))
    path.write_text(json.dumps(_hex_ids(document) if hex_ids else document))
    return path


@pytest.mark.parametrize("hex_ids", [True, False])
def test_one_run_per_trace(tmp_path: Path, hex_ids: bool) -> None:
    path = _export(tmp_path / "spans.json", hex_ids)
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    assert "Imported 2 runs" in out
    runs = sorted((root / "runs").iterdir())
    seen_commands = set()
    for run_dir in runs:
        metadata = parse_record(RunMetadata, (run_dir / "metadata.json").read_bytes(), "m")
        assert metadata.model == "gpt-4o" and metadata.model_served == "gpt-4o-2024-08-06"
        assert metadata.scenario == "spans" and metadata.agent.name == "ghost"
        assert metadata.started_at is not None and metadata.started_at.tzinfo is not None
        assert metadata.system_prompt_hash is not None
        assert (run_dir / "system_prompt.txt").read_text() == "You are Ghost."
        assert metadata.source and len(metadata.source["trace_id"]) == 32
        steps = parse_trace((run_dir / "trace.jsonl").read_bytes(), "t")
        assert [s.kind for s in steps] == [
            "other",
            "message",
            "command",
            "command_output",
            "message",
        ]
        assert steps[2].tool == "shell" and steps[3].cause == 2
        (event,) = parse_shell_audit((run_dir / "shell_audit.jsonl").read_bytes(), "s")
        assert event.command == steps[2].command
        seen_commands.add((event.command, event.classification))
        assert (run_dir / "report.md").read_text() == "Root cause: X"
        summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
        assert (summary.tokens_in, summary.tokens_out, summary.model_calls) == (2500, 80, 2)
    assert seen_commands == {
        ("iptables -L INPUT -n", "read-only"),
        ("iptables -F INPUT", "destructive"),
    }


def test_bad_spans_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]})
    )
    root = tmp_path / "ledger"
    code, _, err = run(
        "import", "--ledger", str(root), "--format", "otel", str(path), "--model", "m"
    )
    assert code == 2 and "spans.json" in err and "traceId" in err
    assert not root.exists()
