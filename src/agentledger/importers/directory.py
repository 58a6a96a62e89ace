"""Backfill: bring runs kept as plain directories into the ledger.

The seed's layout is understood as it is: one directory per run holding ``PROMPT.txt``,
``ghost_report_<date>.md``, ``ghost_audit_<date>.md``, ``shell_audit_<date>.jsonl`` and
optionally ``metadata.json`` and ``run_summary.json``. Other layouts are described with glob
patterns per artifact (`ImportOptions.mapping`); identity fields a run does not carry come from
a sidecar file, options, or the directory name (see `agentledger.importers.identity_fields`).

Importing is two steps. `plan_import` reads and checks every run and writes nothing, so a batch
with one bad run writes none. `write_plan` seals the new runs in batches (one flush to disk and
one index transaction per batch). `agentledger.importers.batch` runs both, in several processes
for large imports. What a plan holds is `agentledger.importers.plan`; how one run directory is
read and checked is `agentledger.importers.run_plan`.
"""

from __future__ import annotations

import contextlib
import gc
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from pathlib import Path

from agentledger.errors import ArtifactTooLargeError, InputError
from agentledger.importers.identity_fields import (
    load_sidecar,
)
from agentledger.importers.layout import (
    Layout,
)
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
from agentledger.importers.run_plan import PlanContext, plan_run, read_source
from agentledger.records import (
    DEFAULT_MAX_ARTIFACT_BYTES,
)
from agentledger.records.limits import check_storable
from agentledger.store.journal_upkeep import accept_runs
from agentledger.store.ledger import Ledger
from agentledger.store.sealing import RunContent
from agentledger.store.sizes import format_size
from agentledger.store.writer import METADATA, SUMMARY

__all__ = [
    "find_run_dirs",
    "plan_import",
    "plan_runs",
    "sample_runs_dir",
    "write_plan",
]

_gc_lock = threading.Lock()
_gc_depth = 0
_gc_saved: tuple[int, int, int] = (0, 0, 0)
_GC_THRESHOLDS = (50_000, 50, 100)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Run the cyclic garbage collector rarely while runs are planned or written.

    A plan holds many long-lived objects and makes almost no cycles: with the default
    thresholds, collections cost a tenth of the import. The previous thresholds come back at
    the end (the last of several concurrent imports restores them).
    """
    global _gc_depth, _gc_saved
    with _gc_lock:
        if _gc_depth == 0:
            _gc_saved = gc.get_threshold()
            if _gc_saved[0] > 0:  # a threshold of 0 turns collection off: leave it so
                gc.set_threshold(*map(max, _gc_saved, _GC_THRESHOLDS))
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_saved[0] > 0:
                gc.set_threshold(*_gc_saved)


def sample_runs_dir() -> Path:
    """The bundled sample runs (eight runs in the seed's layout), for the demo and the tests."""
    return Path(str(resources.files("agentledger") / "data" / "sample_runs"))


# -- finding runs ----------------------------------------------------------------------------


def _layout(options: ImportOptions) -> Layout:
    return Layout.build(options.mapping, options.name_pattern, options.exclude)


def find_run_dirs(paths: Sequence[Path], options: ImportOptions | None = None) -> list[Path]:
    """Each PATH is a run directory, or a directory whose subdirectories are runs."""
    return _layout(options or ImportOptions()).find_runs(paths)


# -- planning and writing --------------------------------------------------------------------


def import_limit(options: ImportOptions, ledger: Ledger | None) -> int:
    """The largest file the import accepts: --max-artifact-size, else the ledger's own limit."""
    return options.max_artifact_bytes or (
        ledger.config.max_artifact_bytes if ledger is not None else DEFAULT_MAX_ARTIFACT_BYTES
    )


def plan_runs(
    run_dirs: Sequence[Path],
    options: ImportOptions,
    *,
    ledger: Ledger | None = None,
    progress: Progress | None = None,
    real_paths: Sequence[str] | None = None,
    unchecked: bool = False,
    collect: bool = False,
) -> ImportPlan:
    """Read and check the given run directories; write nothing.

    `real_paths`, when known, are the directories' real paths (as `find_run_dirs` resolved
    them), so that they are not resolved again. `unchecked`: the directories were found with
    `find_runs_real(check=False)`; one that is not a run is refused here. Runs that cannot be
    imported are left out and listed in the plan's `problems` under `skip_invalid` or
    `collect` (the caller lists them with those of the import's other shares); otherwise they
    are raised, every one (`plan.refuse`).
    """
    if options.batch_size < 1:
        raise InputError("the batch size must be at least 1")
    limit = import_limit(options, ledger)
    prompt_file = options.system_prompt_file
    ctx = PlanContext(
        layout=_layout(options),
        options=options,
        limit=limit,
        sidecar=load_sidecar(options.sidecar) if options.sidecar else {},
        sidecar_origin=str(options.sidecar or ""),
        system_prompt=(read_source(prompt_file), str(prompt_file)) if prompt_file else None,
        ledger=ledger,
        unchecked=unchecked,
    )
    if real_paths is not None and len(real_paths) != len(run_dirs):
        raise ValueError("one real path per run directory")
    plan_one: Callable[[Path, PlanContext, str | None], PlannedRun] = plan_run
    if options.format not in (None, "directory"):
        from agentledger.importers.formats import planner

        plan_one = planner(options.format)
    try:
        runs, problems = _plan_each(run_dirs, ctx, plan_one, real_paths, progress)
        if not (options.skip_invalid or collect):
            refuse(problems)
    except BaseException:
        if ctx.spool is not None:
            shutil.rmtree(ctx.spool, ignore_errors=True)
        raise
    return ImportPlan(
        runs=runs,
        max_artifact_bytes=limit,
        batch_size=options.batch_size,
        spool=ctx.spool,
        problems=problems,
    )


def _check_sizes(run: PlannedRun, run_dir: Path, limit: int) -> None:
    """Every file the run would hold within the import's artifact limit, the files planning
    made (a trace.jsonl derived from a trajectory, a shell log, a report) as well as those
    read: found now, not while sealing, when other runs may be sealed already."""
    for artifact in run.artifacts:
        if artifact.size > limit:
            raise ArtifactTooLargeError(
                f"{run_dir}: the run's {artifact.name} would be {format_size(artifact.size)}, "
                f"over the {format_size(limit)} artifact size limit (raise it for this import "
                "with --max-artifact-size, or set max_artifact_bytes in ledger.json)"
            )


def _plan_each(
    run_dirs: Sequence[Path],
    ctx: PlanContext,
    plan_one: Callable[[Path, PlanContext, str | None], PlannedRun],
    real_paths: Sequence[str] | None,
    progress: Progress | None,
) -> tuple[list[PlannedRun], list[Problem]]:
    """The planned runs, and the problems of those that cannot be imported, in order (a run
    whose id an earlier one gives is one of them)."""
    runs: list[PlannedRun] = []
    problems: list[Problem] = []
    seen: dict[str, Path] = {}
    with _fewer_collections():
        for done, run_dir in enumerate(run_dirs, start=1):
            try:
                run = plan_one(run_dir, ctx, real_paths[done - 1] if real_paths else None)
                # What the ledger will write for the run must fit the index and read back:
                # checked now, so that a bad value refuses the import before anything is
                # written.
                check_storable(run.metadata, f"{run_dir}: the ledger's {METADATA} of this run")
                check_storable(run.summary, f"{run_dir}: the ledger's {SUMMARY} of this run")
                _check_sizes(run, run_dir, ctx.limit)
                if run.run_id in seen:
                    raise duplicate_run_id(run.run_id, seen[run.run_id], run_dir)
            except InputError as exc:
                problems.append(Problem(str(run_dir), exc))
            else:
                seen[run.run_id] = run_dir
                runs.append(run)
            if progress:
                progress(done, len(run_dirs))
    return runs, problems


def plan_import(
    paths: Sequence[Path],
    options: ImportOptions | None = None,
    *,
    ledger: Ledger | None = None,
    progress: Progress | None = None,
) -> ImportPlan:
    """Read and check every run under `paths` in this process; write nothing.

    Raises an InputError naming the file and field at the first bad run. With `ledger`, runs
    already stored are compared with it: identical ones are marked, different ones refused.
    """
    options = options or ImportOptions()
    found = _layout(options).find_runs_real(paths)
    return plan_runs(
        [path for path, _real in found],
        options,
        ledger=ledger,
        progress=progress,
        real_paths=[real for _path, real in found],
    )


def _content(run: PlannedRun) -> RunContent:
    # Planning validated the shell log and made the summary: the ledger need not parse it again.
    return RunContent(
        run.metadata,
        run.summary,
        [
            (artifact.name, artifact.data if artifact.data is not None else artifact.path or "")
            for artifact in run.artifacts
        ],
        checked=True,
    )


def write_plan(
    ledger: Ledger,
    plan: ImportPlan,
    *,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
) -> ImportReport:
    """Seal the plan's new runs in batches; runs already present and identical are skipped.

    `stop`, asked before each run is read, ends the import early and cleanly: the runs read
    so far are sealed (whole), the rest are not written (a worker told to stop by Ctrl-C).
    """
    report = ImportReport(identical=[run.run_id for run in plan.runs if run.identical])
    new = plan.new_runs

    def contents() -> Iterator[RunContent]:
        for run in new:
            if stop is not None and stop():
                return
            yield _content(run)

    try:
        with _fewer_collections():
            sealed = ledger.seal_runs(
                contents(),
                batch_size=plan.batch_size,
                max_artifact_bytes=plan.max_artifact_bytes,
                progress=(lambda done: progress(done, len(new))) if progress else None,
            )
    finally:
        plan.discard()
    report.imported.extend(result.run_id for result in sealed if not result.already)
    report.identical.extend(result.run_id for result in sealed if result.already)
    if report.identical:
        report.indexed = _index_missing(ledger, report.identical)
    return report


def _index_missing(ledger: Ledger, run_ids: Sequence[str]) -> list[str]:
    """Index the runs of `run_ids` that are sealed but not indexed (a killed import's), after
    accepting into the journal those it died before journaling."""
    accept_runs(ledger, run_ids)
    indexed = ledger.index.manifest_hashes()
    missing = [run_id for run_id in run_ids if run_id not in indexed]
    if not missing:
        return []
    entries = [ledger.load(run_id).index_entry() for run_id in missing]
    _added, left_out = ledger.index.add_each(entries)
    if left_out:
        run_id, why = left_out[0]
        raise InputError(f"run {run_id} is sealed but cannot be indexed: {why}")
    return missing
