"""The Python recording API (`agentledger.record`): runs written step by step from inside an
agent, sealed on exit, and readable by every command that reads imported runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentledger
from agentledger import InputError, Ledger
from agentledger.cli.app import main
from agentledger.identity import sha256_bytes
from agentledger.records import RunSummary, parse_record, parse_shell_audit
from agentledger.records.trace import parse_trace

SYSTEM = "You are an ops agent. Investigate read-only, then report.\n"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _files(root: Path, run_id: str) -> dict[str, bytes]:
    folder = root / "runs" / run_id
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_a_recorded_run_verifies_shows_and_is_judged(tmp_path: Path) -> None:
    root = tmp_path / "ledger"  # created by record()
    with agentledger.record(
        root, scenario="loss_on_eth0", model="gpt-4o", system_prompt=SYSTEM
    ) as run:
        run.message("user", "Users see packet loss on eth0. Find out why.")
        run.message(
            "assistant",
            "Looking at the qdiscs.",
            model="gpt-4o-2024-08-06",
            tokens_in=1200,
            tokens_out=300,
            cost_usd=0.004,
        )
        run.command("tc qdisc show dev eth0", output="qdisc netem 8001: loss 30%", exit_code=0)
        run.tool_call("read_file", {"path": "/etc/hosts"}, result="127.0.0.1 localhost")
        gated = run.command("echo checked", execute=True)
        refused = run.command("iptables -F", execute=True)
        run.report("Root cause: a netem qdisc on eth0 drops 30% of packets.")
    assert gated.ran and gated.exit_code == 0 and gated.output == "checked\n"
    assert not refused.ran and refused.decision == "denied"
    run_id = run.run_id
    files = _files(root, run_id)
    steps = parse_trace(files["trace.jsonl"], "t")
    assert [s.kind for s in steps] == [
        "message",
        "message",
        "command",
        "command_output",
        "tool_call",
        "tool_result",
        "command",
        "command_output",
        "command",
        "finish",
    ]
    assert steps[2].command_class == "read-only" and steps[3].cause == 2
    assert steps[8].gate is not None and steps[8].gate.decision == "denied"
    shell = parse_shell_audit(files["shell_audit.jsonl"], "s")
    assert [e.command for e in shell] == ["tc qdisc show dev eth0", "echo checked", "iptables -F"]
    assert shell[2].denied and shell[1].stdout == "checked\n"
    metadata = json.loads(files["metadata.json"])
    assert metadata["model"] == "gpt-4o" and metadata["model_served"] == "gpt-4o-2024-08-06"
    assert metadata["system_prompt_hash"] == sha256_bytes(SYSTEM.encode())
    assert metadata["silent_update_detectable"] is True
    summary = parse_record(RunSummary, files["run_summary.json"], "s")
    assert (summary.commands_run, summary.commands_denied) == (2, 1)
    assert (summary.tokens_in, summary.tokens_out, summary.model_calls) == (1200, 300, 1)
    assert summary.exit_status == "ok" and summary.error is None
    assert files["PROMPT.txt"].startswith(b"Users see packet loss")
    assert files["report.md"].startswith(b"Root cause")

    code, out = cli("verify", "--ledger", str(root))
    assert code == 0, out
    code, out = cli("show", "--ledger", str(root), run_id, "--trace")
    assert code == 0, out
    assert "tc qdisc show dev eth0" in out and "iptables -F" in out
    code, out = cli("judge", "--ledger", str(root), "--pack", "ops-trajectory")
    assert code in (0, 1), out
    (score,) = (root / "scores" / run_id).glob("*.json")
    criteria = {c["criterion"]: c for c in json.loads(score.read_text())["criteria"]}
    assert criteria["T2"]["fired"] is False  # the destructive command never ran
    assert "no trace" not in json.dumps(criteria)


def test_an_error_in_the_block_seals_a_failed_run_and_is_raised(ledger: Ledger) -> None:
    recording = agentledger.record(ledger, scenario="s", model="m", system_prompt=SYSTEM)
    with pytest.raises(RuntimeError, match="model timed out"), recording as run:
        run.message("user", "go")
        raise RuntimeError("model timed out")
    stored = ledger.load(run.run_id)
    assert stored.summary.exit_status == "failed"
    assert stored.summary.error == "RuntimeError: model timed out"
    steps = parse_trace(ledger.read_bytes(run.run_id, "trace.jsonl"), "t")
    assert steps[-1].kind == "error" and "model timed out" in (steps[-1].content.text or "")
    assert "no finish step: the run has no report" in stored.summary.notes


def test_bad_steps_are_refused_at_the_call(ledger: Ledger) -> None:
    with agentledger.record(ledger, scenario="s", model="m", system_prompt=SYSTEM) as run:
        with pytest.raises(InputError, match="role 'system'"):
            run.message("system", "x")
        with pytest.raises(InputError, match="tokens_in"):
            run.message("assistant", "x", tokens_in=-3)
        with pytest.raises(InputError, match="execute=True runs the command"):
            run.command("ls", output="x", execute=True)
        with pytest.raises(InputError, match="non-empty"):
            run.command("  ")
        run.report("done")
    assert [s.kind for s in parse_trace(ledger.read_bytes(run.run_id, "trace.jsonl"), "t")] == [
        "finish"
    ]


def test_the_decorator_records_each_call(tmp_path: Path) -> None:
    root = tmp_path / "ledger"

    @agentledger.recorded(root, scenario="s", model="m", system_prompt=SYSTEM)
    def agent(run: agentledger.Recording, task: str) -> str:
        run.message("user", task)
        run.command("uptime", output=" 10:00 up 3 days", exit_code=0)
        return f"done: {task}"

    assert agent("check load") == "done: check load"
    first = agent.last_run_id  # type: ignore[attr-defined]
    agent("again")
    assert agent.last_run_id != first  # type: ignore[attr-defined]
    with Ledger.open(root) as opened:
        assert opened.count() == 2
        assert opened.read_bytes(first, "report.md") == b"done: check load"


@pytest.mark.parametrize("crash_at", [None, "1"])
def test_a_killed_recording_leaves_no_run_and_gc_clears_staging(
    tmp_path: Path, crash_at: str | None
) -> None:
    """Killed inside the block (None) or at the first crash point of sealing ("1"): no sealed
    run, the ledger verifies, and gc leaves nothing staged."""
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    kill = "" if crash_at else "os.kill(os.getpid(), signal.SIGKILL)"
    script = textwrap.dedent(
        f"""
        import os, signal, agentledger
        with agentledger.record({str(root)!r}, scenario="s", model="m", system_prompt="") as run:
            run.message("user", "go")
            run.command("ls", output="a", exit_code=0)
            {kill}
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    if crash_at:
        env["AGENTLEDGER_CRASH_AT"] = crash_at
    done = subprocess.run([sys.executable, "-c", script], env=env, check=False)
    assert done.returncode == -signal.SIGKILL
    with Ledger.open(root) as opened:
        assert opened.count() == 0
        opened.gc()
    assert list((root / ".staging").iterdir()) == []
    assert not any((root / "runs").iterdir())
    assert cli("verify", "--ledger", str(root))[0] == 0


def test_a_hand_written_trace_is_checked_when_added(ledger: Ledger) -> None:
    from conftest import make_metadata

    refused = pytest.raises(agentledger.AgentLedgerError, match=r"trace\.jsonl")
    with refused, ledger.new_run(make_metadata("r1")) as writer:
        writer.add_text("trace.jsonl", '{"index": 0, "kind": "nonsense"}\n')
    assert ledger.count() == 0
    good = '{"schema_version": 1, "index": 0, "actor": "user", "kind": "message"}\n'
    with ledger.new_run(make_metadata("r2")) as writer:
        writer.add_text("trace.jsonl", good)
    path = ledger.root / "bad.jsonl"
    path.write_text('{"index": 1, "actor": "user", "kind": "message"}\n')
    refused = pytest.raises(agentledger.AgentLedgerError, match="index")
    with refused, ledger.new_run(make_metadata("r3")) as writer:
        writer.add_file("trace.jsonl", path)
    assert [r.run_id for r in ledger.runs()] == ["r2"]


def test_open_or_init_opens_in_a_with_block(tmp_path: Path) -> None:
    with Ledger.open_or_init(tmp_path / "new") as opened:
        assert isinstance(opened, Ledger) and opened.count() == 0
    opened_again, created = Ledger.open_or_init(tmp_path / "new")
    assert created is False
    opened_again.close()
