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
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

__all__ = [
    "FORMULA_STARTS",
    "CsvOut",
    "csv_dict",
    "csv_row",
    "inert_cell",
    "original_cell",
]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula (OWASP)."""


def _marked(text: str) -> bool:
    """Whether a spreadsheet could read `text`, or any line of it, as a formula: a cell with
    a line break is kept whole when quoted, but one opened in a tool that splits rows at a
    bare CR would start a row with the line after it."""
    lines = re.split(r"\r\n|\r|\n", text.lstrip("'"))
    return any(
        line.startswith(FORMULA_STARTS) and not (line == "-" or _plain_number(line))
        for line in lines
    ) or text.lstrip("'").startswith("\r")


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


class CsvOut:
    """The one CSV writer of agentledger: rows end with ``\\n``, every cell is made inert
    (`inert_cell`), and a cell holding a comma, a quote, a CR or an LF is quoted (the csv
    module quotes only the characters of its line terminator: with ``\\n`` alone, a bare CR
    would pass unquoted and start a new row in a spreadsheet). `fieldnames`: rows are dicts."""

    def __init__(self, out: TextIO, fieldnames: Sequence[str] | None = None) -> None:
        self._out = out
        self._buffer = io.StringIO()
        self._fields = list(fieldnames) if fieldnames is not None else None
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")

    def writerow(self, row: Iterable[Any] | Mapping[str, Any]) -> None:
        if self._fields is not None:
            assert isinstance(row, Mapping)
            values: Iterable[Any] = [row.get(name, "") for name in self._fields]
        else:
            values = row
        self._buffer.seek(0)
        self._buffer.truncate()
        self._writer.writerow(csv_row(values))
        self._out.write(self._buffer.getvalue()[:-2] + "\n")

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)

    def writeheader(self) -> None:
        assert self._fields is not None
        self.writerow(dict(zip(self._fields, self._fields, strict=True)))
