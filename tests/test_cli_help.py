"""`agentledger --help` lists every command from the application's table, importing none of
the command modules, with the summary each command gives itself."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from agentledger.cli import COMMANDS, main
from agentledger.lazy import load


def test_every_summary_is_the_commands_own_short_help() -> None:
    for name, known in COMMANDS.items():
        command = load(known.target)
        assert command.name == name
        assert known.summary == command.get_short_help_str(limit=10**6), name


def test_help_lists_the_commands_as_click_would() -> None:
    """The list the table gives is the one click makes from the imported commands, at a
    narrow width (summaries cut) and a wide one."""
    ctx = main.make_context("agentledger", ["--help"], resilient_parsing=True)
    for width in (60, 100):
        from_table, from_commands = (click.HelpFormatter(width=width) for _ in range(2))
        main.format_commands(ctx, from_table)
        click.Group.format_commands(main, ctx, from_commands)
        assert from_table.getvalue() == from_commands.getvalue()
    shown = CliRunner().invoke(main, ["--help"])
    assert shown.exit_code == 0 and "  migrate-backend  Copy the ledger" in shown.output


def test_help_imports_no_command_module() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['agentledger', '--help']\n"
        "from agentledger._entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "shown = sorted(m for m in sys.modules if m.startswith('agentledger.cli.'))\n"
        "print(shown, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "Commands:" in done.stdout and "migrate-backend" in done.stdout
    assert done.stderr.strip() == "['agentledger.cli.app']"
