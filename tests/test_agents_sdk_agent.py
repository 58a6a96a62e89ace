"""An agent agentledger did not write (the OpenAI Agents SDK's own loop, bench/agents_sdk) run as
a `command` agent: its tool goes through the gate, its answer is the report, offline against a
real local server speaking the OpenAI API."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.store.ledger import Ledger
from llm_server import LLMServer, Reply
from test_tool_agent import make_suite

pytest.importorskip("agents")
SDK_AGENT = Path(__file__).resolve().parent.parent / "bench" / "agents_sdk" / "agent.py"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    with LLMServer() as running:
        yield running


def make_sdk_agent(root: Path, url: str) -> Path:
    agent = root / "agent-sdk"
    agent.mkdir()
    (agent / "system_prompt.txt").write_text("You investigate with tools.\n")
    (agent / "agent.toml").write_text(
        f'name = "agents-sdk"\nkind = "command"\ncommand = ["{sys.executable}", "{SDK_AGENT}"]\n'
        'system_prompt = "system_prompt.txt"\ntimeout = 120\n'
        '[model]\nprovider = "openai"\nname = "model-x"\n'
        f'[env]\nAGENTLEDGER_BASE_URL = "{url}/v1"\n'
    )
    return agent / "agent.toml"


@pytest.mark.slow
def test_the_sdk_agent_runs_its_tool_through_the_gate(tmp_path: Path, server: LLMServer) -> None:
    server.reply(
        Reply(text="Let me look.", tool_calls=[("run_command", {"command": "uname -s"})]),
        Reply(tool_calls=[("run_command", {"command": "rm -rf /tmp/x"})]),
        Reply(text="# Report\nThe kernel is Linux.\n"),
    )
    root = tmp_path / "ledger"
    agent = make_sdk_agent(tmp_path, server.url)
    result = CliRunner().invoke(
        main, ["run", str(make_suite(tmp_path)), "--agent", str(agent), "--ledger", str(root)]
    )
    assert result.exit_code == 0, result.output
    with Ledger.open(root) as ledger:
        (run,) = ledger.runs()
        assert ledger.read_bytes(run.run_id, "report.md") == b"# Report\nThe kernel is Linux.\n"
        events = [
            json.loads(line)
            for line in ledger.read_bytes(run.run_id, "shell_audit.jsonl").splitlines()
        ]
        assert [(e["command"], e["decision"]) for e in events] == [
            ("uname -s", "allowed"),
            ("rm -rf /tmp/x", "denied"),
        ]
        audit = ledger.read_bytes(run.run_id, "audit.md").decode()
        assert "tool call: run_command" in audit and "exit 126" in audit
        summary = json.loads(ledger.read_bytes(run.run_id, "run_summary.json"))
        assert summary["exit_status"] == "ok" and summary["tokens_in"] == 3 * 1200
    sent = [request.body for request in server.requests]
    assert [body["model"] for body in sent] == ["model-x"] * 3
    tool_results = [m for m in sent[-1]["messages"] if m["role"] == "tool"]
    assert "Linux" in tool_results[0]["content"] and "exit 126" in tool_results[1]["content"]
