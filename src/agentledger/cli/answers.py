"""A person's answers read from the terminal a line at a time, with Ctrl-C acted on at once
however early it comes.

`input()` (which rich's prompts call) cannot promise that. Python acts on a SIGINT between
bytecodes: its C handler only sets a flag. A Ctrl-C that lands after the prompt is written
but before `input()`'s read() has begun sets the flag and then waits, unseen, in a read() that a
signal from before it does not interrupt, until the person types a line. Pressed the instant
the prompt appeared (a loaded machine widens that gap), it echoed `^C` and did nothing.

Here the wait is a select() on the terminal and on Python's signal wake-up pipe: every signal
Python handles writes a byte there, so a Ctrl-C from any moment before the wait ends it at once
and the KeyboardInterrupt is raised. The line is read with the terminal's own line editing
(erase, kill), as `input()` does without the readline module.

A process started with Ctrl-C ignored (a shell script's background job inherits SIGINT
ignored, and Python then leaves it so) would sit at the prompt through every Ctrl-C: while
the answers are read, Ctrl-C raises KeyboardInterrupt again, as a person at a prompt needs.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
from types import TracebackType
from typing import TextIO, cast

__all__ = ["TerminalAnswers"]


class TerminalAnswers:
    """The lines a person types, for `Prompt.ask(..., stream=answers.stream)`: `readline()`
    returns one line without its newline and raises EOFError at the end (Ctrl-D), as `input()`
    does.

    Used as a context manager around the questions: inside it the signal wake-up pipe is ours
    (the one there before is put back at the end). Off the main thread, or on a stream
    without a file descriptor, it reads with `input()`.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdin
        self._encoding = getattr(self._stream, "encoding", None) or "utf-8"
        self._pending = b""
        self._fd = -1
        self._wakeup: tuple[int, int] | None = None
        self._previous_wakeup = -1
        self._was_ignored = False

    def __enter__(self) -> TerminalAnswers:
        if threading.current_thread() is not threading.main_thread():
            return self
        try:
            self._fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            return self
        self._wakeup = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous_wakeup = signal.set_wakeup_fd(self._wakeup[1], warn_on_full_buffer=False)
        self._was_ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        if self._was_ignored:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._wakeup is not None:
            if self._was_ignored:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.set_wakeup_fd(self._previous_wakeup)
            for fd in self._wakeup:
                os.close(fd)
            self._wakeup = None

    @property
    def stream(self) -> TextIO:
        """This reader as the `stream` of rich's `Prompt.ask` (which calls only readline())."""
        return cast("TextIO", self)

    def readline(self) -> str:
        if self._wakeup is None:
            return input()
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._fd, self._wakeup[0]], [], [])
            if self._wakeup[0] in ready:
                # A signal came (before the wait or during it): Python runs its handler at the
                # next call, so a Ctrl-C raises KeyboardInterrupt here; others wait on.
                self._drain()
                continue
            chunk = os.read(self._fd, 4096)
            if not chunk:  # Ctrl-D: the end, or the end of a line typed without Enter
                if not self._pending:
                    raise EOFError
                break
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(self._encoding, errors="replace")

    def _drain(self) -> None:
        assert self._wakeup is not None
        try:
            while os.read(self._wakeup[0], 512):
                pass
        except BlockingIOError:
            pass
