"""How a command's words are read as options: `-o F`, `-oF`, `--out=F`, clusters of short
options (`-nnw F`, getopt's reading), and the words a clustered letter may hide."""

from __future__ import annotations

from agentledger.shell.knowledge import READ_ONLY, UNKNOWN, Spec, glob_match
from agentledger.shell.words import Word

__all__ = ["cluster", "is_value", "parse_options", "unread_cluster"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    Job: TypeAlias = tuple[str | list[Word], str | None]
    Match: TypeAlias = tuple[str, str]


def parse_options(
    spec: Spec, args: list[Word], jobs: list[Job]
) -> tuple[list[tuple[str, Word | None]], list[tuple[int, Word]]]:
    """Options (with their values) and positional words (with their index)."""
    options: list[tuple[str, Word | None]] = []
    positionals: list[tuple[int, Word]] = []
    index, end, ended = 0, len(args), False
    attached = spec.attached
    while index < end:
        word = args[index]
        text = word.value
        index += 1
        if text is None or ended or text == "-" or not text.startswith("-"):
            positionals.append((index - 1, word))
            if spec.options_first and spec.subs:
                positionals += [(i, args[i]) for i in range(index, end)]
                break
            continue
        if text == "--":
            ended = True
            options.append(("--", None))
            continue
        if text in spec.nested:
            stop = index
            while stop < end and args[stop].value not in spec.nested[text]:
                stop += 1
            if stop > index:
                jobs.append((args[index:stop], None))
            index = stop + 1
            continue
        head, equals, rest = text.partition("=")
        if text.startswith("--") or (equals and head in spec.options_with_arg):
            if equals:
                options.append((head, Word(rest, rest)))
            elif head in spec.options_with_arg and is_value(args, index):
                options.append((head, args[index]))
                index += 1
            else:
                options.append((head, None))
        elif text in spec.options_with_arg:
            if is_value(args, index):
                options.append((text, args[index]))
                index += 1
            else:
                options.append((text, None))
        elif text in spec.flags or any(glob_match(g, text) for g, _ in spec.flag_globs):
            options.append((text, None))
        elif text[:2] in spec.optional_values:
            options.append((text[:2], None))  # `-pPASSWORD`: never shown, never a word
        elif spec.combined_short and len(text) > 2 and text[1] != "-":
            index = _combined(spec, text, args, index, options)
        elif len(text) > 2 and text[:2] in attached:
            options.append((text[:2], Word(text[2:], text[2:])))
        else:
            options.append((text, None))
    return options, positionals


def _combined(
    spec: Spec, text: str, args: list[Word], index: int, options: list[tuple[str, Word | None]]
) -> int:
    """Read `-nvL` as `-n -v -L`; a letter that takes a value takes the rest or the next word."""
    for position in range(1, len(text)):
        flag = "-" + text[position]
        if flag in spec.options_with_arg:
            rest = text[position + 1 :]
            if rest:
                options.append((flag, Word(rest, rest)))
            elif is_value(args, index):
                options.append((flag, args[index]))
                index += 1
            else:
                options.append((flag, None))
            break
        options.append((flag, None))
    return index


def is_value(args: list[Word], index: int) -> bool:
    """True when args[index] can be an option's value (it exists and is not an option)."""
    if index >= len(args):
        return False
    text = args[index].value
    return text is None or not text.startswith("-") or text == "-"


def cluster(
    text: str, valued: set[str] | frozenset[str], given: list[str]
) -> tuple[str, Word | None]:
    """The last option of the short-option cluster `text` with its attached value, if any;
    the letters before it are added to `given`."""
    for position in range(1, len(text)):
        flag = "-" + text[position]
        rest = text[position + 1 :]
        if flag in valued:
            return flag, (Word(rest, rest) if rest else None)
        if not rest:
            return flag, None
        given.append(flag)
    return text, None


def unread_cluster(spec: Spec, label: str, flag: str, matches: list[Match]) -> None:
    """A word like `-nw/x` the entry does not read as letters (no `combined_short`): getopt
    tools read it as `-n -w /x`, so when one of its letters is an option that writes a file,
    takes a value the gate must see, or is not read-only, the word is unknown (refused in
    investigate mode) rather than passed over as an option without effect."""
    for letter in flag[1:]:
        short = "-" + letter
        kind = spec.flags.get(short)
        if short in spec.outputs or short in spec.values or (kind and kind != READ_ONLY):
            matches.append(
                (
                    UNKNOWN,
                    f"{label} {flag}: read as separate letters, it holds {short}, which the "
                    "gate must see on its own; write the options apart",
                )
            )
            return
        if short in spec.options_with_arg:
            return  # the rest of the word is its value (`-uroot`)
