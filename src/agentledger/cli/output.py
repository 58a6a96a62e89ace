"""Printing tables and untrusted text to a terminal or a pipe."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentledger.errors import InputError

__all__ = ["emit", "print_rows", "render_value", "terminal_safe", "write_text_output"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


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
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


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
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in headers or columns:
        table.add_column(name.upper(), no_wrap=True, overflow="fold")
    for row in rows:
        table.add_row(*(Text(render_value(value)) for value in row))
    emit(table)
