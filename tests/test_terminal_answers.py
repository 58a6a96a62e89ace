"""The walk-through's answers read from a terminal (cli/answers.py): a Ctrl-C ends the wait for
a line at once, however early it came.

Python's C handler for SIGINT only notes the signal; the exception is raised when the main
thread next runs bytecode. A Ctrl-C that lands just before the wait for a line begins does not
interrupt that wait (input() then sat in read() until a line was typed: the `review --next`
test, Ctrl-C sent the instant the prompt appeared, twice timed out under load). Here the same
situation is made without timing: the main thread blocks SIGINT, so the signal is taken by
another thread and the main thread's wait is told of it but never interrupted by it.
"""

from __future__ import annotations

import os
import platform
import pty
import signal
import threading
from pathlib import Path

import pytest

from agentledger.cli.answers import TerminalAnswers

# The system calls a wait for a line sits in (read, select, pselect6, poll, ppoll).
WAITS = {"x86_64": {0, 23, 270, 7, 271}, "aarch64": {63, 72, 73}}.get(platform.machine())


def _waiting(thread_id: int) -> bool:
    """Whether the thread sits in one of the `WAITS` system calls now."""
    state = Path(f"/proc/self/task/{thread_id}/syscall").read_text().split()
    return bool(state) and state[0].isdigit() and int(state[0]) in (WAITS or set())


@pytest.fixture
def terminal() -> object:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach Python's handlers on the main thread only")
    leader, follower = pty.openpty()
    with os.fdopen(follower, "r", encoding="utf-8") as stream:
        yield leader, stream
    os.close(leader)


@pytest.mark.skipif(WAITS is None, reason="system call numbers known for x86_64 and aarch64")
def test_a_ctrl_c_the_wait_was_not_interrupted_by_still_ends_it(terminal: object) -> None:
    leader, stream = terminal  # type: ignore[misc]
    main = threading.get_native_id()
    reading, ended = threading.Event(), threading.Event()
    typed: list[bytes] = []

    def press_ctrl_c() -> None:
        reading.wait()
        while not _waiting(main):
            ended.wait(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # taken by a thread that does not block it
        if not ended.wait(60):  # never ended: type a line so the test fails, not hangs
            typed.append(b"\n")
            os.write(leader, b"\n")

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()  # before the main thread blocks SIGINT: this thread does not
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with TerminalAnswers(stream) as answers:
            reading.set()
            with pytest.raises(KeyboardInterrupt):
                answers.readline()
            ended.set()
    finally:
        reading.set()
        ended.set()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        presser.join()
    assert typed == []  # the Ctrl-C ended the wait, not a line typed after it


def test_lines_are_read_one_at_a_time_and_the_end_is_eof(terminal: object) -> None:
    leader, stream = terminal  # type: ignore[misc]
    os.write(leader, "s\nflushed a chain fail2ban owns — café\n".encode())
    with TerminalAnswers(stream) as answers:
        assert answers.readline() == "s"
        assert answers.readline() == "flushed a chain fail2ban owns — café"
        os.write(leader, b"\x04")  # Ctrl-D on an empty line
        with pytest.raises(EOFError):
            answers.readline()


def test_the_signal_wake_up_pipe_is_put_back(terminal: object) -> None:
    _, stream = terminal  # type: ignore[misc]
    before_read, before_write = os.pipe2(os.O_NONBLOCK)
    signal.set_wakeup_fd(before_write)
    try:
        with TerminalAnswers(stream):
            inside = signal.set_wakeup_fd(-1)
            signal.set_wakeup_fd(inside)
        assert inside not in (-1, before_write)  # the reader's own pipe while it reads
    finally:
        assert signal.set_wakeup_fd(-1) == before_write
        os.close(before_read)
        os.close(before_write)
