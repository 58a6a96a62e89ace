"""The shell audit log: one JSON line per command, appended safely by concurrent gates.

Each line has the fields of `records.ShellEvent` (it is written here as plain JSON so that a
gated command does not pay for pydantic; the tests parse what is written with
`records.parse_shell_audit`). Several gate processes may append to the same file at once: the
file is opened with O_APPEND, locked with flock, and each line is written in one write.
"""

from __future__ import annotations

import fcntl
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agentledger.runner.shell_gate.redact import Redactor
    from agentledger.runner.shell_gate.spool import Spool

__all__ = [
    "INTENT_SUFFIX",
    "append_event",
    "clear_intent",
    "encode_json",
    "iso_time",
    "recover_unfinished",
    "stored_output",
    "write_intent",
]

_MARGIN = 8192
"""Output past the kept bytes that is still redacted, so that a secret cut by the truncation
is recognised whole (private key blocks are the longest, a few kilobytes)."""
_TAIL_SHOWN = 4096
"""At most this many bytes of the end of a cut output are logged after the marker."""

try:
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - CPython always has _json
    from json.encoder import encode_basestring_ascii as _quote


def iso_time(seconds: float) -> str:
    """UTC ISO 8601 with milliseconds: ``2026-03-12T10:15:00.123Z``."""
    whole = int(seconds)
    millis = int((seconds - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def clean_text(text: str) -> str:
    """`text` as valid Unicode: undecodable bytes (from argv or paths) become ``\\xNN``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")


def stored_output(spool: Spool, redactor: Redactor, limit: int) -> tuple[str, str, int, bool]:
    """How output is logged: (redacted text cut to `limit` bytes, sha256 and size of all the
    bytes, whether it was cut). A cut text ends with the last bytes of the output. Bytes
    that are not UTF-8 are kept as ``\\xNN``."""
    head = bytes(spool.head[: limit + _MARGIN])
    text = redactor.redact(head.decode("utf-8", "backslashreplace"))
    encoded = text.encode("utf-8")
    truncated = len(encoded) > limit or spool.size > len(head)
    if truncated:
        tail_room = min(_TAIL_SHOWN, limit // 4)
        text = encoded[: limit - tail_room].decode("utf-8", "ignore")
        text += (
            f"\n[agentledger: output truncated to {limit} bytes of {spool.size}; "
            "the sha256 covers all of it; its end follows]\n"
        )
        tail = (bytes(spool.head) + spool.tail)[-(tail_room + _MARGIN) :]
        ending = redactor.redact(tail.decode("utf-8", "backslashreplace"))
        text += ending.encode("utf-8")[-tail_room:].decode("utf-8", "ignore") if tail_room else ""
    return text, spool.digest, spool.size, truncated


def encode_json(value: Any) -> str:
    """Compact JSON for the values an event holds (no floats that are not finite)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return str(_quote(value))
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("not a finite number")
        return repr(value)
    if isinstance(value, dict):
        items = (f"{_quote(str(key))}:{encode_json(item)}" for key, item in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode_json(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to the audit log")


def append_event(path: str, event: dict[str, Any]) -> None:
    """Append `event` as one line to the audit log at `path` (created if missing)."""
    line = (encode_json(event) + "\n").encode("ascii")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)


INTENT_SUFFIX = ".pending"
"""The directory beside the audit log (``shell_audit.jsonl.pending``) that holds the events
of commands running now: written before a command starts, removed once its event is in the
log. One left behind by a gate that died (killed, out of memory) is moved into the log as
`unfinished` by the next gate on the same log (`recover_unfinished`)."""


def write_intent(path: str, event: dict[str, Any]) -> str:
    """Record that the command of `event` is about to run; the intent file's path."""
    folder = path + INTENT_SUFFIX
    name = os.path.join(folder, f"{event['event_id']}.json")
    data = (encode_json({**event, "gate_pid": os.getpid()}) + "\n").encode("ascii")
    for _ in range(3):
        try:
            os.makedirs(folder, mode=0o755, exist_ok=True)
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            continue  # another gate removed the empty directory just now
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return name
    raise FileNotFoundError(f"cannot create {name}")


def clear_intent(name: str) -> None:
    """The command's event is in the log: its intent is no longer needed."""
    # try/except rather than contextlib.suppress: contextlib loads functools and collections,
    # which `agentledger exec` otherwise does without.
    try:  # noqa: SIM105
        os.unlink(name)
    except FileNotFoundError:
        pass
    try:  # noqa: SIM105
        os.rmdir(os.path.dirname(name))
    except OSError:
        pass  # another command's intent is still there


def recover_unfinished(path: str) -> int:
    """Append to the log, as `unfinished`, every intent whose gate is no longer alive; how
    many. A command whose gate died has run (or begun to), and the log must say so."""
    folder = path + INTENT_SUFFIX
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    recovered = 0
    for entry in names:
        name = os.path.join(folder, entry)
        if not entry.endswith(".json"):
            continue
        event = _read_intent(name)
        if event is None or _alive(event.pop("gate_pid", None)):
            continue
        claimed = f"{name}.{os.getpid()}"
        try:
            os.rename(name, claimed)  # two gates recovering at once: one wins
        except FileNotFoundError:
            continue
        name = claimed
        event["state"] = "unfinished"
        event["reason"] = f"{event.get('reason', '')}; the gate stopped before the command ended"
        append_event(path, event)
        clear_intent(name)
        recovered += 1
    return recovered


def _read_intent(name: str) -> dict[str, Any] | None:
    import json

    try:
        with open(name, "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "event_id" in data else None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
