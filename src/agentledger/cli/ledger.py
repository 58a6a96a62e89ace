"""`init` and `schema`: creating a ledger and describing its file formats."""

from __future__ import annotations

import json
from pathlib import Path

import click

from agentledger.cli.common import announce_journal, handle_errors, ledger_location, parse_size
from agentledger.cli.schemas import json_schema, schemas
from agentledger.store import Ledger
from agentledger.store.sizes import format_size

__all__ = ["init_command", "schema_command"]


@click.command("init")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--max-artifact-size",
    help="Largest artifact the ledger accepts, e.g. 100MB (default), 2GB.",
)
@click.option(
    "--storage",
    default="local",
    show_default=True,
    help="Where runs and records live: local (PATH itself), s3://BUCKET/PREFIX, ...",
)
@click.option(
    "--index",
    default="sqlite",
    show_default=True,
    help="The index: sqlite (PATH/index.sqlite), postgresql://HOST/DB, ...",
)
@handle_errors
def init_command(
    path: Path | None, max_artifact_size: str | None, storage: str, index: str
) -> None:
    """Create a ledger at PATH (default: $AGENTLEDGER_DIR or ./.agentledger).

    PATH holds ledger.json, which names the backends; credentials are never written there
    (S3 takes them from the AWS environment, profile or role). A storage that other machines
    already write to is joined: the new index is built from what it holds.
    """
    target = ledger_location(path)
    limit = parse_size(max_artifact_size, "--max-artifact-size") if max_artifact_size else None
    with Ledger.init(target, max_artifact_bytes=limit, storage=storage, index=index) as ledger:
        backends = ""
        if (storage, index) != ("local", "sqlite"):
            backends = f", storage {ledger.config.storage}, index {ledger.config.index}"
        click.echo(
            f"Created ledger at {ledger.root} "
            f"(artifacts up to {format_size(ledger.config.max_artifact_bytes)}{backends})"
        )
        announce_journal(ledger)
        if ledger.count() == 0 and next(iter(ledger.storage.run_ids()), None) is not None:
            report = ledger.reindex()
            click.echo(f"Joined a storage already in use: indexed {report.indexed} run(s)")


@click.command("schema")
@click.argument("name", required=False)
@handle_errors
def schema_command(name: str | None) -> None:
    """Print the JSON Schema of a record or file format (metadata, scenario, policy, ...).

    Without NAME, list the record names.
    """
    if name is None:
        width = max(map(len, schemas()))
        for known, model in sorted(schemas().items()):
            doc = (model.__doc__ or "").strip().splitlines()[0]
            click.echo(f"{known:<{width}}  {doc}")
        return
    if name not in schemas():
        raise click.BadParameter(
            f"unknown record {name!r}; choose one of {', '.join(sorted(schemas()))}",
            param_hint="NAME",
        )
    click.echo(json.dumps(json_schema(name), indent=2))
