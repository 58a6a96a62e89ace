"""Ctrl-C deferred across a write that must land whole: a record and its index row.

A score written to its file but not to the index is invisible until the index is rebuilt; a
Ctrl-C that lands between the two used to do exactly that. Inside `deferred_interrupt()` a
SIGINT is remembered instead of raised, and raised as KeyboardInterrupt when the block ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["deferred_interrupt"]


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold off Ctrl-C for the duration of the block (only the main thread receives SIGINT;
    elsewhere, and when SIGINT is not Python's to handle, this does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield  # ignored, or handled by someone else: leave it as it is
        return
    received: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    signal.signal(signal.SIGINT, remember)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
