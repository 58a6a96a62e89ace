"""Running an import: check every run, then seal the new ones, in one process or several.

A large backfill is split into contiguous shares, one per process: this process takes the
first and a worker process each of the others (started while the runs are being found). Each
checks its share, keeps what it planned and reports every run it could not; only when every
share is good (and no run id repeats across shares) does each seal its own runs, in batches.
So the rule of the single-process import holds: one bad run anywhere and nothing is written,
and the error lists every bad run of every share (and every file finding them refused), in
the order they were found, whatever the number of processes. Under --skip-invalid the
others are sealed and those are listed as skipped.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import traceback
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentledger import errors
from agentledger.errors import AgentLedgerError, InputError
from agentledger.importers.directory import import_limit, plan_runs, write_plan
from agentledger.importers.formats import DIRECTORY, finder, resolve_format, without_excluded
from agentledger.importers.layout import Layout
from agentledger.importers.plan import (
    ImportOptions,
    ImportPlan,
    ImportReport,
    PlannedRun,
    Problem,
    Progress,
    duplicate_run_id,
    refuse,
)
from agentledger.importers.source_files import listing_refused
from agentledger.importers.workers import (
    PARALLEL_FROM,
    Worker,
    parallel_from,
    runs_at_most,
    take_early,
    worker_count,
)
from agentledger.store.ledger import Ledger

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

__all__ = [
    "PARALLEL_FROM",
    "ImportedRun",
    "PreparedImport",
    "import_runs",
    "prepare_import",
    "serve_worker",
]

_PROGRESS_EVERY = 50


@dataclass(frozen=True)
class ImportedRun:
    """One run of a prepared import: its id, where it comes from, whether it is stored already."""

    run_id: str
    directory: Path
    identical: bool
    original: str | None = None
    """The sha256 of the trace file it was read from (None for a run directory)."""


class PreparedImport(ABC):
    """Every run checked and nothing written yet; `commit` seals the new runs.

    Use as a context manager (or call `close`): with several workers it holds their processes.
    """

    def __init__(self, runs: list[ImportedRun]) -> None:
        self.runs = runs
        self.skipped: list[tuple[str, str]] = []
        """(path, why) of the runs left out under `ImportOptions.skip_invalid`."""
        self.format: str | None = None
        """The format the runs were read in (`ImportOptions.format`, detected when not given)."""

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


def _original(run: PlannedRun) -> str | None:
    """The sha256 of the trace file a planned run was read from, if it was."""
    digest = (run.metadata.source or {}).get("original_sha256")
    return digest if isinstance(digest, str) else None


class _InProcess(PreparedImport):
    def __init__(self, plan: ImportPlan, refused: list[Problem], options: ImportOptions) -> None:
        """`plan`: planned with `collect`; `refused`: the files finding the runs refused."""
        super().__init__(
            [ImportedRun(r.run_id, r.directory, r.identical, _original(r)) for r in plan.runs]
        )
        self.plan = plan
        problems = _in_order([*refused, *plan.problems])
        if problems and not options.skip_invalid:
            plan.discard()
            refuse(problems)
        self.skipped = [(problem.path, problem.why) for problem in problems]

    def commit(self, ledger: Ledger, *, progress: Progress | None = None) -> ImportReport:
        return write_plan(ledger, self.plan, progress=progress)

    def close(self) -> None:
        self.plan.discard()


# -- several processes ---------------------------------------------------------------------


def _error_message(exc: BaseException) -> tuple[Any, ...]:
    if isinstance(exc, AgentLedgerError):
        return ("error", type(exc).__name__, str(exc), dict(vars(exc)))
    return ("crash", "".join(traceback.format_exception(exc)))


def _in_order(problems: list[Problem]) -> list[Problem]:
    """The problems in the order their runs were found (the order of their paths), each path
    once: the same for any number of processes."""
    unique = {problem.path: problem for problem in reversed(problems)}
    return sorted(unique.values(), key=lambda problem: problem.path)


def _input_error(message: tuple[Any, ...]) -> InputError:
    """A worker's problem (`_error_message` of an InputError) as the error it was."""
    error = _rebuild(*message[1:])
    return error if isinstance(error, InputError) else InputError(str(error))


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
        try:
            first = inbox.recv()
        except EOFError:  # started ahead of need, then not needed
            return
        if first[0] != "share":
            return
        root, run_dirs, real_paths, options, unchecked = first[1:]
        ledger = Ledger.open(root) if root else None
        # Never look again at what importing modules left behind (planning and writing collect
        # rarely as well, see directory's _fewer_collections).
        gc.freeze()
        sent = 0

        def report(done: int, total: int | None) -> None:
            nonlocal sent
            if done - sent >= _PROGRESS_EVERY or done == total:
                outbox.send(("progress", done - sent))
                sent = done

        plan = plan_runs(
            [Path(d) for d in run_dirs],
            options,
            ledger=ledger,
            progress=report,
            real_paths=real_paths,
            unchecked=unchecked,
            collect=True,
        )
        planned = [(run.run_id, run.identical, _original(run)) for run in plan.runs]
        problems = [(problem.path, _error_message(problem.error)) for problem in plan.problems]
        outbox.send(("planned", (planned, problems)))
        try:
            order = inbox.recv()
        except EOFError:  # the parent went away: write nothing
            return
        if order[0] != "go":
            return
        _leave_out(plan, order[2])
        if ledger is None:
            ledger = Ledger.open(order[1])
        sent = 0
        stopping = False

        def stop() -> bool:
            # The parent's only word while this worker seals is "stop" (after Ctrl-C).
            nonlocal stopping
            if not stopping and inbox.poll():
                with contextlib.suppress(EOFError, OSError):
                    stopping = inbox.recv()[0] == "stop"
                stopping = True
            return stopping

        result = write_plan(ledger, plan, progress=report, stop=stop)
        outbox.send(("done", result.imported))
    except BaseException as exc:  # reported to the parent, which raises it
        with contextlib.suppress(OSError):
            outbox.send(_error_message(exc))
    finally:
        if ledger is not None:
            ledger.close()


def _leave_out(plan: ImportPlan, run_ids: set[str]) -> None:
    """Drop from `plan` the runs of `run_ids` (a run id an earlier share gives, skipped)."""
    if run_ids:
        plan.runs[:] = [run for run in plan.runs if run.run_id not in run_ids]


def serve_worker(inbox: int | None = None, outbox: int | None = None) -> None:
    """Entry point of a worker process (`workers.Worker`): ``python -c ... IN PARENT_OUT PID``
    (the pipe from the parent, the pipe to it, and the parent's pid, watched from the start),
    or the two pipes given (a forked worker)."""
    from multiprocessing.connection import Connection

    if inbox is None or outbox is None:
        inbox, outbox = int(sys.argv[1]), int(sys.argv[2])
    _worker(Connection(inbox, writable=False), Connection(outbox, readable=False))
    # Everything is reported and the ledger is closed; the parent waits for this process to
    # end, so skip freeing the plan object by object.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class _Phase:
    """What the workers report during one phase (checking, then sealing), with this process's
    own progress: the caller's progress callback sees the sum."""

    def __init__(
        self, workers: list[Worker], kind: str, total: int, progress: Progress | None
    ) -> None:
        self.kind = kind
        self.total = total
        self.progress = progress
        self.pending = {index: worker.inbox for index, worker in enumerate(workers)}
        self.count = len(workers)
        self.results: dict[int, Any] = {}
        self.failures: dict[int, tuple[Any, ...]] = {}
        self.own = 0
        self.others = 0

    def _receive(self, timeout: float | None) -> None:
        from multiprocessing.connection import wait  # loaded once there are workers

        ready = {id(conn) for conn in wait(list(self.pending.values()), timeout)}
        for index in [i for i, conn in self.pending.items() if id(conn) in ready]:
            message: tuple[Any, ...]
            try:
                message = self.pending[index].recv()
            except EOFError:
                message = ("crash", f"import worker {index} exited without a word")
            if message[0] == "progress":
                self.others += message[1]
                continue
            del self.pending[index]
            if message[0] == self.kind:
                self.results[index] = message[1]
            else:
                self.failures[index] = message

    def _report(self) -> None:
        if self.progress:
            self.progress(self.own + self.others, self.total)

    def own_progress(self, done: int, total: int | None) -> None:
        """This process's progress callback: also takes in what the workers said meanwhile."""
        self.own = done
        if self.pending and (done % _PROGRESS_EVERY == 0 or done == total):
            self._receive(0)
        self._report()

    def finish(self) -> list[Any]:
        """Wait for every worker's result; raise the first share's error, if any."""
        while self.pending:
            self._receive(None)
            self._report()
        if self.failures:
            failure = self.failures[min(self.failures)]
            if failure[0] == "error":
                raise _rebuild(failure[1], failure[2], failure[3])
            raise RuntimeError(f"an import worker failed:\n{failure[1]}")
        return [self.results[index] for index in range(self.count)]


class _Workers(PreparedImport):
    """This process checks and seals the first share of the runs, worker processes the others.

    Every share reports all its problems; they are listed together, in the order of their
    paths, as when one process checks every run.
    """

    def __init__(
        self,
        run_dirs: list[tuple[Path, str]],
        options: ImportOptions,
        ledger: Ledger | None,
        workers: list[Worker],
        progress: Progress | None,
        unchecked: bool = False,
        refused: list[Problem] | None = None,
    ) -> None:
        """Check `run_dirs` (each with its real path): the first share here, one per worker.

        `unchecked`: whether each directory is a run is still to be checked (while planning).
        `refused`: the files finding the runs refused, listed with the shares' problems.
        """
        super().__init__([])
        self.plan: ImportPlan | None = None
        self.left_out: list[set[str]] = []
        """Per worker, the run ids it planned that an earlier share gives (skipped)."""
        size = -(-len(run_dirs) // (len(workers) + 1))
        shares = [run_dirs[i : i + size] for i in range(0, len(run_dirs), size)]
        own, others = shares[0], shares[1:]
        self.workers = workers
        try:
            for worker in workers[len(others) :]:
                worker.close()
            del self.workers[len(others) :]
            for worker, share in zip(self.workers, others, strict=True):
                worker.start(ledger.root if ledger else None, share, options, unchecked)
            phase = _Phase(self.workers, "planned", len(run_dirs), progress)
            self.plan = plan_runs(
                [path for path, _real in own],
                options,
                ledger=ledger,
                progress=phase.own_progress,
                real_paths=[real for _path, real in own],
                unchecked=unchecked,
                collect=True,
            )
            own_planned = [(run.run_id, run.identical, _original(run)) for run in self.plan.runs]
            own_problems = [(p.path, _error_message(p.error)) for p in self.plan.problems]
            planned = [(own_planned, own_problems), *phase.finish()]
            problems = self._gather(shares, planned, list(refused or ()))
            if not options.skip_invalid:
                refuse(problems)
            self.skipped = [(problem.path, problem.why) for problem in problems]
        except BaseException:
            # Nothing is written while runs are checked: no need to let the workers finish.
            for worker in self.workers:
                worker.close(now=True)
            self.workers = []
            if self.plan is not None:
                self.plan.discard()
            raise

    def _gather(
        self,
        shares: list[list[tuple[Path, str]]],
        planned: list[tuple[list[tuple[str, bool, str | None]], list[tuple[str, Any]]]],
        problems: list[Problem],
    ) -> list[Problem]:
        """Take in each share's runs, in order; the problems of every share (and a run whose
        id an earlier share gives) added to `problems`, returned in order."""
        seen: dict[str, Path] = {}
        for index, (share, (results, share_problems)) in enumerate(
            zip(shares, planned, strict=True)
        ):
            problems.extend(Problem(path, _input_error(error)) for path, error in share_problems)
            left_out = {path for path, _error in share_problems}
            kept = [entry for entry in share if str(entry[0]) not in left_out]
            doubled: set[str] = set()
            for (directory, _real), (run_id, identical, original) in zip(
                kept, results, strict=True
            ):
                if run_id in seen:
                    problems.append(
                        Problem(str(directory), duplicate_run_id(run_id, seen[run_id], directory))
                    )
                    doubled.add(run_id)
                    continue
                seen[run_id] = directory
                self.runs.append(ImportedRun(run_id, directory, identical, original))
            if index:
                self.left_out.append(doubled)
        return _in_order(problems)

    def commit(self, ledger: Ledger, *, progress: Progress | None = None) -> ImportReport:
        if self.workers and not ledger.storage.shared_between_processes:
            self.close()
            raise InputError(
                f"the storage of {ledger.root} ({ledger.storage.uri}) is not shared between "
                "processes; import into it with one worker"
            )
        try:
            for worker, left_out in zip(self.workers, self.left_out, strict=True):
                worker.outbox.send(("go", str(ledger.root), left_out))
            phase = _Phase(self.workers, "done", len(self.new_runs), progress)
            try:
                assert self.plan is not None
                own = write_plan(ledger, self.plan, progress=phase.own_progress)
                imported = [own.imported, *phase.finish()]
            except BaseException as exc:
                # The workers seal complete runs of their own. On Ctrl-C they are told to stop
                # after the run they are reading; either way, wait for what they sealed.
                if isinstance(exc, KeyboardInterrupt):
                    for worker in self.workers:
                        with contextlib.suppress(OSError, ValueError):
                            worker.outbox.send(("stop",))
                with contextlib.suppress(Exception):
                    phase.finish()
                raise
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
        if self.plan is not None:
            self.plan.discard()


def prepare_import(
    paths: Sequence[Path],
    options: ImportOptions | None = None,
    *,
    ledger: Ledger | None = None,
    progress: Progress | None = None,
) -> PreparedImport:
    """Find and check every run under `paths` (in several processes when there are many).

    Raises an InputError naming the file and field of every bad run (unless
    `options.skip_invalid`: then they are the prepared import's `skipped`); nothing is written.
    `ledger`, when given, is the ledger to compare with: runs stored with identical content are
    marked, the same run id with different content is refused.
    """
    options = resolve_format(paths, options or ImportOptions())
    layout = Layout.build(options.mapping, options.name_pattern, options.exclude)
    find = finder(options.format or DIRECTORY)
    # Worker processes take a moment to start: when the import looks large, they start now
    # and get ready while the runs are being found (a command may have started them already).
    workers = take_early()  # besides this process
    try:
        kind = options.format
        if not workers:
            runs = runs_at_most(paths, parallel_from(kind), kind)
            early = worker_count(options.workers, runs, import_format=kind)
            while len(workers) < early - 1:  # appended one by one: closed if one fails
                workers.append(Worker())
        # Whether each subdirectory is a run is checked while it is planned (from the listing
        # planning makes anyway, in the worker's share), not here one listing at a time. A
        # file refused here (a link out of the folder...) is listed with the runs' problems.
        with listing_refused() as listed:
            try:
                if find is None:
                    found = layout.find_runs_real(paths, check=False)
                else:
                    if layout.exclude is not None and kind is not None:
                        paths = without_excluded(paths, kind, layout.exclude)
                    found = find(paths, import_limit(options, ledger))
            except InputError:
                # ("no trace file here"): the files refused are why none was found
                refuse(_in_order([Problem(str(path), error) for path, error in listed]))
                raise
        refused = [Problem(str(path), error) for path, error in listed]
        count = worker_count(options.workers, len(found), import_format=kind)
        if ledger is not None and not ledger.storage.shared_between_processes:
            count = 1  # another process would write into storage of its own
        if count <= 1:
            for worker in workers:
                worker.close()
            prepared: PreparedImport = _InProcess(
                plan_runs(
                    [path for path, _real in found],
                    options,
                    ledger=ledger,
                    progress=progress,
                    real_paths=[real for _path, real in found],
                    unchecked=True,
                    collect=True,
                ),
                refused,
                options,
            )
            prepared.format = kind
            return prepared
        while len(workers) < count - 1:
            workers.append(Worker())
    except BaseException:
        for worker in workers:
            worker.close()
        raise
    # (closes the workers it does not need)
    prepared = _Workers(found, options, ledger, workers, progress, unchecked=True, refused=refused)
    prepared.format = kind
    return prepared


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
