"""The starter's side of a lab's agent (`agent.py`): requests over a socket pair, output over
pipes the agent's child writes to directly.

Each request is one SOCK_SEQPACKET message (`marshal` data: see MARSHAL) carrying four file
descriptors: the child's stdin, stdout and stderr, and a status pipe on which the agent writes
the child's exit status. `AgentProcess` reads them as `subprocess.Popen.communicate` would;
closing the status pipe early (a timeout, `kill`) makes the agent kill the child's process
group.
"""

from __future__ import annotations

import marshal
import os
import selectors
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from agentledger.labs.system import LabUnavailableError

__all__ = ["AGENT_SOURCE", "AgentProcess", "Channel"]

AGENT_SOURCE = (Path(__file__).parent / "agent.py").read_text(encoding="utf-8")
"""The agent's program, run as `python3 -I -S -c AGENT_SOURCE MARKER FD` inside the lab."""
_CHUNK = 1 << 16
MARSHAL = 4
"""Requests (and the setup's plan) go to the agent as `marshal` data, version 4: plain dicts,
lists, strings and numbers, which every Python 3 since 3.4 reads the same way, and which the
agent reads without importing json (and with it re: about 5 ms of CPU at every lab's start).
They come only from the lab's starter, over the agent's own socket pair."""


class AgentProcess:
    """A command the agent runs: `communicate`, `returncode` and `kill` as a Popen's."""

    def __init__(
        self, argv: Sequence[str], stdin: int | None, data: bytes, outputs: list[int], status: int
    ) -> None:
        self.args = list(argv)
        self.returncode: int | None = None
        self._stdin, self._data, self._outputs, self._status = stdin, data, outputs, status
        self._done = False

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """(stdout, stderr) once the command ended and closed them; TimeoutExpired (the
        command killed) when that takes longer than `timeout` seconds."""
        if self._done:
            return "", ""
        chunks: dict[int, list[bytes]] = {fd: [] for fd in [*self._outputs, self._status]}
        written = 0
        clock = _Clock(timeout)
        with selectors.DefaultSelector() as selector:
            for fd in chunks:
                selector.register(fd, selectors.EVENT_READ)
            if self._stdin is not None:
                selector.register(self._stdin, selectors.EVENT_WRITE)
            while selector.get_map():
                left = clock.left()
                if left is not None and left <= 0:
                    self.kill()
                    raise subprocess.TimeoutExpired(self.args, timeout or 0)
                for key, _ in selector.select(left):
                    fd = int(key.fd)
                    if fd == self._stdin:
                        try:
                            written += os.write(fd, self._data[written : written + _CHUNK])
                        except BrokenPipeError:
                            written = len(self._data)
                        if written >= len(self._data):
                            selector.unregister(fd)
                            self._close_stdin()
                        continue
                    data = os.read(fd, _CHUNK)
                    if data:
                        chunks[fd].append(data)
                    else:
                        selector.unregister(fd)
        status = b"".join(chunks[self._status]).strip()
        self.returncode = int(status) if status else -9  # no status: the lab went away
        texts = [b"".join(chunks[fd]).decode(errors="replace") for fd in self._outputs]
        self._close()
        return texts[0], texts[1] if len(texts) > 1 else ""

    def wait(self, timeout: float | None = None) -> int:
        """The exit status (output read and dropped)."""
        self.communicate(timeout)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        """Stop waiting: the agent kills the command's process group."""
        if not self._done:
            self.returncode = -9
            self._close()

    def _close_stdin(self) -> None:
        if self._stdin is not None:
            os.close(self._stdin)
            self._stdin = None

    def _close(self) -> None:
        self._done = True
        self._close_stdin()
        for fd in [*self._outputs, self._status]:
            with suppress(OSError):
                os.close(fd)


class _Clock:
    def __init__(self, timeout: float | None) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


class Channel:
    """The starter's end of the agent's socket: while it is open, the lab lives."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()

    def start(
        self,
        request: dict[str, Any],
        *,
        stdin: str | bytes | None = None,
        merge: bool = False,
    ) -> AgentProcess:
        """Have the agent start `request` (host, argv or call, env, cwd, limit, mounts); with
        `merge`, stderr goes to stdout."""
        mine: list[int] = []
        theirs: list[int] = []
        try:
            if stdin is None:
                child_in, my_in = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), None
            else:
                child_in, my_in = os.pipe2(os.O_CLOEXEC)
                mine.append(my_in)
            theirs.append(child_in)
            out_r, out_w = os.pipe2(os.O_CLOEXEC)
            mine.append(out_r)
            theirs.append(out_w)
            outputs = [out_r]
            if merge:
                err_w = out_w
            else:
                err_r, err_w = os.pipe2(os.O_CLOEXEC)
                mine.append(err_r)
                theirs.append(err_w)
                outputs.append(err_r)
            status_r, status_w = os.pipe2(os.O_CLOEXEC)
            mine.append(status_r)
            theirs.append(status_w)
            message = marshal.dumps(request, MARSHAL)
            with self._lock:
                socket.send_fds(self.sock, [message], [child_in, out_w, err_w, status_w])
        except OSError as exc:
            for fd in mine:
                os.close(fd)
            raise LabUnavailableError(f"the lab's agent is gone: {exc}") from None
        finally:
            for fd in theirs:
                os.close(fd)
        argv = request.get("argv") or [str(request.get("call"))]
        data = stdin.encode() if isinstance(stdin, str) else stdin or b""
        return AgentProcess(argv, my_in, data, outputs, status_r)

    def detach(self) -> None:
        """Tell the agent to outlive this end (`lab up`), then close it."""
        with suppress(OSError):
            self.sock.send(marshal.dumps({"op": "detach"}, MARSHAL))
        self.close()

    def close(self) -> None:
        """Close this end: the agent exits, and the kernel kills every process of the lab."""
        self.sock.close()
