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
    fail,
    handle_errors,
    ledger_location,
    ledger_option,
    open_ledger,
    progress_bar,
)
from agentledger.cli.output import print_rows
from agentledger.errors import IndexUnusableError, IntegrityError
from agentledger.store import Ledger, verify_ledger
from agentledger.store.sizes import format_size
from agentledger.store.storage.journal import Checkpoint
from agentledger.store.verify_runs import Problem

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
    try:
        with open_ledger(ledger_path) as ledger, progress_bar("Verifying") as progress:
            report = verify_ledger(ledger, list(run_ids) or None, progress, checkpoint=checkpoint)
            if ledger.head_problem is not None:
                problem = ledger.head_problem
                report.problems.insert(
                    0, Problem("journal", "rollback", str(problem), None, "journal")
                )
    except IndexUnusableError as exc:
        # A damaged index is an integrity problem of the ledger, not bad input.
        fail(f"{exc}", 3)
        return
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
            f"Verified {report.runs_checked} run{'' if report.runs_checked == 1 else 's'}, "
            f"{report.files_checked} files "
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
@click.option(
    "--checkpoint",
    "checkpoint_text",
    metavar="HEAD",
    help="Repair a forked journal first: keep the chain HEAD (as `agentledger checkpoint` "
    "printed it) names, set the other branch's segments aside in quarantine/, and append again "
    "its entries whose records are here and announced.",
)
@handle_errors
def gc_command(ledger_path: Path | None, checkpoint_text: str | None) -> None:
    """Remove the staging debris of writers that died, and index the sealed runs and the
    scores the index missed (a writer killed between writing a record and indexing it).

    A record stored without a journal entry is completed when its writer announced it (an
    intent in the journal) and it checks out; one no writer announced is moved to quarantine/
    and never accepted. Sealed runs are never removed. A record that cannot be indexed or was
    quarantined is reported, and the others are indexed all the same; the exit code is then 3.
    """
    checkpoint = Checkpoint.parse(checkpoint_text) if checkpoint_text is not None else None
    with open_ledger(ledger_path) as ledger:
        repaired = checkpoint is not None and _repair_fork(ledger, checkpoint)
        report = ledger.gc()
        if repaired:
            # What the index held of the branch set aside goes with it: rebuilt from the
            # records the kept chain accepts.
            ledger.reindex()
            click.echo("index rebuilt from the kept chain", err=True)
    for name in report.removed:
        click.echo(f"removed staging leftover {name}")
    for run_id in report.indexed:
        click.echo(f"indexed {run_id}")
    for key in report.indexed_scores:
        click.echo(f"indexed score {key}")
    for label_id in report.indexed_labels:
        click.echo(f"indexed label {label_id}")
    for key in report.indexed_outcomes:
        click.echo(f"indexed outcome {key}")
    for name in report.in_progress:
        click.echo(f"kept {name}: its writer is still running", err=True)
    for key in report.indexed_scores:
        click.echo(f"indexed {key}")
    for key in report.journaled:
        click.echo(f"journaled {key}: an interrupted write, complete and intact")
    for key, problem in report.unaccepted_removed:
        click.echo(f"removed {key}: an interrupted write that does not check out ({problem})")
    for key, place in report.quarantined:
        click.echo(
            f"quarantined {key}: no writer of this ledger announced it; moved to {place}, "
            "never accepted",
            err=True,
        )
    for run_id, problem in report.unreadable:
        click.echo(f"cannot index run {run_id}: {problem}", err=True)
    for where, problem in report.unreadable_scores:
        click.echo(f"cannot index score {where}: {problem}", err=True)
    for where, problem in report.unreadable_labels:
        click.echo(f"cannot index label {where}: {problem}", err=True)
    for where, problem in report.unreadable_outcomes:
        click.echo(f"cannot index outcome {where}: {problem}", err=True)
    scores = f", {len(report.indexed_scores)} score(s) indexed" if report.indexed_scores else ""
    scores += f", {len(report.indexed_labels)} label(s) indexed" if report.indexed_labels else ""
    if report.indexed_outcomes:
        scores += f", {len(report.indexed_outcomes)} outcome(s) indexed"
    if report.repositioned:
        scores += f", journal positions given to {report.repositioned} record(s) indexed without"
    click.echo(
        f"gc: {len(report.removed)} leftover(s) removed, {len(report.indexed)} run(s) "
        f"indexed{scores}",
        err=True,
    )
    if report.quarantined:
        click.echo(
            f"{len(report.quarantined)} record(s) put there by hand or by another program were "
            "quarantined (listed above); `agentledger verify` names them until removed.",
            err=True,
        )
    if not report.ok:
        failed = len(report.unreadable) + len(report.unreadable_scores)
        failed += len(report.unreadable_labels) + len(report.unreadable_outcomes)
        if failed:
            click.echo(
                f"{failed} record(s) could not be indexed (listed above); "
                "`agentledger verify` checks them against their manifests.",
                err=True,
            )
        sys.exit(3)


def _repair_fork(ledger: Ledger, checkpoint: Checkpoint) -> bool:
    """`gc --checkpoint`: keep the chain the checkpoint names; say what was set aside, and
    whether anything was."""
    from agentledger.store.journal_fork import repair_ledger_fork

    repair = repair_ledger_fork(ledger, checkpoint)
    for key, place in repair.set_aside:
        click.echo(f"set aside {key}: off the chain of {checkpoint}; moved to {place}", err=True)
    for entry_id, why in repair.dropped:
        click.echo(f"not appended again: {entry_id}: {why}", err=True)
    if repair.set_aside:
        click.echo(
            f"journal repaired: kept the chain of {checkpoint}, {len(repair.replayed)} entry(ies) "
            f"of the other branch appended again; head now {repair.kept}",
            err=True,
        )
        return True
    click.echo(f"the journal is one chain through {checkpoint}: nothing to repair", err=True)
    return False


@click.command("reindex")
@ledger_option
@handle_errors
def reindex_command(ledger_path: Path | None) -> None:
    """Rebuild the index from the sealed runs and scores (the files are the truth).

    The new index is built beside the old one and swapped in only when it is complete: on any
    failure (a full disk included) the old index stays as it was. A record that cannot be
    indexed is reported and left out; the exit code is then 3.
    """
    started = time.perf_counter()
    with progress_bar("Reindexing") as progress:
        report = Ledger.reindex_from_scratch(ledger_location(ledger_path), progress)
    if report.journal_started_now is not None:
        announce_journal_start(ledger_location(ledger_path), report.journal_started_now)
    if report.replaced_index:
        click.echo("The old index could not be used and was replaced.", err=True)
    for run_id, problem in report.skipped:
        click.echo(f"skipped run {run_id}: {problem}", err=True)
    for where, problem in report.skipped_scores:
        click.echo(f"skipped score {where}: {problem}", err=True)
    for where, problem in report.skipped_labels:
        click.echo(f"skipped label {where}: {problem}", err=True)
    for where, problem in report.skipped_outcomes:
        click.echo(f"skipped outcome {where}: {problem}", err=True)
    outcomes = f", {report.outcomes} outcomes" if report.outcomes else ""
    click.echo(
        f"Indexed {report.indexed} runs and {report.scores} scores ({report.labels} labels"
        f"{outcomes}) in {time.perf_counter() - started:.1f}s"
    )
    if not report.ok:
        skipped = len(report.skipped) + len(report.skipped_scores) + len(report.skipped_labels)
        skipped += len(report.skipped_outcomes)
        click.echo(
            f"{skipped} record(s) could not be "
            "indexed (listed above); `agentledger verify` checks them against their manifests.",
            err=True,
        )
        sys.exit(3)


@click.command("checkpoint")
@ledger_option
@click.option("--json", "as_json", is_flag=True, help="Output the head as JSON.")
@click.option(
    "--accept-current",
    is_flag=True,
    help="Take the head the ledger has now as the one this machine saw, after a rollback "
    "that was meant (a backup restored on purpose); commands stop warning about it.",
)
@handle_errors
def checkpoint_command(ledger_path: Path | None, as_json: bool, accept_current: bool) -> None:
    """Print the head of the ledger's journal (entry count and hash), to keep elsewhere.

    Paste it into a CI log, a git tag or a ticket; `agentledger verify --checkpoint HEAD`
    later proves the ledger still extends it, which a wholesale rewrite of files,
    manifests, index and journal together cannot fake. This machine also keeps the last head
    each ledger showed, outside it, and says when a ledger is found behind it (rolled back).
    """
    with open_ledger(ledger_path) as ledger:
        if accept_current:
            ledger.accept_current_head()
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
