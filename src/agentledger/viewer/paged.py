"""The rows of a long JSON Lines file (a trace, a shell log) read a part at a time.

A run of 100,000 trace steps is shown 500 steps a page (`viewer.evidence.ROWS_PER_PART`):
parsing all of it for each page (seconds of CPU, much of it in one C call that holds the GIL)
kept every other request of the server waiting. `PagedRows` finds where each line starts (a
split at C speed, no JSON read), then parses only the lines a page shows and the few lines a
judge's evidence points at, each once. Where evidence names no line, the raw bytes are searched
for the quote as JSON writes it, and only the lines holding it are parsed (at most
`MAX_CANDIDATES` per quote): a quote the file holds only in another spelling (a ``\\u`` escape)
is then not placed, and is listed as "not shown here".

The file's bytes are still read whole and checked against the manifest (its sha256, at C speed
and without the GIL): what is shown is sealed evidence, or nothing.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, compress
from typing import Generic, TypeVar

__all__ = ["MAX_CANDIDATES", "PagedRows", "json_text"]

Row = TypeVar("Row")
MAX_CANDIDATES = 200
"""Lines parsed at most while looking for one quote or command."""


def json_text(value: str) -> bytes:
    """`value` as a JSON string's inside (without the quotes), as the ledger's writers spell it
    (pydantic and orjson: UTF-8 as is, only quotes, backslashes and control characters
    escaped)."""
    return json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8", "replace")


class PagedRows(Generic[Row]):
    """The rows of the non-blank lines of `raw`, parsed on demand by `parse` (numbered lines
    and the position of the first -> one row each; RecordError when one is bad), each once."""

    def __init__(
        self,
        raw: bytes,
        parse: Callable[[Sequence[tuple[int, bytes]], int], list[Row]],
    ) -> None:
        self._raw = raw
        self._parse = parse
        parts = raw.split(b"\n")
        kept = list(compress(range(len(parts)), map(bytes.strip, parts)))
        before = [0, *accumulate(map(len, parts))]
        # Line i (0-based) starts after the lines before it and their newlines.
        self._starts = array("q", [before[i] + i for i in kept])
        self._numbers = array("q", [i + 1 for i in kept])
        self._rows: dict[int, Row] = {}
        self.parsed = 0
        """Lines parsed so far (what a page costs)."""

    def __len__(self) -> int:
        return len(self._starts)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows(0, len(self)))

    def _line(self, position: int) -> tuple[int, bytes]:
        start = self._starts[position]
        end = self._raw.find(b"\n", start)
        return self._numbers[position], self._raw[start : end if end != -1 else len(self._raw)]

    def rows(self, first: int, count: int) -> list[Row]:
        """The rows at positions `first` to `first + count` (fewer at the end), parsed now at
        once where not yet."""
        positions = range(max(first, 0), min(first + count, len(self)))
        missing = [position for position in positions if position not in self._rows]
        # Runs of consecutive missing positions, each parsed in one call.
        while missing:
            run = 1
            while run < len(missing) and missing[run] == missing[0] + run:
                run += 1
            lines = [self._line(position) for position in missing[:run]]
            parsed = self._parse(lines, missing[0])
            self.parsed += len(lines)
            for position, row in zip(missing[:run], parsed, strict=True):
                self._rows[position] = row
            missing = missing[run:]
        return [self._rows[position] for position in positions]

    def at(self, position: int) -> Row:
        return self.rows(position, 1)[0]

    def position_of_line(self, line: int) -> int | None:
        """The position of the row on 1-based line `line` (None: no row there)."""
        position = bisect_right(self._numbers, line) - 1
        if position >= 0 and self._numbers[position] == line:
            return position
        return None

    def containing(self, needle: bytes) -> Iterator[tuple[int, Row]]:
        """In order, the rows whose line holds the bytes `needle` (at most `MAX_CANDIDATES`):
        candidates for the caller to check on the parsed row."""
        if not needle:
            return
        at = self._raw.find(needle)
        for _ in range(MAX_CANDIDATES):
            if at == -1:
                return
            position = bisect_right(self._starts, at) - 1
            if position < 0:
                return
            yield position, self.at(position)
            following = position + 1
            if following >= len(self):
                return
            at = self._raw.find(needle, self._starts[following])

    def parsed_rows(self) -> Iterator[tuple[int, Row]]:
        """The rows parsed so far, with their positions, in order."""
        return iter(sorted(self._rows.items(), key=lambda item: item[0]))
