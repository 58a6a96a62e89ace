"""The simple commands of a command line, as words, with the wrappers looked through.

The classifier answers "how severe is this line"; tools that reason about what a command does
(the rules judge) need the commands themselves: `sudo ssh web 'iptables -F f2b-sshd'` holds the
simple command `iptables -F f2b-sshd`, run via sudo and ssh. This walks the line exactly as
`classify` does (same parser, same wrappers, same nesting) and keeps each command's words.

Not on the gated shell's start-up path: nothing the `exec` fast path loads imports it.
"""

from __future__ import annotations

from agentledger.shell.classifier import _Walker, default_knowledge
from agentledger.shell.knowledge import Knowledge
from agentledger.shell.words import Word

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["SimpleCommand", "simple_commands"]


class SimpleCommand:
    """One simple command of a line: its words, the wrappers it runs under, its class.

    `words` are the values after quote removal; a word only known at run time (`$IP`,
    `$(...)`) keeps its raw text and its index is in `dynamic`. `kind` is the command's own
    class (read-only, mutating, destructive, unknown), or None for a wrapper that only runs
    another command (`sudo`, `ssh host CMD`). `writes` are the files its output redirections
    write to.
    """

    __slots__ = ("dynamic", "kind", "reason", "text", "via", "words", "writes")

    def __init__(
        self,
        words: tuple[str, ...],
        dynamic: frozenset[int],
        via: tuple[str, ...],
        text: str,
    ) -> None:
        self.words = words
        self.dynamic = dynamic
        self.via = via
        self.text = text
        self.kind: str | None = None
        self.reason: str | None = None
        self.writes: list[str] = []

    @property
    def name(self) -> str:
        """The command's name without its directory (`/usr/sbin/iptables` -> `iptables`)."""
        first = self.words[0] if self.words else ""
        return first.rsplit("/", 1)[-1]

    def __repr__(self) -> str:
        return f"SimpleCommand({list(self.words)!r}, via={self.via!r}, kind={self.kind!r})"


class _Collector(_Walker):
    """A classifier walk that also records every simple command it meets."""

    def __init__(self, knowledge: Knowledge) -> None:
        super().__init__(knowledge, False)
        self.commands: list[SimpleCommand] = []

    def argv(
        self, words: list[Word], stdin: str | None, via: tuple[str, ...], depth: int, text: str
    ) -> None:
        values = tuple(word.value if word.value is not None else word.raw for word in words)
        dynamic = frozenset(index for index, word in enumerate(words) if word.value is None)
        found = SimpleCommand(values, dynamic, via, text)
        self.commands.append(found)
        before = len(self.parts)
        super().argv(words, stdin, via, depth, text)
        for part in self.parts[before:]:
            if part.via == via and part.command == text:
                found.kind, found.reason = part.kind, part.reason
                break

    def redirect(self, node: Node, via: tuple[str, ...]) -> bool:
        before = len(self.parts)
        is_input = super().redirect(node, via)
        if len(self.parts) > before and self.parts[-1].reason.startswith("output redirected"):
            target = self.parts[-1].command.split(" ", 1)[-1]
            for command in reversed(self.commands):
                if command.via == via:
                    command.writes.append(target.strip("'\""))
                    break
        return is_input


def simple_commands(line: str, knowledge: Knowledge | None = None) -> list[SimpleCommand]:
    """Every simple command of the shell line `line`, outermost first, wrappers included."""
    collector = _Collector(knowledge or default_knowledge())
    collector.line(line, None, (), 0)
    return collector.commands
