"""Run an allowed command line with a shell, spool its output, and kill it on timeout.

The command runs as ``bash -c COMMAND`` (``/bin/sh -c`` where there is no bash) in a process
group of its own, so that a timeout kills everything it started (like `timeout`, the exit code
is then 124). Outside the sandbox it also gets a session of its own: no controlling terminal,
so it cannot write to or read from the approver's. Output goes to a bounded `Spool` (and,
when asked, straight on to the caller's own descriptors), never whole into memory.
A network reader (`netreaders`) runs from its checked words, without a shell, and the rest of
its line, if any, reads its output in a sandbox of its own. `os.posix_spawn` and
`select.poll` keep this module cheap to load.
"""

from __future__ import annotations

import os
import select
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from agentledger.runner.shell_gate.netreaders import NetworkGrant
    from agentledger.runner.shell_gate.sandbox import Sandbox
    from agentledger.runner.shell_gate.spool import Spool

__all__ = ["TIMEOUT_EXIT", "Completed", "find_shell", "run_shell"]

TIMEOUT_EXIT = 124
"""The exit code of a command killed on timeout (as `timeout` uses)."""
INTERRUPTED_EXIT = 130
_KILL_GRACE = 1.0
_CHUNK = 65536
_SHELLS = ("/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash")
_shell: str | None = None


class Completed:
    """What a command did: exit code, its output spools, duration, whether it was cut short."""

    __slots__ = ("duration_ms", "exit_code", "interrupted", "stderr", "stdout", "timed_out")

    def __init__(
        self,
        exit_code: int,
        stdout: Spool,
        stderr: Spool,
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
    grant: NetworkGrant | None = None,
    tee: tuple[int, int] | None = None,
    prefix: Sequence[str] = (),
) -> Completed:
    """Run `command` with the shell and wait for it, at most `timeout` seconds.

    `stdin` is a file descriptor to give the command (None: /dev/null). `prefix` is an argv
    the whole runs under (entering a lab host: `agentledger.runner.lab_shell`). KeyboardInterrupt
    while waiting kills the command and returns with `interrupted` set. With `sandbox` the
    command runs inside it, writable only in a scratch directory removed afterwards; a
    sandbox that cannot be set up raises SandboxUnavailableError (the command did not run).
    `grant` (with a sandbox) runs the network reader it names with the host's network. `tee`
    are descriptors that get the output as it comes (stdout, stderr), besides the spools.
    """
    if prefix:
        import shutil

        prefix = [shutil.which(prefix[0]) or prefix[0], *prefix[1:]]
    if sandbox is None:
        job = _Job([*prefix, *_shell_argv(command, cwd)], env, stdin)
        return _run([job], timeout, tee, session=True)
    from agentledger.runner.shell_gate.sandbox import make_scratch, remove_scratch

    scratch = make_scratch()
    jobs: list[_Job] = []
    try:
        place = cwd if cwd is not None else os.getcwd()
        from agentledger.runner.shell_gate.redact_key import hidden_dirs

        # In a lab the command enters the lab's own mounts, where these may not exist.
        hidden = () if prefix else hidden_dirs()
        if grant is None:
            jobs.append(_Job([find_shell(), "-c", command], env, stdin))
        else:
            jobs += _reader_jobs(grant, env)
        for job in jobs:
            job.status = os.pipe()
            os.set_inheritable(job.status[1], True)
            from agentledger.runner.shell_gate.seccomp import sandbox_filter_fd

            # no keyring call for any of them; Unix sockets only for a reader that needs one
            job.seccomp = sandbox_filter_fd(unix_sockets=job.unix_sockets)
            job.argv = sandbox.argv(
                job.argv,
                cwd=place,
                scratch=scratch,
                status_fd=job.status[1],
                host_network=job.host_network,
                capabilities=job.capabilities,
                seccomp_fd=job.seccomp,
                hidden=hidden,
            )
            job.argv = [*prefix, *job.argv]
        completed = _run(jobs, timeout, tee, session=False)
        started = all(sandbox.started(_read_ready(job.status[0])) for job in jobs)
    finally:
        for job in jobs:
            for fd in (*job.status, job.seccomp):
                if fd >= 0:
                    os.close(fd)
        remove_scratch(scratch)
    if not started and not (completed.timed_out or completed.interrupted):
        raise sandbox.failure(bytes(completed.stderr.head))
    return completed


class _Job:
    """One process to start: its argv, environment, standard input, and (in the sandbox)
    its status pipe, whether it keeps the host's network and which capabilities."""

    __slots__ = (
        "argv",
        "capabilities",
        "env",
        "host_network",
        "seccomp",
        "status",
        "stderr",
        "stdin",
        "unix_sockets",
    )

    def __init__(self, argv: list[str], env: Mapping[str, str] | None, stdin: int | None) -> None:
        self.argv = argv
        self.env = env
        self.stdin = stdin
        self.status = (-1, -1)
        self.host_network = False
        self.unix_sockets = False
        self.seccomp = -1
        self.capabilities: Sequence[str] = ()
        self.stderr = "pipe"


def _reader_jobs(grant: NetworkGrant, env: Mapping[str, str] | None) -> list[_Job]:
    """The network reader (host network, clean environment) and the rest of its line."""
    from agentledger.runner.shell_gate.netreaders import reader_environment

    reader = _Job(list(grant.argv), reader_environment(os.environ if env is None else env), None)
    reader.host_network = grant.host_network
    reader.unix_sockets = grant.unix_sockets
    reader.capabilities = grant.capabilities
    if grant.stderr_to_stdout:
        reader.stderr = "stdout"
    elif grant.stderr_to_null:
        reader.stderr = "null"
    if grant.rest is None:
        return [reader]
    return [reader, _Job([find_shell(), "-c", grant.rest], env, None)]


def _shell_argv(command: str, cwd: str | None) -> list[str]:
    """A command outside the sandbox: started by a first shell that sets the usual umask (the
    agent's could be 000: an approved `tee /etc/x` would leave a world-writable file) and,
    since posix_spawn cannot change directory before exec, goes to `cwd`."""
    shell = find_shell()
    place = "" if cwd is None else 'cd -- "$1" && '
    return [shell, "-c", f'umask 022 && {place}exec "$0" -c "$2"', shell, cwd or "", command]


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


def _run(
    jobs: list[_Job], timeout: float, tee: tuple[int, int] | None, *, session: bool
) -> Completed:
    """Start `jobs` as a pipeline in one process group, spool their output, wait for them.

    `session`: the first job gets a session of its own (outside the sandbox; bwrap makes
    one for each sandboxed job itself)."""
    from agentledger.runner.shell_gate.spool import Spool

    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    started = time.monotonic()
    pids: list[int] = []
    failure: OSError | None = None
    link_read = -1
    try:
        for index, job in enumerate(jobs):
            last = index == len(jobs) - 1
            link = (-1, -1) if last else os.pipe()
            stdout = out_write if last else link[1]
            actions = _actions(job, link_read, stdout, err_write)
            try:
                pids.append(_start(job, actions, pids, session=session))
            except OSError as exc:
                failure = exc
            finally:
                if link_read >= 0:
                    os.close(link_read)
                if not last:
                    os.close(link[1])
                link_read = link[0]
                if job.status[1] >= 0:
                    os.close(job.status[1])
                    job.status = (job.status[0], -1)
                if job.seccomp >= 0:
                    os.close(job.seccomp)
                    job.seccomp = -1
            if failure is not None:
                break
    finally:
        if link_read >= 0:
            os.close(link_read)
        os.close(out_write)
        os.close(err_write)
    spools = {out_read: Spool(), err_read: Spool()}
    if failure is not None and not pids:
        for fd in spools:
            os.close(fd)
        shell = jobs[0].argv[0]
        message = f"agentledger: cannot start {shell}: {failure.strerror or failure}\n".encode()
        code = 127 if isinstance(failure, FileNotFoundError) else 126
        return Completed(code, Spool(), Spool.of(message), (time.monotonic() - started) * 1000)
    sinks: dict[int, Callable[[bytes], None]] = {}
    if tee is not None:
        from agentledger.runner.shell_gate.terminal import writer_for

        sinks = {out_read: writer_for(tee[0]), err_read: writer_for(tee[1])}
    timed_out = interrupted = False
    try:
        timed_out = not _drain(spools, sinks, started + timeout)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if timed_out or interrupted:
            _kill_group(pids[0])
            _drain(spools, sinks, time.monotonic() + _KILL_GRACE)
        for fd in spools:
            os.close(fd)
        _flush(sinks)
    statuses = [_wait(pid) for pid in pids]
    status = statuses[-1]
    duration = (time.monotonic() - started) * 1000
    if timed_out:
        status = TIMEOUT_EXIT
    elif interrupted:
        status = INTERRUPTED_EXIT
    return Completed(
        status,
        spools[out_read],
        spools[err_read],
        duration,
        timed_out=timed_out,
        interrupted=interrupted,
    )


def _actions(job: _Job, stdin: int, stdout: int, stderr: int) -> list[tuple[object, ...]]:
    """posix_spawn's file actions: standard input, output and error of one job."""
    actions: list[tuple[object, ...]] = [(os.POSIX_SPAWN_DUP2, stdout, 1)]
    if job.stderr == "stdout":
        actions.append((os.POSIX_SPAWN_DUP2, stdout, 2))
    elif job.stderr == "null":
        actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0))
    else:
        actions.append((os.POSIX_SPAWN_DUP2, stderr, 2))
    if stdin >= 0:
        actions.append((os.POSIX_SPAWN_DUP2, stdin, 0))
    elif job.stdin is None:
        actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
    elif job.stdin != 0:
        actions.append((os.POSIX_SPAWN_DUP2, job.stdin, 0))
    keep = {job.status[1], job.seccomp}
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds() if fd not in keep]
    return actions


def _inherited_fds() -> list[int]:
    """Descriptors above 2 a started program would inherit: those the gate's caller left
    open (an agent harness's log file, a pipe to another process). The command gets none of
    them, or `echo x >&3` would write where the caller's descriptor 3 leads, in the sandbox
    as well (the redirection names no file a check could see)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = []
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the descriptor listdir itself used, closed since
                continue
    return found


def _start(job: _Job, actions: list[tuple[object, ...]], pids: list[int], *, session: bool) -> int:
    env = os.environ if job.env is None else job.env
    if session and not pids:
        return os.posix_spawn(job.argv[0], job.argv, env, file_actions=actions, setsid=True)
    group = pids[0] if pids else 0
    return os.posix_spawn(job.argv[0], job.argv, env, file_actions=actions, setpgroup=group)


def _drain(
    spools: dict[int, Spool], sinks: dict[int, Callable[[bytes], None]], deadline: float
) -> bool:
    """Read both pipes into their spools (and on to `sinks`) until they close (True) or the
    deadline passes (False)."""
    poller = select.poll()
    open_fds = set()
    for fd in spools:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        open_fds.add(fd)
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        for fd, _ in poller.poll(min(remaining, 3600.0) * 1000):
            data = os.read(fd, _CHUNK)
            if data:
                spools[fd].add(data)
                if fd in sinks:
                    _pass_on(sinks, fd, data)
            else:
                poller.unregister(fd)
                open_fds.discard(fd)
    return True


def _pass_on(sinks: dict[int, Callable[[bytes], None]], fd: int, data: bytes) -> None:
    """Pass `data` on to the caller's descriptor (a terminal gets it escaped, while no
    question is up: `terminal`); one that is gone is dropped (the spool and the command go
    on)."""
    try:
        sinks[fd](data)
    except OSError:
        del sinks[fd]


def _flush(sinks: dict[int, Callable[[bytes], None]]) -> None:
    """Write what a terminal's writer still holds (a question was up)."""
    for sink in sinks.values():
        flush = getattr(sink, "flush", None)
        if flush is not None:
            try:
                flush()
            except OSError:
                continue


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
