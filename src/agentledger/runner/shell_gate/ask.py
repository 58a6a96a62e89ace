"""Ask the person at the terminal whether a command may run (policy `prompt`).

The question goes to the controlling terminal (/dev/tty), never to stdout or stderr, which
belong to the agent. Without a terminal nobody can be asked and the command is denied.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentledger.runner.shell_gate.gate import Decision

__all__ = ["TERMINAL", "has_terminal", "printable", "terminal_approver"]

TERMINAL = "/dev/tty"


def has_terminal() -> bool:
    """True when there is a terminal to ask on."""
    try:
        fd = os.open(TERMINAL, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def printable(text: str) -> str:
    """`text` with control characters shown as escapes: agent text cannot drive the terminal."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def terminal_approver(decision: Decision) -> bool:
    """Show the command and its classification on the terminal and wait for y/N."""
    lines = [
        "",
        "agentledger exec: the agent wants to run",
        f"    {printable(decision.command)}",
        f"classification: {decision.classification.kind}",
    ]
    lines += [
        f"    {part.kind:<12} {printable(part.command)}  ({printable(part.reason)})"
        for part in decision.classification.parts
    ]
    lines += [f"policy: {printable(decision.reason)}", "Run it? [y/N] "]
    question = "\n".join(lines)
    fd = os.open(TERMINAL, os.O_RDWR | os.O_NOCTTY)
    with open(fd, "r+", encoding="utf-8", errors="replace", closefd=True) as tty:
        tty.write(question)
        tty.flush()
        answer = tty.readline()
    return answer.strip().lower() in ("y", "yes")
