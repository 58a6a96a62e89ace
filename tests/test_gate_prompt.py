"""The human in the loop on a real terminal: `agentledger exec` in a pseudo-terminal asks,
reads the answer, and logs who gave it."""

from __future__ import annotations

import json
import os
import pwd
import sys
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

PROMPT = r"To run it type ([a-z]{7}) \(anything else refuses\): "
REMEDIATE = Path(__file__).parents[1] / "src/agentledger/data/policies/remediate.yaml"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


def spawn(tmp_path: Path, run_dir: Path, command: str, policy: Path = REMEDIATE) -> object:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    script = str(Path(sys.executable).parent / "agentledger")
    return pexpect.spawn(
        script,
        ["exec", "--run-dir", str(run_dir), "--policy", str(policy), "--", command],
        cwd=str(tmp_path),
        env=env,
        timeout=30,
        encoding="utf-8",
    )


def finish(child: object) -> int:
    child.expect(pexpect.EOF)  # type: ignore[attr-defined]
    child.close()  # type: ignore[attr-defined]
    return child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus  # type: ignore[attr-defined]


def logged(run_dir: Path) -> dict[str, object]:
    (line,) = (run_dir / "shell_audit.jsonl").read_text().splitlines()
    event: dict[str, object] = json.loads(line)
    return event


def me() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def approved_by_me(who: object) -> bool:
    """The approver named is this user, and never a bare `root` (where no login identity
    exists, as in this pseudo-terminal, the log says so and names the terminal)."""
    assert isinstance(who, str)
    if who == me() != "root":
        return True
    return who.startswith(f"{me()} (no login or sudo identity, at /dev/pts/")


def test_the_word_shown_runs_the_command_and_logs_who_approved(
    tmp_path: Path, run_dir: Path
) -> None:
    child = spawn(tmp_path, run_dir, "touch F")
    child.expect(PROMPT)
    shown = child.before
    assert "the agent wants to run" in shown and "    touch F" in shown
    assert "classification: mutating" in shown
    assert "touch is mutating" in shown and "on_mutating is prompt" in shown
    child.sendline(child.match.group(1).upper())  # the case does not matter
    assert finish(child) == 0
    assert (tmp_path / "F").exists()
    event = logged(run_dir)
    assert event["decision"] == "approved" and approved_by_me(event["decided_by"])
    assert event["reason"] == (
        f"approved by {event['decided_by']}: on_mutating is prompt: touch is mutating"
    )
    assert event["sandbox"] == "none"


def test_the_prompt_shows_every_part_with_its_class(tmp_path: Path, run_dir: Path) -> None:
    child = spawn(tmp_path, run_dir, "ls && sudo touch G")
    child.expect(PROMPT)
    shown = child.before
    assert "read-only    ls" in shown and "mutating     touch G (via sudo)" in shown
    child.sendline("n")
    assert finish(child) == 126


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("n", "refused at the prompt: "),
        ("", "refused at the prompt: "),
        ("y", "wrong answer at the prompt (not the word shown): "),
        ("yes", "wrong answer at the prompt (not the word shown): "),
        ("WORD", "wrong answer at the prompt (not the word shown): "),
    ],
)
def test_anything_but_the_word_shown_refuses(
    tmp_path: Path, run_dir: Path, answer: str, why: str
) -> None:
    child = spawn(tmp_path, run_dir, "touch F")
    child.expect(PROMPT)
    assert child.match.group(1) != answer.lower()
    child.sendline(answer)
    assert finish(child) == 126
    assert not (tmp_path / "F").exists()
    event = logged(run_dir)
    assert (event["decision"], event["exit_code"]) == ("denied", None)
    assert approved_by_me(event["decided_by"])
    assert str(event["reason"]).startswith(why)


def test_a_wrong_word_refuses_and_the_word_is_new_each_question(
    tmp_path: Path, run_dir: Path
) -> None:
    words = []
    for _ in range(2):
        child = spawn(tmp_path, run_dir, "touch F")
        child.expect(PROMPT)
        words.append(child.match.group(1))
        child.sendline("n")
        assert finish(child) == 126
    assert words[0] != words[1]  # 3.6 million words: the same twice is one chance in 3.6 million
    # The first question's word does not answer the next one.
    child = spawn(tmp_path, run_dir, "touch F")
    child.expect(PROMPT)
    assert child.match.group(1) not in words
    child.sendline(words[0])
    assert finish(child) == 126
    assert not (tmp_path / "F").exists()
    events = [json.loads(line) for line in (run_dir / "shell_audit.jsonl").read_text().splitlines()]
    assert [event["decision"] for event in events] == ["denied"] * 3
    assert str(events[-1]["reason"]).startswith("wrong answer at the prompt")
    # The word is in nothing the agent's commands can read: not in the audit log.
    logged_text = (run_dir / "shell_audit.jsonl").read_text()
    assert not any(word in logged_text for word in words[1:])


def test_ctrl_c_refuses_logs_and_exits_130(tmp_path: Path, run_dir: Path) -> None:
    child = spawn(tmp_path, run_dir, "touch F")
    child.expect(PROMPT)
    child.sendintr()
    assert finish(child) == 130
    assert not (tmp_path / "F").exists()
    event = logged(run_dir)
    assert event["decision"] == "denied"
    assert str(event["reason"]).startswith("interrupted at the prompt: ")


def test_end_of_input_refuses(tmp_path: Path, run_dir: Path) -> None:
    child = spawn(tmp_path, run_dir, "touch F")
    child.expect(PROMPT)
    child.sendeof()
    assert finish(child) == 126
    assert not (tmp_path / "F").exists()
    assert str(logged(run_dir)["reason"]).startswith("no answer (end of input): ")


def test_no_answer_in_time_refuses(tmp_path: Path, run_dir: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: remediate\non_mutating: prompt\nprompt_timeout: 1\n")
    child = spawn(tmp_path, run_dir, "touch F", policy)
    child.expect(PROMPT)
    child.expect("no answer within 1 s")
    assert finish(child) == 126
    assert not (tmp_path / "F").exists()
    assert str(logged(run_dir)["reason"]).startswith("no answer within 1 s: ")


def test_typing_ahead_does_not_answer(tmp_path: Path, run_dir: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: remediate\non_mutating: prompt\nprompt_timeout: 2\n")
    child = spawn(tmp_path, run_dir, "sleep 0; touch F", policy)
    # A "y" sent before the question is thrown away, not taken as the answer.
    child.send("y\n")
    child.expect(PROMPT)
    assert finish(child) == 126
    assert not (tmp_path / "F").exists()


def test_the_agent_cannot_name_the_approver(tmp_path: Path, run_dir: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env |= {"USER": "mallory", "LOGNAME": "mallory"}
    script = str(Path(sys.executable).parent / "agentledger")
    child = pexpect.spawn(
        script,
        ["exec", "--run-dir", str(run_dir), "--policy", str(REMEDIATE), "--", "touch F"],
        cwd=str(tmp_path), env=env, timeout=30, encoding="utf-8",
    )  # fmt: skip
    child.expect(PROMPT)
    child.sendline(child.match.group(1))
    assert finish(child) == 0
    who = logged(run_dir)["decided_by"]
    assert approved_by_me(who) and "mallory" not in str(who)


def test_an_interrupted_approver_is_logged_as_refused_then_raised(run_dir: Path) -> None:
    from agentledger.runner.shell_gate import Gate, Policy

    def interrupted(decision: object) -> bool:
        raise KeyboardInterrupt

    policy = Policy(mode="remediate", on_mutating="prompt")
    gate = Gate(policy, run_dir / "shell_audit.jsonl", ci=False, approver=interrupted)
    with pytest.raises(KeyboardInterrupt):
        gate.run("touch F")
    event = logged(run_dir)
    assert event["decision"] == "denied" and event["exit_code"] is None
    assert str(event["reason"]).startswith("interrupted at the prompt: ")
