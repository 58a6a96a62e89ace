"""A model server that hangs cannot hold a run or a judge past its time or past Ctrl-C.

The server is real (tests/llm_server.py, over HTTP on loopback) and answers after a minute; the
agents and the judge reach it through the OpenAI SDK. An `llm` agent with a 2 s timeout ends as
`timeout` within seconds, Ctrl-C stops `run` and an LLM `judge` within a second or two, and the
run is sealed with what it had.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentledger.store import Ledger, RunFilter
from llm_server import LLMServer, Reply

HANG_S = 60.0


def suite(root: Path) -> Path:
    scenario = root / "suite" / "alpha"
    scenario.mkdir(parents=True)
    (scenario / "scenario.yaml").write_text("id: alpha\n")
    (scenario / "PROMPT.txt").write_text("SSH is refused.\n")
    return root / "suite"


def llm_agent(root: Path, url: str, timeout: float) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "system_prompt.txt").write_text("Investigate, then report.\n")
    (root / "agent.toml").write_text(
        'name = "one-shot"\nkind = "llm"\nsystem_prompt = "system_prompt.txt"\n'
        f"timeout = {timeout}\n"
        f'[model]\nname = "model-a"\nprovider = "openai"\nbase_url = "{url}/v1"\n'
    )
    return root / "agent.toml"


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "OPENAI_BASE_URL")}
    env["OPENAI_API_KEY"] = "sk-local"
    return env


def run_suite(tmp_path: Path, agent: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`agentledger run` of the one-scenario suite with `agent`, into tmp_path/l."""
    return subprocess.run(
        [sys.executable, "-m", "agentledger", "run", str(suite(tmp_path)), "--agent", str(agent),
         "--ledger", str(tmp_path / "l"), *extra],
        capture_output=True, text=True, env=environment(), timeout=HANG_S,
    )  # fmt: skip


def import_samples(ledger: Path) -> None:
    from agentledger.importers import sample_runs_dir

    subprocess.run(
        [sys.executable, "-m", "agentledger", "import", str(sample_runs_dir()), "--ledger",
         str(ledger)],
        check=True, capture_output=True,
    )  # fmt: skip


def test_a_run_timeout_bounds_a_hanging_model_call(tmp_path: Path) -> None:
    with LLMServer() as server:
        server.reply(*[Reply(delay=HANG_S) for _ in range(5)])
        agent = llm_agent(tmp_path / "agent", server.url, timeout=2)
        started = time.monotonic()
        done = run_suite(tmp_path, agent)
        took = time.monotonic() - started
    assert took < HANG_S / 2, f"the run waited for the model: {took:.1f} s"
    assert done.returncode == 1, done.stdout + done.stderr
    with Ledger.open(tmp_path / "l") as ledger:
        (run,) = ledger.runs(RunFilter())
        summary = ledger.load(run.run_id).summary
        assert summary is not None and summary.exit_status == "timeout"
        assert summary.duration_s is not None and summary.duration_s < 10


@pytest.mark.slow
def test_ctrl_c_stops_a_run_waiting_on_a_hanging_model(tmp_path: Path) -> None:
    with LLMServer() as server:
        server.reply(*[Reply(delay=HANG_S) for _ in range(5)])
        agent = llm_agent(tmp_path / "agent", server.url, timeout=600)
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentledger", "run", str(suite(tmp_path)), "--agent",
             str(agent), "--ledger", str(tmp_path / "l")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while server.count("openai") == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.count("openai") == 1, "the agent never called the model"
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=HANG_S)
        stopped = time.monotonic() - sent
    assert stopped < 5, f"Ctrl-C took {stopped:.1f} s to stop the run"
    assert proc.returncode == 130, stdout + stderr
    with Ledger.open(tmp_path / "l") as ledger:
        (run,) = ledger.runs(RunFilter())
        summary = ledger.load(run.run_id).summary
        assert summary is not None and summary.exit_status == "interrupted"


@pytest.mark.slow
def test_ctrl_c_stops_an_llm_judge_waiting_on_a_hanging_model(tmp_path: Path) -> None:
    ledger = tmp_path / "l"
    import_samples(ledger)
    with LLMServer() as server:
        server.reply(*[Reply(delay=HANG_S) for _ in range(40)])
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentledger", "judge", "--judge", "llm:openai/gpt-4o",
             "--base-url", f"{server.url}/v1", "--ledger", str(ledger), "--concurrency", "4"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(),
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while server.count("openai") < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.count("openai") >= 1, "the judge never called the model"
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=HANG_S)
        stopped = time.monotonic() - sent
    assert stopped < 5, f"Ctrl-C took {stopped:.1f} s to stop the judge"
    assert proc.returncode == 130, stdout + stderr
    assert "Interrupted: 0 scores were written" in stderr, stderr
    assert "Traceback" not in stderr


def test_request_timeout_and_retries_from_the_agent_file(tmp_path: Path) -> None:
    with LLMServer() as server:
        server.reply(*[Reply(delay=HANG_S) for _ in range(5)])
        agent = llm_agent(tmp_path / "agent", server.url, timeout=600)
        text = agent.read_text().replace("[model]\n", "[model]\nrequest_timeout = 1\nretries = 1\n")
        agent.write_text(text)
        started = time.monotonic()
        done = run_suite(tmp_path, agent)
        took = time.monotonic() - started
        asked = server.count("openai")
    assert done.returncode == 1, done.stdout + done.stderr
    assert asked == 2, f"one request and one retry, not {asked}"
    assert took < HANG_S / 2
    with Ledger.open(tmp_path / "l") as ledger:
        (run,) = ledger.runs(RunFilter())
        summary = ledger.load(run.run_id).summary
        assert summary is not None and summary.exit_status == "failed"


def test_the_command_line_overrides_the_agent_file(tmp_path: Path) -> None:
    with LLMServer() as server:
        server.reply(*[Reply(delay=HANG_S) for _ in range(5)])
        agent = llm_agent(tmp_path / "agent", server.url, timeout=600)
        agent.write_text(agent.read_text().replace("[model]\n", "[model]\nretries = 3\n"))
        done = run_suite(tmp_path, agent, "--request-timeout", "0.5", "--retries", "0")
        asked = server.count("openai")
    assert done.returncode == 1, done.stdout + done.stderr
    assert asked == 1


def test_a_judge_takes_request_timeout_and_retries(tmp_path: Path) -> None:
    ledger = tmp_path / "l"
    import_samples(ledger)
    with LLMServer() as server:
        server.reply(*[Reply(delay=HANG_S) for _ in range(5)])
        done = subprocess.run(
            [sys.executable, "-m", "agentledger", "judge", "--judge", "llm:openai/gpt-4o",
             "--base-url", f"{server.url}/v1", "--ledger", str(ledger), "--scenario",
             "use_case_a", "--model", "claude-haiku-4-5", "--request-timeout", "0.5",
             "--retries", "1"],
            capture_output=True, text=True, env=environment(), timeout=HANG_S,
        )  # fmt: skip
        asked = server.count("openai")
    assert asked == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("line", "field"),
    [("request_timeout = -1", "request_timeout"), ("retries = 99", "retries"),
     ("request_timeout = nan", "request_timeout")],
)  # fmt: skip
def test_bad_model_call_settings_are_refused(tmp_path: Path, line: str, field: str) -> None:
    agent = llm_agent(tmp_path / "agent", "http://127.0.0.1:9", timeout=600)
    agent.write_text(agent.read_text().replace("[model]\n", f"[model]\n{line}\n"))
    done = run_suite(tmp_path, agent)
    assert done.returncode == 2, done.stdout + done.stderr
    assert field in done.stderr and "agent.toml" in done.stderr
    assert not (tmp_path / "l").exists()
