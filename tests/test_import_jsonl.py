"""Importing plain traces: one run per .jsonl file, one step per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.records import RunMetadata, RunSummary, parse_record, parse_shell_audit
from agentledger.records.trace import parse_trace


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


STEPS: list[dict[str, Any]] = [
    {
        "actor": "user",
        "kind": "message",
        "content": "the mesh drops packets",
        "time": "2026-03-12T10:15:00Z",
    },
    {
        "actor": "agent",
        "kind": "reasoning",
        "content": "check qdiscs first",
        "time": "2026-03-12T10:15:01Z",
    },
    {
        "actor": "agent",
        "kind": "command",
        "tool": "shell",
        "command": "tc qdisc show dev eth0",
        "time": "2026-03-12T10:15:02Z",
        "tokens_in": 1200,
        "tokens_out": 40,
    },
    {
        "actor": "tool",
        "kind": "command_output",
        "cause": 2,
        "exit_code": 0,
        "content": "qdisc netem 8001: root loss 30%",
        "time": "2026-03-12T10:15:03Z",
    },
    {
        "actor": "agent",
        "kind": "finish",
        "content": "Root cause: netem loss 30% on eth0." * 200,
        "time": "2026-03-12T10:16:00Z",
    },
]


def _write(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _only_run(root: Path) -> Path:
    (run_dir,) = (root / "runs").iterdir()
    return run_dir


def test_a_plain_trace_imports_as_a_run(tmp_path: Path) -> None:
    path = _write(tmp_path / "in" / "use_case_m.jsonl", STEPS)
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(path), "--model", "haiku")
    assert code == 0, err
    assert "Imported 1 run" in out
    run_dir = _only_run(root)
    metadata = parse_record(RunMetadata, (run_dir / "metadata.json").read_bytes(), "m")
    assert metadata.scenario == "use_case_m" and metadata.model == "haiku"
    assert metadata.started_at is not None and metadata.started_at.tzinfo is not None
    steps = parse_trace((run_dir / "trace.jsonl").read_bytes(), "t")
    assert [s.index for s in steps] == [0, 1, 2, 3, 4]
    assert steps[2].command_class == "read-only"
    assert steps[4].content is not None and steps[4].content.truncated
    assert steps[0].source is not None and steps[0].source.line == 1
    # the whole finish text is the report, not the cut one
    assert (run_dir / "report.md").read_text() == STEPS[4]["content"]
    assert (run_dir / "PROMPT.txt").read_text() == "the mesh drops packets"
    (event,) = parse_shell_audit((run_dir / "shell_audit.jsonl").read_bytes(), "s")
    assert event.command == "tc qdisc show dev eth0" and event.stdout.startswith("qdisc netem")
    assert event.ts is not None
    summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
    assert summary.commands_run == 1 and summary.duration_s == 60
    assert (run_dir / "attachments" / "use_case_m.jsonl").read_bytes() == path.read_bytes()


def test_a_header_states_identity_and_system_prompt(tmp_path: Path) -> None:
    header = {
        "run": {
            "scenario": "use_case_f",
            "model": "gemini-2.5-flash",
            "system_prompt": "You are Ghost.",
        }
    }
    path = _write(tmp_path / "trace.jsonl", [header, *STEPS])
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), "--format", "jsonl", str(tmp_path))
    assert code == 0, err
    run_dir = _only_run(root)
    metadata = parse_record(RunMetadata, (run_dir / "metadata.json").read_bytes(), "m")
    assert metadata.scenario == "use_case_f" and metadata.model == "gemini-2.5-flash"
    assert (run_dir / "system_prompt.txt").read_text() == "You are Ghost."
    assert metadata.system_prompt_hash is not None
    del path


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ({"actor": "agent", "kind": "dance"}, "line 2, field 'kind'"),
        ({"actor": "agent", "kind": "message", "index": 7}, "line 2, field 'index'"),
        ({"kind": "message"}, "line 2, field 'actor'"),
        ([1, 2], "line 2: expected a JSON object"),
    ],
)
def test_bad_lines_write_nothing(tmp_path: Path, line: Any, problem: str) -> None:
    path = _write(tmp_path / "bad.jsonl", [STEPS[0], line])
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 2 and "bad.jsonl" in err and problem in err
    assert not root.exists()


def test_an_empty_trace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    code, _, err = run("import", "--ledger", str(tmp_path / "l"), str(path), "--model", "m")
    assert code == 2 and "no steps" in err


def test_unnamed_formats_cannot_mix(tmp_path: Path) -> None:
    one = _write(tmp_path / "a.jsonl", STEPS)
    other = tmp_path / "traj_b.json"
    other.write_text("[]")
    code, _, err = run("import", "--ledger", str(tmp_path / "l"), str(one), str(other))
    assert code == 2 and "different formats" in err
