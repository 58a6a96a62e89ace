"""Sections as terminal text: rich tables, in colour on a terminal and plain in a pipe."""

from __future__ import annotations

import io
import re

from rich.console import Console, Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from agentledger.report.sections import Section, Table

__all__ = ["render_text"]

# Control characters, and the bidirectional controls that reorder what is shown.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _safe(text: str) -> str:
    """Show control characters (ANSI escapes in a model name, say) instead of obeying them."""
    return _CONTROL.sub(lambda m: _escaped(m.group()), text)


def _table(table: Table) -> RichTable:
    out = RichTable(
        title=Text(_safe(table.title), style="bold"),
        title_justify="left",
        header_style="bold",
        box=None,
        pad_edge=False,
    )
    for i, header in enumerate(table.headers):
        numeric = i in table.numeric
        out.add_column(_safe(header), justify="right" if numeric else "left", no_wrap=numeric)
    for row in table.rows:
        out.add_row(*(Text(_safe(cell)) for cell in row))
    return out


def _section(section: Section) -> RenderableType:
    parts: list[RenderableType] = [
        Text(_safe(section.title), style="bold underline"),
        Text(_safe(section.basis), style="dim"),
        Text(""),
    ]
    for paragraph in section.summary:
        parts.append(Text(_safe(paragraph)))
    for table in section.tables:
        parts += [Text(""), _table(table)]
    if section.caveats:
        parts += [Text(""), Text("Caveats", style="bold yellow")]
        parts += [Text("- " + _safe(caveat)) for caveat in section.caveats]
    return Group(*parts)


def render_text(sections: list[Section], *, color: bool = False, width: int = 160) -> str:
    """The sections as text; `color` for a terminal (rich styles), plain otherwise."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        emoji=False,
    )
    for i, section in enumerate(sections):
        if i:
            console.print()
        console.print(_section(section))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _escaped(char: str) -> str:
    """A control character as its escape: ``\\x1b``, ``\\u202e``."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
