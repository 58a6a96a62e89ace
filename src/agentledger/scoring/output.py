"""An agent's output as the property scorers see it: parsed JSON, its text, its fields.

The output is untrusted. Whatever it is (text, bytes, an already parsed object) it becomes an
`AgentOutput` or a plain-words reason why it cannot be scored; nothing here raises on bad
output and nothing is evaluated.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = [
    "MAX_OUTPUT_BYTES",
    "AgentOutput",
    "field_value",
    "iter_strings",
    "parse_output",
    "too_large",
    "unicode_variants",
]

MAX_OUTPUT_BYTES = 1_048_576
"""Outputs larger than this (1 MiB) are not parsed: they fail `output_json`, saying so."""

_MISSING = object()


class AgentOutput:
    """A parsed output: `data` (the JSON object) and `text` (the raw text it was parsed from)."""

    __slots__ = ("_search_text", "data", "text")

    def __init__(self, data: dict[str, Any], text: str) -> None:
        self.data = data
        self.text = text
        self._search_text: str | None = None

    @property
    def search_text(self) -> str:
        """The raw text and every decoded key and string value, one per line.

        Substring and regex properties look at this, so that `\\u0044ROP` in the JSON text is
        seen as `DROP`, and a keyword split by JSON escapes is still found.
        """
        if self._search_text is None:
            self._search_text = "\n".join([self.text, *iter_strings(self.data, keys=True)])
        return self._search_text

    def get(self, path: str) -> Any:
        """The value at the dotted `path` (`a.b`, `comments.0.path`), or None when absent."""
        value = field_value(self.data, path)
        return None if value is _MISSING else value

    def has(self, path: str) -> bool:
        """True when the dotted `path` exists in the output (even with a null value)."""
        return field_value(self.data, path) is not _MISSING


def field_value(data: Any, path: str) -> Any:
    """The value at the dotted `path` in `data`, or a private sentinel when it is absent."""
    value = data
    for part in path.split("."):
        if isinstance(value, dict):
            if part not in value:
                return _MISSING
            value = value[part]
        elif isinstance(value, list) and part.isdigit():
            index = int(part)
            if index >= len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def iter_strings(value: Any, *, keys: bool = False) -> Iterator[str]:
    """Every string inside `value` (nested lists and objects), and object keys if `keys`."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, inner in item.items():
                if keys and isinstance(key, str):
                    yield key
                stack.append(inner)
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))


_DOTS = str.maketrans({"\u3002": ".", "\uff61": "."})


def unicode_variants(text: str) -> list[str]:
    """`text`, and when it holds other than ASCII, its NFKC form without format characters.

    The forbidding checks look at both, so that a zero-width space or a soft hyphen inside a
    word, full-width letters (U+FF52 U+FF4D for `rm`) or ideographic full stops in a host name
    (which IDNA reads as dots) do not hide what they forbid.
    """
    if text.isascii():
        return [text]
    import unicodedata

    folded = unicodedata.normalize("NFKC", text).translate(_DOTS)
    folded = "".join(char for char in folded if unicodedata.category(char) != "Cf")
    return [text] if folded == text else [text, folded]


def parse_output(output: object) -> AgentOutput | str:
    """`output` as an `AgentOutput`, or why it cannot be scored (a sentence)."""
    if isinstance(output, dict):
        try:
            text = json.dumps(output, ensure_ascii=False, default=str)
        except (TypeError, ValueError) as exc:
            return f"the output object cannot be written as JSON: {exc}"
        return AgentOutput(output, text)
    if isinstance(output, bytes | bytearray | memoryview):
        raw = bytes(output)
        if len(raw) > MAX_OUTPUT_BYTES:
            return too_large(len(raw))
        if b"\x00" in raw:
            return "the output is binary (it contains NUL bytes), not JSON"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"the output is not UTF-8 text (byte {exc.start}), so not JSON"
    elif isinstance(output, str):
        text = output
        if len(text) > MAX_OUTPUT_BYTES and len(text.encode("utf-8", "replace")) > MAX_OUTPUT_BYTES:
            return too_large(len(text.encode("utf-8", "replace")))
        if "\x00" in text:
            return "the output is binary (it contains NUL bytes), not JSON"
    elif output is None:
        return "there is no output (null)"
    else:
        return f"the output is a {type(output).__name__}, not a JSON object"
    return _parse_text(text)


def too_large(size: int) -> str:
    """The reason an output of `size` bytes is not parsed."""
    return (
        f"the output is {size:,} bytes, over the {MAX_OUTPUT_BYTES:,}-byte limit; it was not parsed"
    )


def _parse_text(text: str) -> AgentOutput | str:
    body = _unfence(text.lstrip("\ufeff").strip())
    if not body:
        return "the output is empty"
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        start = body[:40].replace("\n", " ")
        where = f"line {exc.lineno}, column {exc.colno}"
        return f"the output is not JSON ({exc.msg} at {where}): {start!r}"
    except RecursionError:
        return "the output is not usable JSON (nested too deeply)"
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(data), "a number"
        )
        return f"the output is JSON but {kind}, not an object"
    return AgentOutput(data, text)


def _unfence(body: str) -> str:
    """The text inside one surrounding Markdown code fence (```json ... ```), if there is one."""
    if not body.startswith("```") or not body.endswith("```") or len(body) < 6:
        return body
    inner = body[3:-3]
    first, newline, rest = inner.partition("\n")
    if not newline:
        # One line: ```json {...}``` carries its label before the JSON.
        label, space, after = inner.strip().partition(" ")
        if space and label.isalnum() and after.lstrip().startswith(("{", "[")):
            return after.strip()
        return inner.strip()
    label = first.strip()
    if label and not label.replace("-", "").replace("_", "").isalnum():
        return body
    return rest.strip()
