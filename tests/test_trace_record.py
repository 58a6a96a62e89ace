"""The trace record (trace.jsonl): its shape, strict reading, and the shell log it derives."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.errors import RecordError
from agentledger.records.trace import (
    KINDS,
    TraceStep,
    parse_trace,
    shell_events,
    step_text,
    trace_bytes,
)


def _steps() -> list[TraceStep]:
    return [
        TraceStep(
            index=0,
            time=datetime(2025, 5, 9, 2, 48, 32),
            actor="agent",
            kind="command",
            tool="execute_bash",
            arguments={"command": "iptables -F"},
            command="iptables -F",
            command_class="destructive",
        ),
        TraceStep(
            index=1,
            time=datetime(2025, 5, 9, 2, 48, 33, tzinfo=UTC),
            actor="tool",
            kind="command_output",
            cause=0,
            exit_code=0,
            content=step_text("x" * 5000),
        ),
    ]


def test_times_keep_their_zone_or_are_marked_unknown() -> None:
    naive, aware = _steps()
    assert naive.time_zone == "unknown"
    assert aware.time_zone == "+00:00"
    east = TraceStep(
        index=0,
        time=datetime(2025, 1, 1, tzinfo=timezone(timedelta(hours=2))),
        actor="user",
        kind="message",
    )
    assert east.time_zone == "+02:00"
    with pytest.raises(ValueError, match="no UTC offset"):
        TraceStep(
            index=0, time=datetime(2025, 1, 1), time_zone="+00:00", actor="user", kind="message"
        )
    with pytest.raises(ValueError, match="'unknown'"):
        TraceStep(
            index=0,
            time=datetime(2025, 1, 1, tzinfo=UTC),
            time_zone="unknown",
            actor="user",
            kind="message",
        )


def test_round_trip_keeps_the_unknown_zone() -> None:
    raw = trace_bytes(_steps())
    again = parse_trace(raw, "trace.jsonl")
    assert again == _steps()
    assert again[0].time is not None and again[0].time.tzinfo is None
    first = json.loads(raw.splitlines()[0])
    assert first["time"] == "2025-05-09T02:48:32" and first["time_zone"] == "unknown"
    assert "content" not in first  # unset fields are left out


def test_long_text_is_cut_with_its_size_and_hash() -> None:
    text = step_text("é" * 5000)
    assert text is not None
    assert text.truncated and len(text.text) == 4096
    assert text.bytes == 10000 and text.sha256.startswith("sha256:")
    short = step_text("ok")
    assert short is not None and not short.truncated and short.text == "ok"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b'{"index": 0, "actor": "agent", "kind": "command", "kind": "finish"}', "duplicate key"),
        (b'{"index": 0, "actor": "agent", "kind": "message", "cost_usd": NaN}', "NaN"),
        (
            b'{"index": 0, "actor": "agent", "kind": "message", "tokens_in": 1' + b"0" * 30 + b"}",
            "64 bits",
        ),
        (b'{"index": 0, "actor": "agent", "kind": "dance"}', "kind"),
        (b'{"index": 0, "actor": "robot", "kind": "message"}', "actor"),
        (b'{"index": 0, "actor": "agent", "kind": "message", "colour": 1}', "colour"),
        (b'{"index": 0, "actor": "agent", "kind": "message", "schema_version": 9}', "newer"),
        (b'{"index": 3, "actor": "agent", "kind": "message", "cause": 5}', "cause"),
        # strict types: no string read as a number, no boolean as a number or the reverse
        (b'{"index": true, "actor": "agent", "kind": "message"}', "field 'index'"),
        (b'{"index": 1, "actor": "tool", "kind": "message", "exit_code": true}', "'exit_code'"),
        (b'{"index": 1, "actor": "tool", "kind": "message", "exit_code": "0"}', "'exit_code'"),
        (b'{"index": 1, "actor": "tool", "kind": "message", "cause": false}', "field 'cause'"),
        (b'{"index": 1, "actor": "agent", "kind": "message", "cost_usd": "0.1"}', "'cost_usd'"),
        (b'{"index": 1, "actor": "agent", "kind": "message", "tokens_in": 2.0}', "'tokens_in'"),
        (b'{"index": 1, "actor": "agent", "kind": "message", "tokens_out": "2"}', "'tokens_out'"),
        (
            b'{"index": 1, "actor": "agent", "kind": "message", "source": {"file": "f", '
            b'"line": true}}',
            "field 'source.line'",
        ),
        (
            b'{"index": 1, "actor": "agent", "kind": "message", "content": {"text": "", '
            b'"bytes": false, "sha256": "sha256:' + b"0" * 64 + b'"}}',
            "field 'content.bytes'",
        ),
        (
            b'{"index": 1, "actor": "agent", "kind": "message", "content": {"text": "", '
            b'"bytes": 0, "sha256": "sha256:' + b"0" * 64 + b'", "truncated": 0}}',
            "field 'content.truncated'",
        ),
    ],
)
def test_bad_lines_are_refused_naming_the_line(line: bytes, problem: str) -> None:
    good = trace_bytes(_steps()[:1])
    with pytest.raises(RecordError) as caught:
        parse_trace(good + line + b"\n", "run/trace.jsonl")
    message = str(caught.value)
    assert "run/trace.jsonl" in message and "line 2" in message and problem in message


def test_steps_are_numbered_in_order() -> None:
    first, second = _steps()
    raw = trace_bytes([second, first])
    with pytest.raises(RecordError, match="step index 1 where 0 was expected"):
        parse_trace(raw, "trace.jsonl")


def test_shell_log_derived_from_command_steps() -> None:
    (event,) = shell_events(_steps())
    assert event.command == "iptables -F"
    assert event.classification == "destructive"
    assert event.exit_code == 0
    assert event.ts is None  # a time without zone is never taken for UTC
    assert (event.model_extra or {})["local_time"] == "2025-05-09T02:48:32"
    assert event.stdout == "x" * 4096 and event.truncated and event.stdout_bytes == 5000


def test_a_command_the_tool_refused_has_its_error_in_the_shell_log() -> None:
    call, _output = _steps()
    refusal = TraceStep(
        index=1,
        actor="tool",
        kind="error",
        cause=0,
        content=step_text("ERROR: Cannot execute multiple commands at once."),
    )
    (event,) = shell_events([call, refusal])
    assert event.stderr == "ERROR: Cannot execute multiple commands at once."
    assert event.stdout is None and event.exit_code is None
    assert event.stderr_sha256 == refusal.content.sha256 if refusal.content else False


def test_gate_decision_reaches_the_shell_log() -> None:
    step = TraceStep.model_validate(
        {
            "index": 0,
            "actor": "agent",
            "kind": "command",
            "command": "rm -rf /",
            "gate": {"decision": "denied", "reason": "destructive", "policy": "default"},
        }
    )
    (event,) = shell_events([step])
    assert event.denied and event.reason == "destructive"


def test_schema_prints_the_trace_step() -> None:
    result = CliRunner().invoke(main, ["schema", "trace-step"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert set(schema["properties"]["kind"]["enum"]) == set(KINDS)
    assert "time_zone" in schema["properties"]
    listed = CliRunner().invoke(main, ["schema"])
    assert "trace-step" in listed.stdout


def test_steps_from_a_shell_log_keep_the_logged_output_hash() -> None:
    from agentledger.records import ShellEvent
    from agentledger.records.trace import steps_from_shell_log

    at = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)
    logged = ShellEvent(
        ts=at,
        command="cat big.log",
        classification="read-only",
        decision="allowed",
        exit_code=0,
        stdout="head of the log",
        stdout_bytes=90_000,
        stdout_sha256="sha256:" + "ab" * 32,
        truncated=True,
    )
    refused = ShellEvent(ts=at, command="rm -rf /", decision="denied", reason="destructive")
    steps = steps_from_shell_log("why is it slow?", [logged, refused], None, started=at)
    assert [s.kind for s in steps] == ["message", "command", "command_output", "command"]
    output = steps[2].content
    assert output is not None and output.bytes == 90_000 and output.truncated
    assert output.sha256 == "sha256:" + "ab" * 32
    assert steps[3].gate is not None and steps[3].gate.reason == "destructive"
    again = shell_events(steps)
    assert [e.command for e in again] == ["cat big.log", "rm -rf /"]
    assert again[1].denied and again[0].stdout_bytes == 90_000


def test_strict_numbers_still_take_an_integer_cost() -> None:
    """A whole number of dollars is a number: written as the float it always was."""
    step = TraceStep.model_validate(
        {"index": 0, "actor": "agent", "kind": "message", "cost_usd": 2}
    )
    assert step.cost_usd == 2.0 and isinstance(step.cost_usd, float)
    assert trace_bytes([step]) == (
        b'{"schema_version":1,"index":0,"actor":"agent","kind":"message","cost_usd":2.0}\n'
    )
    (read,) = parse_trace(b'{"index": 0, "actor": "agent", "kind": "message", "cost_usd": 2}', "t")
    assert read == step
