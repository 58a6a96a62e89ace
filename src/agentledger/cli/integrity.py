"""`verify`, `gc`, `reindex`: keeping the evidence honest."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import click

from agentledger.cli.common import (
    announce_journal_start,
    handle_errors,
    ledger_location,
    ledger_option,
    open_ledger,
    progress_bar,
)
from agentledger.cli.output import print_rows
from agentledger.errors import IntegrityError
from agentledger.judges.scores import reindex_scores
from agentledger.labels import index_missing_labels, reindex_labels
from agentledger.store import Ledger, verify_ledger
from agentledger.store.journal import Checkpoint
from agentledger.store.sizes import format_size

__all__ = ["checkpoint_command", "gc_command", "reindex_command", "verify_command"]


@click.command("verify")
@ledger_option
@click.argument("run_ids", nargs=-1)
@click.option(
    "--checkpoint",
    "checkpoint_text",
    metavar="HEAD",
    help="Also prove the ledger still extends HEAD, as `agentledger checkpoint` printed it.",
)
@click.option("--json", "as_json", is_flag=True, help="Output the report as JSON.")
@handle_errors
def verify_command(
    ledger_path: Path | None, run_ids: tuple[str, ...], checkpoint_text: str | None, as_json: bool
) -> None:
    """Check every record against the journal, the journal's hash chain, every run's files
    against its manifest, and every index column against the records (all, or RUN_IDS).

    Reports changed, missing, extra and unaccepted records, a broken chain, index rows that
    disagree with the records, and staging debris, one line each. Exits 3 when anything is
    wrong.
    """
    checkpoint = Checkpoint.parse(checkpoint_text) if checkpoint_text is not None else None
    started = time.perf_counter()
    with open_ledger(ledger_path) as ledger, progress_bar("Verifying") as progress:
        report = verify_ledger(ledger, list(run_ids) or None, progress, checkpoint=checkpoint)
    elapsed = time.perf_counter() - started
    if as_json:
        document = {
            "ok": report.ok,
            "runs_checked": report.runs_checked,
            "files_checked": report.files_checked,
            "bytes_checked": report.bytes_checked,
            "records_checked": report.records_checked,
            "journal_entries": report.journal_entries,
            "head": str(report.head) if report.head else None,
            "checkpoint": str(checkpoint) if checkpoint else None,
            "problems": [asdict(problem) for problem in report.problems],
            "in_progress": report.in_progress,
        }
        click.echo(json.dumps(document, indent=2))
    else:
        if report.problems:
            print_rows(
                ["record", "id", "problem", "file", "detail"],
                [(p.record, p.run_id, p.kind, p.file, p.detail) for p in report.problems],
            )
        status = "OK" if report.ok else f"{len(report.problems)} problem(s)"
        extends = f", extends checkpoint {checkpoint.count}" if checkpoint and report.ok else ""
        click.echo(
            f"Verified {report.runs_checked} runs, {report.files_checked} files "
            f"({format_size(report.bytes_checked)}), {report.records_checked} records and "
            f"{report.journal_entries} journal entries in {elapsed:.1f}s{extends}: {status}",
            err=not report.ok,
        )
        if report.in_progress:
            click.echo(f"{len(report.in_progress)} run(s) are being written right now.", err=True)
    if not report.ok:
        sys.exit(3)


@click.command("gc")
@ledger_option
@handle_errors
def gc_command(ledger_path: Path | None) -> None:
    """Remove the staging debris of writers that died, and index sealed runs the index missed.

    Sealed runs are never removed.
    """
    with open_ledger(ledger_path) as ledger:
        report = ledger.gc()
        labels = index_missing_labels(ledger)
    for name in report.removed:
        click.echo(f"removed staging leftover {name}")
    for run_id in report.indexed:
        click.echo(f"indexed {run_id}")
    for label_id in labels:
        click.echo(f"indexed label {label_id}")
    for name in report.in_progress:
        click.echo(f"kept {name}: its writer is still running", err=True)
    for key in report.indexed_scores:
        click.echo(f"indexed {key}")
    for key in report.journaled:
        click.echo(f"journaled {key}: an interrupted write, complete and intact")
    for key, problem in report.unaccepted_removed:
        click.echo(f"removed {key}: an interrupted write that does not check out ({problem})")
    for run_id, problem in report.unreadable:
        click.echo(f"cannot index {run_id}: {problem}", err=True)
    click.echo(
        f"gc: {len(report.removed)} leftover(s) removed, {len(report.indexed)} run(s) indexed",
        err=True,
    )
    if report.unreadable:
        sys.exit(3)


@click.command("reindex")
@ledger_option
@handle_errors
def reindex_command(ledger_path: Path | None) -> None:
    """Rebuild the index from the sealed runs (the files are the truth)."""
    started = time.perf_counter()
    with progress_bar("Reindexing") as progress:
        report = Ledger.reindex_from_scratch(ledger_location(ledger_path), progress)
    if report.journal_started_now is not None:
        announce_journal_start(ledger_location(ledger_path), report.journal_started_now)
    if report.replaced_index:
        click.echo("The old index could not be used and was replaced.", err=True)
    for run_id, problem in report.skipped:
        click.echo(f"skipped {run_id}: {problem}", err=True)
    with Ledger.open(ledger_location(ledger_path)) as ledger:
        scores = reindex_scores(ledger)
        labels = reindex_labels(ledger)
    click.echo(
        f"Indexed {report.indexed} runs and {scores} scores ({labels} labels) in "
        f"{time.perf_counter() - started:.1f}s"
    )
    if report.skipped:
        click.echo(
            f"{len(report.skipped)} run(s) could not be read: run `agentledger verify`.", err=True
        )
        sys.exit(3)


@click.command("checkpoint")
@ledger_option
@click.option("--json", "as_json", is_flag=True, help="Output the head as JSON.")
@handle_errors
def checkpoint_command(ledger_path: Path | None, as_json: bool) -> None:
    """Print the head of the ledger's journal (entry count and hash), to keep elsewhere.

    Paste it into a CI log, a git tag or a ticket; `agentledger verify --checkpoint HEAD`
    later proves the ledger still extends it, which a wholesale rewrite of files,
    manifests, index and journal together cannot fake.
    """
    with open_ledger(ledger_path) as ledger:
        head = ledger.storage.journal.head()
    if head is None:  # Ledger.open starts the journal; only a vanished one has no head
        raise IntegrityError(f"{ledger.root}: the journal is empty; run `agentledger verify`")
    if as_json:
        document = {"checkpoint": str(head), "count": head.count, "hash": head.hash}
        click.echo(json.dumps(document, indent=2))
    else:
        click.echo(str(head))
        click.echo(
            f"The journal of {ledger.root} holds {head.count} entries; later, "
            f"`agentledger verify --checkpoint {head}` proves the ledger still extends them.",
            err=True,
        )
