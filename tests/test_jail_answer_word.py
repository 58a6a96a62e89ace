"""Keystrokes pushed into the approver's terminal approve nothing (issue 33, cause 7): the
word that approves is drawn at random for each question and shown only on the terminal, so an
attacker who can push input into it (TIOCSTI as root, or writing to the pseudo-terminal's
master side) does not know what to push, and ``y`` is no answer."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import termios
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate, ask
from agentledger.runner.shell_gate.rules import load_policy

WORD = re.compile(rb"To run it type ([a-z]{7}) \(anything else refuses\): ")

# The attacker: another process that pushes keystrokes into the terminal once the question
# is up. "master" writes to the pseudo-terminal's master side (what a terminal emulator or
# sshd does with what is typed); "tiocsti" pushes them into the input queue of the terminal
# itself, as a root agent (or any process where dev.tty.legacy_tiocsti=1) can.
ATTACKER = """\
import fcntl, os, sys, termios
how, path, text = sys.argv[1], sys.argv[2], sys.argv[3].encode()
if how == "master":
    os.write(int(path), text)
else:
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    for byte in text:
        fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))
print("pushed", flush=True)
"""


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    monkeypatch.setattr(ask, "TERMINAL", os.ttyname(slave))
    monkeypatch.setattr(ask, "_wrong_words", [0])
    yield master, slave
    os.close(master)
    os.close(slave)


def _read_question(master: int) -> tuple[bytes, str]:
    seen = b""
    while (found := WORD.search(seen)) is None:
        ready, _, _ = select.select([master], [], [], 20)
        assert ready, f"no question on the terminal after {seen!r}"
        seen += os.read(master, 4096)
    return seen, found.group(1).decode()


def _asking(tmp_path: Path, command: str = "touch ./hidden") -> tuple[threading.Thread, list]:
    policy = tmp_path / "ask.yaml"
    policy.write_text("mode: remediate\non_mutating: prompt\non_unknown: prompt\n")
    decision = Gate(load_policy(policy), None, ci=False).decide(command)
    answers: list[ask.Answer] = []
    thread = threading.Thread(
        target=lambda: answers.append(ask.terminal_approver(decision, timeout=30))
    )
    thread.start()
    return thread, answers


def _attack(how: str, target: str, text: str, pass_fds: tuple[int, ...] = ()) -> str:
    done = subprocess.run(
        [sys.executable, "-c", ATTACKER, how, target, text],
        capture_output=True, text=True, timeout=30, pass_fds=pass_fds,
    )  # fmt: skip
    return done.stdout + done.stderr


def test_y_pushed_into_the_terminal_after_the_question_refuses(
    tmp_path: Path, terminal: tuple[int, int]
) -> None:
    master, _ = terminal
    thread, answers = _asking(tmp_path)
    shown, _ = _read_question(master)
    assert b"touch ./hidden" in shown and b"[y/N]" not in shown
    assert _attack("master", str(master), "y\n", (master,)) == "pushed\n"
    thread.join(30)
    (answer,) = answers
    assert not answer.approved
    assert answer.why == "wrong answer at the prompt (not the word shown)"
    assert b"refused: not the word shown (1 of 3)" in os.read(master, 4096)


def test_the_word_shown_approves_and_another_word_refuses(
    tmp_path: Path, terminal: tuple[int, int]
) -> None:
    master, _ = terminal
    thread, answers = _asking(tmp_path)
    _, word = _read_question(master)
    os.write(master, f"  {word.upper()}\n".encode())
    thread.join(30)
    assert answers[0].approved, answers
    thread, answers = _asking(tmp_path)
    _, second = _read_question(master)
    assert second != word  # a new word for each question (one chance in about 3.6 million)
    os.write(master, f"{word}\n".encode())  # the last question's word
    thread.join(30)
    assert not answers[0].approved
    assert answers[0].why == "wrong answer at the prompt (not the word shown)"


def test_pushed_keystrokes_as_root_approve_nothing(
    tmp_path: Path, terminal: tuple[int, int]
) -> None:
    # TIOCSTI on a terminal that is not the caller's controlling one needs CAP_SYS_ADMIN:
    # root has it, and this is the attack of a root agent on the approver's terminal.
    master, slave = terminal
    probe = _attack("tiocsti", os.ttyname(slave), "x")
    if probe != "pushed\n":
        pytest.skip(f"TIOCSTI is not allowed here (not root?): {probe.strip()}")
    termios.tcflush(slave, termios.TCIFLUSH)
    for pushed in ("y\n", "yes\n", "\n"):
        thread, answers = _asking(tmp_path)
        _read_question(master)
        assert _attack("tiocsti", os.ttyname(slave), pushed) == "pushed\n"
        thread.join(30)
        assert answers and not answers[0].approved, (pushed, answers)


def test_after_three_wrong_words_no_question_is_asked(
    tmp_path: Path, terminal: tuple[int, int]
) -> None:
    master, _ = terminal
    for guess in ("y", "bakofer", "sure"):
        thread, answers = _asking(tmp_path)
        _read_question(master)
        os.write(master, f"{guess}\n".encode())
        thread.join(30)
        assert not answers[0].approved
    # Someone is guessing or pushing keystrokes: the next question is refused unasked.
    thread, answers = _asking(tmp_path)
    thread.join(30)
    (answer,) = answers
    assert not answer.approved and answer.why == "3 wrong answers before: asking stopped"
    assert not select.select([master], [], [], 0.2)[0] or WORD.search(os.read(master, 4096)) is None


def test_the_word_is_drawn_at_random() -> None:
    words = {ask.answer_word() for _ in range(2000)}
    assert len(words) > 1990  # about 3.6 million words: a few repeats at most
    assert all(re.fullmatch("([bdfgkmnprstvz][aeiou]){3}[bdfgkmnprstvz]", w) for w in words)
    for position in range(7):
        assert len({w[position] for w in words}) == (5 if position % 2 else 13)
