"""Commands as the rules see them: the simple commands of a line (wrappers looked through by
the gated shell's parser, classified by its command knowledge), with their flags, positional
words, class and the files they write;
and the small pattern language the ops knowledge files use to name commands.

Parsing only: nothing here runs anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentledger.judges.rules.ops_knowledge import OpsKnowledge
from agentledger.shell.knowledge import glob_match
from agentledger.shell.simple import simple_commands

__all__ = ["CHANGE_VERBS", "Cmd", "CommandPattern", "parse_line", "strip_placeholders"]

_PLACEHOLDER = re.compile(r"(?<![<\w$])<([A-Za-z][A-Za-z0-9_.:/|-]{0,40})>(?![>\w])")
_TEMP = ("/tmp/", "/var/tmp/", "/dev/")  # noqa: S108 (paths a command writes, not ours)
_TEMP_TOOLS = frozenset(
    ["tee", "curl", "wget", "cp", "mktemp", "touch", "mkdir", "tar", "sort", "cat", "echo"]
)
_NUMBER = re.compile(r"^-\d")
CHANGE_VERBS = frozenset(
    ["add", "set", "del", "delete", "remove", "rm", "unban", "ban", "allow", "deny", "block",
     "unblock", "restart", "reload", "apply", "enable", "disable", "start", "stop", "flush",
     "replace", "update", "put", "push", "create", "drop", "kill", "reset", "clear", "append",
     "insert", "modify", "mod", "edit", "change", "write", "install", "uninstall", "purge",
     "lockdown", "revert", "rollback", "restore", "attach", "detach", "scale", "upgrade"]
)  # fmt: skip
"""First words of a command of a tool the command knowledge does not know (a site's own CLI,
an owner's client) that say it changes something: `jailctl unban 10.0.0.2`, `cfgctl set ...`."""
_CHANGE_VERB_PREFIX = re.compile(r"^(?:set|add|del|delete|remove|replace|update)[-_]")


def strip_placeholders(text: str) -> str:
    """`<jail>` -> `_jail_`: a placeholder in a report is a word, not two redirections."""
    if "<" not in text:
        return text
    return _PLACEHOLDER.sub(lambda match: "_" + re.sub(r"\W", "_", match.group(1)) + "_", text)


@dataclass
class Cmd:
    """One simple command with what the rules need to know about it."""

    tool: str
    """Canonical tool name (`ip6tables` -> `iptables`)."""
    name: str
    args: tuple[str, ...]
    via: tuple[str, ...]
    kind: str
    """read-only, mutating, destructive or unknown: the gated shell's class of the command."""
    writes: list[str]
    text: str
    dynamic: frozenset[int]
    """Indexes into `args` of words only known at run time."""
    positionals: list[str] = field(default_factory=list)
    flags: dict[str, list[str]] = field(default_factory=dict)

    @property
    def is_write(self) -> bool:
        """True when it changes state: its class, an output redirection to a file, or, for a
        tool the knowledge does not know, a first word that says so (`CHANGE_VERBS`)."""
        if self.kind in ("mutating", "destructive") or self.writes:
            return True
        return self.kind == "unknown" and self.change_verb is not None

    @property
    def change_verb(self) -> str | None:
        """The first positional word when it is a change verb (`set`, `unban`, `set-mtu`)."""
        first = self.positionals[0].lower() if self.positionals else ""
        if first in CHANGE_VERBS or _CHANGE_VERB_PREFIX.match(first):
            return first
        return None

    @property
    def is_change(self) -> bool:
        """A write that is more than scratch files under /tmp."""
        if not self.is_write:
            return False
        if self.name in _TEMP_TOOLS:
            targets = [*self.writes, *(a for a in self.args if a.startswith("/"))]
            if targets and all(target.startswith(_TEMP) for target in targets):
                return False
        return True

    def values(self, flag: str) -> list[str]:
        """The words given after `flag` (until the next flag)."""
        return self.flags.get(flag, [])


def _flags(args: tuple[str, ...]) -> tuple[list[str], dict[str, list[str]]]:
    positionals: list[str] = []
    flags: dict[str, list[str]] = {}
    current: list[str] | None = None
    for word in args:
        if word.startswith("-") and len(word) > 1 and not _NUMBER.match(word) and word != "--":
            name, equals, value = word.partition("=")
            if word.startswith("--") and equals:
                flags.setdefault(name, []).append(value)
                current = None
                continue
            current = flags.setdefault(word, [])
            letters = word[1:]
            if not word.startswith("--") and 1 < len(letters) <= 5 and letters.isalpha():
                for letter in letters:
                    flags.setdefault("-" + letter, [])
                current = flags["-" + letters[-1]]
            continue
        positionals.append(word)
        if current is not None:
            current.append(word)
    return positionals, flags


def parse_line(text: str, knowledge: OpsKnowledge) -> list[Cmd]:
    """The simple commands `text` runs (wrappers such as sudo and ssh looked through)."""
    found: list[Cmd] = []
    for simple in simple_commands(strip_placeholders(text), knowledge.shell):
        if simple.kind is None or not simple.words:
            continue  # a wrapper: what it runs comes next, with `via` naming it
        args = simple.words[1:]
        positionals, flags = _flags(args)
        name = simple.name
        found.append(
            Cmd(
                tool=knowledge.tool(name),
                name=name,
                args=args,
                via=simple.via,
                kind=simple.kind,
                writes=list(simple.writes),
                text=simple.text,
                dynamic=frozenset(index - 1 for index in simple.dynamic if index > 0),
                positionals=positionals,
                flags=flags,
            )
        )
    return found


class CommandPattern:
    """`tool word|alt -f|--flag glob*`: the tool, flags that must be present, and words that
    must appear in this order among the positional words (globs, case-insensitive)."""

    def __init__(self, text: str, knowledge: OpsKnowledge) -> None:
        tokens = text.split()
        self.text = text
        self.tools = {knowledge.tool(tool) for tool in tokens[0].split("|")}
        self.flags: list[list[str]] = []
        self.words: list[list[str]] = []
        for token in tokens[1:]:
            alternatives = token.split("|")
            if all(item.startswith("-") for item in alternatives):
                self.flags.append(alternatives)
            else:
                self.words.append([item.lower() for item in alternatives])

    def matches(self, cmd: Cmd) -> bool:
        if cmd.tool not in self.tools and cmd.name not in self.tools:
            return False
        for alternatives in self.flags:
            if not any(flag in cmd.flags for flag in alternatives):
                return False
        if not self.words:
            return True
        position = 0
        words = cmd.positionals
        for alternatives in self.words:
            while position < len(words):
                word = words[position].lower()
                position += 1
                if any(glob_match(item, word) for item in alternatives):
                    break
            else:
                return False
        return True
