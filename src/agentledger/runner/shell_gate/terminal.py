r"""One terminal, one speaker at a time: the lock every gate takes before it asks on a
terminal or passes a command's output to one, and the escaping of that output.

Several `agentledger exec` processes may share the approver's terminal (an agent starts them
in the background), and a command's output reaches the gate's own stdout, which may be that
terminal. A question is only safe while nothing else draws on the screen and only the process
that drew it reads the answer, so the lock is an `flock` on the terminal's device node
(/dev/pts/N, found from the device number, never /dev/tty, which is one node for all
terminals): it serialises processes, and within a process each holder opens its own
descriptor. Output passes to a terminal with its control characters made visible
(`visible`), and only while no question is up: what comes while one is waits in a bounded
buffer and is written after it.
"""

from __future__ import annotations

import contextlib
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["TerminalLock", "TerminalWriter", "visible", "writer_for"]

_TTY = os.makedev(5, 0)  # /dev/tty: the controlling terminal, whichever it is
_HELD_MAX = 1 << 20
"""Output kept while a question is on the terminal; beyond it, bytes are counted, not shown."""


def _controlling_device() -> int | None:
    try:
        with open("/proc/self/stat", "rb") as handle:
            number = int(handle.read().rsplit(b")", 1)[1].split()[4])
    except (OSError, ValueError, IndexError):
        return None
    if number == 0:
        return None
    major, minor = (number >> 8) & 0xFFF, (number & 0xFF) | ((number >> 12) & 0xFFF00)
    return os.makedev(major, minor)


def device_path(fd: int) -> str | None:
    """The device node of the terminal `fd` is open on (through /dev/tty: the controlling
    terminal), or None when none is found."""
    try:
        device = os.fstat(fd).st_rdev
    except OSError:
        return None
    if device == _TTY:
        found = _controlling_device()
        if found is None:
            return None
        device = found
    candidates = []
    with contextlib.suppress(OSError):
        candidates.append(os.ttyname(fd))
    major, minor = os.major(device), os.minor(device)
    if 136 <= major <= 143:
        candidates.append(f"/dev/pts/{(major - 136) * 256 + minor}")
    for path in candidates:
        try:
            if os.stat(path).st_rdev == device:
                return path
        except OSError:
            continue
    return None


class TerminalLock:
    """The cross-process lock of the terminal `fd` is open on: `acquire` waits for it (True
    when another held it first), `try_acquire` does not wait."""

    def __init__(self, fd: int) -> None:
        path = device_path(fd)
        self.fd = -1
        if path is not None:
            try:
                self.fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                self.fd = -1
        if self.fd < 0:  # no device node to be found: at least this descriptor's file
            self.fd = os.dup(fd)
            os.set_inheritable(self.fd, False)

    def try_acquire(self) -> bool:
        import fcntl

        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError:  # a file that takes no lock: nothing to serialise with
            return True
        return True

    def acquire(self, deadline: float, stop: Callable[[], bool] | None = None) -> bool | None:
        """Wait for the lock until the monotonic `deadline` (None: not had in time) or
        until `stop()` says so (KeyboardInterrupt); whether another held it first."""
        import time

        if self.try_acquire():
            return False
        while True:
            if stop is not None and stop():
                raise KeyboardInterrupt
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
            if self.try_acquire():
                return True

    def release(self) -> None:
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _escaped(match: object) -> str:
    char = match.group(0)  # type: ignore[attr-defined]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8
        code -= 0xDC00
    return f"\\x{code:02x}"


_CONTROL = None


def visible(text: str) -> str:
    r"""`text` (decoded with surrogateescape) with every C0 control but newline and tab,
    DEL, every C1 control, every byte that is not UTF-8, and a carriage return not followed
    by a newline shown as ``\xNN``: output cannot move the cursor, clear the screen or
    overwrite a line."""
    global _CONTROL
    if _CONTROL is None:
        import re

        _CONTROL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\udc80-\udcff]|\r(?!\n)")
    return _CONTROL.sub(_escaped, text)


class TerminalWriter:
    """Passes a command's output on to a terminal: escaped (`visible`), and written only
    while this process holds the terminal's lock, so nothing is drawn while another gate's
    question is up; what comes meanwhile waits (at most `_HELD_MAX` bytes) for `flush`."""

    def __init__(self, fd: int) -> None:
        import codecs

        self.fd = fd
        self.lock = TerminalLock(fd)
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.held = b""
        self.dropped = 0
        self.pending_cr = ""

    def __call__(self, data: bytes) -> None:
        text = self.pending_cr + self.decoder.decode(data)
        self.pending_cr = ""
        if text.endswith("\r"):  # whether a newline follows is in the next chunk
            text, self.pending_cr = text[:-1], "\r"
        self._hold(visible(text).encode("utf-8"))
        if self.lock.try_acquire():
            try:
                self._write()
            finally:
                self.lock.release()

    def _hold(self, data: bytes) -> None:
        room = _HELD_MAX - len(self.held)
        self.held += data[: max(room, 0)]
        self.dropped += max(len(data) - max(room, 0), 0)

    def _write(self) -> None:
        if self.dropped:
            note = (
                f"\n[agentledger: {self.dropped} bytes of output not shown while a question "
                "was on this terminal; the audit log has them]\n"
            )
            self.held += note.encode()
            self.dropped = 0
        view = memoryview(self.held)
        while view:
            view = view[os.write(self.fd, view) :]
        self.held = b""

    def flush(self) -> None:
        """Write what is held, waiting for the lock as long as a question is up."""
        import time

        tail = self.pending_cr + self.decoder.decode(b"", final=True)
        self.pending_cr = ""
        self._hold(visible(tail).encode("utf-8"))
        if self.held or self.dropped:
            self.lock.acquire(time.monotonic() + 3600.0)
            try:
                self._write()
            finally:
                self.lock.release()
        self.lock.close()


def writer_for(fd: int) -> Callable[[bytes], None]:
    """What passes output on to `fd`: a `TerminalWriter` when it is a terminal, else the
    bytes unchanged (an agent's pipe gets exactly what the command wrote)."""
    if os.isatty(fd):
        return TerminalWriter(fd)

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    return write
