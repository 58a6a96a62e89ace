"""What bash evaluates again inside a command line: arithmetic, subscripts and `${...}` forms.

Bash evaluates the value of every variable an arithmetic expression names as arithmetic again,
subscripts and `$(...)` included: after `x='a[$(rm F)]'`, `echo $((x))` runs rm. The same holds
for `((...))`, `let`, `[[ $x -eq 0 ]]`, array subscripts and substring offsets. The classifier
(`classifier._Walker`) therefore accepts a variable in arithmetic only when the line itself
assigned it a number before the use, at the top level, and nowhere assigned it anything else;
`Scope` keeps what a line assigns and uses, `arithmetic_names` reads an expression and
`expansion_parts` a `${...}` body.
"""

from __future__ import annotations

__all__ = ["Scope", "arithmetic_names", "expansion_parts", "is_integer"]

_SAFE_PARAMETERS = frozenset("#?$!")
FOREVER = 1 << 62
"""The end of the span in which a top-level assignment holds."""


class Scope:
    """What one command line (or a line nested in it) assigns, and where it uses arithmetic.

    `safe` holds, per variable, the spans (byte offsets in the line) in which it holds a number
    the line assigned; `unsafe` the variables assigned anything else anywhere (in a loop, a
    function, a subshell: wherever it is, a later pass of the code may use it); `refs` the
    arithmetic uses, resolved once the whole line has been read.
    """

    __slots__ = ("refs", "safe", "unsafe")

    def __init__(self) -> None:
        self.safe: dict[str, list[tuple[int, int]]] = {}
        self.unsafe: set[str] = set()
        self.refs: list[tuple[str, int, str, tuple[str, ...]]] = []

    def assigned(self, name: str, value: str | None, start: int, end: int) -> None:
        """`name` is assigned `value` (None: only known at run time), holding from `start` to
        `end` when it is a number."""
        if value is not None and is_integer(value):
            self.safe.setdefault(name, []).append((start, end))
        else:
            self.unsafe.add(name)

    def unsafe_uses(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """The arithmetic uses of variables that may hold anything: name, text, via."""
        found: list[tuple[str, str, tuple[str, ...]]] = []
        seen: set[str] = set()
        for name, position, shown, via in self.refs:
            if name in seen:
                continue
            spans = self.safe.get(name, ())
            if name in self.unsafe or not any(start <= position <= end for start, end in spans):
                seen.add(name)
                found.append((name, shown, via))
        return found


def is_integer(text: str) -> bool:
    """True for a decimal number, as bash reads it in arithmetic."""
    text = text.strip()
    return text.lstrip("-+").isdigit() and text.isascii()


def arithmetic_names(text: str) -> list[tuple[str, str]]:
    """The variables an arithmetic expression reads, as ("name", NAME), plus ("output", ...)
    for a command substitution and ("unsafe", ...) for positional parameters and the like.
    A name that is only assigned (`x = 1`) is not read."""
    found: list[tuple[str, str]] = []
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if char == "`" or (text.startswith("$(", index) and not text.startswith("$((", index)):
            found.append(("output", text[index : index + 20]))
            return found
        if char == "$":
            index = _parameter(text, index + 1, found)
            continue
        if char.isdigit():
            while index < end and (text[index].isalnum() or text[index] in "_#@"):
                index += 1
            continue
        if char.isalpha() or char == "_":
            stop = index
            while stop < end and (text[stop].isalnum() or text[stop] == "_"):
                stop += 1
            after = stop
            while after < end and text[after] in " \t":
                after += 1
            target = after < end and text[after] == "=" and text[after + 1 : after + 2] != "="
            if not target:
                found.append(("name", text[index:stop]))
            index = stop
            continue
        index += 1
    return found


def _parameter(text: str, index: int, found: list[tuple[str, str]]) -> int:
    """Read the parameter after a `$` at `index`; return where reading goes on."""
    end = len(text)
    if index < end and text[index] == "{":
        close = text.find("}", index)
        inner = text[index + 1 : close if close > 0 else end]
        index = close + 1 if close > 0 else end
        if inner.startswith("#") and len(inner) > 1:
            return index  # a length is a number
        if inner.startswith("!"):
            found.append(("unsafe", "${" + inner + "}"))
            return index
        found.extend(arithmetic_names(inner.replace("[", " [ ")))
        return index
    if index < end and text[index] in _SAFE_PARAMETERS:
        return index + 1
    if index < end and not (text[index].isalpha() or text[index] == "_"):
        if text[index] != "(":
            found.append(("unsafe", "$" + text[index]))
        return index + 1
    return index


_SPECIAL = frozenset("@*#?$!-0123456789")


def expansion_parts(body: str) -> tuple[list[str], str | None]:
    """What a `${...}` body (without `${` and `}`) evaluates: the arithmetic texts of its
    subscript and substring offsets, and why it is unknown (`${!x}`, `${x@P}`), if it is."""
    if body.startswith("#") and len(body) > 1:
        body = body[1:]
    elif body.startswith("!"):
        name = body[1:]
        if not name.endswith(("[@]", "[*]", "*", "@")):
            return [], "indirect expansion evaluates a name only known at run time"
        body = name.rstrip("*@")
    stop = 0
    if body[:1] in _SPECIAL:
        stop = 1  # `${@:x}`, `${*:x}`, `${1:x}`: a special or positional parameter
    while stop < len(body) and (body[stop].isalnum() or body[stop] == "_"):
        stop += 1
    rest = body[stop:]
    texts: list[str] = []
    if rest.startswith("["):
        close = rest.find("]")
        index = rest[1:close] if close > 0 else rest[1:]
        if index not in ("@", "*"):
            texts.append(index)
        rest = rest[close + 1 :] if close > 0 else ""
    if rest.startswith(":") and len(rest) > 1 and rest[1] not in "-=?+":
        texts.append(rest[1:].replace(":", " "))
    elif rest.startswith("@P"):
        return texts, "${x@P} expands x as a prompt, which runs commands"
    return texts, None
