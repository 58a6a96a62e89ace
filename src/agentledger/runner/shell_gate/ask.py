r"""Ask the person at the terminal whether a command may run (policy `prompt`).

The question goes to the controlling terminal (/dev/tty), never to stdout or stderr, which
belong to the agent, and the answer is read from it. Without a terminal nobody can be asked
and the command is denied. No command the agent runs holds that terminal: gated commands get
their standard input from /dev/null or a pipe and a session of their own (`execute`). The
question is drawn by the gate alone: the terminal is reset and the screen cleared first, so
nothing printed before can pose as part of it, and the command is shown with every control
character, escape sequence and bidirectional mark as ``\xNN`` / ``\uXXXX``. Input typed
before the question is thrown away so that it cannot answer it. The person who answered is
named from what the agent cannot set: the kernel's login uid of the session, then the login
name of the terminal, then sudo's SUDO_USER; a bare ``root`` is never all the log says.
"""

from __future__ import annotations

import _thread
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from agentledger.runner.shell_gate.decision import CommandDecision

    class Cancel(Protocol):
        """What says the asking should stop (a `threading.Event`)."""

        def is_set(self) -> bool: ...


__all__ = [
    "CLEAR",
    "TERMINAL",
    "Answer",
    "approver_identity",
    "has_terminal",
    "printable",
    "question",
    "terminal_approver",
]

TERMINAL = "/dev/tty"
CLEAR = "\x1b[!p\x1b[0m\x1b[?25h\x1b[2J\x1b[3J\x1b[H"
"""Written before the question: soft reset (modes and character sets a command's output may
have set), normal colours, a visible cursor, the screen and its scrollback cleared, home."""
_NO_LOGIN_UID = 4294967295


class Answer:
    """What the person at the prompt said: approved or not, who, and why not."""

    __slots__ = ("approved", "interrupted", "who", "why")

    def __init__(self, approved: bool, who: str, why: str = "", *, interrupted: bool = False):
        self.approved = approved
        self.who = who
        self.why = why
        self.interrupted = interrupted

    def __repr__(self) -> str:
        return f"Answer({self.approved!r}, {self.who!r}, {self.why!r})"


def has_terminal() -> bool:
    """True when there is a terminal to ask on."""
    try:
        fd = os.open(TERMINAL, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def printable(text: str) -> str:
    """`text` with control characters, escape sequences and invisible or bidirectional
    marks shown as ``\\xNN`` / ``\\uXXXX``: agent text cannot drive the terminal or hide
    what it says. When anything is escaped, backslashes are doubled too, so that a typed
    ``\\x1b`` cannot pass for an escaped one."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() and char != "\\" else _escape(char) for char in text)


def _escape(char: str) -> str:
    if char == "\\":
        return "\\\\"
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def approver_identity(fd: int | None = None) -> str:
    """Who is answering: the session's login user (the kernel's loginuid, which no process
    of the session can change), else the terminal's login name, else SUDO_USER; a plain
    ``root`` only with where it came from (`fd`: the terminal asked on)."""
    import pwd

    login = _login_name()
    if login and login != "root":
        return login
    sudo = os.environ.get("SUDO_USER", "")
    if sudo and sudo != "root":
        try:
            pwd.getpwnam(sudo)
        except KeyError:
            sudo = ""
        if sudo:
            return f"{sudo} (SUDO_USER)"
    owner = _owner(fd) if fd is not None else _user_name(os.getuid())
    where = _terminal_name(fd)
    if login == "root":
        return f"root (logged in as root{where})"
    return f"{owner} (no login or sudo identity{where})"


def _login_name() -> str | None:
    import pwd

    try:
        with open("/proc/self/loginuid", "rb") as handle:
            uid = int(handle.read().strip() or _NO_LOGIN_UID)
    except (OSError, ValueError):
        uid = _NO_LOGIN_UID
    if uid != _NO_LOGIN_UID:
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return str(uid)
    try:
        return os.getlogin()
    except OSError:
        return None


def _terminal_name(fd: int | None) -> str:
    """``, at /dev/pts/N``: the controlling terminal (/dev/tty names none in particular)."""
    if fd is None:
        return ""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        number = int(fields[4])
        major, minor = (number >> 8) & 0xFFF, (number & 0xFF) | ((number >> 12) & 0xFFF00)
        if 136 <= major <= 143:
            return f", at /dev/pts/{(major - 136) * 256 + minor}"
    except (OSError, ValueError, IndexError):
        pass
    try:
        return f", at {os.ttyname(fd)}"
    except OSError:
        return ""


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def question(decision: CommandDecision) -> str:
    """The question shown at the prompt: the command, its class, each part and the reason."""
    lines = [
        "",
        "agentledger: the agent wants to run",
        f"    {printable(decision.command)}",
        f"classification: {decision.classification.kind}",
    ]
    for part in decision.classification.parts:
        via = f" (via {' '.join(part.via)})" if part.via else ""
        lines.append(f"    {part.kind:<12} {printable(part.command)}{printable(via)}")
        lines.append(f"    {'':<12} {printable(part.reason)}")
    lines += [f"policy: {printable(decision.reason)}", "Run it? [y/N] "]
    return "\n".join(lines)


def terminal_approver(
    decision: CommandDecision, *, timeout: float = 300.0, cancel: Cancel | None = None
) -> Answer:
    """Show the command on the terminal and wait up to `timeout` seconds for y or n.

    Anything but y/yes is a refusal: n, an empty line, end of input (Ctrl-D), Ctrl-C
    (`interrupted`) and no answer in time. `cancel` is for an approver that runs off the main
    thread (an agent of `agentledger run`): Ctrl-C reaches the main thread, which sets it, and
    the question ends at once as interrupted instead of waiting out the timeout.
    """
    # Agents run side by side (`agentledger run --concurrency`) would otherwise interleave
    # their questions and read each other's answers.
    with _QUESTION:
        return _ask(decision, timeout, cancel)


# `_thread`, not `threading`: it is built in, so importing this module stays free.
_QUESTION = _thread.allocate_lock()
"""Held while a question is on the terminal."""


def _ask(decision: CommandDecision, timeout: float, cancel: Cancel | None) -> Answer:
    fd = os.open(TERMINAL, os.O_RDWR | os.O_NOCTTY)
    try:
        who = approver_identity(fd)
        try:
            _discard_typeahead(fd)
            _write(fd, CLEAR + question(decision))
            line = _read_line(fd, timeout, cancel)
        except KeyboardInterrupt:
            _write(fd, "\nrefused (interrupted)\n")
            return Answer(False, who, "interrupted at the prompt", interrupted=True)
        if line is None:
            _write(fd, f"\nrefused: no answer within {timeout:g} s\n")
            return Answer(False, who, f"no answer within {timeout:g} s")
        if not line.endswith(b"\n") and not line.strip():
            _write(fd, "\nrefused (end of input)\n")
            return Answer(False, who, "no answer (end of input)")
        if line.strip().lower() in (b"y", b"yes"):
            _write(fd, "approved\n")
            return Answer(True, who)
        _write(fd, "refused\n")
        return Answer(False, who, "refused at the prompt")
    finally:
        os.close(fd)


def _owner(fd: int) -> str:
    """The terminal's owner (the account it was opened for)."""
    try:
        uid = os.fstat(fd).st_uid
    except OSError:
        uid = os.getuid()
    return _user_name(uid)


def _discard_typeahead(fd: int) -> None:
    try:
        import termios

        termios.tcflush(fd, termios.TCIFLUSH)
    except (ImportError, OSError):
        pass


def _write(fd: int, text: str) -> None:
    data = memoryview(text.encode("utf-8", "replace"))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_line(fd: int, timeout: float, cancel: Cancel | None = None) -> bytes | None:
    """One line from the terminal: ends with a newline, or not at end of input (Ctrl-D);
    None when `timeout` seconds pass first; KeyboardInterrupt once `cancel` is set."""
    import select
    import time

    deadline = time.monotonic() + timeout
    received = b""
    while not received.endswith(b"\n"):
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        # With a cancel to watch, look at it every tenth of a second.
        wait = remaining if cancel is None else min(remaining, 0.1)
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        chunk = os.read(fd, 1024)
        if not chunk:
            break
        received += chunk
        if len(received) > 4096:
            break
    return received
