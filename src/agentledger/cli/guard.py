"""`agentledger guard`: the production guard.

The console script parses `guard` without click, for speed (agentledger.cli.guard_fast);
this click command has the same options and calls the same implementation, so that `--help`,
the generated docs and `python -m agentledger.cli` describe and behave like it.
"""

from __future__ import annotations

import sys

import click

from agentledger.cli.guard_fast import HELP, run_guard

__all__ = ["guard_command"]


@click.command("guard", help=HELP)
@click.option(
    "--expect",
    "-e",
    metavar="FILE",
    required=True,
    help="The expect.json whose properties the output must hold.",
)
@click.option(
    "--scorer",
    "scorers",
    metavar="MODULE:FUNCTION",
    multiple=True,
    help="A custom scorer to run as well (repeatable): module:function or file.py:function.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every property's result as JSON.")
@click.argument("output", default="-", metavar="[OUTPUT|-]")
def guard_command(expect: str, scorers: tuple[str, ...], as_json: bool, output: str) -> None:
    code = run_guard(expect=expect, output=output, as_json=as_json, scorers=list(scorers))
    sys.stdout.flush()
    sys.exit(code)
