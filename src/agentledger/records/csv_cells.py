"""CSV that a spreadsheet opens as data: cells that would be read as a formula made inert.

Agent output, labels' reasons and run metadata are untrusted text. A CSV cell starting with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return is taken by spreadsheets (Excel,
LibreOffice, Google Sheets) for a formula, which can run commands or leak other cells
(``=cmd|' /C calc'!A0``, ``=HYPERLINK(...)``). As OWASP advises (CSV Injection), such a text
cell is written with a leading ``'``, which shows the text as it is. Numbers are left as they
are, as numbers or as text ("-0.5", and a lone "-" for none): a negative number is data, not a
formula ("-2+3" is one, and gets its ``'``). Every CSV writer of agentledger goes through
`inert_cell` (`csv_row`, `csv_dict`); `original_cell` undoes it, for files agentledger reads
back (`labels import` of a `labels export`): a text that itself starts with ``'`` before a
formula character gets one more ``'``, so the round trip is exact.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

__all__ = [
    "FORMULA_STARTS",
    "InertWriter",
    "csv_dict",
    "csv_row",
    "inert_cell",
    "original_cell",
]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula (OWASP)."""


def _marked(text: str) -> bool:
    bare = text.lstrip("'")
    return bare.startswith(FORMULA_STARTS) and not (bare == "-" or _plain_number(bare))


def _plain_number(text: str) -> bool:
    """A number written as text ("-0.5", "+3"), which a spreadsheet reads as that number."""
    if text != text.strip():
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def inert_cell(value: Any) -> Any:
    """`value`, with ``'`` before it when it is text a spreadsheet would read as a formula."""
    if isinstance(value, str) and _marked(value):
        return "'" + value
    return value


def original_cell(text: str) -> str:
    """The text `inert_cell` made `text` of."""
    return text[1:] if text.startswith("'") and _marked(text) else text


def csv_row(values: Iterable[Any]) -> list[Any]:
    """A row for `csv.writer`, every cell inert."""
    return [inert_cell(value) for value in values]


def csv_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row for `csv.DictWriter`, every cell inert."""
    return {key: inert_cell(value) for key, value in row.items()}


class InertWriter:
    """A CSV writer of `out` (lines ending in ``\n``) whose every cell is inert, and whose
    rows holding a carriage return have every field quoted: the writer quotes a field with a
    ``\n``, but not one with a bare ``\r``, which a spreadsheet (and Python's reader) takes as
    the end of a row, so ``x\r=1+1`` would start a row with a live formula. With `fieldnames`,
    rows are mappings (as `csv.DictWriter` takes them)."""

    def __init__(self, out: TextIO, fieldnames: Sequence[str] | None = None) -> None:
        self.fieldnames = list(fieldnames) if fieldnames is not None else None
        self._minimal = csv.writer(out, lineterminator="\n")
        self._all = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def writeheader(self) -> None:
        assert self.fieldnames is not None
        self.writerow(dict(zip(self.fieldnames, self.fieldnames, strict=True)))

    def writerow(self, row: Iterable[Any] | Mapping[str, Any]) -> None:
        if isinstance(row, Mapping):
            assert self.fieldnames is not None
            values: list[Any] = [row.get(name, "") for name in self.fieldnames]
        else:
            values = list(row)
        cells = csv_row(values)
        bare_cr = any(isinstance(cell, str) and "\r" in cell for cell in cells)
        (self._all if bare_cr else self._minimal).writerow(cells)

    def writerows(self, rows: Iterable[Iterable[Any] | Mapping[str, Any]]) -> None:
        for row in rows:
            self.writerow(row)
