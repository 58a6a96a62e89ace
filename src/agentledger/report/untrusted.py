"""Untrusted text made inert in Markdown: agent output and identity fields shown in documents.

Everything an agent wrote, and every identity field it could set (model names, scenario names,
tags), is shown as inline code or escaped prose, on one line, so that nothing in it can close a
table, open a link or an image, fetch a remote resource, inject HTML, add emphasis or fake a
heading or a list. Renderers of reports (`report.markdown`) and of decision records
(`gates.decision_markdown`) both use these.
"""

from __future__ import annotations

import re

__all__ = ["MAX_INLINE", "MAX_SENTENCE", "code", "fenced", "one_line", "prose"]

# Control characters, line separators, and the bidirectional controls that reorder what is
# shown (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069).
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_SPACE = re.compile(r"\s+")
# Markdown punctuation; an underscore that could open or close emphasis; a ']' that would
# close a link or an image ('](', '][', ']:'); and what GFM turns into a link by itself: the
# ':' of 'scheme://', the '.' of 'www.' and the '@' of an address. A bracket that can form no
# link ("95% [76-97]") stays as it is, so reports read well as plain text too.
_MARKDOWN = re.compile(
    r"([\\`*|~])|\](?=[(\[:])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|:(?=//)|(?<=[wW]{3})\.|@(?=\w)"
)
# What would start a block: a heading, a list item, a link reference definition ('[x]: url').
_BLOCK_START = re.compile(r"^(?:[#=+\[-]|\d+(?=[.)]))")
_BACKTICKS = re.compile(r"`+")
MAX_INLINE = 500
"""Quotes and reasons longer than this are cut ('...')."""
MAX_SENTENCE = 4000
"""A document's own sentences (rule, reasoning, summaries) are cut only beyond this."""


def one_line(text: str, limit: int | None = MAX_INLINE) -> str:
    """`text` with control characters and runs of white space made one space, cut at `limit`."""
    flat = _SPACE.sub(" ", _CONTROL.sub(" ", text)).strip()
    return flat if limit is None or len(flat) <= limit else flat[: limit - 3] + "..."


def prose(text: str, limit: int | None = MAX_INLINE) -> str:
    """`text` on one line (cut at `limit` characters), inert as Markdown: HTML and Markdown
    punctuation escaped, autolinks broken."""
    flat = one_line(text, limit)
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    flat = _MARKDOWN.sub(lambda match: "\\" + match.group(), flat)
    return _BLOCK_START.sub(_inert_start, flat, count=1)


def _inert_start(match: re.Match[str]) -> str:
    """A leading '#', '-', '+', '=', '[' or '1.' would start a heading, a list or a link
    reference definition: escape it."""
    found = match.group()
    return found + "\\" if found[0].isdigit() else "\\" + found


def code(text: str, limit: int | None = MAX_INLINE) -> str:
    """`text` on one line as an inline code span that no backtick inside it can close."""
    flat = one_line(text, limit)
    if not flat:
        return "` `"
    longest = max((len(run) for run in _BACKTICKS.findall(flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def fenced(text: str, info: str = "") -> str:
    """`text` as a fenced block whose fence is longer than any backtick run inside it."""
    clean = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\t", "    ")).rstrip("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(clean)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{clean}\n{fence}"
