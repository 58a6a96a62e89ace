"""An approval no command can fake (issue 33, causes 6 and 7): commands hold no terminal,
the question is drawn by the gate alone with the command escaped, the approver is a person,
and in remediate mode one vouched-for part does not take the others out of the sandbox."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate, Policy
from agentledger.runner.shell_gate.ask import (
    CLEAR,
    approver_identity,
    printable,
    question,
    under_sudo,
)

pexpect = pytest.importorskip("pexpect")

PROMPT = r"To run it type ([a-z]{7}) \(anything else refuses\): "


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("printf '\x1b[2J\x1b[Hfake question'", "printf '\\x1b[2J\\x1b[Hfake question'"),
        ("ls \u202efdp.exe", "ls \\u202efdp.exe"),
        ("echo a\u200bb", "echo a\\u200bb"),
        ("echo \x07\x00\x7f\x9b", "echo \\x07\\x00\\x7f\\x9b"),
        ("echo 'a\\x1b' \x1b", "echo 'a\\\\x1b' \\x1b"),
        ("ls -l", "ls -l"),
    ],
)
def test_the_command_is_shown_escaped(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(text).isprintable()


def test_the_question_holds_no_control_character() -> None:
    gate = Gate(Policy(mode="remediate", on_mutating="prompt"), None, ci=False)
    asked = question(gate.decide("touch 'F\x1b]0;title\x07' \u2067x\u2069"))
    assert all(line.isprintable() for line in asked.splitlines())
    assert "\\x1b]0;title\\x07" in asked and "\\u2067x\\u2069" in asked


def test_the_approver_is_a_person_never_a_bare_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_USER", raising=False)
    who = approver_identity()
    assert who != "root" and who
    monkeypatch.setenv("SUDO_USER", "no-such-user-here")
    assert "no-such-user-here" not in approver_identity()


def test_a_sudo_user_set_without_sudo_does_not_name_the_approver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The agent that starts the gate sets its environment: SUDO_USER alone proves nothing.
    assert not under_sudo()  # the tests do not run under sudo
    monkeypatch.setenv("SUDO_USER", "nobody")
    who = approver_identity()
    assert who.split(" (")[0] != "nobody" and "(SUDO_USER)" not in who
    if who.startswith(("root ", "nobody ")):  # no login identity: the claim is noted
        assert "SUDO_USER=nobody set without sudo" in who


def spawn(tmp_path: Path, run_dir: Path, policy: Path, command: str) -> object:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return pexpect.spawn(
        sys.executable,
        ["-m", "agentledger", "exec", "--run-dir", str(run_dir), "--policy", str(policy),
         "--", command],
        cwd=str(tmp_path), env=env, timeout=30, encoding="utf-8",
    )  # fmt: skip


def test_the_screen_is_cleared_before_the_question_and_commands_hold_no_terminal(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    probe = tmp_path / "probe"
    probe.write_text("#!/bin/sh\ntty\nif echo x > /dev/tty; then echo WROTE; fi\n")
    probe.chmod(0o755)
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        textwrap.dedent(
            """\
            mode: remediate
            on_mutating: prompt
            commands: {probe: mutating}
            """
        )
    )
    child = spawn(tmp_path, run_dir, policy, "./probe '\x1b[2Jfake'")
    child.expect(PROMPT)  # type: ignore[attr-defined]
    before = child.before  # type: ignore[attr-defined]
    assert CLEAR in before
    asked = before.split(CLEAR, 1)[1]
    assert "\x1b" not in asked and "./probe '\\x1b[2Jfake'" in asked
    child.sendline(child.match.group(1))  # type: ignore[attr-defined]
    child.expect(pexpect.EOF)  # type: ignore[attr-defined]
    output = child.before  # type: ignore[attr-defined]
    assert "not a tty" in output and "WROTE" not in output
    (line,) = (run_dir / "shell_audit.jsonl").read_text().splitlines()
    event = json.loads(line)
    assert event["decision"] == "approved" and event["sandbox"] == "none"
    assert event["decided_by"] != "root" and "(SUDO_USER)" not in event["decided_by"]


def test_one_vouched_part_does_not_take_the_rest_out_of_the_sandbox() -> None:
    policy = Policy(mode="remediate", allow=["systemctl restart nginx"], on_mutating="deny")
    gate = Gate(policy, None, ci=False)
    alone = gate.decide("systemctl restart nginx")
    assert alone.decision == "allowed"
    mixed = gate.decide("systemctl restart nginx; cat /etc/hostname")
    assert mixed.decision == "prompt"
    assert "cat /etc/hostname" in mixed.reason and "asking for the whole line" in mixed.reason
    in_ci = Gate(policy, None, ci=True).decide("systemctl restart nginx && ls")
    assert in_ci.decision == "denied" and in_ci.decided_by == "ci"
    refused = Gate(policy, None, ci=False, approver=lambda decision: False)
    result = refused.run("systemctl restart nginx; cat /etc/hostname")
    assert not result.ran and result.denied


def test_an_approved_line_keeps_the_network_its_reader_was_checked_for(tmp_path: Path) -> None:
    policy = Policy(on_unknown="prompt")
    gate = Gate(policy, tmp_path / "shell_audit.jsonl", ci=False, approver=lambda d: "alice")
    result = gate.run("ip -br link | no-such-tool-here")
    assert result.decision.decision == "approved"
    assert result.event["network"] == "ip" and result.event["sandbox"] == "bwrap"


def test_the_clearing_resets_what_a_soft_reset_keeps() -> None:
    # A command's output may have set the default colours alike (OSC 10/11: the question
    # would be invisible), changed the palette, left the alternate screen on, or turned on
    # mouse reporting (a click sends input); none of it survives the clearing.
    for sequence in ("\x1b]104\x07", "\x1b]110\x07", "\x1b]111\x07", "\x1b[?1049l",
                     "\x1b[?1000l", "\x1b[?1003l", "\x1b[2J"):  # fmt: skip
        assert sequence in CLEAR
    assert CLEAR.index("\x1b]111\x07") < CLEAR.index("\x1b[2J")
