"""`migrate-backend`: copying a ledger to other storage and index backends."""

from __future__ import annotations

from pathlib import Path

import click

from agentledger.cli.common import handle_errors, ledger_option, open_ledger, progress_bar

__all__ = ["migrate_backend_command"]


@click.command("migrate-backend")
@click.argument("dest", type=click.Path(path_type=Path))
@click.option(
    "--to-storage",
    required=True,
    help="Storage of the copy: local (DEST itself), s3://BUCKET/PREFIX, ...",
)
@click.option(
    "--to-index",
    default="sqlite",
    show_default=True,
    help="Index of the copy: sqlite (DEST/index.sqlite), postgresql://HOST/DB, ...",
)
@ledger_option
@handle_errors
def migrate_backend_command(
    dest: Path, to_storage: str, to_index: str, ledger_path: Path | None
) -> None:
    """Copy the ledger to a new ledger at DEST on other backends, and verify the copy.

    Every run, score, label and decision the journal accepted is copied byte for byte, with
    the journal itself (checkpoints stay valid). The source must verify clean. DEST's
    ledger.json is written last, once the copy verifies clean: a copy that stopped is no
    ledger, and running the same command again resumes it. Exits 3 when the source or the
    copy does not verify.
    """
    from agentledger.store.copy_ledger import migrate_ledger

    with open_ledger(ledger_path) as ledger, progress_bar("Copying runs") as progress:
        report = migrate_ledger(
            ledger,
            dest,
            storage=to_storage,
            index=to_index,
            progress=(lambda done: progress(done, None)) if progress else None,
        )
    for note in report.notes:
        click.echo(f"({note})")
    present = report.runs_present + report.records_present
    again = f", {present} found copied already" if present else ""
    click.echo(
        f"Copied {report.runs} run(s) and {report.records} record(s) to {report.destination} "
        f"(storage {report.storage}, index {report.index}){again}; journal of "
        f"{report.journal_entries} entries; verify clean"
    )
