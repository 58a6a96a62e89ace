"""`agentledger --help` without click: the application's help written from cli/commands.py's
table, as click writes it, in a few milliseconds.

`--help` is what a person types first; importing click and every command module for it took
four times a bare interpreter's start. This writes the same page (tests/test_cli_help.py holds
it to click's own at every width click uses): the usage, the help's paragraphs wrapped to the
terminal, the two options, and each command's summary, shortened as click shortens it. Only
the page the group itself shows is written here; a command's own help goes through click.
"""

from __future__ import annotations

from agentledger.cli.commands import COMMANDS, HELP, MAX_WIDTH

__all__ = ["help_page", "help_width", "print_help"]

PROG = "Usage: agentledger "
ARGS = "[OPTIONS] COMMAND [ARGS]..."
OPTIONS = [
    ("--version", "Show the version and exit."),
    ("-h, --help", "Show this message and exit."),
]
_DL_COL_MAX = 30  # click's write_dl: the widest first column, and the space after it
_DL_SPACING = 2


def help_width() -> int:
    """The width click writes help at: the terminal's, at most MAX_WIDTH, less 2, and at least
    50. The terminal's width as shutil.get_terminal_size gives it ($COLUMNS, else stdout's
    terminal, else 80), without importing shutil (and the compressors it loads)."""
    import os
    import sys

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return max(min(columns if columns > 0 else 80, MAX_WIDTH) - 2, 50)


def _fill(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """`text` filled to `width` (indents included), as click's wrap_text fills a paragraph."""
    import textwrap

    wrapper = textwrap.TextWrapper(
        width,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        replace_whitespace=False,
    )
    return wrapper.wrap(text)


def _paragraphs(text: str, width: int, indent: str) -> list[str]:
    """click's wrap_text with preserve_paragraphs: each paragraph joined and filled."""
    lines: list[str] = []
    for paragraph in text.strip().split("\n\n"):
        if lines:
            lines.append("")
        lines += _fill(" ".join(line.strip() for line in paragraph.splitlines()), width, indent)
    return lines


def _short(summary: str, limit: int) -> str:
    """A summary cut to `limit` as click cuts a command's help (its first sentence, shortened
    at a word with "...")."""
    words = summary.split()
    for index, word in enumerate(words):
        if word.endswith(".") and (index == len(words) - 1 or not words[index + 1][0].islower()):
            words = words[: index + 1]
            break
    text = " ".join(words)
    if len(text) <= limit:
        return text
    import textwrap

    return textwrap.shorten(text, limit, placeholder="...", break_on_hyphens=False)


def _definitions(rows: list[tuple[str, str]], width: int) -> list[str]:
    """click's write_dl at indent 2: terms in a column, each text wrapped beside its term."""
    first_col = min(max(len(term) for term, _ in rows), _DL_COL_MAX) + _DL_SPACING
    lines = []
    for term, text in rows:
        wrapped = _paragraphs(text, max(width - first_col - 2, 10), "")
        if len(term) <= first_col - _DL_SPACING:
            lines.append(f"  {term}{' ' * (first_col - len(term))}{wrapped[0]}")
        else:
            lines += [f"  {term}", f"{' ' * (first_col + 2)}{wrapped[0]}"]
        lines += [f"{' ' * (first_col + 2)}{line}" for line in wrapped[1:]]
    return lines


def help_page(width: int) -> str:
    """The text of `agentledger --help` at `width` (what click's formatter calls its width)."""
    names = sorted(COMMANDS)
    limit = width - 6 - max(map(len, names))
    commands = [(name, _short(COMMANDS[name].summary, limit)) for name in names]
    lines = [
        *_fill(ARGS, width, " " * len(PROG), first=PROG),
        "",
        *_paragraphs(HELP, width, "  "),
        "",
        "Options:",
        *_definitions(OPTIONS, width),
        "",
        "Commands:",
        *_definitions(commands, width),
    ]
    return "\n".join(lines) + "\n"


def print_help() -> int:
    """Write `agentledger --help` to stdout; the exit code (1 when the reader went away, as
    click exits then)."""
    import os
    import sys

    try:
        sys.stdout.write(help_page(help_width()))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
