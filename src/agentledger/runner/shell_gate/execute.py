"""Run an allowed command line with a shell, capture its output, and kill it on timeout.

The command runs as ``bash -c COMMAND`` (``/bin/sh -c`` where there is no bash) in a process
group of its own, so that a timeout kills everything it started (like `timeout`, the exit code
is then 124). `os.posix_spawn` and `select.poll` keep this module cheap to load.
"""

from __future__ import annotations

import os
import select
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agentledger.runner.shell_gate.sandbox import Sandbox

__all__ = ["TIMEOUT_EXIT", "Completed", "find_shell", "run_shell"]

TIMEOUT_EXIT = 124
"""The exit code of a command killed on timeout (as `timeout` uses)."""
INTERRUPTED_EXIT = 130
_KILL_GRACE = 1.0
_CHUNK = 65536
_SHELLS = ("/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash")
_shell: str | None = None


class Completed:
    """What a command did: exit code, full output, duration, and whether it was cut short."""

    __slots__ = ("duration_ms", "exit_code", "interrupted", "stderr", "stdout", "timed_out")

    def __init__(
        self,
        exit_code: int,
        stdout: bytes,
        stderr: bytes,
        duration_ms: float,
        *,
        timed_out: bool = False,
        interrupted: bool = False,
    ) -> None:
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr
        self.duration_ms = duration_ms
        self.timed_out = timed_out
        self.interrupted = interrupted


def find_shell() -> str:
    """The bash to run commands with, or /bin/sh when there is none."""
    global _shell
    if _shell is None:
        candidates = list(_SHELLS)
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            if folder:
                candidates.append(os.path.join(folder, "bash"))
        _shell = next(
            (path for path in candidates if os.path.isfile(path) and os.access(path, os.X_OK)),
            "/bin/sh",
        )
    return _shell


def run_shell(
    command: str,
    *,
    timeout: float,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | None = None,
    sandbox: Sandbox | None = None,
    prefix: Sequence[str] = (),
) -> Completed:
    """Run `command` with the shell and wait for it, at most `timeout` seconds.

    `stdin` is a file descriptor to give the command (None: /dev/null). `prefix` is an argv
    the whole runs under (entering a lab host: `agentledger.runner.lab_shell`). KeyboardInterrupt
    while waiting kills the command and returns with `interrupted` set. With `sandbox` the
    command runs inside it, writable only in a scratch directory removed afterwards; a
    sandbox that cannot be set up raises SandboxUnavailableError (the command did not run).
    """
    if prefix:
        import shutil

        prefix = [shutil.which(prefix[0]) or prefix[0], *prefix[1:]]
    if sandbox is None:
        argv = _shell_argv(command, cwd)
        return _spawn([*prefix, *argv], timeout=timeout, env=env, stdin=stdin)
    from agentledger.runner.shell_gate.sandbox import make_scratch, remove_scratch

    scratch = make_scratch()
    status_read, status_write = os.pipe()
    try:
        os.set_inheritable(status_write, True)
        argv = sandbox.argv(
            [find_shell(), "-c", command],
            cwd=cwd if cwd is not None else os.getcwd(),
            scratch=scratch,
            status_fd=status_write,
        )
        argv = [*prefix, *argv]
        handed, status_write = status_write, -1
        completed = _spawn(argv, timeout=timeout, env=env, stdin=stdin, extra_fd=handed)
        status = _read_ready(status_read)
    finally:
        for fd in (status_read, status_write):
            if fd >= 0:
                os.close(fd)
        remove_scratch(scratch)
    if not sandbox.started(status) and not (completed.timed_out or completed.interrupted):
        raise sandbox.failure(completed.stderr)
    return completed


def _shell_argv(command: str, cwd: str | None) -> list[str]:
    shell = find_shell()
    if cwd is None:
        return [shell, "-c", command]
    # posix_spawn cannot change directory before exec; a first shell does it.
    return [shell, "-c", 'cd -- "$1" && exec "$0" -c "$2"', shell, cwd, command]


def _read_ready(fd: int) -> bytes:
    """What is in the pipe now: bwrap has exited, and nothing it left running holds it."""
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    return b"".join(chunks)


def _spawn(
    argv: list[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None,
    stdin: int | None,
    extra_fd: int = -1,
) -> Completed:
    """Start `argv` in a process group of its own, collect its output, wait for it.

    `extra_fd` is closed here once the child holds it (the sandbox's status pipe)."""
    shell = argv[0]
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_DUP2, out_write, 1),
        (os.POSIX_SPAWN_DUP2, err_write, 2),
    ]
    if stdin is None:
        actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
    elif stdin != 0:
        actions.append((os.POSIX_SPAWN_DUP2, stdin, 0))
    started = time.monotonic()
    try:
        pid = os.posix_spawn(
            shell, argv, os.environ if env is None else env, file_actions=actions, setpgroup=0
        )
    except OSError as exc:
        for fd in (out_read, err_read):
            os.close(fd)
        message = f"agentledger: cannot start {shell}: {exc.strerror or exc}\n".encode()
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return Completed(code, b"", message, (time.monotonic() - started) * 1000)
    finally:
        os.close(out_write)
        os.close(err_write)
        if extra_fd >= 0:
            os.close(extra_fd)
    outputs: dict[int, list[bytes]] = {out_read: [], err_read: []}
    timed_out = interrupted = False
    try:
        timed_out = not _drain(outputs, started + timeout)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if timed_out or interrupted:
            _kill_group(pid)
            _drain(outputs, time.monotonic() + _KILL_GRACE)
        for fd in outputs:
            os.close(fd)
    status = _wait(pid)
    duration = (time.monotonic() - started) * 1000
    if timed_out:
        status = TIMEOUT_EXIT
    elif interrupted:
        status = INTERRUPTED_EXIT
    return Completed(
        status,
        b"".join(outputs[out_read]),
        b"".join(outputs[err_read]),
        duration,
        timed_out=timed_out,
        interrupted=interrupted,
    )


def _drain(outputs: dict[int, list[bytes]], deadline: float) -> bool:
    """Read both pipes until they close (True) or the deadline passes (False)."""
    poller = select.poll()
    open_fds = set()
    for fd in outputs:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        open_fds.add(fd)
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        for fd, _ in poller.poll(min(remaining, 3600.0) * 1000):
            data = os.read(fd, _CHUNK)
            if data:
                outputs[fd].append(data)
            else:
                poller.unregister(fd)
                open_fds.discard(fd)
    return True


def _kill_group(pid: int) -> None:
    """SIGTERM the command's process group, then SIGKILL what is left after a grace period."""
    import contextlib
    import signal

    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + _KILL_GRACE
    while time.monotonic() < deadline and not _exited(pid):
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _exited(pid: int) -> bool:
    """True when `pid` has ended (without reaping it)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _wait(pid: int) -> int:
    """The exit code of `pid` (128 + N when killed by signal N, as shells report it)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            return -1
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code
