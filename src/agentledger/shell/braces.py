"""Brace expansion as bash does it, on a word as written: `-{delete,print}` is the two words
`-delete -print`, `a{1..3}` is `a1 a2 a3`.

Bash expands braces before anything else and the gate's parser gives the braces as text, so
without this the classifier read `find / -{delete,print}` as one harmless word (issue 33).
`expand` follows bash's `braces.c`:

- a brace expression is an unquoted `{`, then text holding an unquoted comma at its own
  level, or a sequence `x..y` / `x..y..step` (integers, or single letters), then the `}`
  that closes it (nested ones counted);
- quoted text (`'...'`, `"..."`, backquotes, a backslash and the character after it) is never
  part of one, and `${...}`, `$(...)`, `<(...)`, `>(...)` are passed over;
- `{}`, `{a}`, an unclosed `{`, and a sequence of mixed or invalid ends stay as written, and
  expansion goes on after them (`a{b}c{d,e}` is `a{b}cd a{b}ce`);
- a `{` at the start of the word or after a blank, followed by a blank or `}`, is no opener;
- integers keep the width of an end written with a leading zero (`{01..3}` is `01 02 03`);
  the step's sign is ignored, as bash does.

A word that would expand to more than `LIMIT` words is refused (`TooMany`), never expanded.
"""

from __future__ import annotations

from agentledger.shell.words import Word, node_text, node_word

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["LIMIT", "TooMany", "brace_words", "expand"]

LIMIT = 1024
"""The most words one word may expand to."""


class TooMany(ValueError):
    """The word expands to more words than LIMIT."""


def expand(text: str, limit: int = LIMIT) -> list[str]:
    """The words bash's brace expansion makes of the word `text` (as written, quotes kept)."""
    if "{" not in text:
        return [text]
    found = _expand(text, limit)
    return found


_QUOTING = frozenset("'\"\\$`")


def brace_words(nodes: list[Node]) -> list[Word] | str:
    """The words of one bash word after brace expansion, or why it is refused (it would make
    more than LIMIT words). `nodes` are the parser's argument nodes of that word: more than
    one when the parser split a word bash reads as one (`'-'\\delete`)."""
    if len(nodes) == 1:
        raw = node_text(nodes[0])
        if "{" not in raw:
            return [node_word(nodes[0], raw)]
        plain = node_word(nodes[0], raw)
    else:
        raw = "".join(node_text(node) for node in nodes)
        parts = [node_word(node) for node in nodes]
        values = [part.value for part in parts]
        joined = None if None in values else "".join(v for v in values if v is not None)
        plain = Word(raw, joined, any(part.split for part in parts))
    if "{" not in raw or not any(node.type in _BRACED for node in nodes):
        return [plain]
    try:
        pieces = expand(raw)
    except TooMany as error:
        return f"{error}: {raw[:60]}"
    if pieces == [raw]:
        return [plain]
    # An unquoted empty word (`{,}`) is no word at all.
    return [_piece(piece) for piece in pieces if piece]


_BRACED = frozenset(["word", "concatenation", "brace_expression"])


def _piece(piece: str) -> Word:
    """The Word of one word brace expansion made, as written."""
    if _QUOTING.isdisjoint(piece):
        return Word(piece, piece, braced=True)
    from agentledger.shell.bash_grammar import parse

    root = parse(b": " + piece.encode("utf-8", "surrogateescape"))
    command = root.named_children[0] if root.named_child_count == 1 else None
    arguments = []
    if command is not None and command.type == "command" and not root.has_error:
        arguments = [
            child
            for index, child in enumerate(command.children)
            if command.field_name_for_child(index) == "argument"
        ]
    if len(arguments) != 1 or node_text(arguments[0]) != piece:
        return Word(piece, None, True, braced=True)
    word = node_word(arguments[0])
    word.braced = True
    return word


def _expand(text: str, limit: int) -> list[str]:
    # Find the first `{` that opens a brace expression: one with its closing `}`.
    index = 0
    while True:
        index = _gobble(text, index, "{")
        if index < 0:
            return [text]
        if _gobble(text, index + 1, "}") >= 0:
            break
        index += 1
    preamble = text[:index]
    close = _gobble(text, index + 1, "}")
    amble = text[index + 1 : close]
    if _has_comma(amble):
        tacks: list[str] = []
        for element in _split(amble):
            tacks.extend(_expand(element, limit))
            _check(len(tacks), limit)
    else:
        sequence = _sequence(amble, limit)
        if sequence is not None:
            tacks = sequence
        elif close + 1 < len(text):
            tacks = [text[index : close + 1]]  # kept as written; what follows may expand
        else:
            return [text]
    post = _expand(text[close + 1 :], limit) if close + 1 < len(text) else [""]
    _check(len(tacks) * len(post), limit)
    return [preamble + tack + tail for tack in tacks for tail in post]


def _has_comma(amble: str) -> bool:
    """bash's first look at an amble: a comma anywhere not after a backslash."""
    index = 0
    while index < len(amble):
        if amble[index] == "\\":
            index += 2
            continue
        if amble[index] == ",":
            return True
        index += 1
    return False


def _check(count: int, limit: int) -> None:
    if count > limit:
        raise TooMany(f"brace expansion makes more than {limit} words")


def _gobble(text: str, index: int, wanted: str) -> int:
    """The index of the `wanted` (`{`, `}` or `,`) bash's brace_gobbler stops at from
    `index`, or -1. A `}` closes only after a comma or `..` at its level."""
    level = 0
    quote = ""
    commas = 0 if wanted == "}" else 1
    end = len(text)
    while index < end:
        char = text[index]
        if char == "\\" and quote != "'":
            index += 2
            continue
        if char == "$" and text[index + 1 : index + 2] == "{" and quote != "'":
            index += 2  # `${`: its `{` is no brace, its `}` closes a level
            if not quote:
                level += 1
            continue
        if quote:
            if char == quote:
                quote = ""
            elif quote == '"' and char == "$" and text[index + 1 : index + 2] == "(":
                index = _skip(text, index + 1)
                continue
            index += 1
            continue
        if char in "'\"`":
            quote = char
            index += 1
            continue
        if char in "$<>" and text[index + 1 : index + 2] == "(":
            index = _skip(text, index + 1)
            continue
        if char == wanted and level == 0 and commas > 0:
            if wanted == "{" and (index == 0 or text[index - 1] in " \t\n"):
                after = text[index + 1 : index + 2]
                if after in ("", " ", "\t", "\n", "}"):
                    index += 1
                    continue
            return index
        if char == "{":
            level += 1
        elif char == "}" and level:
            level -= 1
        elif wanted == "}" and level == 0 and (char == "," or _dots(text, index)):
            commas += 1
        index += 1
    return -1


def _dots(text: str, index: int) -> bool:
    """A `..` at `index` not followed by `}`: a sequence separator."""
    return text.startswith("..", index) and text[index + 2 : index + 3] != "}"


def _skip(text: str, index: int) -> int:
    """The index after the bracket group opening at `index` (`(` or `{`), quotes respected."""
    pairs = {"(": ")", "{": "}"}
    stack = [pairs[text[index]]]
    index += 1
    quote = ""
    end = len(text)
    while index < end and stack:
        char = text[index]
        if char == "\\" and quote != "'":
            index += 2
            continue
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char in pairs:
            stack.append(pairs[char])
        elif char == stack[-1]:
            stack.pop()
        index += 1
    return index


def _split(amble: str) -> list[str]:
    """The elements of a comma list, split at its level-0 unquoted commas."""
    parts = []
    start = 0
    while True:
        comma = _gobble(amble, start, ",")
        if comma < 0:
            parts.append(amble[start:])
            return parts
        parts.append(amble[start:comma])
        start = comma + 1


def _number(text: str) -> int | None:
    """`text` as bash's legal_number reads it (sign, decimal digits), or None."""
    body = text.strip(" \t\n")
    digits = body[1:] if body[:1] in "+-" else body
    if not digits.isdigit() or not digits.isascii():
        return None
    return int(body)


def _sequence(amble: str, limit: int) -> list[str] | None:
    """The words of a sequence expression `x..y[..step]` (bash's expand_seqterm), or None
    when it is none."""
    left, dots, rest = amble.partition("..")
    if not dots or not left or not rest:
        return None
    step_text = None
    if rest[:1].isdigit() or (rest[:1] in "+-" and rest[1:2].isdigit()):
        digits = 1 if rest[0] in "+-" else 0
        while digits < len(rest) and rest[digits].isdigit():
            digits += 1
        right, tail = rest[:digits], rest[digits:]
        kind = "int"
    elif rest[:1].isalpha() and rest[:1].isascii() and rest[1:2] in ("", "."):
        right, tail = rest[:1], rest[1:]
        kind = "char"
    else:
        return None
    if tail:
        if not tail.startswith("..") or len(tail) == 2:
            return None
        step_text = tail[2:]
    step = 1
    if step_text is not None:
        given = (
            _number(step_text.lstrip(" \t\n")) if step_text.rstrip(" \t\n") == step_text else None
        )
        if given is None:
            return None
        step = abs(given) or 1
    first = _number(left)
    if kind == "int" and first is not None:
        last = int(right)
        count = abs(last - first) // step + 1
        _check(count, limit)
        width = 0
        for end in (left, right):
            if (len(end) > 1 and end[0] == "0") or (len(end) > 2 and end[:2] == "-0"):
                width = max(len(left), len(right))
        sign = 1 if last >= first else -1
        return [f"{first + sign * step * n:0{width}d}" for n in range(count)]
    if kind == "char" and len(left) == 1 and left.isalpha() and left.isascii():
        low, high = ord(left), ord(right)
        sign = 1 if high >= low else -1
        count = abs(high - low) // step + 1
        return [chr(low + sign * step * n) for n in range(count)]
    return None
