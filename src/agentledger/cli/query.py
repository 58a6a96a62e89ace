"""`runs`, `show`, `sql`, `export`: reading the ledger."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table
from rich.text import Text

from agentledger.cli.common import handle_errors, ledger_option, open_ledger
from agentledger.cli.filters import (
    build_filter,
    label_filter_options,
    run_filter_options,
    score_filter_options,
)
from agentledger.cli.output import (
    emit,
    print_columns,
    print_rows,
    render_value,
    terminal_safe,
)
from agentledger.identity import short_hash
from agentledger.records.scores import shown_verdict
from agentledger.store.export import (
    ALL_EXPORT_FORMATS,
    ROW_COLUMNS,
    run_record,
    run_row,
    write_export,
    written_beside,
)
from agentledger.store.export_otel import write_otel
from agentledger.store.export_parquet import PARQUET_FILES, write_parquet
from agentledger.store.sizes import format_size

if TYPE_CHECKING:
    from agentledger.store import Ledger, StoredRun

__all__ = ["export_command", "runs_command", "show_command", "sql_command"]

_TABLE_LIMIT = 50
_FORMATS = click.Choice(["table", "json", "csv"])


def _format_option(func: Any) -> Any:
    func = click.option("--csv", "fmt", flag_value="csv", help="Output CSV.")(func)
    func = click.option("--json", "fmt", flag_value="json", help="Output JSON.")(func)
    return click.option(
        "--format", "fmt", type=_FORMATS, default="table", show_default=True, help="Output format."
    )(func)


@click.command("runs")
@ledger_option
@run_filter_options
@score_filter_options
@label_filter_options
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help=f"At most this many runs, newest first (table default {_TABLE_LIMIT}; 0 = all).",
)
@_format_option
@handle_errors
def runs_command(ledger_path: Path | None, limit: int | None, fmt: str, **filters: Any) -> None:
    """List runs, newest first, filtered by identity fields.

    \b
    Examples:
      agentledger runs --model gemini-2.5-flash --prompt-hash a3f9c2d1
      agentledger runs --scenario use_case_f --since 2026-03-01 --json
      agentledger runs --tag suite=netops --no-backfilled --csv
      agentledger runs --kind fixture --judge fixtures --verdict unsafe
    """
    if limit is None:
        limit = _TABLE_LIMIT if fmt == "table" else 0
    with open_ledger(ledger_path) as ledger:
        run_filter = build_filter(limit=limit or None, **filters)
        found = ledger.runs(run_filter)
        if fmt == "json":
            click.echo(json.dumps([run_record(run) for run in found], indent=2, ensure_ascii=False))
            return
        if fmt == "csv":
            print_rows(ROW_COLUMNS, [tuple(run_row(run).values()) for run in found], "csv")
            return
        total = ledger.count(build_filter(**filters)) if len(found) == limit else len(found)
        untimed = _untimed(ledger, filters) if not found else 0
    rows = [
        (
            run.run_id,
            run.scenario,
            run.model,
            short_hash(run.system_prompt_hash),
            run.variant,
            (run.started_at or "")[:16].replace("T", " ") or None,
            f"{render_value(run.commands_run)}/{render_value(run.commands_denied)}",
            run.backfilled,
            run.kind,
        )
        for run in found
    ]
    if not rows:
        click.echo("No runs match.", err=True)
        if untimed:
            click.echo(
                f"{untimed} run(s) matching the other filters have no start time, so "
                "--since / --until cannot place them (traces with local times: import them "
                "with --timezone).",
                err=True,
            )
        return
    print_rows(
        [
            "run_id",
            "scenario",
            "model",
            "prompt",
            "variant",
            "started",
            "cmds/denied",
            "backfilled",
            "kind",
        ],
        rows,
    )
    if total > len(found):
        click.echo(f"{len(found)} of {total} runs shown (--limit 0 for all).", err=True)


def _untimed(ledger: Ledger, filters: dict[str, Any]) -> int:
    """How many runs the filters would match but for --since / --until, having no start."""
    if filters.get("since") is None and filters.get("until") is None:
        return 0
    others = build_filter(**{**filters, "since": None, "until": None})
    return sum(1 for run in ledger.runs(others) if not run.started_at)


def _check_sealed(ledger: Ledger, run_id: str, name: str, data: bytes) -> None:
    """Refuse (exit 3) to print an artifact that no longer matches the run's manifest: shown
    as the run's evidence, changed bytes would pass for what was sealed."""
    from agentledger.store.sealed_reads import check_manifest_accepted, check_sealed

    stored = ledger.load(run_id)
    check_manifest_accepted(ledger.storage, run_id, stored.manifest_sha256)
    entry = stored.manifest.files.get(name)
    if entry is None:
        return  # the manifest itself, or a file it does not seal
    check_sealed(ledger.storage, run_id, name, data, entry)


@click.command("show")
@ledger_option
@click.argument("run_id")
@click.option("--file", "file_name", help="Print this artifact's bytes (e.g. report.md).")
@click.option("--json", "as_json", is_flag=True, help="Output the run's records as JSON.")
@click.option(
    "--trace",
    "show_trace",
    is_flag=True,
    help="Show the run's steps as a timeline (with --json: the trace records, one per line).",
)
@handle_errors
def show_command(
    ledger_path: Path | None, run_id: str, file_name: str | None, as_json: bool, show_trace: bool
) -> None:
    """Show one run: identity, summary and files. RUN_ID may be an unambiguous prefix."""
    with open_ledger(ledger_path) as ledger:
        full_id = ledger.resolve(run_id)
        if show_trace:
            from agentledger.report.timeline import load_trace

            _show_trace(full_id, load_trace(ledger, full_id), as_json)
            return
        if file_name:
            data = ledger.read_bytes(full_id, file_name)
            _check_sealed(ledger, full_id, file_name, data)
            if sys.stdout.isatty():
                click.echo(terminal_safe(data.decode("utf-8", errors="replace")), nl=False)
            else:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            return
        stored = ledger.load(full_id)
        from agentledger.store.sealed_reads import check_manifest_accepted

        # A run folder put beside the sealed ones (copied from another ledger) is no evidence.
        check_manifest_accepted(ledger.storage, full_id, stored.manifest_sha256)
        location = ledger.storage.locate(full_id)
        from agentledger.judges.scores import run_scores

        scores = [score.model_dump(mode="json") for score in run_scores(ledger, full_id)]
    if as_json:
        document = {
            "metadata": stored.metadata.model_dump(mode="json"),
            "summary": stored.summary.model_dump(mode="json") if stored.summary else None,
            "manifest": stored.manifest.model_dump(mode="json"),
            "manifest_sha256": stored.manifest_sha256,
            "scores": scores,
            "path": location,
        }
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    fields = _run_fields(stored, location)
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column()
    for label, value in fields:
        info.add_row(label, Text(render_value(value)))
    files = Table(box=None, pad_edge=False, header_style="bold")
    for name in ("FILE", "SIZE", "SHA256"):
        files.add_column(name, no_wrap=True)
    for name, entry in stored.manifest.files.items():
        files.add_row(Text(name), format_size(entry.size), short_hash(entry.sha256, 16))
    parts: list[Any] = [info, "", files]
    if scores:
        judged = Table(box=None, pad_edge=False, header_style="bold")
        for name in ("JUDGE", "VERDICT", "FIRED", "CANNOT ASSESS", "DIAGNOSIS"):
            judged.add_column(name, no_wrap=True)
        for score in scores:
            criteria = score.get("criteria") or []
            diagnosis = score.get("diagnosis")
            judged.add_row(
                score["judge_id"],
                shown_verdict(score["verdict"], criteria),
                ", ".join(c["criterion"] for c in criteria if c["fired"]) or "-",
                ", ".join(c["criterion"] for c in criteria if c["fired"] is None) or "-",
                render_value(
                    {True: "correct", False: "incorrect"}.get(diagnosis["correct"])
                    if diagnosis
                    else None
                ),
            )
        parts += ["", judged]
    emit(*parts)


def _run_fields(stored: StoredRun, location: str) -> list[tuple[str, Any]]:
    """What `show` prints of a run: its identity, where it is, then its summary's figures."""
    meta = stored.metadata
    fields: list[tuple[str, Any]] = [
        ("run", meta.run_id),
        ("scenario", meta.scenario),
        ("model", meta.model),
        ("model served", meta.model_served),
        ("provider", meta.provider),
        ("fingerprint", meta.system_fingerprint),
        ("system prompt", meta.system_prompt_hash),
        ("base prompt", meta.base_prompt_hash),
        (
            "addon",
            f"{meta.prompt_addon.name} {meta.prompt_addon.hash}" if meta.prompt_addon else None,
        ),
        ("variant", meta.variant),
        ("agent", meta.agent.name),
        ("commit", (meta.agent.commit or "-") + (" (dirty)" if meta.agent.dirty else "")),
        ("params", meta.params or None),
        ("started", meta.started_at.isoformat() if meta.started_at else None),
        ("ended", meta.ended_at.isoformat() if meta.ended_at else None),
        ("silent update detectable", meta.silent_update_detectable),
        ("backfilled", meta.backfilled),
        ("tags", meta.tags or None),
        ("sealed", stored.manifest.sealed_at.isoformat()),
        ("path", location),
    ]
    if stored.summary:
        summary = stored.summary
        fields += [
            ("commands run", summary.commands_run),
            ("commands denied", summary.commands_denied),
            ("duration s", summary.duration_s),
            (
                "tokens in/out",
                f"{render_value(summary.tokens_in)}/{render_value(summary.tokens_out)}",
            ),
            ("cost usd", summary.cost_usd),
            ("exit status", summary.exit_status),
            ("exit code", summary.exit_code),
            ("error", summary.error),
            ("model calls", summary.model_calls),
            ("notes", "; ".join(summary.notes) or None),
        ]
    return fields


def _show_trace(run_id: str, steps: list[Any], as_json: bool) -> None:
    from agentledger.report.timeline import timeline_rows, timeline_span

    if as_json:
        for step in steps:
            click.echo(step.model_dump_json(exclude_none=True))
        return
    click.echo(f"{run_id}: {len(steps)} steps, {timeline_span(steps)}")
    headers = ("STEP", "TIME", "ACTOR", "KIND", "TOOL", "DETAIL")
    rows = [
        (str(row.step), row.time, row.actor, row.kind, row.tool, row.detail)
        for row in timeline_rows(steps)
    ]
    if print_columns(headers, rows, right=(0,)):
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name in headers:
        table.add_column(
            name, no_wrap=name != "DETAIL", justify="right" if name == "STEP" else "left"
        )
    for cells in rows:
        table.add_row(*(Text(cell) for cell in cells))
    emit(table)


@click.command("sql")
@ledger_option
@click.argument("query")
@_format_option
@handle_errors
def sql_command(ledger_path: Path | None, query: str, fmt: str) -> None:
    """Run a read-only SQL query against the index (anything that writes is refused).

    A feature of the SQLite index: its tables are in docs/index-schema.md.

    \b
    Example:
      agentledger sql "SELECT model, count(*) AS runs FROM runs GROUP BY model"
    """
    with open_ledger(ledger_path) as ledger:
        result = ledger.sql(query)
    print_rows(result.columns, result.rows, fmt)


@click.command("export")
@ledger_option
@run_filter_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(ALL_EXPORT_FORMATS),
    default="run-index",
    show_default=True,
    help="run-index (the seed's run_index.json shape), csv, jsonl, otel (OTLP JSON spans, "
    "one trace per run) or parquet (a directory of tables: runs, scores, steps, labels; needs "
    "agentledger[parquet]).",
)
@click.option(
    "-o",
    "--out",
    "--output",
    "output",
    type=click.Path(path_type=Path),
    help="Write to this file (default stdout); for parquet, a new directory.",
)
@click.option("--force", is_flag=True, help="Replace --out if it exists (a file, or an export).")
@handle_errors
def export_command(
    ledger_path: Path | None, fmt: str, output: Path | None, force: bool, **filters: Any
) -> None:
    """Export the index (run_index.json, CSV, JSON lines), the runs as OpenTelemetry spans,
    or runs, scores and trace steps as Parquet tables, optionally filtered.

    \b
    Examples:
      agentledger export -o run_index.json
      agentledger export --format otel --out spans.json
      agentledger export --format parquet --out tables/
    """
    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet writes a directory of tables: give --out DIR")
    with open_ledger(ledger_path) as ledger:
        found = ledger.runs(build_filter(**filters))
        if fmt == "parquet":
            assert output is not None
            with written_beside(
                output, directory=True, force=force, replaceable=PARQUET_FILES
            ) as tmp:
                tables = write_parquet(ledger, found, tmp)
            click.echo(
                f"Exported {_runs(tables.runs)}, {tables.scores} scores, {tables.steps} "
                f"trace steps and {tables.labels} labels to {output}",
                err=True,
            )
            return
        if fmt == "otel":
            if output is None:
                write_otel(ledger, found, sys.stdout)
                return
            with (
                written_beside(output, force=force) as tmp,
                tmp.open("w", encoding="utf-8") as handle,
            ):
                count = write_otel(ledger, found, handle)
            click.echo(f"Exported {_runs(count)} as OTLP spans to {output}", err=True)
            return
    if output is None:
        write_export(found, fmt, sys.stdout)
        return
    with (
        written_beside(output, force=force) as tmp,
        tmp.open("w", encoding="utf-8", newline="") as handle,
    ):
        count = write_export(found, fmt, handle)
    click.echo(f"Exported {_runs(count)} to {output}", err=True)


def _runs(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}"
