"""`agentledger --help` lists every command from the application's table, importing none of
the command modules (nor click), with the summary each command gives itself, and is the page
click writes, at every width."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import click
import pytest
from click.testing import CliRunner

from agentledger.cli import COMMANDS, main
from agentledger.cli.quick_help import help_page
from agentledger.lazy import load

ENTRY = "import sys; sys.argv[0] = 'agentledger'; from agentledger._entry import main; main()"
"""`agentledger` as the console script runs it (the quick help for `--help`)."""
CLICK = "from agentledger.cli.app import main; main(prog_name='agentledger')"
"""The click application itself, as `agentledger` ran it before the quick help."""


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


def test_the_quick_help_is_clicks_page_at_every_width() -> None:
    """cli/quick_help.py writes what click writes, at each width click can use (50 to 100):
    the paragraphs wrapped, the summaries cut at the same word."""
    for width in range(50, 101):
        shown = CliRunner().invoke(main, ["--help"], prog_name="agentledger", terminal_width=width)
        assert shown.exit_code == 0
        assert help_page(width) == shown.output, width


@pytest.mark.parametrize("columns", ["", "40", "66", "200", "wide", "-3"])
def test_help_in_a_process_is_clicks_for_any_columns(columns: str) -> None:
    """`agentledger --help` and `-h` (the quick help) print exactly what the click application
    prints for `--help`, with $COLUMNS unset, narrow, wide or nonsense."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns

    def shown(code: str, flag: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code, flag], capture_output=True, text=True, env=env, check=True
        )
        return done.stdout

    expected = shown(CLICK, "--help")
    assert expected.startswith("Usage: agentledger [OPTIONS] COMMAND [ARGS]...\n")
    assert shown(ENTRY, "--help") == expected
    assert shown(ENTRY, "-h") == expected


def _on_terminal(code: str, columns: int) -> str:
    """What `python -c CODE --help` writes on a terminal `columns` wide (a pseudo-terminal)."""
    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    done = subprocess.Popen(
        [sys.executable, "-c", code, "--help"], stdout=child_fd, stderr=child_fd, env=env
    )
    os.close(child_fd)
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    assert done.wait(timeout=60) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [60, 90, 160])
def test_help_on_a_terminal_is_clicks_at_its_width(columns: int) -> None:
    """On a terminal, the quick help takes the terminal's width as click does."""
    expected = _on_terminal(CLICK, columns)
    assert "Commands:" in expected
    assert _on_terminal(ENTRY, columns) == expected


def test_help_when_the_reader_goes_away_exits_as_click_does() -> None:
    """`agentledger --help | head -1`: no traceback; exit 1, as click exits."""
    for code in (ENTRY, CLICK):
        read_end, write_end = os.pipe()
        os.close(read_end)  # nobody reads
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, "--help"],
                stdout=write_end,
                stderr=subprocess.PIPE,
                env={**os.environ, "COLUMNS": "80"},
                timeout=60,
                check=False,
            )
        finally:
            os.close(write_end)
        assert (done.returncode, done.stderr) == (1, b""), code


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
        "print(shown, 'click' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "Commands:" in done.stdout and "migrate-backend" in done.stdout
    assert done.stderr.strip() == "['agentledger.cli.commands', 'agentledger.cli.quick_help'] False"
