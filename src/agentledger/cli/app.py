"""The click application: one lazy group over the command modules, each imported when run.

Commands are imported only when they are run (or asked for their own help), so a command
pays only for the parts of the library it uses, and `agentledger --help` for none of them.
"""

from __future__ import annotations

import click

from agentledger import __version__
from agentledger.cli.commands import ALIASES, COMMANDS, HELP, MAX_WIDTH
from agentledger.lazy import load

__all__ = ["ALIASES", "COMMANDS", "main"]


class LazyGroup(click.Group):
    """A group whose subcommands are imported when first needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = COMMANDS.get(ALIASES.get(cmd_name, cmd_name))
        if known is None:
            return super().get_command(ctx, cmd_name)
        command = load(known.target)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of commands, as click writes it, from the summaries in COMMANDS: `--help`
        imports no command module."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            known = COMMANDS.get(name)
            if known is None:
                command = self.get_command(ctx, name)
                if command is None or command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:
                # Shortened as click shortens a command's help, without importing it.
                stand_in = click.Command(name, help=known.summary)
                rows.append((name, stand_in.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    help=HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": MAX_WIDTH},
)
@click.version_option(__version__, prog_name="agentledger")
def main() -> None:
    """The application (its help is cli/commands.py's HELP, which `--help` writes without click)."""
