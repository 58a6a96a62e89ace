"""The confusable skeleton of a key (Unicode TR39): what it looks like, not how it is spelled.

`{"\u0455ql": ...}` (a Cyrillic dze) reads as `sql` to a person approving the output and to
anything that normalises what it reads; so does `sqI` (a capital I) or `sq1`. Two keys with
the same skeleton could be taken for one another, so the guard refuses a key whose skeleton is
an expected field's but which is not that field, and two such keys in one object.

The skeleton is TR39's: NFD, each character replaced by the prototype of its confusable
class (from Unicode's confusables.txt, as the `confusable-homoglyphs` package ships it: its
data file only is read, on the first key that is not ASCII), NFD again. Before it, the key is
brought to the form a lenient binder reads: NFKC (fullwidth `\uff53\uff51\uff4c`),
default-ignorable code points dropped (zero-width joiners, soft hyphens, variation
selectors, Hangul fillers), surrounding spaces dropped; and case is folded between two
skeleton passes, so that keys differing by case or by lookalikes, or both, compare equal.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["ASCII_SKELETON", "confusable_key"]

ASCII_SKELETON = {
    "0": "O", "1": "l", "I": "l", "|": "l", "m": "rn", '"': "''", "`": "'", "%": "\u00ba/\u2080",
}  # fmt: skip
"""The ASCII characters whose TR39 prototype is another (a test holds it to the data), so
that an ASCII key needs no data file."""

_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
"""Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt): drawn as
nothing, so `sql` with a zero-width joiner inside is `sql`."""
_ASCII_TABLE = str.maketrans(ASCII_SKELETON)


def confusable_key(key: str) -> str:
    """The form of `key` two lookalike keys share: equal for `sql`, `Sql`, ` sql`,
    `\uff53\uff51\uff4c` (fullwidth), `\u0455ql` (Cyrillic), `s\u200dql`, `sqI` and `sq1`."""
    if key.isascii():
        return _skeleton_ascii(key.strip())
    return _skeleton_unicode(key)


def _skeleton_ascii(text: str) -> str:
    return text.translate(_ASCII_TABLE).casefold().translate(_ASCII_TABLE)


@lru_cache(maxsize=1024)
def _skeleton_unicode(key: str) -> str:
    import unicodedata

    plain = unicodedata.normalize("NFKC", key)
    plain = "".join(char for char in plain if not _ignorable(ord(char))).strip()
    return _skeleton(_skeleton(plain).casefold())


def _ignorable(code: int) -> bool:
    return any(low <= code <= high for low, high in _IGNORABLE)


def _skeleton(text: str) -> str:
    import unicodedata

    table = _prototypes()
    decomposed = unicodedata.normalize("NFD", text)
    mapped = "".join(table.get(char, char) for char in decomposed)
    return unicodedata.normalize("NFD", mapped)


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """Each confusable character -> its class's prototype (a fixed point maps to itself).

    The data lists, for a prototype, the characters confusable with it, and for each of
    those the prototype alone; a target of more than one character (`m` -> `rn`) is a source's
    own. Classes are joined over both directions, and each named by its prototype: the member
    listing the others (or, in a class of two, the lower code point)."""
    import json
    from importlib.resources import files

    text = (files("confusable_homoglyphs") / "confusables.json").read_text(encoding="utf-8")
    data: dict[str, list[dict[str, str]]] = json.loads(text)
    marks = str.maketrans("", "", "\u200e\u200f")
    parent: dict[str, str] = {}

    def find(char: str) -> str:
        while parent.get(char, char) != char:
            char = parent[char]
        return char

    table: dict[str, str] = {}
    for char, entries in data.items():
        targets = [entry["c"].translate(marks) for entry in entries]
        if len(targets) == 1 and len(targets[0]) > 1:
            table[char] = targets[0]  # a source whose prototype is a sequence
            continue
        for target in targets:
            if len(target) == 1:
                first, second = find(char), find(target)
                if first != second:
                    keep, join = _prototype_first(first, second, data)
                    parent[join] = keep
    for char in list(data) + [entry for entries in parent.items() for entry in entries]:
        if char not in table and len(char) == 1:
            prototype = find(char)
            if prototype != char:
                table[char] = prototype
    return table


def _prototype_first(
    first: str, second: str, data: dict[str, list[dict[str, str]]]
) -> tuple[str, str]:
    """(the prototype, the other) of two classes' names: the one listing more characters, or
    the lower code point."""
    keep, join = sorted((first, second), key=lambda name: (-len(data.get(name, ())), name))
    return keep, join
