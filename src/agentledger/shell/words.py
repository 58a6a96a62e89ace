"""Shell words: what a word of a command line means once the shell has removed its quotes.

A word whose value depends on the run (`$VAR`, `$(...)`, `${x:-y}`) has no static value; the
classifier then cannot tell what it names and says so.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "Word",
    "loose_words",
    "may_be_option",
    "node_text",
    "node_word",
    "plain_words",
    "simple_words",
]

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,- \t")
_RESERVED = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "in",
        "function",
        "select",
        "time",
        "coproc",
    ]
)
_ANSI_C = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
    "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


class Word:
    """A word as written (`raw`) and its value after quote removal (None if only known at run).

    `split` is True when the word holds an expansion outside quotes (`a$X`, `x${IFS}-o`,
    `a$(cmd)`): bash splits its result at the characters of IFS (which may be anything), so
    it may be several words, any of them an option, whatever the word starts with.

    `braced` is True for a word brace expansion made (`-delete` of `-{delete,print}`).
    """

    __slots__ = ("braced", "raw", "split", "value")

    def __init__(
        self, raw: str, value: str | None, split: bool = False, braced: bool = False
    ) -> None:
        self.raw = raw
        self.value = value
        self.split = split
        self.braced = braced

    def __repr__(self) -> str:
        return f"Word({self.raw!r}, {self.value!r})"


def simple_words(line: str) -> list[str] | None:
    """The words of a line made only of plain words, or None when the line needs the parser.

    Plain means letters, digits and ``_./:=@%+,-`` separated by blanks, with no reserved word
    in command position: such a line has no quoting, expansion or operator, so splitting it on
    blanks is exactly what the shell does. Leading ``NAME=value`` assignments are dropped.
    """
    plain = plain_words(line)
    return None if plain is None else plain[1]


def plain_words(line: str) -> tuple[list[str], list[str]] | None:
    """A plain line (see `simple_words`) as its leading ``NAME=value`` assignments and its
    words; None when the line needs the parser."""
    if not _PLAIN.issuperset(line):
        return None
    words = line.split()
    start = 0
    for word in words:
        if "=" not in word:
            break
        if not word.split("=", 1)[0].isidentifier():
            return None
        start += 1
    if start < len(words) and words[start] in _RESERVED:
        return None
    return words[:start], words[start:]


# A word that starts with one of these cannot be an option, whatever its expansions give.
LITERAL_START = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._~:@%+,="
)


def may_be_option(word: Word) -> bool:
    """True when the run-time word `word` may start with `-` once bash has expanded it."""
    if word.value is not None:
        return word.value.startswith("-")
    if word.split:
        return True
    if _stack_tilde(word.raw):
        return True
    raw = word.raw.lstrip("\"'")
    return not raw or raw[0] not in LITERAL_START


def _stack_tilde(raw: str) -> bool:
    """True for `~+`, `~-`, `~N`, `~+N`, `~-N` (up to a `/`): bash puts $PWD, $OLDPWD or a
    directory of the stack there."""
    if raw[:1] != "~":
        return False
    prefix = raw[1:].split("/", 1)[0]
    digits = prefix[1:] if prefix[:1] in "+-" else prefix
    return bool(prefix) and (digits == "" or digits.isdigit())


def loose_words(words: list[Word]) -> str:
    """Why the words bash runs may differ from the text of `words` (an expansion bash
    splits, one that may start with `-`, brace expansion): no allow pattern vouches for
    such a command. Empty when they do not."""
    for word in words:
        if word.split:
            return f"bash splits {word.raw} into words only known at run time"
        if word.braced:
            return f"brace expansion makes words the text does not show ({word.raw})"
        if word.value is None and may_be_option(word):
            return f"{word.raw} is only known at run time and could be an option"
    return ""


def node_text(node: Node) -> str:
    """The source text of a tree-sitter node."""
    text = node.text
    return text.decode("utf-8", "surrogateescape") if text is not None else ""


def node_word(node: Node, raw: str | None = None) -> Word:
    """The Word of an argument node (word, quoted string, concatenation, expansion, ...);
    `raw` is its text, when the caller has it."""
    if raw is None:
        raw = node_text(node)
    value = _value(node, raw)
    return Word(raw, value, value is None and _splits(node))


_SPLIT = frozenset(
    ["simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"]
)


def _splits(node: Node) -> bool:
    """True when `node` holds an expansion outside double quotes (bash splits its result),
    or one that makes several words inside them (`"a$@"`, `"${x[@]}"`, `"${!p@}"`)."""
    if node.type in _SPLIT:
        return True
    if node.type == "concatenation":
        return any(_splits(child) for child in node.named_children)
    if node.type in ("string", "translated_string"):
        for child in node.named_children:
            if child.type in ("simple_expansion", "expansion"):
                text = node_text(child)
                if "@" in text and not text.startswith("${#"):
                    return True
    return False


def _value(node: Node, raw: str) -> str | None:
    kind = node.type
    if kind == "word":
        if _stack_tilde(raw):
            return None  # $PWD, $OLDPWD, the directory stack: whatever the line made them
        return _unescape(raw) if "\\" in raw else raw
    if kind == "number":
        return raw
    if kind == "raw_string":
        return raw[1:-1]
    if kind in ("string", "translated_string"):
        if any(child.type != "string_content" for child in node.named_children):
            return None
        body = raw[1:-1] if kind == "string" else raw[2:-1]
        return _unescape(body, _DOUBLE_QUOTED_ESCAPES) if "\\" in body else body
    if kind == "ansi_c_string":
        return _ansi_c(raw[2:-1])
    if kind == "concatenation":
        pieces = []
        for child in node.children:
            piece = _value(child, node_text(child)) if child.is_named else node_text(child)
            if piece is None:
                return None
            pieces.append(piece)
        return "".join(pieces)
    return None


def _unescape(text: str, escapable: str | None = None) -> str:
    """Drop the backslashes of `text`: before any character (unquoted words), or only before
    those in `escapable` (double quotes). A backslash-newline is a line continuation."""
    out = []
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if char == "\\" and index + 1 < end and (escapable is None or text[index + 1] in escapable):
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


_DOUBLE_QUOTED_ESCAPES = '$`"\\\n'


def _ansi_c(text: str) -> str | None:
    """The value of `$'...'`'s body as bash decodes it; None for an escape it decodes in a way
    this does not follow (`\\cX`)."""
    out = []
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if char != "\\" or index + 1 >= end:
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code in _ANSI_C:
            out.append(_ANSI_C[code])
            index += 2
        elif code in "01234567":
            digits = code
            for digit in text[index + 2 : index + 4]:
                if digit not in "01234567":
                    break
                digits += digit
            out.append(chr(int(digits, 8) & 0xFF))
            index += 1 + len(digits)
        elif code in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[code]
            digits = ""
            for digit in text[index + 2 : index + 2 + width]:
                if digit not in "0123456789abcdefABCDEF":
                    break
                digits += digit
            try:
                out.append(chr(int(digits, 16)) if digits else "\\" + code)
            except (ValueError, OverflowError):
                return None
            index += 2 + len(digits)
        elif code == "c":
            return None
        else:
            out.append("\\" + code)
            index += 2
    return "".join(out)
