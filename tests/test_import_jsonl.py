"""Importing plain traces: one run per .jsonl file, one step per line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.records import RunMetadata, RunSummary, parse_record, parse_shell_audit
from agentledger.records.trace import parse_trace
from exact_output import normalised


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
    assert normalised(out, tmp_path) == "Imported 1 run into /home/ops/work/ledger.\n"
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
    ("line", "problem", "message"),
    [
        (
            {"actor": "agent", "kind": "dance"},
            "line 2, field 'kind'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'kind': Input should be "
                "'message', 'reasoning', 'tool_call', 'tool_result', 'command', "
                "'command_output', 'file_read', 'file_write', 'browse', 'code', 'finish', "
                "'error' or 'other'\n"
            ),
        ),
        (
            {"actor": "agent", "kind": "message", "index": 7},
            "line 2, field 'index'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'index': step index 7 "
                "where 1 was expected (steps count from 0, in order, without gaps)\n"
            ),
        ),
        (
            {"kind": "message"},
            "line 2, field 'actor'",
            "Error: /home/ops/work/bad.jsonl, line 2, field 'actor': Field required\n",
        ),
        (
            [1, 2],
            "line 2: expected a JSON object",
            "Error: /home/ops/work/bad.jsonl, line 2: expected a JSON object, found list\n",
        ),
        (
            {"actor": "agent", "kind": "command"},
            "line 2, field 'command'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'command': a command step "
                "needs its command (the command line)\n"
            ),
        ),
        (
            {"actor": "agent", "kind": "command", "command": "ls", "gate": {"decision": "maybe"}},
            "line 2, field 'gate.decision': 'maybe' is no decision",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'gate.decision': 'maybe' "
                "is no decision: use one of allowed, approved, denied, not-executed\n"
            ),
        ),
        (
            {"actor": "agent", "kind": "command", "command": "ls", "gate": {"decision": "DENIED"}},
            "field 'gate.decision'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'gate.decision': 'DENIED' "
                "is no decision: use one of allowed, approved, denied, not-executed\n"
            ),
        ),
        (
            {"run": {"scenario": "s", "model": "m2"}},
            "line 2, field 'run': a second run header",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'run': a second run "
                "header: the run's header is the first line, before the steps\n"
            ),
        ),
    ],
)
def test_bad_lines_write_nothing(tmp_path: Path, line: Any, problem: str, message: str) -> None:
    path = _write(tmp_path / "bad.jsonl", [STEPS[0], line])
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 2 and normalised(err, tmp_path) == message
    assert not root.exists()


def test_an_empty_trace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    code, _, err = run("import", "--ledger", str(tmp_path / "l"), str(path), "--model", "m")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/empty.jsonl: no steps: a trace needs one JSON object per step\n"
    )


def test_unnamed_formats_cannot_mix(tmp_path: Path) -> None:
    one = _write(tmp_path / "a.jsonl", STEPS)
    other = tmp_path / "traj_b.json"
    other.write_text("[]")
    code, _, err = run("import", "--ledger", str(tmp_path / "l"), str(one), str(other))
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: the paths hold different formats (/home/ops/work/a.jsonl looks "
        "like jsonl; /home/ops/work/traj_b.json looks like openhands); import them "
        "one by one\n"
    )


def _refused(tmp_path: Path, lines: list[Any], problem: str, *options: str) -> str:
    """Import `lines` as bad.jsonl: exit 2, the file and `problem` named, no ledger made."""
    path = _write(tmp_path / "bad.jsonl", lines)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m", *options)
    assert code == 2, err
    assert "bad.jsonl" in err and problem in err, err
    assert "Traceback" not in err
    assert not root.exists()
    return err


_SURROGATE = "a\ud800b"  # json.dumps writes it as the escape \ud800, which JSON allows


@pytest.mark.parametrize(
    ("lines", "problem", "message"),
    [
        (
            [{"actor": "user", "kind": "message", "content": _SURROGATE}],
            "line 1, field 'content'",
            (
                "Error: /home/ops/work/bad.jsonl, line 1, field 'content': a text holds a "
                "lone surrogate (an escape such as \\ud800 without its pair), which cannot "
                "be stored as UTF-8\n"
            ),
        ),
        (
            [STEPS[0], {"actor": "agent", "kind": "command", "command": _SURROGATE}],
            "line 2, field 'command'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'command': a text holds a "
                "lone surrogate (an escape such as \\ud800 without its pair), which cannot "
                "be stored as UTF-8\n"
            ),
        ),
        (
            [STEPS[0], {"actor": "agent", "kind": "tool_call", "arguments": {"p": [_SURROGATE]}}],
            "line 2, field 'arguments.p.0'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'arguments.p.0': a text "
                "holds a lone surrogate (an escape such as \\ud800 without its pair), which "
                "cannot be stored as UTF-8\n"
            ),
        ),
        (
            [STEPS[0], {"actor": "agent", "kind": "tool_call", "arguments": {_SURROGATE: 1}}],
            "line 2, field 'arguments.a\\ud800b'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'arguments.a\\ud800b': a "
                "text holds a lone surrogate (an escape such as \\ud800 without its pair), "
                "which cannot be stored as UTF-8\n"
            ),
        ),
        (
            [STEPS[0], {"actor": "agent", "kind": "message", _SURROGATE: 1}],
            "line 2, field 'a\\ud800b'",
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'a\\ud800b': a text holds a "
                "lone surrogate (an escape such as \\ud800 without its pair), which cannot "
                "be stored as UTF-8\n"
            ),
        ),
        (
            [{"run": {_SURROGATE: "x"}}, STEPS[0]],
            "line 1, field 'run.a\\ud800b'",
            (
                "Error: /home/ops/work/bad.jsonl, line 1, field 'run.a\\ud800b': a text "
                "holds a lone surrogate (an escape such as \\ud800 without its pair), which "
                "cannot be stored as UTF-8\n"
            ),
        ),
        (
            [{"run": {"system_prompt": _SURROGATE}}, STEPS[0]],
            "line 1, field 'run.system_prompt'",
            (
                "Error: /home/ops/work/bad.jsonl, line 1, field 'run.system_prompt': a "
                "text holds a lone surrogate (an escape such as \\ud800 without its pair), "
                "which cannot be stored as UTF-8\n"
            ),
        ),
        (
            [{"run": {"report": _SURROGATE}}, STEPS[0]],
            "line 1, field 'run.report'",
            (
                "Error: /home/ops/work/bad.jsonl, line 1, field 'run.report': a text holds "
                "a lone surrogate (an escape such as \\ud800 without its pair), which "
                "cannot be stored as UTF-8\n"
            ),
        ),
    ],
)
def test_a_lone_surrogate_is_refused_naming_line_and_field(
    tmp_path: Path, lines: list[Any], problem: str, message: str
) -> None:
    err = _refused(tmp_path, lines, problem)
    assert normalised(err, tmp_path) == message


@pytest.mark.parametrize(
    ("step", "problem"),
    [
        ({"actor": "agent", "kind": "message", "cost_usd": "0.1"}, "field 'cost_usd'"),
        ({"actor": "agent", "kind": "message", "cost_usd": True}, "field 'cost_usd'"),
        ({"actor": "tool", "kind": "command_output", "exit_code": True}, "field 'exit_code'"),
        ({"actor": "tool", "kind": "command_output", "exit_code": "0"}, "field 'exit_code'"),
        ({"actor": "user", "kind": "message", "index": True}, "field 'index'"),
        ({"actor": "agent", "kind": "message", "tokens_in": 1.0}, "field 'tokens_in'"),
        ({"actor": "agent", "kind": "message", "tokens_out": "5"}, "field 'tokens_out'"),
        ({"actor": "tool", "kind": "tool_result", "cause": False}, "field 'cause'"),
        ({"actor": "user", "kind": "message", "time": 1773310500}, "field 'time'"),
        (
            {"actor": "user", "kind": "message", "source": {"file": "f", "line": True}},
            "field 'source.line'",
        ),
        (
            {"actor": "agent", "kind": "command", "command": "ls", "command_class": "safe"},
            "field 'command_class'",
        ),
        (
            {"actor": "agent", "kind": "command", "command": "ls", "command_class": 1},
            "field 'command_class'",
        ),
        (
            {"actor": "agent", "kind": "message", "command_class": "read-only"},
            "field 'command_class'",
        ),
    ],
)
def test_values_of_the_wrong_type_are_refused(
    tmp_path: Path, step: dict[str, Any], problem: str
) -> None:
    _refused(tmp_path, [STEPS[0], step], f"line 2, {problem}")


def _content(text: str, **changes: Any) -> dict[str, Any]:
    data = text.encode()
    whole = {
        "text": text,
        "bytes": len(data),
        "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
        "truncated": False,
    }
    return {**whole, **changes}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (_content("hi", bytes=999), "field 'content.bytes'"),
        (_content("hi", sha256="sha256:" + "0" * 64), "field 'content.sha256'"),
        (_content("hi", truncated=True), "field 'content.bytes'"),
        (_content("hi", truncated=1), "field 'content.truncated'"),
        (_content("hi", bytes=True), "field 'content.bytes'"),
    ],
)
def test_a_content_object_must_agree_with_its_text(
    tmp_path: Path, content: dict[str, Any], problem: str
) -> None:
    _refused(tmp_path, [{"actor": "agent", "kind": "message", "content": content}], problem)


def test_a_content_object_that_agrees_is_kept_as_given(tmp_path: Path) -> None:
    whole = _content("hi")
    cut = _content("hello", bytes=4000, sha256="sha256:" + "1" * 64, truncated=True)
    path = _write(
        tmp_path / "t.jsonl",
        [
            {"actor": "agent", "kind": "message", "content": whole},
            {"actor": "agent", "kind": "message", "content": cut},
        ],
    )
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 0, err
    steps = parse_trace((_only_run(root) / "trace.jsonl").read_bytes(), "t")
    assert steps[0].content is not None and steps[0].content.model_dump() == whole
    assert steps[1].content is not None and steps[1].content.model_dump() == cut


@pytest.mark.parametrize(
    ("times", "line", "message"),
    [
        (
            ["2026-03-12T10:15:00", "2026-03-12T10:15:10+00:00"],
            2,
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'time': this time has a "
                "UTC offset, line 1's has none: give every step's time with its offset, or "
                "none (between the two no duration is known)\n"
            ),
        ),
        (
            ["2026-03-12T10:15:00+05:30", "2026-03-12T10:15:10"],
            2,
            (
                "Error: /home/ops/work/bad.jsonl, line 2, field 'time': this time has no "
                "UTC offset, line 1's has one: give every step's time with its offset, or "
                "none (between the two no duration is known)\n"
            ),
        ),
        (
            ["2026-03-12T10:15:00Z", "2026-03-12T10:15:05Z", "2026-03-12T10:15:10"],
            3,
            (
                "Error: /home/ops/work/bad.jsonl, line 3, field 'time': this time has no "
                "UTC offset, line 1's has one: give every step's time with its offset, or "
                "none (between the two no duration is known)\n"
            ),
        ),
    ],
)
def test_times_with_and_without_a_zone_cannot_mix(
    tmp_path: Path, times: list[str], line: int, message: str
) -> None:
    steps = [{"actor": "agent", "kind": "message", "time": t} for t in times]
    err = _refused(tmp_path, steps, f"line {line}, field 'time'")
    assert normalised(err, tmp_path) == message  # the step it disagrees with


def test_times_in_different_zones_give_a_true_duration(tmp_path: Path) -> None:
    times = ["2026-03-12T10:15:00+05:30", "2026-03-12T04:45:10Z"]
    path = _write(
        tmp_path / "t.jsonl", [{"actor": "agent", "kind": "message", "time": t} for t in times]
    )
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 0, err
    summary = parse_record(RunSummary, (_only_run(root) / "run_summary.json").read_bytes(), "s")
    assert summary.duration_s == 10


def test_a_command_class_the_classifier_disputes_is_noted_and_replaced(tmp_path: Path) -> None:
    steps = [
        {"actor": "agent", "kind": "command", "command": "rm -rf /", "command_class": "read-only"},
        {"actor": "agent", "kind": "command", "command": "ls", "command_class": "read-only"},
    ]
    path = _write(tmp_path / "t.jsonl", steps)
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 0, err
    run_dir = _only_run(root)
    stored = parse_trace((run_dir / "trace.jsonl").read_bytes(), "t")
    assert [step.command_class for step in stored] == ["destructive", "read-only"]
    events = parse_shell_audit((run_dir / "shell_audit.jsonl").read_bytes(), "s")
    assert [event.classification for event in events] == ["destructive", "read-only"]
    metadata = parse_record(RunMetadata, (run_dir / "metadata.json").read_bytes(), "m")
    assert metadata.source is not None
    assert metadata.source["command_class_in_trace"] == {
        "0": {"trace": "read-only", "stored": "destructive"}
    }
    summary = parse_record(RunSummary, (run_dir / "run_summary.json").read_bytes(), "s")
    (note,) = [note for note in summary.notes if "command_class" in note]
    assert "step 0" in note and "'read-only'" in note and "'destructive'" in note


def test_model_option_names_the_run_and_the_header_model_is_kept(tmp_path: Path) -> None:
    header = {"run": {"model": "claude-haiku-4-5"}}
    path = _write(tmp_path / "use_case_a.jsonl", [header, *STEPS])
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(path), "--model", "m")
    assert code == 0, err
    metadata = parse_record(RunMetadata, (_only_run(root) / "metadata.json").read_bytes(), "m")
    assert metadata.model == "m"
    assert metadata.source is not None
    assert metadata.source["model_in_trace"] == "claude-haiku-4-5"
    assert metadata.source["fields"]["model"] == "option"
