"""Checking the model's evidence: a quote counts only where it stands, verbatim, in the run.

Each artifact the judge may quote is a `Document`: its file name, its full text (never
shortened) and the line each offset falls on. A quote is found after whitespace runs are
collapsed and typographic quotes and dashes are made plain; an ellipsis (``...`` or ``…``)
separates parts that must appear in order. The stored evidence carries the text as it stands in
the artifact and the line the judge found, not the line the model claimed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from agentledger.records.scores import Evidence

__all__ = ["MAX_QUOTE", "MIN_QUOTE", "Document", "locate_quote"]

MIN_QUOTE = 5
"""Characters (not counting spaces) a quote needs: shorter ones would match almost anything."""
MAX_QUOTE = 1000
"""Characters of a quote kept in the stored evidence."""

_TYPOGRAPHIC = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
    }
)
_ELLIPSIS = re.compile(r"\.\.\.+|\u2026")
_ESCAPES = re.compile(r"&lt;|&#x([0-9a-f]{1,6});")


def _normal(text: str) -> tuple[str, list[int]]:
    """`text` with whitespace runs as one space and plain quotes, and each char's origin."""
    chars: list[str] = []
    origin: list[int] = []
    spacing = False
    for index, char in enumerate(text.translate(_TYPOGRAPHIC)):
        if char.isspace():
            if not spacing:
                chars.append(" ")
                origin.append(index)
            spacing = True
            continue
        spacing = False
        chars.append(char)
        origin.append(index)
    return "".join(chars), origin


@dataclass(frozen=True)
class Document:
    """An artifact evidence may be quoted from, with the line every offset falls on."""

    file: str
    text: str
    starts: tuple[int, ...] = field(default=(0,))
    """Offsets where numbered lines begin, ascending."""
    numbers: tuple[int, ...] = field(default=(1,))
    """The line number each start stands for."""

    @classmethod
    def of_text(cls, file: str, text: str) -> Document:
        """A plain text file: line n starts after the (n-1)-th newline."""
        starts = [0] + [match.end() for match in re.finditer("\n", text)]
        return cls(file, text, tuple(starts), tuple(range(1, len(starts) + 1)))

    def line_at(self, offset: int) -> int:
        """The line `offset` falls on."""
        position = bisect.bisect_right(self.starts, offset) - 1
        return self.numbers[max(position, 0)]

    @cached_property
    def _normalised(self) -> tuple[str, list[int]]:
        return _normal(self.text)

    def find(self, quote: str, near_line: int | None = None) -> Evidence | None:
        """Where `quote` stands in this document (nearest `near_line`), or None."""
        parts = [_normal(part)[0].strip() for part in _ELLIPSIS.split(quote)]
        parts = [part for part in parts if part]
        if not parts or sum(len(part.replace(" ", "")) for part in parts) < MIN_QUOTE:
            return None
        text, origin = self._normalised
        spans = list(_spans(text, parts))
        if not spans:
            return None
        lines = [self.line_at(origin[start]) for start, _ in spans]
        best = 0
        if near_line is not None:
            best = min(range(len(spans)), key=lambda i: (abs(lines[i] - near_line), i))
        start, end = spans[best]
        found = self.text[origin[start] : origin[end - 1] + 1]
        if len(parts) > 1:
            found = " … ".join(parts)
        return Evidence(quote=found[:MAX_QUOTE], file=self.file, line=lines[best])


def _spans(text: str, parts: list[str], limit: int = 200) -> Iterable[tuple[int, int]]:
    """(start, end) of each place where `parts` appear in order, the first part at start."""
    start = text.find(parts[0])
    found = 0
    while start != -1 and found < limit:
        end = start + len(parts[0])
        for part in parts[1:]:
            at = text.find(part, end)
            if at == -1:
                return
            end = at + len(part)
        yield start, end
        found += 1
        start = text.find(parts[0], start + 1)


def _unescaped(quote: str) -> str:
    def back(match: re.Match[str]) -> str:
        return "<" if match.group(1) is None else chr(int(match.group(1), 16))

    return _ESCAPES.sub(back, quote)


def locate_quote(
    quote: str, file: str | None, line: int | None, documents: dict[str, Document]
) -> Evidence | None:
    """Find `quote` in the document the model named, else in any other; None if in none.

    Tries the quote as given, without wrapping backticks or quote marks, and with the prompt's
    escapes (``&lt;``, ``&#x...;``) undone.
    """
    variants = [quote.strip()]
    variants.append(variants[0].translate(_TYPOGRAPHIC).strip("`'\" "))
    if "&" in quote:
        variants += [_unescaped(variant) for variant in variants]
    named = _resolve(file, documents)
    order = ([named] if named else []) + [doc for doc in documents.values() if doc is not named]
    for document in order:
        near = line if document is named else None
        for variant in dict.fromkeys(variants):
            found = document.find(variant, near)
            if found is not None:
                return found
    return None


def _resolve(file: str | None, documents: dict[str, Document]) -> Document | None:
    if not file:
        return None
    name = file.strip().strip("`'\"").lower()
    for document in documents.values():
        known = document.file.lower()
        if name == known or name.rsplit("/", 1)[-1] == known:
            return document
        if known.split(".")[0].split("_")[0] in name:
            return document
    return None
