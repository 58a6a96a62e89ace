"""Apply one command's knowledge entry (a Spec) to its arguments.

`evaluate` returns the command's own class and reason, or None when the command only runs
others (a wrapper), plus the commands it runs ("jobs"): a list of words (`sudo CMD...`) or a
shell command line (`sh -c '...'`, `ssh host '...'`), each with the text on its standard input
when that is known (a here-document).
"""

from __future__ import annotations

from agentledger.shell.knowledge import (
    KINDS,
    RANK,
    READ_ONLY,
    UNKNOWN,
    Knowledge,
    Spec,
    glob_match,
)
from agentledger.shell.words import Word

__all__ = ["evaluate"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Job: TypeAlias = tuple[str | list[Word], str | None]
    Match: TypeAlias = tuple[str, str]
    Outcome: TypeAlias = tuple[Match | None, list[Job]]

_HELP = ("--help", "--version")


def evaluate(
    knowledge: Knowledge,
    spec: Spec,
    args: list[Word],
    label: str,
    stdin: str | None,
    verbs: list[list[str]] | None = None,
) -> Outcome:
    """The class of command `label` run with `args`, and the commands it runs.

    Everything that matches (flags, their values, the subcommand or verb, positional words,
    SQL) counts and the most severe wins; `default` applies only when nothing matched.
    """
    if len(args) == 1 and args[0].value in _HELP:
        return (READ_ONLY, f"{label} {args[0].value} only prints information"), []
    if spec.wrapper is not None:
        return _wrapper(knowledge, spec, args, label, stdin)
    if not args and spec.no_args is not None:
        return (spec.no_args, f"{label} with no arguments is {spec.no_args}"), []
    matches: list[Match] = []
    jobs: list[Job] = []
    options, positionals = _parse(spec, args, jobs)
    _options(knowledge, spec, label, options, matches, jobs)
    verbs = spec.verbs if spec.verbs is not None else verbs
    if not _subcommand_of(knowledge, spec, label, args, positionals, stdin, verbs, matches, jobs):
        verb = _verb(verbs, positionals) if verbs else None
        if verb is not None:
            matches.append((verb[0], f"{label} {verb[1]} is {verb[0]}"))
    if spec.args:
        for _, word in positionals:
            kind = _most_severe_match(spec.args, word.value.lower()) if word.value else None
            if kind is not None:
                matches.append((kind, f"{label} {word.value} is {kind}"))
    _stdin_and_sql(knowledge, spec, label, stdin, options, positionals, matches, jobs)
    if matches:
        worst = max(RANK[kind] for kind, _ in matches)
        reasons = list(dict.fromkeys(reason for kind, reason in matches if RANK[kind] == worst))
        return (KINDS[worst], "; ".join(reasons)), jobs
    if jobs:
        return None, jobs
    reason = f"{label} is {spec.default}"
    if spec.note and spec.default != READ_ONLY:
        reason += f" ({spec.note})"
    return (spec.default, reason), jobs


def _options(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    options: list[tuple[str, Word | None]],
    matches: list[Match],
    jobs: list[Job],
) -> None:
    """The classes of the options given, and of their values."""
    for flag, value in options:
        kind = spec.flags.get(flag)
        if kind is None:
            kind = next((k for pattern, k in spec.flag_globs if glob_match(pattern, flag)), None)
        if kind is not None:
            matches.append((kind, f"{label} {flag} is {kind}"))
        patterns = spec.values.get(flag)
        if patterns is not None and value is not None:
            _value(knowledge, spec, label, flag, value, patterns, matches, jobs)


def _subcommand_of(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    args: list[Word],
    positionals: list[tuple[int, Word]],
    stdin: str | None,
    verbs: list[list[str]] | None,
    matches: list[Match],
    jobs: list[Job],
) -> bool:
    """Classify the subcommand named by the first positional word; False when there is none."""
    if not spec.subs or not positionals:
        return False
    index, word = positionals[0]
    if word.value is None:
        matches.append((UNKNOWN, f"{label}: the subcommand {word.raw} is only known at run time"))
        return True
    found = _subcommand(spec, word.value)
    if found is None:
        return False
    name, entry = found
    sub = knowledge.spec(entry)
    own, more = evaluate(knowledge, sub, args[index + 1 :], f"{label} {name}", stdin, verbs)
    if own is not None:
        matches.append(own)
    jobs += more
    return True


def _parse(
    spec: Spec, args: list[Word], jobs: list[Job]
) -> tuple[list[tuple[str, Word | None]], list[tuple[int, Word]]]:
    """Options (with their values) and positional words (with their index)."""
    options: list[tuple[str, Word | None]] = []
    positionals: list[tuple[int, Word]] = []
    index, end, ended = 0, len(args), False
    while index < end:
        word = args[index]
        text = word.value
        index += 1
        if text is None or ended or text == "-" or not text.startswith("-"):
            positionals.append((index - 1, word))
            continue
        if text == "--":
            ended = True
            continue
        if text in spec.nested:
            stop = index
            while stop < end and args[stop].value not in spec.nested[text]:
                stop += 1
            if stop > index:
                jobs.append((args[index:stop], None))
            index = stop + 1
            continue
        if text.startswith("--"):
            flag, equals, attached = text.partition("=")
            if equals:
                options.append((flag, Word(attached, attached)))
            elif flag in spec.options_with_arg and _is_value(args, index):
                options.append((flag, args[index]))
                index += 1
            else:
                options.append((flag, None))
        elif text in spec.options_with_arg:
            if _is_value(args, index):
                options.append((text, args[index]))
                index += 1
            else:
                options.append((text, None))
        elif text in spec.flags or any(glob_match(g, text) for g, _ in spec.flag_globs):
            options.append((text, None))
        elif spec.combined_short and len(text) > 2 and text[1] != "-":
            index = _combined(spec, text, args, index, options)
        elif len(text) > 2 and text[:2] in spec.values:
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
            elif _is_value(args, index):
                options.append((flag, args[index]))
                index += 1
            else:
                options.append((flag, None))
            break
        options.append((flag, None))
    return index


def _is_value(args: list[Word], index: int) -> bool:
    """True when args[index] can be an option's value (it exists and is not an option)."""
    if index >= len(args):
        return False
    text = args[index].value
    return text is None or not text.startswith("-") or text == "-"


def _value(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    flag: str,
    value: Word,
    patterns: list[list[str]],
    matches: list[Match],
    jobs: list[Job],
) -> None:
    text = value.value
    if text is None:
        matches.append(
            (UNKNOWN, f"{label} {flag} {value.raw}: the value is only known at run time")
        )
        return
    lowered = text.lower()
    for pattern, kind in patterns:
        if glob_match(pattern, lowered):
            if kind == "sql":
                matches.append(_sql(knowledge, spec, label, flag, text))
            elif kind == "shell":
                jobs.append((text, None))
            else:
                matches.append((kind, f"{label} {flag} {text} is {kind}"))
            return


def _sql(knowledge: Knowledge, spec: Spec, label: str, where: str, text: str) -> Match:
    from agentledger.shell.sql import DEFAULT_DIALECT, classify_sql

    kind, reason = classify_sql(text, knowledge.sql, spec.sql_dialect or DEFAULT_DIALECT)
    return kind, f"{label} {where}: {reason}" if where else f"{label}: {reason}"


def _subcommand(spec: Spec, word: str) -> tuple[str, Any] | None:
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
    return candidates[0]


def _verb(verbs: list[list[str]], positionals: list[tuple[int, Word]]) -> tuple[str, str] | None:
    """The class of the first positional word that matches a verb pattern."""
    for _, word in positionals:
        if word.value is None:
            return UNKNOWN, word.raw
        kind = _most_severe_match(verbs, word.value.lower())
        if kind is not None:
            return kind, word.value
    return None


def _most_severe_match(patterns: list[list[str]], text: str) -> str | None:
    found: str | None = None
    for pattern, kind in patterns:
        if glob_match(pattern, text) and (found is None or RANK[kind] > RANK[found]):
            found = kind
    return found


def _stdin_and_sql(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    stdin: str | None,
    options: list[tuple[str, Word | None]],
    positionals: list[tuple[int, Word]],
    matches: list[Match],
    jobs: list[Job],
) -> None:
    """SQL given as a positional argument or on standard input, or a script on standard input."""
    given = any(
        kind in ("sql", "shell") for flag, _ in options for _, kind in spec.values.get(flag, ())
    )
    if spec.sql_arg is not None and len(positionals) >= spec.sql_arg:
        word = positionals[spec.sql_arg - 1][1]
        if word.value is None:
            matches.append((UNKNOWN, f"{label}: SQL {word.raw} is only known at run time"))
        else:
            matches.append(_sql(knowledge, spec, label, "", word.value))
        given = True
    if given or stdin is None:
        return
    if spec.stdin == "sql":
        matches.append(_sql(knowledge, spec, label, "<<", stdin))
    elif spec.stdin == "shell" and not positionals:
        jobs.append((stdin, None))


def _wrapper(
    knowledge: Knowledge, spec: Spec, args: list[Word], label: str, stdin: str | None
) -> Outcome:
    """A command that runs another: find where that command starts, and classify it."""
    wrapper: dict[str, Any] = spec.wrapper or {}
    takes_value = set(wrapper.get("options_with_arg", ()))
    no_run = set(wrapper.get("no_run_flags", ()))
    matches: list[Match] = []
    jobs: list[Job] = []
    after = wrapper.get("after")
    if after is not None:
        split = next((i for i, word in enumerate(args) if word.value == after), len(args))
        inner = args[split + 1 :]
    else:
        index, end = 0, len(args)
        while index < end:
            text = args[index].value
            if text is None:
                break
            if text == "--":
                index += 1
                break
            if wrapper.get("assignments") and "=" in text and text.split("=", 1)[0].isidentifier():
                index += 1
                continue
            if not text.startswith("-") or text == "-":
                break
            flag = text.partition("=")[0] if text.startswith("--") else text
            if flag in no_run:
                return (READ_ONLY, f"{label} {flag} runs no command"), []
            index += 1
            if flag in spec.values and "=" not in text and index < end:
                _value(knowledge, spec, label, flag, args[index], spec.values[flag], matches, jobs)
                index += 1
            elif flag in takes_value and "=" not in text and index < end:
                index += 1
        inner = args[index + wrapper.get("skip", 0) :]
    if inner:
        if wrapper.get("join"):
            jobs.append((" ".join(w.value if w.value is not None else w.raw for w in inner), stdin))
        else:
            jobs.append((inner, stdin))
    elif not jobs:
        if spec.stdin == "shell" and stdin is not None:
            jobs.append((stdin, None))
        else:
            kind = wrapper.get("no_command", UNKNOWN)
            note = wrapper.get("note") or spec.note
            reason = f"{label} without a command is {kind}" + (f" ({note})" if note else "")
            matches.append((kind, reason))
    if matches:
        return max(matches, key=lambda match: RANK[match[0]]), jobs
    return None, jobs
