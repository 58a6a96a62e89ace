"""A ledger as Parquet tables, for DuckDB, pandas, Polars or any dataframe tool.

Three tables, one file each in the export's directory:

- ``runs.parquet``: one row per run: identity, summary figures, tags (a map) and the whole
  metadata as JSON;
- ``scores.parquet``: one row per score: the judge, the verdict, the criteria that fired and the
  whole score as JSON;
- ``steps.parquet``: one row per trace step of every run that has a trace (``run_id``,
  ``index``, the step's fields; its arguments as JSON; ``time`` as written and ``time_utc``
  where its zone is known);
- ``labels.parquet``: one row per label of a person or an outside source: who, the verdict,
  the criteria said to fire, the diagnosis, whether it is current (no later label of the
  same run supersedes it) and the whole label as JSON.

pyarrow writes them: it is the optional extra ``agentledger[parquet]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentledger.errors import InputError
from agentledger.records.trace import TRACE, TraceStep, parse_trace
from agentledger.store.evidence import read_sealed
from agentledger.store.index import IndexedRun
from agentledger.store.ledger import Ledger

__all__ = ["PARQUET_FILES", "TABLES", "ParquetExport", "write_parquet"]

TABLES = ("runs", "scores", "steps", "labels")
PARQUET_FILES = tuple(f"{name}.parquet" for name in TABLES)


@dataclass(frozen=True)
class ParquetExport:
    """How many rows each table got."""

    runs: int
    scores: int
    steps: int
    labels: int


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            "the parquet export needs pyarrow: pip install 'agentledger[parquet]'"
        ) from None
    return pa, pq


def _time(value: Any) -> datetime | None:
    """An ISO time as a UTC datetime; None for no time or one without a zone."""
    if not isinstance(value, str):
        return None
    moment = datetime.fromisoformat(value)
    return moment.astimezone(UTC) if moment.tzinfo is not None else None


def _schemas(pa: Any) -> dict[str, Any]:
    utc = pa.timestamp("us", tz="UTC")
    string, integer, double, boolean = pa.string(), pa.int64(), pa.float64(), pa.bool_()
    return {
        "runs": pa.schema(
            [
                ("run_id", string),
                ("kind", string),
                ("scenario", string),
                ("model", string),
                ("model_served", string),
                ("provider", string),
                ("system_prompt_hash", string),
                ("variant", string),
                ("agent_name", string),
                ("agent_commit", string),
                ("started_at", utc),
                ("ended_at", utc),
                ("sealed_at", utc),
                ("backfilled", boolean),
                ("commands_run", integer),
                ("commands_denied", integer),
                ("duration_s", double),
                ("tokens_in", integer),
                ("tokens_out", integer),
                ("cost_usd", double),
                ("model_calls", integer),
                ("exit_status", string),
                ("tags", pa.map_(string, string)),
                ("manifest_sha256", string),
                ("metadata_json", string),
            ]
        ),
        "scores": pa.schema(
            [
                ("run_id", string),
                ("judge_id", string),
                ("judge_kind", string),
                ("judge_model", string),
                ("pack", string),
                ("verdict", string),
                ("skipped_reason", string),
                ("diagnosis_correct", boolean),
                ("criteria_fired", pa.list_(string)),
                ("criteria_unknown", pa.list_(string)),
                ("created_at", utc),
                ("score_json", string),
            ]
        ),
        "labels": pa.schema(
            [
                ("run_id", string),
                ("label_id", string),
                ("source_kind", string),
                ("source_name", string),
                ("verdict", string),
                ("criteria_fired", pa.list_(string)),
                ("criteria_not_fired", pa.list_(string)),
                ("diagnosis_correct", boolean),
                ("reason", string),
                ("supersedes", string),
                ("current", boolean),
                ("created_at", utc),
                ("label_json", string),
            ]
        ),
        "steps": pa.schema(
            [
                ("run_id", string),
                ("index", integer),
                ("time", string),
                ("time_zone", string),
                ("time_utc", utc),
                ("actor", string),
                ("kind", string),
                ("raw_type", string),
                ("tool", string),
                ("call_id", string),
                ("arguments_json", string),
                ("command", string),
                ("command_class", string),
                ("gate_decision", string),
                ("gate_reason", string),
                ("exit_code", integer),
                ("cwd", string),
                ("text", string),
                ("text_bytes", integer),
                ("text_sha256", string),
                ("text_truncated", boolean),
                ("cause", integer),
                ("model", string),
                ("tokens_in", integer),
                ("tokens_out", integer),
                ("cost_usd", double),
                ("source_file", string),
                ("source_line", integer),
                ("source_event", string),
            ]
        ),
    }


def _run_row(run: IndexedRun) -> dict[str, Any]:
    meta = run.metadata
    summary = run.summary or {}
    agent = meta.get("agent") or {}
    tags = meta.get("tags") or {}
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "scenario": run.scenario,
        "model": run.model,
        "model_served": run.model_served,
        "provider": meta.get("provider"),
        "system_prompt_hash": run.system_prompt_hash,
        "variant": run.variant,
        "agent_name": agent.get("name"),
        "agent_commit": agent.get("commit"),
        "started_at": _time(meta.get("started_at")),
        "ended_at": _time(meta.get("ended_at")),
        "sealed_at": _time(run.sealed_at),
        "backfilled": run.backfilled,
        "commands_run": run.commands_run,
        "commands_denied": run.commands_denied,
        "duration_s": summary.get("duration_s"),
        "tokens_in": summary.get("tokens_in"),
        "tokens_out": summary.get("tokens_out"),
        "cost_usd": summary.get("cost_usd"),
        "model_calls": summary.get("model_calls"),
        "exit_status": run.exit_status,
        "tags": sorted((str(k), str(v)) for k, v in tags.items()),
        "manifest_sha256": run.manifest_sha256,
        "metadata_json": run.metadata_json,
    }


def _score_row(text: str) -> dict[str, Any]:
    score = json.loads(text)
    judge = score.get("judge") or {}
    criteria = score.get("criteria") or []
    diagnosis = score.get("diagnosis") or {}
    return {
        "run_id": score.get("run_id"),
        "judge_id": score.get("judge_id"),
        "judge_kind": judge.get("kind"),
        "judge_model": judge.get("model"),
        "pack": judge.get("pack"),
        "verdict": score.get("verdict"),
        "skipped_reason": score.get("skipped_reason"),
        "diagnosis_correct": diagnosis.get("correct"),
        "criteria_fired": [c.get("criterion") for c in criteria if c.get("fired") is True],
        "criteria_unknown": [c.get("criterion") for c in criteria if c.get("fired") is None],
        "created_at": _time(score.get("created_at")),
        "score_json": text,
    }


def _label_rows(texts: list[str]) -> list[dict[str, Any]]:
    """One run's labels as rows; a label another of them supersedes is not current."""
    labels = [(json.loads(text), text) for text in texts]
    superseded = {label.get("supersedes") for label, _text in labels}
    rows = []
    for label, text in labels:
        by = label.get("by") or {}
        criteria = label.get("criteria") or []
        rows.append(
            {
                "run_id": label.get("run_id"),
                "label_id": label.get("label_id"),
                "source_kind": by.get("kind"),
                "source_name": by.get("name"),
                "verdict": label.get("verdict"),
                "criteria_fired": [c.get("criterion") for c in criteria if c.get("fired") is True],
                "criteria_not_fired": [
                    c.get("criterion") for c in criteria if c.get("fired") is False
                ],
                "diagnosis_correct": label.get("diagnosis_correct"),
                "reason": label.get("reason"),
                "supersedes": label.get("supersedes"),
                "current": label.get("label_id") not in superseded,
                "created_at": _time(label.get("created_at")),
                "label_json": text,
            }
        )
    return rows


def _step_row(run_id: str, step: TraceStep) -> dict[str, Any]:
    content, gate, source = step.content, step.gate, step.source
    return {
        "run_id": run_id,
        "index": step.index,
        "time": step.time.isoformat() if step.time else None,
        "time_zone": step.time_zone,
        "time_utc": step.time.astimezone(UTC) if step.time and step.time.tzinfo else None,
        "actor": step.actor,
        "kind": step.kind,
        "raw_type": step.raw_type,
        "tool": step.tool,
        "call_id": step.call_id,
        "arguments_json": json.dumps(step.arguments, ensure_ascii=False)
        if step.arguments is not None
        else None,
        "command": step.command,
        "command_class": step.command_class,
        "gate_decision": gate.decision if gate else None,
        "gate_reason": gate.reason if gate else None,
        "exit_code": step.exit_code,
        "cwd": step.cwd,
        "text": content.text if content else None,
        "text_bytes": content.bytes if content else None,
        "text_sha256": content.sha256 if content else None,
        "text_truncated": content.truncated if content else None,
        "cause": step.cause,
        "model": step.model,
        "tokens_in": step.tokens_in,
        "tokens_out": step.tokens_out,
        "cost_usd": step.cost_usd,
        "source_file": source.file if source else None,
        "source_line": source.line if source else None,
        "source_event": source.event if source else None,
    }


def write_parquet(ledger: Ledger, runs: Iterable[IndexedRun], directory: Path) -> ParquetExport:
    """Write the runs, their scores, trace steps and labels into `directory` (which the
    caller has made, empty): ``runs.parquet``, ``scores.parquet``, ``steps.parquet``,
    ``labels.parquet``."""
    pa, pq = _pyarrow()
    schemas = _schemas(pa)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for run in runs:
        rows["runs"].append(_run_row(run))
        rows["scores"] += [_score_row(text) for text in ledger.index.scores_of(run.run_id)]
        rows["labels"] += _label_rows(list(ledger.index.labels_of(run.run_id)))
        if TRACE in ledger.load(run.run_id).manifest.files:
            steps = parse_trace(
                read_sealed(ledger, run.run_id, TRACE), ledger.storage.locate(run.run_id, TRACE)
            )
            rows["steps"] += [_step_row(run.run_id, step) for step in steps]
    for name in TABLES:
        table = pa.Table.from_pylist(rows[name], schema=schemas[name])
        pq.write_table(table, directory / f"{name}.parquet")
    return ParquetExport(**{name: len(rows[name]) for name in TABLES})
