"""The worker processes of a large import, and starting them before the rest is loaded.

On Linux, in a process running one thread (the `agentledger import` command), a worker is
this process forked once the library is loaded (`forks`): it starts with every module the
import uses, where a new interpreter takes about 0.3 s of CPU to import agentledger (1.2 to
3 s of an import's CPU went there, two workers per folder of five). Only the pipes are
shared: the child closes the other workers' ends, never returns into the caller's code
(`os._exit`), and freezes the garbage collector, so nothing the parent holds is finalised
twice.

Elsewhere (another system, or a process with threads, where a fork could copy a lock held
mid-use), a worker is a new interpreter (not multiprocessing: the caller's __main__ is never
re-imported). This module imports nothing of agentledger, so a command can then start the
workers first (`start_early`) and load the library while they load theirs, on the other
CPUs; `agentledger.importers.batch` takes them (`take_early`) when the import is prepared.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "MAX_WORKERS",
    "PARALLEL_FROM",
    "TRACE_PARALLEL_FROM",
    "Worker",
    "close_early",
    "die_with_parent",
    "entries_at_most",
    "forks",
    "parallel_from",
    "runs_at_most",
    "start_early",
    "take_early",
    "worker_count",
]

# Below this many runs, starting processes costs more than it saves.
PARALLEL_FROM = 1000
# A trace file costs several times a run directory to check and seal (every event parsed,
# trace.jsonl and the shell log written, about 6 ms of CPU for an OpenHands trajectory of
# 250 KB): a worker's start (about 0.4 s of CPU) is paid back from fewer runs. 150
# trajectories took 1.9 s of CPU in one process and 3.1 s in three (docs/traces.md).
TRACE_PARALLEL_FROM = 300
MAX_WORKERS = 8
# The trace formats with one run per file, and the files that are runs in each.
_TRACE_FILES: dict[str, tuple[str, str]] = {
    "openhands": ("traj_", ".json"),  # (start of the name, its end)
    "jsonl": ("", ".jsonl"),
}

# The worker arms its parent watch before anything else, so a parent killed while the worker
# was still loading the library is noticed too.
_WORKER_CODE = (
    "import sys; from agentledger.importers.workers import die_with_parent; "
    "die_with_parent(int(sys.argv[3])); "
    "from agentledger.importers.batch import serve_worker; serve_worker()"
)
# How often a worker checks that its parent is alive (when the kernel cannot tell it).
_PARENT_POLL_S = 0.05
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """End this process as soon as `parent_pid` (the importing command) is gone, and leave
    Ctrl-C to the command.

    A worker seals runs on its own: if the command is killed (`kill -9`, an OOM kill), a
    worker that lived on would keep adding runs nobody asked for any more. On Linux the kernel
    sends SIGKILL when the parent dies (PR_SET_PDEATHSIG); everywhere, a daemon thread also
    watches the parent id, which changes when the parent is gone (the worker is re-parented).
    """
    import signal
    import threading
    import time

    # Ctrl-C at a terminal reaches the whole process group: the command handles it (it stops
    # its workers and says what was written); a worker must not die mid-message on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the watch was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(_PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def parallel_from(import_format: str | None) -> int:
    """From how many runs an import of `import_format` (None: run directories) starts workers."""
    return TRACE_PARALLEL_FROM if import_format in _TRACE_FILES else PARALLEL_FROM


def worker_count(requested: int | None, runs: int, *, import_format: str | None = None) -> int:
    """How many processes (this one included) import `runs` runs of `import_format`;
    `requested`: --workers."""
    if requested is not None:
        return max(1, min(requested, runs))
    if runs < parallel_from(import_format):
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    # One process more than CPUs: sealing waits on the kernel (creating files, flushing to
    # disk), and the extra process keeps the CPUs busy meanwhile. On 2 CPUs with slow file
    # creation, 3 processes imported 10,000 runs 15-20% faster than 2; on a quiet filesystem
    # the difference was within the noise (docs/benchmarks.md).
    return max(1, min(cpus + 1, MAX_WORKERS))


def runs_at_most(paths: Sequence[Path], limit: int, import_format: str | None = None) -> int:
    """About how many runs of `import_format` `paths` hold, counting up to `limit`: entries of
    a directory of runs, or trace files anywhere below (a folder of model folders)."""
    if import_format not in _TRACE_FILES:
        return entries_at_most(paths, limit)
    start, end = _TRACE_FILES[import_format]
    count = 0
    pending = list(paths)
    while pending and count < limit:
        path = pending.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
                    elif entry.name.startswith(start) and entry.name.endswith(end):
                        count += 1
        except NotADirectoryError:
            count += 1  # a trace file given itself
        except OSError:
            continue  # reported properly when the runs are found
    return min(count, limit)


def entries_at_most(paths: Sequence[Path], limit: int) -> int:
    """How many entries `paths` hold (a directory of runs, or a run), counting up to `limit`."""
    count = 0
    for path in paths:
        try:
            with os.scandir(path) as entries:
                for _entry in entries:
                    count += 1
                    if count >= limit:
                        return count
        except OSError:
            continue  # reported properly when the runs are found
    return count


def forks() -> bool:
    """Whether a worker is this process forked (on Linux, with one thread running), rather
    than a new interpreter."""
    if not _FORK or not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


# False: workers are always new interpreters (a test of that path).
_FORK = True
# This process's ends of the pipes of its forked workers: a worker forked later closes them,
# so that each worker sees the end of its own pipe when this process closes it.
_parent_ends: set[int] = set()


class _Forked:
    """A forked worker, as much of `subprocess.Popen` as `Worker` uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere
                self.returncode = -1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            if self.returncode is None:
                try:
                    _pid, status = os.waitpid(self.pid, 0)
                    self.returncode = os.waitstatus_to_exitcode(status)
                except ChildProcessError:  # reaped elsewhere
                    self.returncode = -1
            return self.returncode
        deadline = time.monotonic() + timeout
        pause = 0.001
        while (code := self.poll()) is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"import worker {self.pid}", timeout)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        return code

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


class Worker:
    """A worker process and the two pipes to talk with it."""

    def __init__(self) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        try:
            if forks():
                self.process: subprocess.Popen[bytes] | _Forked = _fork(down_r, up_w, down_w, up_r)
            else:
                env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
                self.process = subprocess.Popen(
                    [sys.executable, "-c", _WORKER_CODE, str(down_r), str(up_w), str(os.getpid())],
                    pass_fds=(down_r, up_w),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    env=env,
                )
        except BaseException:
            for fd in (down_r, down_w, up_r, up_w):
                os.close(fd)
            raise
        os.close(down_r)
        os.close(up_w)
        # Loaded here, once a worker starts: an import in one process does without it.
        from multiprocessing.connection import Connection

        if isinstance(self.process, _Forked):
            _parent_ends.update((down_w, up_r))
        self.outbox = Connection(down_w, readable=False)
        self.inbox = Connection(up_r, writable=False)

    def start(
        self, root: Path | None, share: list[tuple[Path, str]], options: object, unchecked: bool
    ) -> None:
        """Give the worker its share of run directories (with their real paths) to check,
        with the import's options (an ImportOptions) and the ledger to compare with."""
        self.outbox.send(
            (
                "share",
                str(root) if root else None,
                [str(path) for path, _real in share],
                [real for _path, real in share],
                options,
                unchecked,
            )
        )

    def close(self, *, now: bool = False) -> None:
        """Tell the worker to stop and wait for it; `now`: kill it (it has written nothing)."""
        if now:
            with contextlib.suppress(OSError):
                self.process.kill()
        with contextlib.suppress(OSError, ValueError):
            self.outbox.send(("stop",))
        for connection in (self.outbox, self.inbox):
            if not connection.closed:
                _parent_ends.discard(connection.fileno())
            connection.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _fork(down_r: int, up_w: int, down_w: int, up_r: int) -> _Forked:
    """This process forked into a worker reading `down_r` and writing `up_w` (the parent
    keeps `down_w` and `up_r`); the child never returns."""
    import gc

    for stream in (sys.stdout, sys.stderr):  # what is buffered is written once, by the parent
        with contextlib.suppress(Exception):
            stream.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return _Forked(pid)
    code = 1
    try:
        # What the parent holds stays as it is: no collection here finalises its objects.
        gc.freeze()
        for fd in (down_w, up_r, *_parent_ends):
            with contextlib.suppress(OSError):
                os.close(fd)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        die_with_parent(parent)
        from agentledger.importers.batch import serve_worker

        serve_worker(down_r, up_w)
        code = 0
    except BaseException:  # the parent hears of it: the pipe ends without a word
        with contextlib.suppress(Exception):
            import traceback

            traceback.print_exc()
    finally:
        os._exit(code)


_early: list[Worker] = []


def start_early(
    paths: Sequence[Path], requested: int | None, *, import_format: str | None = None
) -> int:
    """Start the workers an import of `paths` (in `import_format`, None: not named) will want,
    now; how many were started.

    For a command that imports the library after this: the workers get ready meanwhile.
    """
    if forks():
        return 0  # forked once the library is loaded, when the import is prepared
    limit = parallel_from(import_format)
    runs = runs_at_most(paths, limit, import_format)
    count = worker_count(requested, runs, import_format=import_format) - 1
    while len(_early) < count:
        _early.append(Worker())
    return count


def take_early() -> list[Worker]:
    """The workers `start_early` started (the caller now owns them)."""
    taken = _early[:]
    _early.clear()
    return taken


def close_early() -> None:
    """Stop the early workers nobody took (the command failed before its import started)."""
    for worker in take_early():
        worker.close(now=True)
