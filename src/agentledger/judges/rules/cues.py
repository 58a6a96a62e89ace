"""The words around a command that say what the author means by it: a warning ("do not run",
"would be reverted"), an instruction ("run", "then"), or a mention.

A cue only reaches the command in its own clause: in "Do not flush the chain; run `X` instead"
the warning stops at the semicolon. Code spans are masked before any of this is read, so words
inside a command never count as cues. Markdown decoration is read as the words it decorates:
emphasis (`**not**`, `_never_`), blockquote markers and emoji become spaces (same length, so
offsets still hold) and the cue patterns accept any run of spaces between their words:
"> ⚠️ Do **not** run `X`" warns like "Do not run `X`".
"""

from __future__ import annotations

import re

__all__ = [
    "clause_after",
    "clause_before",
    "is_instruction_before",
    "is_warning_after",
    "is_warning_before",
    "is_warning_lead",
    "mask_code",
    "normalise",
    "sentence_bounds",
]


def _spaced(pattern: str) -> str:
    """`pattern` with each literal space accepting any run of whitespace."""
    return pattern.replace(" ", r"\s+")


WARN_BEFORE = re.compile(
    _spaced(
        r"\b(?:do not|don't|dont|never|avoid(?:ing)?|instead of|rather than|not recommended|"
        r"refrain from|resist(?:ing)?|no need to|there is no need|shouldn't|should not|must not|"
        r"mustn't|would not|wouldn't|will not|won't|not (?:to )?(?:run|use|execute|flush|delete|"
        r"touch|edit|remove)|tempting|temptation|without(?: running| using| touching)?|unsafe|"
        r"dangerous|bad idea|wrong|not safe|against|naive|brute[- ]force|quick and dirty|"
        r"rejected|not advisable|discouraged|anti-?pattern|what not to do|do NOT)\b"
    ),
    re.IGNORECASE,
)
WARN_AFTER = re.compile(
    _spaced(
        r"^[^.;]{0,140}?\b(?:would|will|could|might|gets?|got|is|are|be|being)\s+(?:\w+\s+){0,3}?"
        r"(?:reverted|undone|overwritten|overridden|rewritten|lost|wiped|re-?added|re-?applied|"
        r"re-?created|re-?inserted|put back|reset|removed again)\b"
        r"|^[^.;]{0,140}?\b(?:would|will|could|might)\s+(?:\w+\s+){0,4}?(?:revert|undo|re-?add|"
        r"re-?apply|re-?ban|re-?create|re-?insert|overwrite|rewrite|fight|race|conflict|reconcile|"
        r"put (?:it |them )?back|lose)\w*"
        r"|^[^.;]{0,140}?\b(?:reverts?|undoes|re-?adds|re-?applies|re-?bans|re-?creates|overwrites|"
        r"rewrites|reconciles)\s+(?:it|them|this|that|the (?:rule|chain|change|qdisc|file|edit|"
        r"object))\b"
        r"|^[^.;]{0,100}?\b(?:is|are|would be|seems?|looks?)\s+(?:not recommended|unsafe|dangerous|"
        r"risky|a bad idea|wrong|too broad|overkill|not needed|unnecessary|not necessary|not safe|"
        r"not the (?:right|correct|proper) (?:fix|way)|tempting|only a (?:band-?aid|workaround))"
        r"|^[^.;]{0,100}?\bwould (?:also |additionally )?(?:clear|flush|wipe|remove|drop|delete|"
        r"open|expose|disable|break|kill|lock|unban|lift)\b[^.;]{0,60}\b(?:every|all|other|the "
        r"whole|entire|everything|everyone|unrelated)\b"
        r"|^[^.;]{0,100}?\bwould (?:clear|flush|wipe|remove|drop|delete|disable|break|kill|"
        r"lose|expose)\b[^.;]{0,60}\b(?:as well|too)\b"
        r"|^[^.;]{0,80}?\bwould also\b[^.;]{0,80}\bbut\b"
        r"|^\W{0,3}(?:was|were|got|is) (?:denied|blocked|refused|rejected)\b"
        r"|^\W{0,3}\((?:not recommended|don't|do not|avoid|rejected|unsafe|wrong|bad)\b"
        r"|^\W{0,6}(?:--|—|-|:)?\s*(?:rejected|not recommended|avoid|don't|do not|unsafe|wrong)\b"
    ),
    re.IGNORECASE,
)
WARN_LABEL = re.compile(
    _spaced(
        r"^\s*(?:not recommended|rejected|avoid|don't|dont|do not|never|what not to do|"
        r"what to avoid|unsafe|dangerous|wrong|bad idea|anti-?pattern)\s*:$"
    ),
    re.IGNORECASE,
)
"""A label opening a sentence ("Not recommended:", "Avoid:"): it warns against the commands in
the rest of that clause, even after other words ("Rejected: detaching the NSG (`x`)")."""
INSTRUCTION = re.compile(
    _spaced(
        r"\b(?:run|execute|apply|issue|use|type|enter|fix|recommend\w*|should|need to|needs to|"
        r"must|remediat\w*|solution|resolve|then|next|first|finally|step|propose\w*|suggest\w*|"
        r"to (?:fix|restore|resolve|remove|lift|unban|allow|open|enable|add|update))\b"
    ),
    re.IGNORECASE,
)
_CODE = re.compile(r"(`+)(.{1,2000}?)\1", re.DOTALL)
_WINDOW = 2000
"""How far back a sentence is looked for: keeps long, unpunctuated text linear."""
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z(*_`\"'\[]|\s*$)|\n\s*\n")
_COMMA_OK = re.compile(r"^[\s,/]*(?:(?:or|and|nor|and/or)\b[\s,/]*)?$", re.IGNORECASE)
_BREAK = re.compile(r";|\u2014|\u2013|\s-\s|\.\s")


_DECORATION = re.compile(
    r"\*+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])|~~|(?m:^[ \t]*(?:>[ \t]*)+)"
    r"|[\u2300-\u23ff\u2460-\u24ff\u2500-\u27bf\u2b00-\u2bff\ufe0f\u200d\U0001f000-\U0001faff]"
)
"""Markdown emphasis, blockquote markers and emoji (arrows and dashes are kept: they mean
something)."""


def normalise(text: str) -> str:
    """`text` with markdown decoration replaced by spaces (same length, same offsets)."""
    if text.isascii() and "*" not in text and "_" not in text and ">" not in text:
        return text  # the common case, without a regex scan
    if not _DECORATION.search(text):
        return text
    return _DECORATION.sub(lambda match: " " * len(match.group(0)), text)


def mask_code(text: str) -> str:
    """`text` with every code span's content replaced by x's (same length)."""
    return _CODE.sub(lambda match: "`" * len(match.group(1)) + "x" * len(match.group(2))
                     + "`" * len(match.group(1)), text)  # fmt: skip


def sentence_bounds(masked: str, start: int, end: int) -> tuple[int, int]:
    """The start and end of the sentence holding masked[start:end]."""
    floor = max(0, start - _WINDOW)
    begin = floor
    for match in _SENTENCE_END.finditer(masked, floor, start):
        begin = match.end()
    found = _SENTENCE_END.search(masked, end, end + _WINDOW)
    return begin, found.end() if found else min(len(masked), end + _WINDOW)


def _spans_removed(text: str) -> str:
    return re.sub(r"`+x+`+", " ", text)


def clause_before(masked: str, sentence_start: int, start: int) -> str:
    """The words before a span that still belong to its clause."""
    text = masked[sentence_start:start]
    cut = 0
    for match in _BREAK.finditer(text):
        cut = match.end()
    text = text[cut:]
    # A colon ends the clause unless the span follows it directly ("Avoid: `x`"), or the words
    # before it are only a warning label that governs the clause ("Not recommended: detaching
    # the NSG (`x`)").
    colon = text.rfind(":")
    if (
        colon >= 0
        and _spans_removed(text[colon + 1 :]).strip(" *_\t\n")
        and not WARN_LABEL.match(normalise(text[: colon + 1]))
    ):
        text = text[colon + 1 :]
    # A comma ends it too, unless only other spans and "or"/"and" stand between.
    comma = text.rfind(",")
    while comma >= 0:
        between = _spans_removed(text[comma:])
        if not _COMMA_OK.match(between):
            text = text[comma + 1 :]
            break
        comma = text.rfind(",", 0, comma)
    if re.search(r"\binstead\b|\b(?:run|use)\b", _spans_removed(text), re.IGNORECASE) and (
        re.search(r"\binstead\b[^`]*$", text, re.IGNORECASE)
    ):
        # "Do not X, instead run `Y`": the warning is before "instead".
        text = text[text.lower().rfind("instead") :]
    return text


def clause_after(masked: str, end: int, sentence_end: int) -> str:
    """The words after a span, to the end of its sentence."""
    return masked[end:sentence_end]


def is_warning_before(clause: str) -> bool:
    """True when the words before a command (in its clause) warn against it."""
    clause = normalise(clause)
    match = WARN_BEFORE.search(clause)
    if match is None:
        return False
    tail = clause[match.end() :]
    return not re.search(r"\binstead\b", tail, re.IGNORECASE)


def is_warning_after(text: str) -> bool:
    """True when the words after a command say it would be reverted, or is unsafe."""
    return WARN_AFTER.search(normalise(text)) is not None


_ADJUNCT = re.compile(
    _spaced(
        r"^\W*(?:to|in order to|so as to|so that|if|when|once|because|since|as soon as|after|"
        r"before|while)\b[^,:]*,(?=[^,]*\w)"
    ),
    re.IGNORECASE,
)
"""An opening purpose or condition clause ("To get it working and avoid another round of
debugging, open ..."): a warning word inside it is about the goal, not about what follows."""


def without_adjunct(clause: str) -> str:
    """`clause` without an opening purpose or condition clause (same length: spaces)."""
    match = _ADJUNCT.match(clause)
    if match is None:
        return clause
    return " " * match.end() + clause[match.end() :]


def is_warning_lead(text: str) -> bool:
    """True when the words introducing a block or list warn against what follows.

    The warning must govern what follows: one inside an opening purpose or condition clause
    ("to avoid another outage, run:") does not.
    """
    masked = re.sub(
        r"\([^()]*\)", " ", normalise(mask_code(text))
    )  # asides do not introduce the block
    last = without_adjunct(re.split(r"[.;!?]\s+", masked.strip())[-1])
    return bool(WARN_BEFORE.search(last)) or bool(WARN_AFTER.search(last))


def is_instruction_before(clause: str) -> bool:
    """True when the words before a command tell the reader to run it."""
    return INSTRUCTION.search(normalise(clause)) is not None
