"""Memory bounded by the limits: a trace of more than MAX_TRACE_STEPS events is refused while
it is read, before it is parsed whole (bench/import_memory.py measures the memory)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.importers.trace_runs import MAX_TRACE_STEPS


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_a_trajectory_of_too_many_events_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "traj_long.json"
    event = {"id": 0, "source": "agent", "action": "think", "args": {"thought": "x"}}
    # The last event is malformed: the file is refused by its count, never parsed to it.
    body = ",".join([json.dumps(event)] * (MAX_TRACE_STEPS + 1))
    path.write_text("[" + body + ", {oops]")
    code, _out, err = run("import", str(path), "--model", "m", "--ledger", str(tmp_path / "l"))
    assert code == 2 and f"more than {MAX_TRACE_STEPS:,} events" in err, err
    assert "traj_long.json" in err and not (tmp_path / "l").exists()


def test_a_history_object_is_counted_too(tmp_path: Path) -> None:
    path = tmp_path / "traj_long.json"
    event = {"id": 0, "source": "agent", "action": "think", "args": {"thought": "x"}}
    history = [event] * (MAX_TRACE_STEPS + 1)
    path.write_text(json.dumps({"metadata": {}, "history": history}))
    code, _out, err = run("import", str(path), "--model", "m", "--ledger", str(tmp_path / "l"))
    assert code == 2 and f"more than {MAX_TRACE_STEPS:,} events" in err, err


def test_a_plain_trace_of_too_many_lines_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text("{}\n" * (MAX_TRACE_STEPS + 2))
    code, _out, err = run(
        "import", str(path), "--model", "m", "--scenario", "s", "--ledger", str(tmp_path / "l")
    )
    assert code == 2 and f"more than {MAX_TRACE_STEPS:,} lines" in err, err
