"""What a command's knowledge entry (a `Spec`) says of one word: an option it names, the long
options an abbreviation may stand for, the subcommand a word names, the first verb."""

from __future__ import annotations

from bisect import bisect_left

from agentledger.shell.knowledge import RANK, UNKNOWN, Patterns, Spec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agentledger.shell.words import Word

__all__ = ["abbreviated", "named_in", "subcommand", "verb_of"]


def named_in(spec: Spec, flag: str) -> bool:
    """True when `flag` is an option `spec` names (with or without a class)."""
    return flag in spec.named or (
        spec.dry_run is not None and spec.dry_run.most_severe(flag) is not None
    )


_ABBREVIATIONS_KEPT = 1024
"""At most this many unknown long options are remembered per entry (a long-lived gate)."""


def abbreviated(spec: Spec, flag: str) -> list[tuple[str, str]]:
    """The long options of `spec` that `flag` is the start of (found by bisection: the
    options are sorted by name, so they follow one another)."""
    found = spec.abbreviated.get(flag)
    if found is None:
        names = spec.long_names
        index = bisect_left(names, flag)
        end = index
        while end < len(names) and names[end].startswith(flag):
            end += 1
        found = spec.long_options[index:end]
        if len(spec.abbreviated) < _ABBREVIATIONS_KEPT:
            spec.abbreviated[flag] = found
    return found


def subcommand(spec: Spec, word: str) -> tuple[str, Any] | None:
    """The subcommand `word` names: exactly, or as an abbreviation when the tool allows it.

    An abbreviation that could mean several plain subcommands counts as the most severe.
    """
    if word in spec.subs:
        return word, spec.subs[word]
    if not spec.abbreviations:
        return None
    candidates = [(name, entry) for name, entry in spec.subs.items() if name.startswith(word)]
    if not candidates:
        return None
    if all(isinstance(entry, str) for _, entry in candidates):
        return max(candidates, key=lambda candidate: RANK[candidate[1]])
    if len(candidates) == 1 or spec.abbreviations == "ordered":
        return candidates[0]
    # Several, some with options of their own (`nmcli general h`: help or hostname NAME):
    # which one the tool picks depends on its own table order, so the gate cannot tell.
    return word, UNKNOWN


def verb_of(verbs: Patterns, positionals: list[tuple[int, Word]]) -> tuple[str, str] | None:
    """The class of the first positional word that matches a verb pattern."""
    for _, word in positionals:
        if word.value is None:
            return UNKNOWN, word.raw
        kind = verbs.most_severe(word.value.lower())
        if kind is not None:
            return kind, word.value
    return None
