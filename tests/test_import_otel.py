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
from exact_output import normalised

pytest.importorskip("opentelemetry.sdk")
encoder = pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder")
from google.protobuf.json_format import MessageToDict  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import Status, StatusCode  # noqa: E402


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
    assert normalised(out, tmp_path) == "Imported 2 runs into /home/ops/work/ledger.\n"
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
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/spans.json, field "
        "'resourceSpans[0].scopeSpans[0].spans[0].traceId': 'zz' is not a 16-byte "
        "id: OTLP/JSON writes 32 hex digits\n"
    )
    assert not root.exists()


def _document(agents: Any, hex_ids: bool = True) -> dict[str, Any]:
    """The OTLP JSON export request of the spans `agents(tracer)` makes."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agents(provider.get_tracer("agent"))
    document = MessageToDict(encoder.encode_spans(exporter.get_finished_spans()))
    return _hex_ids(document) if hex_ids else document  # type: ignore[no-any-return]


def _failing_agent(tracer: Any) -> None:
    """An agent whose shell tool fails: the span's status is ERROR, with an exception event."""
    with tracer.start_as_current_span(
        "invoke_agent ghost", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "cleaning"}]}]
                ),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool shell",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "shell",
                "gen_ai.tool.call.arguments": json.dumps({"command": "rm -rf /var/log/app"}),
                "gen_ai.tool.call.result": "done",
            },
        ) as span:
            span.record_exception(PermissionError("nope"))
            span.set_status(Status(StatusCode.ERROR, "permission denied"))


@pytest.mark.parametrize("hex_ids", [True, False])
def test_a_failed_tool_call_is_an_error_step_and_exports_as_one(
    tmp_path: Path, hex_ids: bool
) -> None:
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(_document(_failing_agent, hex_ids)))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    (run_dir,) = (root / "runs").iterdir()
    steps = parse_trace((run_dir / "trace.jsonl").read_bytes(), "t")
    assert [s.kind for s in steps] == ["other", "message", "command", "error"]
    error = steps[3]
    assert (error.actor, error.cause, error.tool) == ("tool", 2, "shell")
    assert error.content is not None
    assert error.content.text == "permission denied\nPermissionError: nope\nresult: done"
    (event,) = parse_shell_audit((run_dir / "shell_audit.jsonl").read_bytes(), "s")
    assert event.stdout is None and event.stderr is not None
    assert event.stderr.startswith("permission denied")
    summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
    assert any("1 failed span" in note and "permission denied" in note for note in summary.notes)

    # exported: the tool's span has an ERROR status and an exception event; imported again,
    # the same error step
    spans = tmp_path / "spans.json"
    code, _, err = run("export", "--ledger", str(root), "--format", "otel", "--out", str(spans))
    assert code == 0, err
    exported = json.loads(spans.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    (tool,) = [s for s in exported if s["name"] == "execute_tool shell"]
    assert tool["status"] == {"code": 2, "message": error.content.text}
    assert [e["name"] for e in tool["events"]] == ["exception"]
    back = tmp_path / "back"
    code, _, err = run("import", "--ledger", str(back), str(spans))
    assert code == 0, err
    (again,) = (back / "runs").iterdir()
    assert again.name == run_dir.name
    steps_again = parse_trace((again / "trace.jsonl").read_bytes(), "t")
    assert [s.model_dump(exclude={"source"}) for s in steps_again] == [
        s.model_dump(exclude={"source"}) for s in steps
    ]


def _two_agents(tracer: Any) -> None:
    _agent(tracer, "SSH is refused.", "iptables -L INPUT -n")
    _agent(tracer, "Packets drop.", "iptables -F INPUT")


@pytest.mark.parametrize("twice", ["lines", "resource spans"])
def test_the_same_spans_given_twice_are_taken_once(tmp_path: Path, twice: str) -> None:
    document = _document(_two_agents)
    path = tmp_path / "spans.jsonl"
    if twice == "lines":  # a file exporter that wrote the same request twice
        path.write_text(json.dumps(document) + "\n" + json.dumps(document) + "\n")
    else:
        document["resourceSpans"] = document["resourceSpans"] * 2
        path.write_text(json.dumps(document))
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 2 runs into /home/ops/work/ledger.\n"
    for run_dir in (root / "runs").iterdir():
        steps = parse_trace((run_dir / "trace.jsonl").read_bytes(), "t")
        assert [s.kind for s in steps] == [
            "other",
            "message",
            "command",
            "command_output",
            "message",
        ]
        summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
        assert (summary.tokens_in, summary.tokens_out, summary.model_calls) == (2500, 80, 2)
        assert summary.commands_run == 1


def test_a_span_id_repeated_with_other_content_is_refused(tmp_path: Path) -> None:
    document = _document(_two_agents)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    first = spans[0]
    other = next(s for s in spans[1:] if s["traceId"] == first["traceId"])
    other["spanId"] = first["spanId"]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(document))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 2
    # The trace's and span's ids are random: a substring.
    assert str(path) in err and first["spanId"] in err and "given twice" in err
    assert not root.exists()


@pytest.mark.parametrize(
    "text",
    [
        '{"resourceSpans": []}',
        '{"resourceSpans": [{"scopeSpans": [{"scope": {"name": "x"}, "spans": []}]}]}',
        '{"resourceSpans": []}\n{"resourceSpans": []}\n',
    ],
)
def test_a_file_without_spans_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.json"
    path.write_text(text)
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path))
    assert code == 2
    assert (
        normalised(err, tmp_path)
        == "Error: no spans in /home/ops/work/empty.json: nothing to import\n"
    )
    assert out == ""
    assert not root.exists()


def test_64_bit_trace_ids_widened_with_zeros_give_runs_of_their_own(tmp_path: Path) -> None:
    """Zipkin- and Jaeger-style ids are 64 bits, written as 128 with leading zeros: the run
    ids come from the ids' ends, not from their (equal) starts."""
    document = _document(_two_agents)
    spans = [s for r in document["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    ids = sorted({span["traceId"] for span in spans})
    for span in spans:
        span["traceId"] = "0" * 16 + span["traceId"][-16:]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(document))
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    assert normalised(out, tmp_path) == f"Imported {len(ids)} runs into /home/ops/work/ledger.\n"
    assert all(not p.name.endswith("_000000000000") for p in (root / "runs").iterdir())


def _crashing_agent(tracer: Any) -> None:
    from opentelemetry.trace import Status, StatusCode

    with tracer.start_as_current_span(
        "invoke_agent ghost",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4o"},
    ) as agent:
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
        ):
            pass
        agent.set_status(Status(StatusCode.ERROR, "agent crashed"))


def test_an_agent_span_that_failed_is_a_failed_run_and_exports_as_one(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_document(_crashing_agent)))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    (run_dir,) = (root / "runs").iterdir()
    summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
    assert summary.exit_status == "failed"
    assert summary.error and "agent crashed" in summary.error
    # exported, its agent span fails; imported again, the run is failed with its error
    exported = tmp_path / "exported.json"
    assert run("export", "--ledger", str(root), "--format", "otel", "--out", str(exported))[0] == 0
    (agent_span,) = [
        span
        for r in json.loads(exported.read_text())["resourceSpans"]
        for sc in r["scopeSpans"]
        for span in sc["spans"]
        if "parentSpanId" not in span
    ]
    assert agent_span["status"] == {"code": 2, "message": summary.error}
    back = tmp_path / "back"
    code, _, err = run("import", "--ledger", str(back), str(exported))
    assert code == 0, err
    (again,) = (back / "runs").iterdir()
    second = parse_record(RunSummary, (again / "run_summary.json").read_bytes(), "s")
    assert (second.exit_status, second.error) == ("failed", summary.error)


@pytest.mark.parametrize(
    ("times", "problem"),
    [
        (
            ("99999999999999999999", "99999999999999999999"),
            "startTimeUnixNano': 99999999999999999999 is no time",
        ),
        (("-5", "10"), "startTimeUnixNano': -5 is no time"),
        (("2000", "1000"), "endTimeUnixNano': the span ends before it starts"),
    ],
)
def test_span_times_that_are_no_times_are_refused(
    tmp_path: Path, times: tuple[str, str], problem: str
) -> None:
    document = _document(_two_agents)
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["startTimeUnixNano"], span["endTimeUnixNano"] = times
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(document))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 2 and "spans.json" in err and problem in err, err
    assert not root.exists()


@pytest.mark.parametrize("given", [{"intValue": "-5"}, {"doubleValue": 1.5}, {"stringValue": "9"}])
def test_token_counts_that_are_no_counts_are_unknown_not_zero(
    tmp_path: Path, given: dict[str, Any]
) -> None:
    document = _document(_two_agents)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for attribute in span.get("attributes", []):
                    if attribute["key"].startswith("gen_ai.usage."):
                        attribute["value"] = given
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(document))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 0, err
    for run_dir in (root / "runs").iterdir():
        summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
        assert (summary.tokens_in, summary.tokens_out) == (None, None)
        assert summary.model_calls == 2


def _usage_attribute(document: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The attributes of the first span holding a token count, and that count's position."""
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                attributes = span.get("attributes", [])
                for n, attribute in enumerate(attributes):
                    if attribute["key"] == "gen_ai.usage.input_tokens":
                        return attributes, n
    raise AssertionError("no span gives input tokens")


def test_an_attribute_given_twice_is_refused_not_last_wins(tmp_path: Path) -> None:
    """OTLP attribute keys are unique: of two token counts, which one held is unknowable."""
    document = _document(_two_agents)
    attributes, _ = _usage_attribute(document)
    attributes.append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "5"}})
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(document))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 2, err
    assert normalised(err, tmp_path) == (
        "Error: /home/ops/work/spans.json, field "
        "'resourceSpans[0].scopeSpans[0].spans[0].attributes[8]': attribute "
        "'gen_ai.usage.input_tokens' is given twice (each key once)\n"
    )
    assert normalised(err, tmp_path) == (
        "Error: /home/ops/work/spans.json, field "
        "'resourceSpans[0].scopeSpans[0].spans[0].attributes[8]': attribute "
        "'gen_ai.usage.input_tokens' is given twice (each key once)\n"
    )
    assert not root.exists()


@pytest.mark.parametrize("number", [str(2**63), str(-(2**63) - 1), "1" + "0" * 30])
def test_an_int_value_past_64_bits_is_refused_naming_the_attribute(
    tmp_path: Path, number: str
) -> None:
    document = _document(_two_agents)
    attributes, n = _usage_attribute(document)
    attributes[n]["value"] = {"intValue": number}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(document))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path))
    assert code == 2, err
    assert f"attributes[{n}].value.intValue'" in err and "does not fit in 64 bits" in err
    assert not root.exists()
