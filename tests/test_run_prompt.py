"""The human in the loop through `agentledger run`, on a real terminal.

A python agent asks a scripted model for a plan and runs its commands through the gated
shell; its policy says a mutating command needs approval. `agentledger run` runs in a
pseudo-terminal (pexpect), the question appears there, and the answer (yes, no, Ctrl-C, end
of input, none in time) decides; the sealed run's shell log records who approved or what
refused, and the run's summary how it ended.
"""

from __future__ import annotations

import json
import os
import pwd
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentledger.store import Ledger, RunFilter

pexpect = pytest.importorskip("pexpect")

PROMPT = r"To run it type ([a-z]{7}) \(anything else refuses\): "
SCRIPT = Path(sys.executable).parent / "agentledger"
AGENT = """
    import json


    def act(context):
        plan = json.loads(context.complete(context.prompt).text)
        done = []
        for command in plan["commands"]:
            result = context.shell(command)
            done.append(f"{command}: {'ran' if result.ran else 'refused'}")
        return "\\n".join(done)
"""


def by_me(who: object) -> bool:
    """The approver logged is this user, never a bare `root` (see test_gate_prompt.py)."""
    assert isinstance(who, str)
    if who == me() != "root":
        return True
    return who.startswith(f"{me()} (no login or sudo identity, at /dev/pts/")


def me() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A suite of one scenario and a planner agent whose plan is `touch <tmp>/F`."""
    scenario = tmp_path / "suite" / "marker"
    scenario.mkdir(parents=True)
    (scenario / "scenario.yaml").write_text(
        "id: marker\nfault_class: demo\nlayer: os\nprompt: Create the marker file.\n"
    )
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "planner_prompt.py").write_text(textwrap.dedent(AGENT))
    plan = json.dumps({"commands": [f"touch {tmp_path / 'F'}"]})
    (agent / "answers.yaml").write_text(f"- text: {json.dumps(plan)}\n")
    (agent / "system_prompt.txt").write_text("You plan a fix and run it.\n")
    (agent / "agent.toml").write_text(
        'name = "planner"\nkind = "python"\nentry = "planner_prompt:act"\npython_path = ["."]\n'
        'system_prompt = "system_prompt.txt"\npolicy = "policy.yaml"\ntimeout = 60\n'
        '[model]\nprovider = "scripted"\nname = "model-a"\nresponses = "answers.yaml"\n'
    )
    policy(tmp_path, 60)
    return tmp_path


def policy(project: Path, prompt_timeout: float) -> None:
    (project / "agent" / "policy.yaml").write_text(
        f"mode: remediate\non_mutating: prompt\nsandbox: off\nprompt_timeout: {prompt_timeout}\n"
    )


def spawn(project: Path) -> Any:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    return pexpect.spawn(
        str(SCRIPT),
        ["run", "suite", "--agent", "agent/agent.toml", "--ledger", "ledger"],
        cwd=str(project),
        env=env,
        timeout=30,
        encoding="utf-8",
    )


def finish(child: Any) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    shown = child.before
    child.close()
    code = child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus
    return code, shown


def recorded(project: Path) -> tuple[dict[str, Any], Any]:
    """The one run's shell event and summary, read back from the ledger."""
    with Ledger.open(project / "ledger") as ledger:
        (run,) = [ledger.load(entry.run_id) for entry in ledger.runs(RunFilter())]
        (line,) = ledger.read_bytes(run.metadata.run_id, "shell_audit.jsonl").splitlines()
        return json.loads(line), run.summary


def asked(child: Any) -> str:
    child.expect(PROMPT)
    shown: str = child.before
    assert "the agent wants to run" in shown and "classification: mutating" in shown
    assert "on_mutating is prompt: touch is mutating" in shown
    assert "━" not in shown  # no progress bar drawn over the question
    return shown


def test_the_word_shown_runs_the_command_and_the_run_logs_who_approved(project: Path) -> None:
    child = spawn(project)
    asked(child)
    child.sendline(child.match.group(1))
    code, shown = finish(child)
    assert code == 0, shown
    assert "approved" in shown and "1 of 1 runs written" in shown
    assert (project / "F").exists()
    event, summary = recorded(project)
    assert (event["decision"], event["exit_code"]) == ("approved", 0)
    assert by_me(event["decided_by"])
    assert event["reason"] == (
        f"approved by {event['decided_by']}: on_mutating is prompt: touch is mutating"
    )
    assert (summary.commands_run, summary.commands_denied, summary.exit_status) == (1, 0, "ok")


@pytest.mark.parametrize("answer", ["n", ""])
def test_no_refuses_and_the_run_goes_on(project: Path, answer: str) -> None:
    child = spawn(project)
    asked(child)
    child.sendline(answer)
    code, shown = finish(child)
    assert code == 0, shown  # the agent was told no, and ended normally
    assert not (project / "F").exists()
    event, summary = recorded(project)
    assert (event["decision"], event["exit_code"]) == ("denied", None)
    assert by_me(event["decided_by"])
    assert event["reason"] == "refused at the prompt: on_mutating is prompt: touch is mutating"
    assert (summary.commands_run, summary.commands_denied, summary.exit_status) == (0, 1, "ok")


def test_ctrl_c_at_the_question_refuses_and_interrupts_the_run(project: Path) -> None:
    child = spawn(project)
    asked(child)
    child.sendintr()
    code, shown = finish(child)  # at once: not after the prompt's 60 s
    assert code == 130, shown
    assert "refused (interrupted)" in shown and "Interrupted" in shown
    assert not (project / "F").exists()
    event, summary = recorded(project)
    assert event["decision"] == "denied" and by_me(event["decided_by"])
    assert event["reason"] == (
        "interrupted at the prompt: on_mutating is prompt: touch is mutating"
    )
    assert summary.exit_status == "interrupted"


def test_end_of_input_refuses(project: Path) -> None:
    child = spawn(project)
    asked(child)
    child.sendeof()
    code, shown = finish(child)
    assert code == 0, shown
    assert not (project / "F").exists()
    event, summary = recorded(project)
    assert event["decision"] == "denied"
    assert event["reason"] == ("no answer (end of input): on_mutating is prompt: touch is mutating")
    assert summary.commands_denied == 1


def test_no_answer_in_time_refuses(project: Path) -> None:
    policy(project, 1)
    child = spawn(project)
    asked(child)
    child.expect("no answer within 1 s")
    code, shown = finish(child)
    assert code == 0, shown
    assert not (project / "F").exists()
    event, _ = recorded(project)
    assert event["decision"] == "denied" and by_me(event["decided_by"])
    assert event["reason"] == "no answer within 1 s: on_mutating is prompt: touch is mutating"
