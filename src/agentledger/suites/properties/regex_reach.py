"""Can a pattern of `regex` or `forbidden_regex` ever match what the guard searches?

A forbidden pattern that can match nothing (`a^b`, `$x`, `[^\\s\\S]`, `x\\Ay`, `\\b\\B`; or
`^DROP` over the whole output, which starts with `{`) rejects no output: it checks nothing.
A required one rejects every output. Either is refused at load, by one rule: a pattern is kept
only when an output is found that it matches, the output built around a witness text and
searched by the very code that scores it (RE2, over the text the property reads). What is not
shown to match is refused, so the check errs towards refusing, never towards a pattern that
cannot fire.

Witnesses come from RE2's own analysis first (`PossibleMatchRange`: the least and greatest
text a match may start with), then from the strings of the pattern's automaton, built by the
`interegular` package from the pattern with its zero-width assertions (`^ $ \\A \\z \\b \\B`)
left out: a wider language, whose strings are only candidates that RE2 then tries. When that
wider language is empty, so is the pattern's.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

__all__ = ["reaches"]

_MAX_CANDIDATES = 64
"""Accepting states of the automaton tried at most, nearest first."""
_POSIX = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "0-9a-zA-Z", "upper": "A-Z", "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9a-fA-F", "word": "0-9a-zA-Z_",
    "punct": "!-/:-@\\[-`{-~", "print": " -~", "graph": "!-~", "cntrl": "\\x00-\\x1f",
    "ascii": "\\x00-\\x7f",
}  # fmt: skip
"""RE2's POSIX classes, as ranges the automaton's parser reads (`[[:alpha:]]`)."""


def reaches(pattern: Any, matches: Callable[[str], bool]) -> str | None:
    """A text for which `matches(text)` holds, tried from witnesses of the compiled RE2
    `pattern` (each alone and between word and non-word characters, for `\\b` and `\\B`);
    None when none is found (then the pattern is taken to match nothing)."""
    for word in _candidates(pattern):
        for text in (word, f" {word} ", f"a{word}a", f"0{word}."):
            if matches(text):
                return text
    return None


def _candidates(pattern: Any) -> Iterator[str]:
    try:
        least, greatest = pattern.possiblematchrange(256)
    except Exception:  # RE2 may not bound it (a leading .*): the automaton gives witnesses
        least = greatest = b""
    for raw in (least, greatest):
        yield raw.decode("utf-8", "ignore")
    yield from _automaton_strings(pattern.pattern)


def _automaton_strings(text: str) -> Iterator[str]:
    """The shortest string to each accepting state of the pattern's automaton (without its
    assertions), found breadth first: a walk of its graph, at most `_MAX_CANDIDATES`."""
    wider = _without_assertions(text)
    if wider is None:
        return
    import interegular

    try:
        automaton = interegular.parse_pattern(wider).to_fsm()
    except Exception:  # a construct it does not read: no witnesses from it
        return
    # One character for each transition; "anything else" as one no class of the pattern names.
    named = {char for char in automaton.alphabet if isinstance(char, str)}
    other = next((c for c in ("x", "0", " ", "\u00e9", "\U0001f600") if c not in named), "x")
    spelled: dict[Any, str] = {}
    for key, chars in automaton.alphabet.by_transition.items():
        plain = [char for char in chars if isinstance(char, str)]
        spelled[key] = plain[0] if plain else other
    paths = {automaton.initial: ""}
    queue = [automaton.initial]
    found = 0
    for state in queue:  # grows while it is walked: breadth first
        if state in automaton.finals:
            yield paths[state]
            found += 1
            if found >= _MAX_CANDIDATES:
                return
        for key, target in automaton.map.get(state, {}).items():
            if target not in paths and key in spelled:
                paths[target] = paths[state] + spelled[key]
                queue.append(target)


def _without_assertions(text: str) -> str | None:
    """`text` with `^`, `$`, `\\A`, `\\z`, `\\b`, `\\B` outside classes left out and RE2-only
    forms rewritten (`\\Q..\\E`, `\\x{..}`, `\\pL`, POSIX classes, the `U` flag), for the
    automaton's parser; None when a form is not known here."""
    import re

    out: list[str] = []
    index = 0
    in_class = False
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            nxt = text[index + 1]
            if nxt == "Q":
                end = text.find("\\E", index + 2)
                literal = text[index + 2 :] if end < 0 else text[index + 2 : end]
                out.append("".join("\\" + c if not c.isalnum() else c for c in literal))
                index = len(text) if end < 0 else end + 2
                continue
            if nxt == "x" and text[index + 2 : index + 3] == "{":
                end = text.find("}", index)
                if end < 0:
                    return None
                out.append(re.escape(chr(int(text[index + 3 : end], 16))))
                index = end + 1
                continue
            if nxt in "pP":
                if in_class:
                    return None
                end = text.find("}", index) + 1 if text[index + 2 : index + 3] == "{" else index + 3
                out.append(".")
                index = end
                continue
            if nxt == "C":
                out.append(".")
            elif nxt in "AzbB" and not in_class:
                pass
            else:
                out.append(text[index : index + 2])
            index += 2
            continue
        if in_class:
            if text.startswith("[:", index):
                end = text.find(":]", index)
                name = text[index + 2 : end] if end > 0 else ""
                if name.startswith("^") or name not in _POSIX:
                    return None
                out.append(_POSIX[name])
                index = end + 2
                continue
            if char == "]":
                in_class = False
            out.append(char)
            index += 1
            continue
        if char == "[":
            in_class = True
            out.append(char)
            index += 1
            # A `]` right after `[` or `[^` is a member, not the end.
            if text.startswith("^", index):
                out.append("^")
                index += 1
            if text.startswith("]", index):
                out.append("\\]")
                index += 1
            continue
        if char in "^$":
            index += 1
            continue
        if text.startswith("(?", index):
            match = re.match(r"\(\?([imsU-]*)(\)|:)", text[index:])
            if match:
                flags = match.group(1).replace("U", "").replace("m", "")
                body = flags if flags.strip("-") else ""
                out.append(f"(?{body})" if match.group(2) == ")" and body else "")
                if match.group(2) == ":":
                    out.append(f"(?{body}:" if body else "(?:")
                index += len(match.group(0))
                continue
        out.append(char)
        index += 1
    return "".join(out)
