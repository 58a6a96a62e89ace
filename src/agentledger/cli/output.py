"""Printing tables and untrusted text to a terminal or a pipe."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from agentledger.errors import InputError
from agentledger.records.csv_cells import CsvOut

__all__ = ["emit", "print_rows", "render_value", "terminal_safe", "write_text_output"]

# Control characters, and the bidirectional controls that reorder what a terminal shows
# (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069: "Trojan Source" text).
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def write_text_output(text: str, output: Path | None) -> None:
    """A command's document: to stdout, or to `output` (saying so on stderr).

    A file that cannot be written is bad input: an InputError (exit 2) naming it.
    """
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(f"wrote {terminal_safe(str(output))}", err=True)


def emit(*renderables: Any) -> None:
    """Print rich renderables at their natural width: a narrow terminal wraps lines rather
    than cropping run ids and hashes; to a pipe, plain text without trailing padding."""
    from rich.console import Console  # here: `import` and `label` print no rich text

    tty = sys.stdout.isatty()
    buffer = io.StringIO()
    out = Console(
        file=buffer,
        width=10_000,
        force_terminal=tty,
        no_color=not tty,
        highlight=False,
        soft_wrap=True,
    )
    for item in renderables:
        out.print(item)
    click.echo("\n".join(line.rstrip() for line in buffer.getvalue().splitlines()))


def terminal_safe(text: str) -> str:
    """Show control characters (ANSI escapes in agent output, say) instead of obeying them."""
    return _CONTROL.sub(lambda m: _escaped(m.group()), text)


def render_value(value: Any) -> str:
    """A cell: None as '-', booleans as yes/no, everything else as text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return terminal_safe(str(value))


def print_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str = "table",
    *,
    headers: Sequence[str] | None = None,
) -> None:
    """Print rows as a table, JSON (a list of objects), or CSV."""
    if fmt == "json":
        objects = [dict(zip(columns, row, strict=True)) for row in rows]
        click.echo(json.dumps(objects, indent=2, ensure_ascii=False, default=str))
        return
    if fmt == "csv":
        writer = CsvOut(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
        return
    cells = [[render_value(value) for value in row] for row in rows]
    names = [name.upper() for name in headers or columns]
    if print_columns(names, cells):
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in names:
        table.add_column(name, no_wrap=True, overflow="fold")
    for row in cells:
        table.add_row(*(Text(value) for value in row))
    emit(table)


def print_columns(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()
) -> bool:
    """Print `rows` (each cell one line of text) under `headers` in aligned columns, two
    spaces apart, as `emit` prints a rich Table without borders: the same text, made without
    rich's layout of every cell (a trace of 20,000 steps took 9 s that way). `right`: the
    columns aligned right. False, printing nothing, when a cell holds a line break (rich lays
    those out)."""
    if any("\n" in cell or "\r" in cell for row in rows for cell in row):
        return False
    widths = [_width(name) for name in headers]
    for row in rows:
        for at, cell in enumerate(row):
            size = len(cell) if cell.isascii() else _width(cell)
            if size > widths[at]:
                widths[at] = size
    last = len(headers) - 1

    def line(row: Sequence[str]) -> str:
        parts = []
        for at, cell in enumerate(row):
            pad = widths[at] - (len(cell) if cell.isascii() else _width(cell))
            if at in right:
                parts.append(" " * pad + cell)
            else:
                parts.append(cell if at == last else cell + " " * pad)
        return "  ".join(parts).rstrip()

    head = line(headers)
    if sys.stdout.isatty():
        head = click.style(head, bold=True)
    click.echo("\n".join([head, *map(line, rows)]))
    return True


def _width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _escaped(char: str) -> str:
    """A control character as its escape: ``\\x1b``, ``\\u202e``."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
