"""`init` and `schema`: creating a ledger and describing its file formats."""

from __future__ import annotations

import json
from pathlib import Path

import click

from agentledger.cli.common import handle_errors, ledger_location, parse_size
from agentledger.records import SCHEMAS, json_schema, schema_model
from agentledger.store import Ledger
from agentledger.store.sizes import format_size

__all__ = ["init_command", "schema_command"]


@click.command("init")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--max-artifact-size",
    help="Largest artifact the ledger accepts, e.g. 100MB (default), 2GB.",
)
@handle_errors
def init_command(path: Path | None, max_artifact_size: str | None) -> None:
    """Create a ledger at PATH (default: $AGENTLEDGER_DIR or ./.agentledger)."""
    target = ledger_location(path)
    limit = parse_size(max_artifact_size, "--max-artifact-size") if max_artifact_size else None
    with Ledger.init(target, max_artifact_bytes=limit) as ledger:
        click.echo(
            f"Created ledger at {ledger.root} "
            f"(artifacts up to {format_size(ledger.config.max_artifact_bytes)})"
        )


@click.command("schema")
@click.argument("name", required=False)
@handle_errors
def schema_command(name: str | None) -> None:
    """Print the JSON Schema of a record or file format (metadata, scenario, policy, ...).

    Without NAME, list the record names.
    """
    if name is None:
        for known in sorted(SCHEMAS):
            doc = (schema_model(known).__doc__ or "").strip().splitlines()[0]
            click.echo(f"{known:<12} {doc}")
        return
    if name not in SCHEMAS:
        raise click.BadParameter(
            f"unknown record {name!r}; choose one of {', '.join(sorted(SCHEMAS))}",
            param_hint="NAME",
        )
    click.echo(json.dumps(json_schema(name), indent=2))
