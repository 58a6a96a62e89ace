"""Lines of several parts that need network readers: one sandbox for the whole line.

`netreaders.network_grant` gives the host's network (or a daemon's socket) to a reader that
is the first command of its line, optionally piped into the rest. Investigators also chain
readers with other commands: `systemctl status docker && docker ps -a`, `iptables -L -n ||
true; ss -tlnp | grep :22; tail -5 /var/log/auth.log`. Such a line runs here in ONE sandbox
whose network, daemon sockets and (as root) capabilities are the union of what its readers
need, provided that every part of it is

- a network reader whose words pass its exact-option check (`reader_checks.READERS`), or
- a **local-only** tool (`LOCAL_ONLY`): one that never starts another program, opens a
  socket or talks to a daemon, whatever its arguments (grep, head, tail, cat, ls, wc, ...;
  never awk, sed, find, xargs, env, sort's `--compress-program` or a shell), since in that
  sandbox it shares the readers' network and capabilities.

A line with any other part is refused: that part would get the network too. The line is
read by a strict tokenizer: plain words, single quotes, double quotes holding nothing bash
expands, the operators `;`, `&&`, `||`, `|`, newlines and backslash-newlines, the
redirections `2>/dev/null`, `>/dev/null`, `&>/dev/null`, `2>&1`, `>&2`, and `$?` as a word of
a local-only tool. Nothing else (no `$`, backquote, subshell, here-document, `/dev/tcp`
redirection, assignment or comment). Globs (`*`, `?`, `[`) only in the words of local-only
tools that have no option an expanded file name could turn harmful. What runs is a script
rebuilt from the checked words, each quoted, readers first on the system `PATH` with their
forced words (curl's `--proto`), `sudo` dropped, with the readers' clean environment: what
runs is what was checked. The classifier must still have judged every part read-only.
"""

from __future__ import annotations

import re
import shlex

from agentledger.runner.shell_gate.environment import SYSTEM_DIRECTORIES
from agentledger.runner.shell_gate.netreaders import NetworkGrant
from agentledger.runner.shell_gate.reader_checks import READERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["LOCAL_ONLY", "line_grant", "tokenize"]

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-")
_GLOB = frozenset("*?[]")
_EXPANDED_IN_DOUBLE_QUOTES = frozenset("$`\\!")
_OPERATORS = ("&&", "||", ";", "|")
_REDIRECTION = re.compile(r"(?:[12&]?>[ \t]*/dev/null|[12]?>&[12])(?=[ \t\n;|&]|$)")
"""Output to /dev/null or to the other output; never a file, /dev/tcp or an input."""
_STATUS = "$?"
_TIMEOUT = re.compile(r"[0-9]{1,6}(\.[0-9]{1,3})?[smh]?")


def _any(_: list[str]) -> str:
    return ""


def _no_long_options(args: list[str]) -> str:
    """sort: `--compress-program` (any abbreviation of it) starts a program."""
    bad = [word for word in args if word.startswith("--")]
    return f"{bad[0]}: sort takes only short options in a line with network readers" if bad else ""


def _test(args: list[str]) -> str:
    """test and [ (bash builtins): `-v 'a[$(cmd)]'` runs cmd as bash reads the subscript."""
    bad = [word for word in args if word in ("-v", "-R")]
    return f"test {bad[0]} evaluates a variable's subscript: not in such a line" if bad else ""


def _printf(args: list[str]) -> str:
    """printf (a bash builtin): `-v NAME` assigns a variable (PATH, for the readers after)."""
    if args and args[0].startswith("-") and args[0] != "--":
        return f"printf {args[0]}: not in a line with network readers"
    return ""


def _sshd(args: list[str]) -> str:
    """sshd only tests or prints its configuration; anything else starts the daemon."""
    return "" if args in (["-t"], ["-T"]) else "sshd runs here only as `sshd -t` or `sshd -T`"


LOCAL_ONLY: dict[str, tuple[Callable[[list[str]], str], bool]] = {
    **dict.fromkeys(
        re.split(
            r"\s+",
            "grep egrep fgrep head tail cat ls wc cut uniq tr echo true false "
            "which stat id whoami uname pwd basename dirname column nl tac",
        ),
        (_any, True),
    ),
    "test": (_test, False),
    "[": (_test, False),
    "printf": (_printf, False),
    "sort": (_no_long_options, False),
    "sshd": (_sshd, False),
}
"""Local-only tools: (the check of their arguments, whether glob words may be given).

Each reads files or its input and writes its output, and none of them starts a program,
opens a socket or reaches a daemon, whatever its arguments: sharing the network and the
capabilities of the readers of its line gives it nothing it could use."""


class _Word:
    """A word: its text as bash reads it, its rebuilt form, and whether it holds a glob or
    the exit status `$?`."""

    __slots__ = ("glob", "script", "status", "text")

    def __init__(self) -> None:
        self.text = ""
        self.script = ""
        self.glob = False
        self.status = False


def tokenize(line: str) -> list[_Word | str] | None:
    """The words, operators (`;` for a newline) and redirections of `line`, or None when
    it holds anything this reading does not take (see the module's docstring)."""
    items: list[_Word | str] = []
    word: _Word | None = None
    index = 0
    while index < len(line):
        char = line[index]
        if line.startswith("\\\n", index) or char in " \t\n":
            if word is not None:
                items.append(word)
                word = None
            if char == "\n":
                items.append(";")
            index += 2 if char == "\\" else 1
            continue
        if word is not None and char in ";|&":
            items.append(word)  # an operator ends the word
            word = None
        if word is None:
            redirection = _REDIRECTION.match(line, index)
            if redirection is not None:
                items.append(re.sub(r"[ \t]", "", redirection.group()))
                index = redirection.end()
                continue
            operator = next((op for op in _OPERATORS if line.startswith(op, index)), None)
            if operator is not None:
                if line.startswith(("|&", ";;", "|||", "&&&"), index):
                    return None
                items.append(operator)
                index += len(operator)
                continue
            if line.startswith(_STATUS, index):
                word = _Word()
                word.status, word.text, word.script = True, _STATUS, '"$?"'
                index += 2
                continue
            word = _Word()
        elif word.status:
            return None
        if char in "'\"":
            end = line.find(char, index + 1)
            quoted = line[index + 1 : end]
            if end < 0 or (char == '"' and _EXPANDED_IN_DOUBLE_QUOTES.intersection(quoted)):
                return None
            word.text += quoted
            word.script += shlex.quote(quoted)
            index = end + 1
        elif char in _PLAIN or char in _GLOB:
            word.text += char
            word.script += char
            word.glob = word.glob or char in _GLOB
            index += 1
        else:
            return None
    if word is not None:
        items.append(word)
    for item in items:
        if isinstance(item, _Word) and item.script in ("[", "]"):
            item.glob = False  # a bracket alone matches nothing: `[ -f x ]`
    return items


def _parts(items: list[_Word | str]) -> tuple[list[list[_Word | str]], list[str]] | None:
    """The simple commands of the line and the operators between them; None for an empty
    command where bash would stop with a syntax error."""
    parts: list[list[_Word | str]] = [[]]
    operators: list[str] = []
    for item in items:
        if isinstance(item, str) and item in _OPERATORS:
            if not parts[-1]:
                if item == ";":
                    continue  # a newline after an operator, or an empty line
                return None
            operators.append(item)
            parts.append([])
        else:
            parts[-1].append(item)
    if not parts[-1]:
        parts.pop()
        if operators and operators.pop() != ";":
            return None
    return (parts, operators) if parts else None


class _Union:
    """What the readers of a line need together."""

    def __init__(self) -> None:
        self.readers: list[str] = []
        self.capabilities: list[str] = []
        self.host_network = False
        self.unix_sockets = False


def _part_script(part: list[_Word | str], union: _Union) -> str:
    """The rebuilt text of one simple command; ValueError saying why it may not run."""
    words = [item for item in part if isinstance(item, _Word)]
    redirections = [item for item in part if isinstance(item, str)]
    if words and words[0].text == "sudo" and not words[0].glob:
        words = words[2:] if len(words) > 1 and words[1].text == "-n" else words[1:]
    prefix: list[str] = []
    if len(words) > 2 and words[0].text == "timeout" and _TIMEOUT.fullmatch(words[1].text):
        prefix, words = [words[0].text, words[1].text], words[2:]
    if not words or words[0].glob or words[0].status:
        raise ValueError("a command name must be a plain word")
    command = words[0].text
    name = command.rsplit("/", 1)[-1]
    if "/" in command and command.rsplit("/", 1)[0] not in SYSTEM_DIRECTORIES:
        raise ValueError(f"{command} is not the system's {name}")
    args = [word.text for word in words[1:]]
    reader = READERS.get(name)
    if reader is not None:
        if any(word.glob or word.status for word in words):
            raise ValueError(f"{name}: a reader's words are plain, without globs or $?")
        problem = reader.check(args)
        if problem:
            raise ValueError(f"{name} only with the words it reads with: {problem}")
        union.readers.append(name)
        union.capabilities += [c for c in reader.capabilities if c not in union.capabilities]
        union.host_network = union.host_network or reader.host_network
        union.unix_sockets = union.unix_sockets or reader.unix_sockets
        argv = [*prefix, command, *reader.forced, *args]
        return " ".join([*map(shlex.quote, argv), *redirections])
    if prefix:
        raise ValueError(f"{name}: `timeout` only before a network reader here")
    local = LOCAL_ONLY.get(name)
    if local is None:
        raise ValueError(
            f"{name} is neither a network reader nor a local-only tool, and would share "
            "the readers' network"
        )
    check, globs = local
    if not globs and any(word.glob for word in words):
        raise ValueError(f"{name}: no glob here (a file name could be read as an option)")
    problem = check(args)
    if problem:
        raise ValueError(problem)
    return " ".join([shlex.quote(command), *(w.script for w in words[1:]), *redirections])


def line_grant(line: str, euid: int, shell: str) -> NetworkGrant | str | None:
    """The grant that runs `line` (simple commands joined by `;`, `&&`, `||`, `|` and
    newlines) in one sandbox with the union of its readers' network and capabilities
    (`euid` 0 keeps them), run by `shell`; a string saying why it may not; None when no
    part is a network reader."""
    items = tokenize(line.strip())
    if items is None:
        return (
            "only plain words, quotes bash reads literally, `;`, `&&`, `||`, `|`, `$?` and "
            "redirections to /dev/null are read in a line with several network readers"
        )
    split = _parts(items)
    if split is None:
        return "an empty command in the line"
    parts, operators = split
    union = _Union()
    scripts: list[str] = []
    for part in parts:
        try:
            scripts.append(_part_script(part, union))
        except ValueError as problem:
            return str(problem)
    if not union.readers:
        return None
    script = scripts[0]
    for operator, text in zip(operators, scripts[1:], strict=True):
        script += f" {operator} {text}"
    grant = NetworkGrant(
        [shell, "-c", script],
        "+".join(union.readers),
        tuple(union.capabilities) if euid == 0 else (),
    )
    grant.host_network = union.host_network
    grant.unix_sockets = union.unix_sockets
    return grant
