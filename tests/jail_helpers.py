"""Helpers of the jail tests: run a function as another user, hold a secret only a host
process's own mount namespace shows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentledger.runner.shell_gate.sandbox import find_bwrap

NOBODY = 65534


def need_bwrap() -> str:
    """The system's bubblewrap; a skip (a failure in CI) without it."""
    found = find_bwrap()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("bubblewrap is not installed (.ci/run installs it)")
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    return found


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (the attacks of issue 33 are a root agent's)")


def need_userns() -> None:
    done = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"no user namespaces here: {done.stderr.decode().strip()}")


def as_user(uid: int, work: Callable[[], Any]) -> Any:
    """`work()` run in a forked child as `uid` (no groups); its JSON-able result.

    Python cannot be started afresh as another user here (its installation is under a
    directory only root reads), so the child keeps this process's loaded modules."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        code = 0
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            data = json.dumps({"result": work()})
        except BaseException as exc:
            data = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            code = 1
        with os.fdopen(write, "w") as out:
            out.write(data)
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as source:
        received = json.loads(source.read() or '{"error": "no answer"}')
    os.waitpid(pid, 0)
    if "error" in received:
        raise AssertionError(f"as uid {uid}: {received['error']}")
    return received["result"]


@contextmanager
def shared_dir() -> Iterator[Path]:
    """A temporary directory every user may write in (for the unprivileged runs)."""
    path = Path(tempfile.mkdtemp(prefix="agentledger-jail-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def hidden_secret(folder: Path, *, userns: bool) -> Iterator[tuple[int, Path]]:
    """A process whose own mount namespace has a tmpfs on `folder` holding a file `s`: from
    the host it is reached only as /proc/PID/root/FOLDER/s. Yields (PID, that path)."""
    script = f"mount -t tmpfs none {folder} && echo hostsecret > {folder}/s && exec sleep 60"
    flags = ["-Urm"] if userns else ["-m", "--propagation", "private"]
    process = subprocess.Popen(["unshare", *flags, "sh", "-c", script])
    route = Path(f"/proc/{process.pid}/root{folder}/s")
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if route.read_text() == "hostsecret\n":
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            pytest.skip("could not set up a process with a mount namespace of its own")
        yield process.pid, route
    finally:
        process.kill()
        process.wait()


@contextmanager
def namespaced_process() -> Iterator[int]:
    """A process (``sleep``) in a mount and network namespace of its own, made here (a user
    namespace too when not root), killed at the end; yields its pid: a lab's first process
    as `LabEntry` checks one."""
    flags = ["-m", "-n", "--propagation", "private"] if os.geteuid() == 0 else ["-Urmn"]
    process = subprocess.Popen(["unshare", *flags, "sleep", "60"])
    try:
        ours = os.stat("/proc/self/ns/net").st_ino
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if os.stat(f"/proc/{process.pid}/ns/net").st_ino != ours:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        yield process.pid
    finally:
        process.kill()
        process.wait()


def over_ssh(line: str, remote: bool) -> str:
    """`line` itself, or the same line as the remote command of `ssh h` (where no sandbox
    holds and the classifier alone decides)."""
    import shlex

    return "ssh h " + shlex.quote(line) if remote else line


def assert_refused(gate: Any, line: str) -> None:
    """The gate classifies `line` as no read and refuses it."""
    decision = gate.decide(line)
    assert decision.classification.kind in ("unknown", "mutating", "destructive"), decision
    assert decision.decision == "denied"
