r"""Ask the person at the terminal whether a command may run (policy `prompt`).

The question goes to the controlling terminal (/dev/tty), never to stdout or stderr, which
belong to the agent, and the answer is read from it. Without a terminal nobody can be asked
and the command is denied. No command the agent runs holds that terminal: gated commands get
their standard input from /dev/null or a pipe and a session of their own (`execute`). The
question is drawn by the gate alone: the terminal is reset and the screen cleared first, so
nothing printed before can pose as part of it, and the command is shown with every control
character, escape sequence and bidirectional mark as ``\xNN`` / ``\uXXXX``. Input typed
before the question is drawn, or while it is, is thrown away so that it cannot answer it, and
the answer that approves is a word drawn at random for each question and shown only there
(never in the log, the environment or an argument): keystrokes pushed into the terminal
(TIOCSTI, by root or where the kernel allows it) cannot know it, and ``y`` approves nothing.
Gates in other processes
asking on the same terminal wait for its lock (`terminal`), which is also taken to pass a
command's output to that terminal: one question on the screen at a time, drawn and read by
the process that holds it, and nothing drawn over it. The person who answered is
named from what the agent cannot set: the kernel's login uid of the session, then the login
name of the terminal, then the user who ran the system's sudo (`sudo`); a bare ``root`` is
never all the log says.
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
CLEAR = (
    "\x1b[!p\x1b]104\x07\x1b]110\x07\x1b]111\x07\x1b[?1049l\x1b[?1000l\x1b[?1002l"
    "\x1b[?1003l\x1b[?1006l\x1b[0m\x1b[?25h\x1b[2J\x1b[3J\x1b[H"
)
"""Written before the question: soft reset (modes and character sets a command's output may
have set), the colour palette and the default foreground and background colours reset (a
command may have made text invisible with OSC 4/10/11, which the soft reset keeps), back
from the alternate screen, mouse reporting off, normal colours, a visible cursor, the screen
and its scrollback cleared, home."""
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
    of the session can change), else the terminal's login name, else the user who ran the
    system's sudo above this process (`sudo.sudo_user`: that process's real uid, never
    SUDO_USER, which the agent can set); a plain ``root`` only with where it came from
    (`fd`: the terminal asked on)."""
    from agentledger.runner.shell_gate.sudo import sudo_user

    login = _login_name(fd)
    if login and login != "root":
        return login
    ran_sudo = sudo_user()
    if ran_sudo is not None:
        return f"{ran_sudo[0]} (ran sudo)"
    claimed = os.environ.get("SUDO_USER", "")
    unverified = ""
    if claimed and claimed != "root" and _known_user(claimed):
        # The agent that started the gate may have set it: said, not believed.
        unverified = f"; SUDO_USER={claimed} set without sudo"
    owner = _owner(fd) if fd is not None else _user_name(os.getuid())
    where = _terminal_name(fd)
    if login == "root":
        return f"root (logged in as root{where}{unverified})"
    return f"{owner} (no login or sudo identity{where}{unverified})"


def _known_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except (KeyError, ValueError):
        return False
    return True


def under_sudo() -> bool:
    """True when a process above this one is the system's sudo run by a person."""
    from agentledger.runner.shell_gate.sudo import sudo_user

    return sudo_user() is not None


def _read_loginuid(pid: int | str) -> int | None:
    try:
        with open(f"/proc/{pid}/loginuid", "rb") as handle:
            return int(handle.read().strip() or _NO_LOGIN_UID)
    except (OSError, ValueError):
        return None


def _login_name(fd: int | None = None) -> str | None:
    """The login user of this process's login uid, when the terminal's session leader (`fd`)
    has the same one: an unset login uid may be set once by a root process, so an agent
    could set its own before it starts the gate; the session leader's was set at login."""
    import pwd

    uid = _read_loginuid("self")
    if uid is None:
        uid = _NO_LOGIN_UID
    if uid != _NO_LOGIN_UID and fd is not None:
        try:
            import fcntl
            import struct
            import termios

            sid = struct.unpack(
                "i", fcntl.ioctl(fd, getattr(termios, "TIOCGSID", 0x5429), b"\0" * 4)
            )[0]
            leader = _read_loginuid(sid)
        except (ImportError, OSError, AttributeError):
            leader = None
        if leader is not None and leader != uid:
            return None  # set after the session began: not a login
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


def question(
    decision: CommandDecision, columns: int = 80, rows: int = 24, word: str = "WORD"
) -> str:
    """The question shown at the prompt: the command, its class, each part and the reason,
    ending with the `word` to type to run it.

    It fits a terminal of `columns` x `rows`: every line is cut to the width (saying how
    much was left out) and parts that do not fit are counted, not drawn, so that nothing the
    agent wrote can scroll the question off the screen and draw another in its place; runs
    of blanks are shown by their count (an open-box sign, a times sign and the number)."""
    width = max(columns - 1, 40)
    head = [
        "",
        "agentledger: the agent wants to run",
        _fit(f"    {_shown(decision.command)}", width),
        f"classification: {decision.classification.kind}",
    ]
    tail = [_fit(f"policy: {_shown(decision.reason)}", width), _prompt(word)]
    parts = decision.classification.parts
    room = max((rows - 1 - len(head) - len(tail) - 1) // 2, 1)
    body = []
    for part in parts[:room]:
        via = f" (via {' '.join(part.via)})" if part.via else ""
        body.append(_fit(f"    {part.kind:<12} {_shown(part.command)}{_shown(via)}", width))
        body.append(_fit(f"    {'':<12} {_shown(part.reason)}", width))
    if len(parts) > room:
        body.append(f"    ... and {len(parts) - room} more parts not shown: refuse if unsure")
    return "\n".join(head + body + tail)


def _prompt(word: str) -> str:
    return f"To run it type {word} (anything else refuses): "


_CONSONANTS = "bdfgkmnprstvz"
_VOWELS = "aeiou"


def answer_word() -> str:
    """A word of seven letters to type to approve one question, drawn by `secrets` (three
    consonant-vowel syllables and a consonant, about 21 bits): it is shown only on the
    terminal, so what pushes keystrokes into it (TIOCSTI, a root agent) cannot know it,
    and a ``y`` approves nothing."""
    import secrets

    letters = [secrets.choice(_VOWELS if index % 2 else _CONSONANTS) for index in range(7)]
    return "".join(letters)


def _shown(text: str) -> str:
    """`printable(text)` with every run of four or more blanks shown as its count."""
    shown = printable(text)
    if "    " not in shown:
        return shown
    import re

    return re.sub(r" {4,}", lambda run: f"\u2423\u00d7{len(run.group(0))}", shown)


def _fit(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    keep = width - 40  # the note is shorter than 40 characters
    return f"{line[:keep]} ... ({len(line) - keep} characters not shown)"


def terminal_approver(
    decision: CommandDecision, *, timeout: float = 300.0, cancel: Cancel | None = None
) -> Answer:
    """Show the command on the terminal and wait up to `timeout` seconds for the answer.

    Only the word the question shows (`answer_word`, new for each question) runs the
    command; anything else is a refusal: ``y``, n, another word, an empty line, end of input
    (Ctrl-D), Ctrl-C (`interrupted`) and no answer in time. After `WRONG_WORDS_MAX` wrong
    words in this process (someone guessing, or keystrokes pushed into the terminal) no
    question is asked any more: every prompt is refused. `cancel` is for an approver that
    runs off the main thread (an agent of `agentledger run`): Ctrl-C reaches the main
    thread, which sets it, and the question ends at once as interrupted instead of waiting
    out the timeout.
    """
    # Agents run side by side (`agentledger run --concurrency`) would otherwise interleave
    # their questions and read each other's answers; other processes are held off by the
    # terminal's own lock (`terminal.TerminalLock`).
    with _QUESTION:
        return _ask(decision, timeout, cancel)


# `_thread`, not `threading`: it is built in, so importing this module stays free.
_QUESTION = _thread.allocate_lock()
"""Held while a question is on the terminal."""
WRONG_WORDS_MAX = 3
"""Wrong words typed (in this process) after which no more questions are asked."""
_wrong_words = [0]


def _ask(decision: CommandDecision, timeout: float, cancel: Cancel | None) -> Answer:
    import time

    from agentledger.runner.shell_gate.terminal import TerminalLock

    deadline = time.monotonic() + timeout
    fd = os.open(TERMINAL, os.O_RDWR | os.O_NOCTTY)
    lock = TerminalLock(fd)
    try:
        who = approver_identity(fd)
        if _wrong_words[0] >= WRONG_WORDS_MAX:
            return Answer(False, who, f"{_wrong_words[0]} wrong answers before: asking stopped")
        word = answer_word()
        try:
            # Other gates (other processes) ask on this terminal too: one question at a
            # time, and the answer typed while another was up is not this one's.
            if lock.acquire(deadline, None if cancel is None else cancel.is_set) is None:
                return Answer(False, who, f"no answer within {timeout:g} s (the terminal was busy)")
            _discard_typeahead(fd)
            try:
                size = os.get_terminal_size(fd)
                columns, rows = size.columns or 80, size.lines or 24
            except OSError:
                columns, rows = 80, 24
            body, prompt = question(decision, columns, rows, word).rsplit("\n", 1)
            _write(fd, CLEAR + body + "\n")
            _discard_typeahead(fd)  # typed (or pushed) while it was drawn: not an answer
            _write(fd, prompt)
            line = _read_line(fd, max(deadline - time.monotonic(), 0.0), cancel)
        except KeyboardInterrupt:
            _write(fd, "\nrefused (interrupted)\n")
            return Answer(False, who, "interrupted at the prompt", interrupted=True)
        if line is None:
            _write(fd, f"\nrefused: no answer within {timeout:g} s\n")
            return Answer(False, who, f"no answer within {timeout:g} s")
        if not line.endswith(b"\n") and not line.strip():
            _write(fd, "\nrefused (end of input)\n")
            return Answer(False, who, "no answer (end of input)")
        typed = line.strip().lower()
        if typed == word.encode():
            _write(fd, "approved\n")
            return Answer(True, who)
        if typed in (b"", b"n", b"no"):
            _write(fd, "refused\n")
            return Answer(False, who, "refused at the prompt")
        _wrong_words[0] += 1
        _write(fd, f"refused: not the word shown ({_wrong_words[0]} of {WRONG_WORDS_MAX})\n")
        return Answer(False, who, "wrong answer at the prompt (not the word shown)")
    finally:
        lock.release()
        lock.close()
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
