"""Running an import: check every run, then seal the new ones, in one process or several.

A large backfill is split over worker processes. Each worker checks its share of the runs and
reports; only when every share is good (and no run id repeats across shares) are the workers
told to seal, each its own runs, in batches. So the rule of the single-process import holds:
one bad run anywhere and nothing is written.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import TracebackType
from typing import Any

from agentledger import errors
from agentledger.errors import AgentLedgerError, InputError
from agentledger.importers.directory import (
    ImportOptions,
    ImportPlan,
    ImportReport,
    Progress,
    duplicate_run_id,
    find_run_dirs,
    plan_runs,
    write_plan,
)
from agentledger.store.ledger import Ledger

__all__ = [
    "PARALLEL_FROM",
    "ImportedRun",
    "PreparedImport",
    "import_runs",
    "prepare_import",
    "serve_worker",
]

# Below this many runs, starting processes costs more than it saves.
PARALLEL_FROM = 1000
MAX_WORKERS = 8
_PROGRESS_EVERY = 50


@dataclass(frozen=True)
class ImportedRun:
    """One run of a prepared import: its id, where it comes from, whether it is stored already."""

    run_id: str
    directory: Path
    identical: bool


def _worker_count(options: ImportOptions, runs: int) -> int:
    if options.workers is not None:
        return max(1, min(options.workers, runs))
    if runs < PARALLEL_FROM:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


class PreparedImport(ABC):
    """Every run checked and nothing written yet; `commit` seals the new runs.

    Use as a context manager (or call `close`): with several workers it holds their processes.
    """

    def __init__(self, runs: list[ImportedRun]) -> None:
        self.runs = runs

    @property
    def new_runs(self) -> list[ImportedRun]:
        return [run for run in self.runs if not run.identical]

    @abstractmethod
    def commit(self, ledger: Ledger, *, progress: Progress | None = None) -> ImportReport:
        """Seal the new runs into `ledger` (the one checked against, or a new empty one)."""

    def close(self) -> None:  # noqa: B027 (nothing to release in one process)
        """Release what the preparation holds; uncommitted runs are not written."""

    def __enter__(self) -> PreparedImport:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _InProcess(PreparedImport):
    def __init__(self, plan: ImportPlan) -> None:
        super().__init__([ImportedRun(r.run_id, r.directory, r.identical) for r in plan.runs])
        self.plan = plan

    def commit(self, ledger: Ledger, *, progress: Progress | None = None) -> ImportReport:
        return write_plan(ledger, self.plan, progress=progress)


# -- several processes ---------------------------------------------------------------------


def _error_message(exc: BaseException) -> tuple[Any, ...]:
    if isinstance(exc, AgentLedgerError):
        return ("error", type(exc).__name__, str(exc), dict(vars(exc)))
    return ("crash", "".join(traceback.format_exception(exc)))


def _rebuild(name: str, message: str, attrs: dict[str, Any]) -> AgentLedgerError:
    """The worker's exception, with its class (for the exit code) and message."""
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, AgentLedgerError)):
        cls = InputError
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.__dict__.update(attrs)
    return exc


def _worker(inbox: Connection, outbox: Connection) -> None:
    """Check a share of the runs, wait for the word, seal them (in a worker process)."""
    ledger = None
    try:
        root, run_dirs, options = inbox.recv()
        ledger = Ledger.open(root) if root else None
        sent = 0

        def report(done: int, total: int | None) -> None:
            nonlocal sent
            if done - sent >= _PROGRESS_EVERY or done == total:
                outbox.send(("progress", done - sent))
                sent = done

        plan = plan_runs([Path(d) for d in run_dirs], options, ledger=ledger, progress=report)
        outbox.send(("planned", [(run.run_id, run.identical) for run in plan.runs]))
        try:
            order = inbox.recv()
        except EOFError:  # the parent went away: write nothing
            return
        if order[0] != "go":
            return
        if ledger is None:
            ledger = Ledger.open(order[1])
        sent = 0
        result = write_plan(ledger, plan, progress=report)
        outbox.send(("done", result.imported))
    except BaseException as exc:  # reported to the parent, which raises it
        with contextlib.suppress(OSError):
            outbox.send(_error_message(exc))
    finally:
        if ledger is not None:
            ledger.close()


def serve_worker() -> None:
    """Entry point of a worker process: ``python -c ... INBOX_FD OUTBOX_FD``."""
    _worker(
        Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False)
    )


_WORKER_CODE = "from agentledger.importers.batch import serve_worker; serve_worker()"


class _Worker:
    """A worker process and the two pipes to talk with it.

    A plain subprocess rather than multiprocessing: nothing is inherited by fork (no SQLite
    connection, no threads), and the caller's __main__ is never re-imported.
    """

    def __init__(self, root: Path | None, share: list[Path], options: ImportOptions) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, str(down_r), str(up_w)],
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
        self.outbox = Connection(down_w, readable=False)
        self.inbox = Connection(up_r, writable=False)
        self.outbox.send((str(root) if root else None, [str(d) for d in share], options))

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.outbox.send(("stop",))
        self.outbox.close()
        self.inbox.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Workers(PreparedImport):
    def __init__(
        self,
        run_dirs: list[Path],
        options: ImportOptions,
        root: Path | None,
        count: int,
        progress: Progress | None,
    ) -> None:
        super().__init__([])
        size = -(-len(run_dirs) // count)
        shares = [run_dirs[i : i + size] for i in range(0, len(run_dirs), size)]
        self.workers: list[_Worker] = []
        try:
            for share in shares:
                self.workers.append(_Worker(root, share, options))
            planned = self._gather("planned", len(run_dirs), progress)
            seen: dict[str, Path] = {}
            for share, results in zip(shares, planned, strict=True):
                for directory, (run_id, identical) in zip(share, results, strict=True):
                    if run_id in seen:
                        raise duplicate_run_id(run_id, seen[run_id], directory)
                    seen[run_id] = directory
                    self.runs.append(ImportedRun(run_id, directory, identical))
        except BaseException:
            self.close()
            raise

    def _gather(self, kind: str, total: int, progress: Progress | None) -> list[Any]:
        """Wait for every worker's `kind` message; raise the first share's error, if any."""
        results: dict[int, Any] = {}
        failures: dict[int, tuple[Any, ...]] = {}
        done = 0
        pending = {index: worker.inbox for index, worker in enumerate(self.workers)}
        while pending:
            ready = {id(conn) for conn in wait(list(pending.values()))}
            for index in [i for i, conn in pending.items() if id(conn) in ready]:
                message: tuple[Any, ...]
                try:
                    message = pending[index].recv()
                except EOFError:
                    message = ("crash", f"import worker {index} exited without a word")
                if message[0] == "progress":
                    done += message[1]
                    if progress:
                        progress(done, total)
                    continue
                del pending[index]
                if message[0] == kind:
                    results[index] = message[1]
                else:
                    failures[index] = message
        if failures:
            failure = failures[min(failures)]
            if failure[0] == "error":
                raise _rebuild(failure[1], failure[2], failure[3])
            raise RuntimeError(f"an import worker failed:\n{failure[1]}")
        return [results[index] for index in range(len(self.workers))]

    def commit(self, ledger: Ledger, *, progress: Progress | None = None) -> ImportReport:
        try:
            for worker in self.workers:
                worker.outbox.send(("go", str(ledger.root)))
            imported = self._gather("done", len(self.new_runs), progress)
        finally:
            self.close()
        return ImportReport(
            imported=[run_id for share in imported for run_id in share],
            identical=[run.run_id for run in self.runs if run.identical],
        )

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        self.workers = []


def prepare_import(
    paths: Sequence[Path],
    options: ImportOptions | None = None,
    *,
    ledger: Ledger | None = None,
    progress: Progress | None = None,
) -> PreparedImport:
    """Find and check every run under `paths` (in several processes when there are many).

    Raises an InputError naming the file and field of the first bad run; nothing is written.
    `ledger`, when given, is the ledger to compare with: runs stored with identical content are
    marked, the same run id with different content is refused.
    """
    options = options or ImportOptions()
    run_dirs = find_run_dirs(paths, options)
    workers = _worker_count(options, len(run_dirs))
    if workers <= 1:
        return _InProcess(plan_runs(run_dirs, options, ledger=ledger, progress=progress))
    return _Workers(run_dirs, options, ledger.root if ledger else None, workers, progress)


def import_runs(
    ledger: Ledger,
    paths: Sequence[Path],
    options: ImportOptions | None = None,
    *,
    progress: Progress | None = None,
) -> ImportReport:
    """Check every run under `paths`, then seal the new ones; nothing is written if one is bad.

    `progress(done, total)` is called while checking, then again from zero while sealing.
    """
    with prepare_import(paths, options, ledger=ledger, progress=progress) as prepared:
        return prepared.commit(ledger, progress=progress)
