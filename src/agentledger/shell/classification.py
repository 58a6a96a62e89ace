"""What classifying a command line gives: its `Classification` and the `Part` of each simple
command in it; and `CommandVisitor`, what a walk tells a caller besides (`classifier.walk`)."""

from __future__ import annotations

from agentledger.shell.knowledge import most_severe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from agentledger.shell.words import Word

__all__ = ["Classification", "CommandVisitor", "Part"]


class Part:
    """One simple command (or redirection) inside a command line, with its class and why.

    `loose` says why the words bash runs may differ from the text (`x${IFS}--root=/tmp`,
    `{a,--root=/tmp}`): no allow pattern vouches for such a part; empty when they do not."""

    __slots__ = ("command", "kind", "loose", "reason", "via")

    def __init__(
        self, command: str, kind: str, reason: str, via: tuple[str, ...] = (), loose: str = ""
    ) -> None:
        self.command = command
        self.kind = kind
        self.reason = reason
        self.via = via
        self.loose = loose

    def as_dict(self) -> dict[str, Any]:
        """The part as logged in a ShellEvent's `parts`."""
        out: dict[str, Any] = {
            "command": self.command,
            "classification": self.kind,
            "reason": self.reason,
        }
        if self.via:
            out["via"] = list(self.via)
        return out

    def __repr__(self) -> str:
        return f"Part({self.command!r}, {self.kind!r}, {self.reason!r})"


class Classification:
    """The class of a whole command line (its most severe part) and its parts."""

    __slots__ = ("command", "kind", "parts")

    def __init__(self, command: str, parts: list[Part]) -> None:
        self.command = command
        self.parts = parts
        self.kind = most_severe(part.kind for part in parts)

    def as_dict(self) -> dict[str, Any]:
        """The classification as printed by `agentledger exec --batch`."""
        return {
            "command": self.command,
            "classification": self.kind,
            "parts": [part.as_dict() for part in self.parts],
        }

    def __repr__(self) -> str:
        return f"Classification({self.command!r}, {self.kind!r}, {self.parts!r})"


class CommandVisitor:
    """What a walk of a command line tells a caller besides the parts: each simple command it
    meets and each file an output redirection writes. Subclass and override what you need;
    the base ignores everything.

    The rules judge needs the commands themselves (their words, the wrappers they run under),
    not only the class of the line; a visitor gets them from the very walk that classifies, so
    both always read the line the same way.
    """

    def command(
        self,
        words: Sequence[Word],
        via: tuple[str, ...],
        text: str,
        kind: str | None,
        reason: str | None,
    ) -> None:
        """A simple command, outermost first: its words, the wrappers it runs under (`via`),
        its text, and its own class and why (None for a wrapper that only runs another)."""

    def writes(self, target: str, via: tuple[str, ...]) -> None:
        """An output redirection of the last command under `via` writes the file `target`."""

    def assigns(self, name: str, via: tuple[str, ...]) -> None:
        """The line assigns the variable `name` (`NAME=v cmd`, `NAME=v`, `env NAME=v`, `export`):
        commands after it may run with an environment the gate did not choose."""
