"""`agentledger exec`: the gated shell.

The console script parses `exec` without click, for speed (agentledger.cli.exec_fast); this
click command has the same options and calls the same implementation, so that `--help`, the
generated docs and `python -m agentledger.cli` describe and behave like it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from agentledger.cli.exec_fast import HELP, run_exec

__all__ = ["exec_command"]


@click.command(
    "exec",
    help=HELP,
    context_settings={"allow_interspersed_args": False},
)
@click.option(
    "--run-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Run directory: shell_audit.jsonl is appended there [env AGENTLEDGER_RUN_DIR].",
)
@click.option(
    "--policy",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Policy file (YAML) [env AGENTLEDGER_POLICY; default: the packaged investigate policy].",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the classification and the decision; run and log nothing (exit 126 if denied).",
)
@click.option(
    "--batch",
    is_flag=True,
    help="Read commands from stdin, one per line; print one JSON decision each; run nothing.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    default=None,
    help="Seconds before the command is killed (exit 124) [default: the policy's].",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def exec_command(
    run_dir: Path | None,
    policy: Path | None,
    dry_run: bool,
    batch: bool,
    timeout: float | None,
    command: tuple[str, ...],
) -> None:
    code = run_exec(
        run_dir=str(run_dir) if run_dir is not None else None,
        policy=str(policy) if policy is not None else None,
        dry_run=dry_run,
        batch=batch,
        timeout=timeout,
        command=list(command),
    )
    sys.stdout.flush()
    sys.exit(code)
