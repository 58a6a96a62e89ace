"""The command-line interface (filled in below)."""

import click


@click.group()
def main() -> None:
    """agentledger."""
