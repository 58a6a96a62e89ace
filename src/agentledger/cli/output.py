"""Printing tables and untrusted text to a terminal or a pipe."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["console", "emit", "print_rows", "render_value", "terminal_safe"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def console(*, stderr: bool = False) -> Console:
    """A console that never wraps or truncates when output goes to a pipe or file."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, highlight=False)
    return Console(file=stream, width=10_000, no_color=True, highlight=False, soft_wrap=True)


def emit(*renderables: Any) -> None:
    """Print rich renderables; to a pipe, as plain text without trailing padding."""
    if sys.stdout.isatty():
        out = console()
        for item in renderables:
            out.print(item)
        return
    buffer = io.StringIO()
    plain = Console(file=buffer, width=10_000, no_color=True, highlight=False, soft_wrap=True)
    for item in renderables:
        plain.print(item)
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
