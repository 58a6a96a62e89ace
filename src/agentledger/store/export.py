"""Exports of the index: the seed's run_index.json shape, CSV, and JSON lines; and where an
export is written (`written_beside`). Parquet tables and OTLP spans are
`agentledger.store.export_parquet` and `agentledger.store.export_otel`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Collection, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from agentledger.errors import InputError
from agentledger.records.csv_cells import CsvOut
from agentledger.store import IndexedRun

__all__ = [
    "ALL_EXPORT_FORMATS",
    "EXPORT_FORMATS",
    "ROW_COLUMNS",
    "run_record",
    "run_row",
    "write_export",
    "written_beside",
]

EXPORT_FORMATS = ("run-index", "csv", "jsonl")
# With the formats of their own modules: parquet (a directory of tables) and otel (OTLP JSON).
ALL_EXPORT_FORMATS = (*EXPORT_FORMATS, "otel", "parquet")

# The flat columns of a run, for tables and CSV.
ROW_COLUMNS = (
    "run_id",
    "scenario",
    "model",
    "model_served",
    "system_prompt_hash",
    "variant",
    "agent_commit",
    "started_at",
    "backfilled",
    "commands_run",
    "commands_denied",
    "exit_status",
    "kind",
)


def run_row(run: IndexedRun) -> dict[str, Any]:
    """A run as one flat row of ROW_COLUMNS."""
    meta = run.metadata
    return {
        "run_id": run.run_id,
        "scenario": run.scenario,
        "model": run.model,
        "model_served": run.model_served,
        "system_prompt_hash": run.system_prompt_hash,
        "variant": run.variant,
        "agent_commit": (meta.get("agent") or {}).get("commit"),
        "started_at": meta.get("started_at"),
        "backfilled": run.backfilled,
        "commands_run": run.commands_run,
        "commands_denied": run.commands_denied,
        "exit_status": run.exit_status,
        "kind": run.kind,
    }


def run_record(run: IndexedRun) -> dict[str, Any]:
    """A run as one JSON object: its full metadata, its summary, and where it is stored."""
    record = run.metadata
    record["kind"] = run.kind  # metadata indexed before kinds existed has none
    record["summary"] = run.summary
    record["sealed_at"] = run.sealed_at
    record["manifest_sha256"] = run.manifest_sha256
    record["path"] = f"runs/{run.run_id}"
    return record


def write_export(runs: Iterable[IndexedRun], fmt: str, out: TextIO) -> int:
    """Write `runs` to `out` in `fmt` (see EXPORT_FORMATS); returns how many were written."""
    count = 0
    if fmt == "csv":
        writer = CsvOut(out, list(ROW_COLUMNS))
        writer.writeheader()
        for run in runs:
            writer.writerow(run_row(run))
            count += 1
    elif fmt == "jsonl":
        for run in runs:
            out.write(json.dumps(run_record(run), ensure_ascii=False) + "\n")
            count += 1
    elif fmt == "run-index":
        records = [run_record(run) for run in runs]
        count = len(records)
        document = {
            "schema_version": 1,
            "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "count": count,
            "runs": records,
        }
        out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        raise ValueError(
            f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}"
        )
    return count


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _check_target(
    path: Path, *, directory: bool, force: bool, replaceable: Collection[str]
) -> None:
    """Refuse a target that exists (unless `force`, and only a file, or a directory of nothing
    but `replaceable` names) or whose directory cannot be written."""
    parent = path.parent if str(path.parent) else Path()
    if not parent.is_dir():
        raise InputError(f"{path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{path}: cannot write in {parent} (permission denied)")
    if not (path.exists() or path.is_symlink()):
        return
    if path.is_dir() and not directory:
        raise InputError(f"{path} is a directory; give the path of a file to write")
    if not path.is_dir() and directory:
        raise InputError(f"{path} exists and is not a directory; give a new directory's path")
    if not force:
        raise InputError(f"{path} exists; give another path, or --force to replace it")
    if directory and any(entry.name not in replaceable for entry in path.iterdir()):
        raise InputError(
            f"{path} holds files that are not an export ({', '.join(sorted(replaceable))}); "
            "it is not replaced"
        )


@contextlib.contextmanager
def written_beside(
    path: Path,
    *,
    directory: bool = False,
    force: bool = False,
    replaceable: Collection[str] = (),
) -> Iterator[Path]:
    """A temporary file (or directory) beside `path` to write the export into; renamed to
    `path` when the block ends, removed if it raises: a reader never sees half an export.

    Raises InputError, before anything is written, when `path` exists (unless `force`: a file,
    or a directory holding only `replaceable` names), is a directory where a file is wanted,
    or its directory is missing or not writable.
    """
    _check_target(path, directory=directory, force=force, replaceable=replaceable)
    parent = path.parent if str(path.parent) else Path()
    prefix = f".{path.name}."
    try:
        if directory:
            tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        else:
            fd, name = tempfile.mkstemp(prefix=prefix, dir=parent)
            os.close(fd)
            tmp = Path(name)
    except OSError as exc:
        raise InputError(f"{path}: cannot write in {parent} ({exc.strerror})") from None
    try:
        # mkstemp and mkdtemp make private files; an export is as readable as any file made.
        tmp.chmod((0o777 if directory else 0o666) & ~_umask())
        yield tmp
        if directory and path.is_dir():
            old = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
            path.replace(old / path.name)
            tmp.replace(path)
            shutil.rmtree(old)
        else:
            tmp.replace(path)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise
