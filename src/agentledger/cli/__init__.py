"""The command-line interface: thin click commands over the library, one module per group."""

from __future__ import annotations

import click

from agentledger import __version__
from agentledger.cli.demo import demo_command
from agentledger.cli.importing import import_command
from agentledger.cli.integrity import gc_command, reindex_command, verify_command
from agentledger.cli.ledger import init_command, schema_command
from agentledger.cli.query import export_command, runs_command, show_command, sql_command

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="agentledger")
def main() -> None:
    """Turn runs of infrastructure agents into evidence, findings and decisions.

    Every run is sealed into an append-only ledger with its identity (system prompt hash,
    model asked for and served, agent commit) and indexed for queries.
    """


for command in (
    init_command,
    import_command,
    runs_command,
    show_command,
    sql_command,
    export_command,
    verify_command,
    gc_command,
    reindex_command,
    schema_command,
    demo_command,
):
    main.add_command(command)
