"""Apply one command's knowledge entry (a Spec) to its arguments.

`evaluate` returns the command's own class and reason, or None when the command only runs
others (a wrapper), plus the commands it runs ("jobs"): a list of words (`sudo CMD...`) or a
shell command line (`sh -c '...'`, `ssh host '...'`, `PAGER=... git log`), each with the text
on its standard input when that is known (a here-document).

Two kinds of finding are kept apart: what the command's verb, subcommand and flags mean,
which a dry-run flag (`--dry-run=server`, `-n`) turns into read-only, and what no dry run
undoes: a file an option names as output, a program or script an option runs, a word only
known at run time that could be any option.
"""

from __future__ import annotations

from agentledger.shell.knowledge import (
    DESTRUCTIVE,
    KINDS,
    MUTATING,
    RANK,
    READ_ONLY,
    UNKNOWN,
    Knowledge,
    Patterns,
    Spec,
    glob_match,
)
from agentledger.shell.option_words import cluster, parse_options, unread_cluster
from agentledger.shell.spec_lookup import abbreviated, named_in, subcommand, verb_of
from agentledger.shell.sql_args import sql_match, stdin_and_sql
from agentledger.shell.words import Word

__all__ = ["assignment", "evaluate", "output_kind"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Job: TypeAlias = tuple[str | list[Word], str | None]
    Match: TypeAlias = tuple[str, str]
    Outcome: TypeAlias = tuple[Match | None, list[Job]]

_STDIN_WORD = Word("{stdin}", None)
# A word that starts with one of these cannot be an option, whatever its expansions give.
_LITERAL_START = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._~:@%+,="
)


def evaluate(
    knowledge: Knowledge,
    spec: Spec,
    args: list[Word],
    label: str,
    stdin: str | None,
    empty_input: bool = False,
) -> Outcome:
    """The class of command `label` run with `args`, and the commands it runs.

    `empty_input`: its input is `< /dev/null` (a `stdin: sent` command sends nothing).

    Everything that matches (flags, their values, the subcommand or verb, positional words,
    SQL, scripts, written files) counts and the most severe wins; `default` applies only
    when nothing about the verb or flags matched.
    """
    jobs: list[Job] = []
    firm: list[Match] = []
    own = _evaluate(knowledge, spec, args, label, stdin, None, jobs, firm)
    if not empty_input:
        _sent_input(knowledge, spec, args, label, firm)
    if firm:
        found = [own, *firm] if own is not None else firm
        return _worst(found), jobs
    return own, jobs


def _sent_input(
    knowledge: Knowledge, spec: Spec, args: list[Word], label: str, firm: list[Match]
) -> None:
    """A command that sends its standard input to the peer it connects to (`openssl
    s_client`, `stdin: sent`) could deliver any request from a pipe, a here-string or a file:
    unless its input is `< /dev/null` it is unknown."""
    if spec.stdin == "sent":
        firm.append((UNKNOWN, f"{label} sends its input to the peer: give it < /dev/null"))
        return
    if not spec.subs:
        return
    _, positionals = parse_options(spec, args, [])
    if not positionals or positionals[0][1].value is None:
        return
    index, word = positionals[0]
    found = subcommand(spec, str(word.value))
    if found is not None:
        name, entry = found
        _sent_input(knowledge, knowledge.spec(entry), args[index + 1 :], f"{label} {name}", firm)


def _worst(matches: list[Match]) -> Match:
    worst = max(RANK[kind] for kind, _ in matches)
    reasons = list(dict.fromkeys(reason for kind, reason in matches if RANK[kind] == worst))
    return KINDS[worst], "; ".join(reasons)


def _evaluate(
    knowledge: Knowledge,
    spec: Spec,
    args: list[Word],
    label: str,
    stdin: str | None,
    verbs: Patterns | None,
    jobs: list[Job],
    firm: list[Match],
) -> Match | None:
    if len(args) == 1 and args[0].value in spec.info:
        return READ_ONLY, f"{label} {args[0].value} only prints information"
    if spec.wrapper is not None:
        return _wrapper(knowledge, spec, args, label, stdin, jobs, firm)
    if not args and spec.no_args is not None:
        return spec.no_args, f"{label} with no arguments is {spec.no_args}"
    matches: list[Match] = []
    options, positionals = parse_options(spec, args, jobs)
    dry = _options(knowledge, spec, label, options, matches, jobs, firm)
    verbs = spec.verbs if spec.verbs is not None else verbs
    if not _subcommand_of(
        knowledge, spec, label, args, positionals, stdin, verbs, matches, jobs, firm
    ):
        verb = verb_of(verbs, positionals) if verbs else None
        if verb is not None:
            matches.append((verb[0], f"{label} {verb[1]} is {verb[0]}"))
    if spec.args is not None:
        for _, word in positionals:
            kind = spec.args.most_severe(word.value.lower()) if word.value else None
            if kind is not None:
                matches.append((kind, f"{label} {word.value} is {kind}"))
    if spec.written_args:
        _written_args(knowledge, spec, label, positionals, firm)
    if spec.script is not None:
        _script(knowledge, spec, label, options, positionals, jobs, firm)
    if spec.names or spec.arithmetic:
        _names(knowledge, spec, label, positionals, jobs, firm)
    if spec.risky_options and not spec.subs:
        _dynamic_options(label, positionals, firm)
    stdin_and_sql(knowledge, spec, label, stdin, options, positionals, matches, jobs)
    if dry is not None and matches:
        matches = [
            (READ_ONLY, f"{reason}, but {dry} only shows what it would do")
            if kind in (MUTATING, DESTRUCTIVE)
            else (kind, reason)
            for kind, reason in matches
        ]
    if matches:
        return _worst(matches)
    if jobs:
        return None
    if dry is not None and spec.default in (MUTATING, DESTRUCTIVE):
        return READ_ONLY, f"{label} {dry} only shows what it would do"
    reason = f"{label} is {spec.default}"
    if spec.note and spec.default != READ_ONLY:
        reason += f" ({spec.note})"
    return spec.default, reason


def _options(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    options: list[tuple[str, Word | None]],
    matches: list[Match],
    jobs: list[Job],
    firm: list[Match],
) -> str | None:
    """The classes of the options given and of their values; the dry-run option, if any."""
    dry: str | None = None
    outputs = spec.outputs
    for flag, value in options:
        kind = spec.flags.get(flag)
        if kind is None:
            kind = next((k for pattern, k in spec.flag_globs if glob_match(pattern, flag)), None)
        if kind is not None:
            matches.append((kind, f"{label} {flag} is {kind}"))
        elif (spec.strict or (flag[:2] == "--" and spec.long_options)) and not named_in(spec, flag):
            _unknown_option(knowledge, spec, label, flag, value, matches, firm)
        elif (
            len(flag) > 2 and flag[1] != "-" and not spec.abbreviations and not named_in(spec, flag)
        ):
            unread_cluster(spec, label, flag, matches)
        patterns = spec.values.get(flag)
        if patterns is not None and value is not None:
            _value(knowledge, spec, label, flag, value, patterns, matches, jobs)
        if flag in outputs:
            _output(knowledge, label, flag, value, firm, flag in spec.dash_outputs)
        if spec.dry_run is not None and dry is None:
            shown = flag if value is None else f"{flag}={value.raw}"
            if spec.dry_run.most_severe(shown) is not None:
                dry = shown
    if dry is not None and spec.dry_run is not None:
        # Tools take an option's last value (`--dry-run=client --dry-run=none` is no dry
        # run): every occurrence of the dry-run option must be one.
        name = dry.partition("=")[0]
        for flag, value in options:
            shown = flag if value is None else f"{flag}={value.raw}"
            if flag == name and spec.dry_run.most_severe(shown) is None:
                return None
    return dry


def _unknown_option(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    flag: str,
    value: Word | None,
    matches: list[Match],
    firm: list[Match],
) -> None:
    """An option the entry does not name: a long one may abbreviate one it does (GNU tools
    take `--ze` for `--zero`); under `strict`, any other is unknown."""
    if flag.startswith("--") and len(flag) > 2:
        meant = abbreviated(spec, flag)
        if meant:
            for name, kind in meant:
                if name in spec.outputs:
                    dash = name in spec.dash_outputs
                    _output(knowledge, label, f"{flag} ({name})", value, firm, dash)
                elif kind != READ_ONLY:
                    matches.append((kind, f"{label} {flag} abbreviates {name}, which is {kind}"))
            return
    if spec.strict:
        matches.append((UNKNOWN, f"{label} {flag}: an option the gate does not know"))


def output_kind(knowledge: Knowledge, target: str | None, dash: bool = False) -> str | None:
    """The class of writing to the file `target` (None: named at run time); None when the
    place is harmless (exactly /dev/null, standard output): see `paths.write_target`.
    `dash`: the option takes `-` for standard output (`curl -o -`); elsewhere `-` is a
    file of that name (`sort -o -` and `tee -` create one)."""
    if target is None:
        return MUTATING
    from agentledger.shell.paths import write_target

    destructive = knowledge.redirects.get("destructive", ())
    return write_target(target, option=dash, destructive=destructive)[0]


def _output(
    knowledge: Knowledge,
    label: str,
    where: str,
    value: Word | None,
    firm: list[Match],
    dash: bool = False,
) -> None:
    if value is None:
        firm.append((MUTATING, f"{label} {where} writes a file"))
        return
    kind = output_kind(knowledge, value.value, dash)
    if kind is not None:
        shown = value.value if value.value is not None else f"{value.raw}, a file named at run time"
        if value.value == "-":
            shown = "a file named - (here `-` is no standard output)"
        firm.append((kind, f"{label} {where} writes {shown}"))


def _written_args(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    positionals: list[tuple[int, Word]],
    firm: list[Match],
) -> None:
    """Positional words that name a file the command writes (`uniq IN OUT`, `dd of=F`)."""
    places = spec.writes.get("args")
    prefixes = spec.writes.get("prefixes", ())
    for number, (_, word) in enumerate(positionals, 1):
        if places == "all" or (places and number in places):
            _output(knowledge, label, "", word, firm)
        elif prefixes and word.value is not None:
            for prefix in prefixes:
                if word.value.startswith(prefix):
                    target = Word(word.raw, word.value[len(prefix) :])
                    _output(knowledge, label, prefix.rstrip("="), target, firm)
        elif prefixes and any(word.raw.startswith(prefix) for prefix in prefixes):
            _output(knowledge, label, word.raw, Word(word.raw, None), firm)


def _script(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    options: list[tuple[str, Word | None]],
    positionals: list[tuple[int, Word]],
    jobs: list[Job],
    firm: list[Match],
) -> None:
    """The program a command takes as text (sed's script, awk's program, mongosh --eval)."""
    script = spec.script or {}
    language = script["language"]
    texts: list[Word] = []
    for flag, value in options:
        if flag in script.get("files", ()):
            firm.append((UNKNOWN, f"{label} {flag}: a program in a file the gate cannot see"))
        elif flag in script.get("options", ()) and value is not None:
            texts.append(value)
    given = bool(texts) or any(flag in script.get("files", ()) for flag, _ in options)
    if not given and script.get("positional", True) and positionals:
        texts.append(positionals[0][1])
        given = True
    if not given and script.get("required"):
        firm.append((UNKNOWN, f"{label} without a program runs what its input gives"))
    for word in texts:
        if word.value is None:
            firm.append((UNKNOWN, f"{label}: the program {word.raw} is only known at run time"))
            continue
        if language == "shell":
            if word.value not in ("", "-"):
                jobs.append((word.value, None))
            continue
        from agentledger.shell.scripts import reader

        for kind, detail in reader(language)(word.value, script.get("reads", ())):
            if kind == "writes":
                _output(knowledge, label, "writes to", Word(detail or "", detail), firm)
            elif kind == "runs" and detail is not None:
                jobs.append((detail, None))
            else:
                firm.append((UNKNOWN if kind == UNKNOWN else MUTATING, f"{label}: {detail}"))


def _names(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    positionals: list[tuple[int, Word]],
    jobs: list[Job],
    firm: list[Match],
) -> None:
    """Builtins whose words are variable names (`export`, `read`, `unset`) or arithmetic
    (`let`): a subscript is evaluated, and some variables make programs run."""
    for _, word in positionals:
        raw = word.raw
        name, equals, _ = (word.value if word.value is not None else raw).partition("=")
        if spec.arithmetic:
            continue  # the walker checks `let`'s expressions with what it knows of variables
        if not name.isidentifier():
            firm.append(
                (UNKNOWN, f"{label} {raw}: a name with a subscript or only known at run time")
            )
            continue
        if equals:
            value = word.value.partition("=")[2] if word.value is not None else None
            more, found = assignment(knowledge, name, value)
            firm.extend(more)
            jobs.extend(found)
        elif knowledge.variable(name) is not None and label in ("read", "mapfile", "readarray"):
            firm.append((UNKNOWN, f"{label} {name}: reads a value for {name} the gate cannot see"))


def assignment(knowledge: Knowledge, name: str, value: str | None) -> tuple[list[Match], list[Job]]:
    """What assigning `value` (None: only known at run time) to variable `name` does: the
    command line a tool will run (PAGER), or why the gate cannot tell (LD_PRELOAD)."""
    kind = knowledge.variable(name)
    if kind is None:
        return [], []
    if kind == "shell":
        if value is None:
            return [(UNKNOWN, f"{name} names a command, only known at run time")], []
        return [], [(value, None)] if value.strip() else []
    if kind == "prompt":
        if value is None or "$" in value or "`" in value:
            return [(UNKNOWN, f"{name} is expanded by the shell, and can run commands")], []
        return [], []
    return [(UNKNOWN, f"setting {name} makes programs load or run what it names")], []


def _dynamic_options(label: str, positionals: list[tuple[int, Word]], firm: list[Match]) -> None:
    """A word only known at run time (`$X`, a glob) can be any option, when some option
    writes a file, runs a program or changes something."""
    for _, word in positionals:
        raw = word.raw.lstrip("\"'")
        if word.value is None and (not raw or raw[0] not in _LITERAL_START):
            firm.append(
                (UNKNOWN, f"{label} {word.raw}: only known at run time, and could be an option")
            )
            return
        if word.value is not None and word.value[:1] in ("*", "?", "["):
            firm.append((UNKNOWN, f"{label} {word.value}: a glob could name a file like an option"))
            return


def _subcommand_of(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    args: list[Word],
    positionals: list[tuple[int, Word]],
    stdin: str | None,
    verbs: Patterns | None,
    matches: list[Match],
    jobs: list[Job],
    firm: list[Match],
) -> bool:
    """Classify the subcommand named by the first positional word; False when there is none."""
    if not spec.subs or not positionals:
        return False
    index, word = positionals[0]
    if word.value is None:
        matches.append((UNKNOWN, f"{label}: the subcommand {word.raw} is only known at run time"))
        return True
    found = subcommand(spec, word.value)
    if found is None:
        return False
    name, entry = found
    sub = knowledge.spec(entry)
    rest = args[index + 1 :]
    own = _evaluate(knowledge, sub, rest, f"{label} {name}", stdin, verbs, jobs, firm)
    if own is not None:
        matches.append(own)
    return True


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
                matches.append(sql_match(knowledge, spec, label, flag, text))
            elif kind == "shell":
                jobs.append((text, None))
            else:
                matches.append((kind, f"{label} {flag} {text} is {kind}"))
            return


def _wrapper(
    knowledge: Knowledge,
    spec: Spec,
    args: list[Word],
    label: str,
    stdin: str | None,
    jobs: list[Job],
    firm: list[Match],
) -> Match | None:
    """A command that runs another: find where that command starts, and classify it."""
    wrapper: dict[str, Any] = spec.wrapper or {}
    takes_value = set(wrapper.get("options_with_arg", ()))
    no_run = set(wrapper.get("no_run_flags", ()))
    outputs = spec.outputs
    attached = spec.attached
    matches: list[Match] = []
    started = len(jobs)
    given: list[str] = []
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
            name, equals, assigned = text.partition("=")
            if wrapper.get("assignments") and equals and name.isidentifier():
                more, found = assignment(knowledge, name, assigned)
                firm.extend(more)
                jobs.extend(found)
                index += 1
                continue
            if not text.startswith("-") or text == "-":
                break
            value: Word | None = None
            if text.startswith("--") and equals:
                flag, value = name, Word(assigned, assigned)
            elif not text.startswith("--") and len(text) > 2 and text[:2] in attached:
                flag, value = text[:2], Word(text[2:], text[2:])
            elif text[1] != "-" and len(text) > 2 and text not in takes_value | no_run:
                # `strace -fo/x`, `env -iS...`: getopt reads `-f -o /x`; every letter
                # before the first that takes a value is a flag of its own.
                flag, value = cluster(text, takes_value | attached, given)
            else:
                flag = text
            if flag in no_run or no_run.intersection(given):
                shown = flag if flag in no_run else next(iter(no_run.intersection(given)))
                kind = spec.flags.get(shown, READ_ONLY)  # `sudo -K` removes the timestamps
                return kind, f"{label} {shown} runs no command" + (
                    f" and is {kind}" if kind != READ_ONLY else ""
                )
            given.append(flag)
            index += 1
            if value is None and (flag in attached or flag in takes_value) and index < end:
                value = args[index]
                index += 1
            if value is not None and flag in spec.values:
                _value(knowledge, spec, label, flag, value, spec.values[flag], matches, jobs)
            if flag in outputs:
                _output(knowledge, label, flag, value, firm, flag in spec.dash_outputs)
        skip = wrapper.get("skip", 0)
        for number in spec.writes.get("args", ()):
            if number <= skip and index + number - 1 < end:  # `flock FILE cmd` creates FILE
                _output(knowledge, label, "(its lock file)", args[index + number - 1], firm)
        inner = args[index + skip :]
    if inner:
        if wrapper.get("appends"):
            inner = [*inner, _STDIN_WORD]
        if wrapper.get("join"):
            jobs.append((" ".join(w.value if w.value is not None else w.raw for w in inner), stdin))
        else:
            jobs.append((inner, stdin))
    elif len(jobs) == started:
        if spec.stdin == "shell" and stdin is not None:
            jobs.append((stdin, None))
        else:
            kind = wrapper.get("no_command", UNKNOWN)
            note = wrapper.get("note") or spec.note
            reason = f"{label} without a command is {kind}" + (f" ({note})" if note else "")
            sets = wrapper.get("sets", ())
            setting = [flag for flag in given if flag in sets or flag[:2] in sets]
            if setting:  # e.g. `ionice -c 3 -p PID`: sets what the named processes run with
                kind = MUTATING
                reason = f"{label} {setting[0]} without a command changes running processes"
            matches.append((kind, reason))
    if matches:
        return max(matches, key=lambda match: RANK[match[0]])
    return None
