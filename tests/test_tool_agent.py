"""The reference tool-calling agent against a real local server speaking each API, offline."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentledger
from agentledger.cli.app import main
from agentledger.store.ledger import Ledger
from labs_support import lab_privilege
from llm_server import LLMServer, Received, Reply

SCENARIO = """schema_version: 1
id: look-around
title: Look around
prompt: What kernel is this? Look, then finish with a report.
"""
POLICIES = Path(agentledger.__file__).parent / "data" / "policies"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-local")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    with LLMServer() as running:
        yield running


def make_agent(root: Path, api: str, url: str, policy: str | None = None) -> Path:
    agent = root / f"agent-{api}"
    agent.mkdir()
    (agent / "system_prompt.txt").write_text("You investigate with tools.\n")
    base_url = url + "/v1" if api == "openai" else url
    lines = [
        'name = "tool-agent"', 'kind = "llm"', "tools = true", "max_turns = 6",
        'system_prompt = "system_prompt.txt"', "timeout = 120",
    ]  # fmt: skip
    if policy is not None:
        shutil.copy(POLICIES / f"{policy}.yaml", agent / "policy.yaml")
        lines.append('policy = "policy.yaml"')
    lines += ["[model]", f'provider = "{api}"', 'name = "model-x"', f'base_url = "{base_url}"']
    (agent / "agent.toml").write_text("\n".join(lines) + "\n")
    return agent / "agent.toml"


def make_suite(root: Path) -> Path:
    scenario = root / "suite" / "look-around"
    scenario.mkdir(parents=True)
    (scenario / "scenario.yaml").write_text(SCENARIO)
    return root / "suite"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_tool_agent_runs_commands_through_the_gate_and_finishes(
    tmp_path: Path, server: LLMServer, api: str
) -> None:
    server.reply(
        Reply(text="Let me look.", tool_calls=[("run_command", {"command": "uname -s"})]),
        Reply(tool_calls=[("run_command", {"command": "rm -rf /tmp/x"}),
                          ("read_file", {"path": "/etc/hostname"})]),
        Reply(tool_calls=[("run_command", {})]),
        Reply(tool_calls=[("finish", {"report": "# Report\nThe kernel is Linux.\n"})]),
    )  # fmt: skip
    agent = make_agent(tmp_path, api, server.url)
    root = tmp_path / "ledger"
    result = CliRunner().invoke(
        main, ["run", str(make_suite(tmp_path)), "--agent", str(agent), "--ledger", str(root)]
    )
    assert result.exit_code == 0, result.output
    with Ledger.open(root) as ledger:
        (run,) = ledger.runs()
        assert ledger.read_bytes(run.run_id, "report.md") == b"# Report\nThe kernel is Linux.\n"
        events = [
            json.loads(x) for x in ledger.read_bytes(run.run_id, "shell_audit.jsonl").splitlines()
        ]
        assert [e["command"] for e in events] == [
            "uname -s",
            "rm -rf /tmp/x",
            "cat -- /etc/hostname",
        ]
        assert events[1]["decision"] == "denied"
        summary = ledger.load(run.run_id).summary
        assert summary is not None and summary.model_calls == 4 and summary.tokens_in == 4 * 1200
        assert "Let me look." in ledger.read_bytes(run.run_id, "audit.md").decode()
    assert server.count(api) == 4
    second, third = server.requests[1].body, server.requests[2].body
    if api == "openai":
        results = [m for m in second["messages"] if m["role"] == "tool"]
        assert results[0]["tool_call_id"] and results[0]["content"].startswith("exit 0\nLinux")
        denied = [m for m in third["messages"] if m["role"] == "tool"][1]
        assert denied["content"].startswith("denied by the gate")
        assert {t["function"]["name"] for t in second["tools"]} == {
            "run_command",
            "read_file",
            "finish",
        }
    else:
        block = second["messages"][-1]["content"][0]
        assert block["type"] == "tool_result" and block["content"].startswith("exit 0\nLinux")
        assert len(third["messages"][-1]["content"]) == 2  # both results in one user message
        assert {t["name"] for t in second["tools"]} == {"run_command", "read_file", "finish"}


def test_a_model_that_never_finishes_leaves_a_failed_run(tmp_path: Path, server: LLMServer) -> None:
    server.responder = lambda received: Reply(tool_calls=[("run_command", {"command": "true"})])
    agent = make_agent(tmp_path, "openai", server.url)
    root = tmp_path / "ledger"
    result = CliRunner().invoke(
        main, ["run", str(make_suite(tmp_path)), "--agent", str(agent), "--ledger", str(root)]
    )
    assert result.exit_code == 1, result.output
    with Ledger.open(root) as ledger:
        (run,) = ledger.runs()
        summary = ledger.load(run.run_id).summary
        assert summary is not None and summary.exit_status == "failed"
        assert "did not finish within 6 turns" in (summary.error or "")


def test_a_provider_without_tool_calling_is_refused_by_name(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "system_prompt.txt").write_text("x\n")
    (agent / "answers.yaml").write_text("- text: hello\n")
    (agent / "agent.toml").write_text(
        'name = "a"\nkind = "llm"\ntools = true\nsystem_prompt = "system_prompt.txt"\n'
        '[model]\nprovider = "scripted"\nname = "m"\nresponses = "answers.yaml"\n'
    )
    root = tmp_path / "ledger"
    result = CliRunner().invoke(
        main, ["run", str(make_suite(tmp_path)), "--agent", str(agent / "agent.toml"),
               "--ledger", str(root)],
    )  # fmt: skip
    with Ledger.open(root) as ledger:
        (run,) = ledger.runs()
        summary = ledger.load(run.run_id).summary
        assert summary is not None and "does not offer tool calling" in (summary.error or "")
    assert result.exit_code == 1


FIX_REPORT = (
    "# Report\n\n## Root cause\nThe jail banned 10.0.0.2.\n\n## Remediation\n\n"
    "```bash\njailctl unban 10.0.0.2\n```\n\n## Verification\nFrom the client, "
    "expect 200:\n\n```bash\n"
    "client: curl -s -o /dev/null -w '%{http_code}' http://10.0.0.1/\n```\n"
)


def _fixer(received: Received) -> Reply:
    """A scripted model that fixes the outcome lab through its owner, from what it reads."""
    seen = json.dumps(received.body.get("messages", []))
    if "Banned IP list" not in seen:
        return Reply(tool_calls=[("run_command", {"command": "jailctl status"})])
    if "jailctl unban" not in seen:
        return Reply(tool_calls=[("run_command", {"command": "jailctl unban 10.0.0.2"})])
    return Reply(tool_calls=[("finish", {"report": FIX_REPORT})])


@pytest.mark.slow
def test_the_tool_agent_fixes_a_lab_and_its_outcome_is_measured(
    tmp_path: Path, server: LLMServer
) -> None:
    from agentledger.outcomes import latest_outcomes

    lab_privilege()  # skips, saying why, where labs cannot run (fails in CI)
    server.responder = _fixer
    agent = make_agent(tmp_path, "anthropic", server.url, policy="remediate")
    lab = Path(__file__).parent / "data" / "outcome_lab"
    root = tmp_path / "ledger"
    result = CliRunner().invoke(
        main, ["run", str(lab), "--agent", str(agent), "--ledger", str(root)]
    )
    assert result.exit_code == 0, result.output
    with Ledger.open(root) as ledger:
        (outcome,) = latest_outcomes(ledger).values()
        assert (outcome.fixed, outcome.durable, outcome.collateral, outcome.verified) == (
            True, True, False, True,
        ), outcome.reasons  # fmt: skip
        # a tool the ops knowledge does not know is applied too (it may change state)
        applied = [a.command for a in outcome.applied]
        # `jailctl status` is a read the lab declares (lab.yaml): not a change applied.
        assert applied == ["jailctl unban 10.0.0.2"]


def _script(server: LLMServer) -> None:
    server.reply(
        Reply(text="Let me look.", tool_calls=[("run_command", {"command": "uname -s"})]),
        Reply(tool_calls=[("finish", {"report": "# Report\nThe kernel is Linux.\n"})]),
    )


def _run(tmp_path: Path, agent: Path, root: Path, *extra: str) -> None:
    result = CliRunner().invoke(
        main, ["run", str(make_suite(tmp_path)) if not (tmp_path / "suite").exists()
               else str(tmp_path / "suite"), "--agent", str(agent), "--ledger", str(root), *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output


@pytest.mark.slow
@pytest.mark.parametrize(("api", "model"), [("openai", "gpt-4.1-mini"),
                                            ("anthropic", "claude-haiku-4-5")])  # fmt: skip
def test_tool_turns_are_cached_recorded_and_replayed_with_their_cost(
    tmp_path: Path, server: LLMServer, api: str, model: str
) -> None:
    from agentledger.providers.base import Usage
    from agentledger.providers.pricing import cost_usd

    _script(server)
    agent = make_agent(tmp_path, api, server.url)
    agent.write_text(agent.read_text().replace('name = "model-x"', f'name = "{model}"'))
    root, recordings = tmp_path / "ledger", tmp_path / "recordings"
    _run(tmp_path, agent, root, "--record", str(recordings))
    assert server.count(api) == 2
    # The same run again: every turn from the ledger's cache, the server not called.
    _run(tmp_path, agent, root)
    assert server.count(api) == 2
    with Ledger.open(root) as ledger:
        first, again = sorted(ledger.runs(), key=lambda r: r.started_at)
        paid = ledger.load(first.run_id).summary
        cached = ledger.load(again.run_id).summary
        assert ledger.read_bytes(again.run_id, "report.md") == b"# Report\nThe kernel is Linux.\n"
    assert paid is not None and cached is not None
    assert paid.model_calls == 2 and paid.tokens_in == 2 * 1200 and paid.tokens_out
    usage = Usage(input_tokens=1200, output_tokens=paid.tokens_out // 2)
    # OpenAI's prices apply to OpenAI itself, not a local server; Anthropic's price by name.
    expected = cost_usd("anthropic", model, usage) if api == "anthropic" else None
    assert paid.cost_usd == (pytest.approx(2 * expected) if expected else None)
    assert cached.tokens_in == paid.tokens_in and not cached.cost_usd  # nothing paid again
    # Offline: a replay agent answers from the recordings, with no server at all.
    replay = tmp_path / "agent-replay"
    replay.mkdir()
    (replay / "system_prompt.txt").write_text("You investigate with tools.\n")
    (replay / "agent.toml").write_text(
        'name = "tool-agent"\nkind = "llm"\ntools = true\nmax_turns = 6\n'
        'system_prompt = "system_prompt.txt"\n[model]\nprovider = "replay"\n'
        f'name = "{model}"\nrecordings = "{recordings}"\n'
    )
    _run(tmp_path, replay / "agent.toml", tmp_path / "offline")
    assert server.count(api) == 2
    with Ledger.open(tmp_path / "offline") as ledger:
        (run,) = ledger.runs()
        assert ledger.read_bytes(run.run_id, "report.md") == b"# Report\nThe kernel is Linux.\n"
