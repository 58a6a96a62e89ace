"""Aligned columns printed without rich's layout give the text rich gives, cell for cell."""

from __future__ import annotations

import random

import pytest
from rich.table import Table
from rich.text import Text

from agentledger.cli import output

CELLS = [
    "",
    "-",
    "rm -rf /var/log/*",
    "日本語のログ",
    "naïve café",
    "e\u0301",  # a combining accent: one cell
    "🔥 fire",
    "tab\\x09escaped",
    "[bold]not markup[/bold]",
    "x" * 300,
]


def _rich(headers: list[str], rows: list[list[str]], right: tuple[int, ...]) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for at, name in enumerate(headers):
        table.add_column(name, no_wrap=True, justify="right" if at in right else "left")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


@pytest.mark.parametrize("seed", range(20))
def test_the_same_text_as_a_rich_table(seed: int, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(seed)
    headers = ["STEP", "KIND", "DETAIL"][: rng.randint(1, 3)]
    rows = [[rng.choice(CELLS) for _ in headers] for _ in range(rng.randint(0, 12))]
    right = (0,) if rng.random() < 0.5 else ()
    output.emit(_rich(headers, rows, right))
    expected = capsys.readouterr().out
    assert output.print_columns(headers, rows, right=right)
    assert capsys.readouterr().out == expected


def test_a_cell_with_a_line_break_is_left_to_rich(capsys: pytest.CaptureFixture[str]) -> None:
    assert not output.print_columns(["A"], [["two\nlines"]])
    assert capsys.readouterr().out == ""


def test_bidirectional_controls_are_shown_not_obeyed() -> None:
    """Agent output can reorder what a terminal shows (U+202E and friends): escaped, as
    control characters are."""
    from agentledger.report.untrusted import one_line

    shown = output.terminal_safe("rm -rf /\u202e# safe\u2066x\u2069\x1b[31m")
    assert shown == "rm -rf /\\u202e# safe\\u2066x\\u2069\\x1b[31m"
    assert one_line("a\u202eb\u200fc") == "a b c"
