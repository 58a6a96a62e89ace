"""What every match of a redaction rule holds, read from its parsed regular expression, so
that text without it is not searched (and the rule's pattern is not even compiled).

`requirements` answers, for one pattern: the words of which every match holds one, the
length of its shortest match, words it holds more than once (a pgpass line's four colons),
and the longest run of token characters (`redact.TOKEN_CHARACTERS`) every match holds (a
GitHub token's 40). Only used when the rule table is built (`redact.rule_table`, cached).
"""

from __future__ import annotations

from agentledger.runner.shell_gate.redact import TOKEN_CHARACTERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["requirements"]

_IGNORECASE = 2
"""re.IGNORECASE's value: a case-blind `k` also matches the Kelvin sign, no token character."""
_TOKEN = frozenset(TOKEN_CHARACTERS)


def requirements(pattern: str, flags: int) -> list[Any]:
    """[one of some lower-case words every match holds (None: no such words), the length
    of the shortest match, [word, count] pairs of words it holds that many times, the run
    of token characters it holds (0: none known)]."""
    import importlib

    parser = importlib.import_module("re._parser")
    try:
        parsed = parser.parse(pattern, flags)
    except Exception:
        return [None, 0, [], 0]
    candidates: list[set[str]] = []
    words = _sequence_words(parser, list(parsed), candidates)
    counts: dict[str, int] = {}
    for candidate in candidates:
        if len(candidate) == 1:
            word = next(iter(candidate))
            counts[word] = counts.get(word, 0) + 1
    chosen = sorted(words) if words else None
    needs = [
        [word, count]
        for word, count in sorted(counts.items())
        if count > 1 or chosen != [word]  # one word held once is what `words` checks
    ]
    blind = (flags | parsed.state.flags) & _IGNORECASE  # passed or written (?i)
    run = 0 if blind else _token_run(parser, list(parsed))
    return [chosen, int(parsed.getwidth()[0]), needs, run]


def _sequence_words(
    parser: Any, items: list[tuple[Any, Any]], candidates: list[set[str]] | None = None
) -> set[str] | None:
    """The words of which every match of `items` holds one (the set with the longest
    shortest word); `candidates` gets every such set found at this level."""
    constants = parser
    candidates = [] if candidates is None else candidates
    run: list[str] = []

    def close() -> None:
        if run:
            candidates.append({"".join(run).lower()})
            run.clear()

    for op, value in items:
        if op is constants.LITERAL:
            run.append(chr(value))
            continue
        close()
        inner: set[str] | None = None
        if op is constants.SUBPATTERN:
            inner = _sequence_words(parser, list(value[-1]))
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT) and value[0] >= 1:
            inner = _sequence_words(parser, list(value[2]))
        elif op is constants.BRANCH:
            branches = [_sequence_words(parser, list(branch)) for branch in value[1]]
            if all(branches):
                inner = {word for branch in branches if branch for word in branch}
        if inner:
            candidates.append(inner)
    close()
    if not candidates:
        return None
    return max(candidates, key=lambda words: min(len(word) for word in words))


def _token_run(parser: Any, items: list[tuple[Any, Any]]) -> int:
    """The longest run of consecutive token characters every match of `items` holds: what
    its literals, classes and their repeats add up to between anything else (a group is
    measured on its own, an alternative or an unknown item ends the run)."""
    constants = parser
    longest = run = 0
    for op, value in items:
        if op is constants.AT:
            continue  # \b, ^: no character
        width = _token_width(parser, op, value)
        if width is None:
            longest, run = max(longest, run), 0
            if op is constants.SUBPATTERN and not value[1] & _IGNORECASE:  # not (?i:...)
                longest = max(longest, _token_run(parser, list(value[-1])))
            continue
        run += width
    return max(longest, run)


def _token_width(parser: Any, op: Any, value: Any) -> int | None:
    """How many token characters the item (op, value) surely matches, all of its matches
    being token characters; None when it may match anything else."""
    constants = parser
    if op is constants.LITERAL:
        return 1 if chr(value) in _TOKEN else None
    if op is constants.IN:
        return 1 if _token_class(parser, value) else None
    if op in (constants.MAX_REPEAT, constants.MIN_REPEAT):
        low, _, inner = value
        inner = list(inner)
        if len(inner) == 1:
            width = _token_width(parser, *inner[0])
            if width is not None:
                return int(low) * width
    return None


def _token_class(parser: Any, members: Any) -> bool:
    """True when the character class `members` holds token characters only (a category
    such as \\d matches other scripts' digits too, so it is not)."""
    constants = parser
    for op, value in members:
        if op is constants.LITERAL:
            if chr(value) not in _TOKEN:
                return False
        elif op is constants.RANGE:
            low, high = value
            if not all(chr(code) in _TOKEN for code in range(low, high + 1)):
                return False
        else:
            return False
    return True
