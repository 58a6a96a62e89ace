"""Exports of the index: the seed's run_index.json shape, CSV, and JSON lines."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, TextIO

from agentledger.store import IndexedRun

__all__ = ["EXPORT_FORMATS", "ROW_COLUMNS", "run_record", "run_row", "write_export"]

EXPORT_FORMATS = ("run-index", "csv", "jsonl")

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
        writer = csv.DictWriter(out, fieldnames=list(ROW_COLUMNS), lineterminator="\n")
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
