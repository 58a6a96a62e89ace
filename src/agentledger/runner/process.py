"""Running a child process with a timeout, a cancel switch and its output streamed to files.

The child gets its own process group, so a timeout or Ctrl-C stops it and everything it
started, not just the first process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from agentledger.runner.shell_gate.execute import find_shell

__all__ = ["ProcessOutcome", "Status", "run_process", "run_shell_step"]

Status = Literal["ok", "failed", "timeout", "interrupted", "not-started", "setup-failed"]

_GRACE_S = 3.0
_POLL_S = 0.1


@dataclass(frozen=True)
class ProcessOutcome:
    """How a child process ended."""

    status: Status
    exit_code: int | None
    duration_s: float
    error: str | None = None


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it if it is still there after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdout: BinaryIO,
    stderr: BinaryIO,
    cancel: threading.Event | None = None,
) -> ProcessOutcome:
    """Run `argv` to completion, timeout or cancellation; never raises for the child's failure."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    except OSError as exc:
        return ProcessOutcome("not-started", None, 0.0, f"cannot start {argv[0]!r}: {exc}")
    deadline = started + timeout
    status: Status | None = None
    try:
        while True:
            try:
                code = process.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if cancel is not None and cancel.is_set():
                status = "interrupted"
            elif time.monotonic() > deadline:
                status = "timeout"
            if status is not None:
                _stop(process)
                code = process.returncode
                break
    except BaseException:
        _stop(process)
        raise
    duration = time.monotonic() - started
    if status == "timeout":
        return ProcessOutcome(status, code, duration, f"timed out after {timeout:g} s")
    if status == "interrupted":
        return ProcessOutcome(status, code, duration, "interrupted")
    if code == 0:
        return ProcessOutcome("ok", 0, duration)
    reason = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
    return ProcessOutcome("failed", code, duration, reason)


def run_shell_step(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    log: BinaryIO,
    cancel: threading.Event | None = None,
) -> ProcessOutcome:
    """Run one setup, teardown or snapshot command with bash (or sh), its output into `log`."""
    shell = find_shell()
    log.write(f"$ {command}\n".encode())
    log.flush()
    outcome = run_process(
        [shell, "-c", command],
        cwd=cwd,
        env=env,
        timeout=timeout,
        stdout=log,
        stderr=log,
        cancel=cancel,
    )
    log.write(
        f"[{outcome.status}: exit {outcome.exit_code}, {outcome.duration_s:.2f} s]\n".encode()
    )
    log.flush()
    return outcome
