"""The lab's supervisor process from outside: killing it, waiting for it and its lab's init
to end (woken by pidfds, not by polling), and closing the pipes to it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from contextlib import suppress

from agentledger.labs.system import LabUnavailableError, process_running, process_start_time

__all__ = ["await_exit", "close_pipes", "reap", "stop_supervisor", "wait_gone"]


def close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with suppress(OSError):
                stream.close()


def reap(proc: subprocess.Popen[bytes], *, ending: bool = False) -> None:
    """Kill the supervisor `proc` (the lab goes with it), wait for it, close our pipe ends.

    `ending`: the lab's init was killed (or told to end), so the supervisor exits by itself in
    a moment, having waited for it (whose processes' CPU time is then counted as this process's
    children's); it is killed only if it has not after a second."""
    if ending:
        await_exit(proc.pid, 1)
    proc.kill()
    proc.wait()
    close_pipes(proc)


def await_exit(pid: int, timeout: float) -> None:
    """Wait up to `timeout` seconds for the child `pid` to end, woken by its pidfd when it does
    (`Popen.wait(timeout)` polls, sleeping up to 50 ms between looks); it is not reaped."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return  # reaped already
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def stop_supervisor(pid: int, start_time: int, pid1: int) -> None:
    """SIGKILL the supervisor `pid` (when it is still the process that started at
    `start_time`) and wait until its lab's init `pid1` is gone."""
    if process_start_time(pid) == start_time:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_gone(pid1, pid, start_time)


def wait_gone(pid1: int, pid: int | None = None, start_time: int | None = None) -> None:
    """Wait until the lab's init `pid1` has ended (woken by its pidfd: an init ends only once
    the kernel has killed every process of its PID namespace), and the supervisor too."""
    with suppress(OSError):
        fd = os.pidfd_open(pid1)
        try:
            select.select([fd], [], [], 10)
        finally:
            os.close(fd)
    for _ in range(4000):
        if not process_running(pid1) and not (pid and process_running(pid, start_time)):
            return
        time.sleep(0.0025)
    raise LabUnavailableError(f"the lab's supervisor {pid} did not end after SIGKILL")
