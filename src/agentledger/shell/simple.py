"""The simple commands of a command line, as words, with the wrappers looked through.

The classifier answers "how severe is this line"; tools that reason about what a command does
(the rules judge) need the commands themselves: `sudo ssh web 'iptables -F f2b-sshd'` holds the
simple command `iptables -F f2b-sshd`, run via sudo and ssh. This collects them from the very
walk `classify` makes (`walk` with a `CommandVisitor`), so both read a line the same way.

Not on the gated shell's start-up path: nothing the `exec` fast path loads imports it.
"""

from __future__ import annotations

from agentledger.shell.classifier import CommandVisitor, walk
from agentledger.shell.knowledge import Knowledge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentledger.shell.words import Word

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


class _Collector(CommandVisitor):
    """Keeps every simple command the walk meets, and the files each one writes."""

    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []

    def command(
        self,
        words: Sequence[Word],
        via: tuple[str, ...],
        text: str,
        kind: str | None,
        reason: str | None,
    ) -> None:
        values = tuple(word.value if word.value is not None else word.raw for word in words)
        dynamic = frozenset(index for index, word in enumerate(words) if word.value is None)
        found = SimpleCommand(values, dynamic, via, text)
        found.kind, found.reason = kind, reason
        self.commands.append(found)

    def writes(self, target: str, via: tuple[str, ...]) -> None:
        for command in reversed(self.commands):
            if command.via == via:
                command.writes.append(target)
                break


def simple_commands(line: str, knowledge: Knowledge | None = None) -> list[SimpleCommand]:
    """Every simple command of the shell line `line`, outermost first, wrappers included."""
    collector = _Collector()
    walk(line, collector, knowledge)
    return collector.commands
