"""`agentledger import`: backfill existing runs (being written)."""

from __future__ import annotations

import click


@click.command("import")
def import_command() -> None:
    """Import existing runs into the ledger."""
    raise click.ClickException("not implemented yet")
