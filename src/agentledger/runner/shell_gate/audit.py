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

from agentledger.shell.validated_cache import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agentledger.runner.shell_gate.redact import Redactor

__all__ = ["append_event", "encode_json", "iso_time", "stored_output"]

_MARGIN = 8192
"""Output past the kept bytes that is still redacted, so that a secret cut by the truncation
is recognised whole (private key blocks are the longest, a few kilobytes)."""

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


def stored_output(raw: bytes, redactor: Redactor, limit: int) -> tuple[str, str, int, bool]:
    """How output is logged: (redacted text cut to `limit` bytes, sha256 and size of the full
    raw bytes, whether it was cut). Bytes that are not UTF-8 are kept as ``\\xNN``."""
    digest = "sha256:" + sha256_hex(raw)
    text = raw[: limit + _MARGIN].decode("utf-8", "backslashreplace")
    text = redactor.redact(text)
    encoded = text.encode("utf-8")
    truncated = len(encoded) > limit or len(raw) > limit + _MARGIN
    if truncated:
        text = encoded[:limit].decode("utf-8", "ignore")
        text += (
            f"\n[agentledger: output truncated to {limit} bytes of {len(raw)}; "
            "the sha256 covers all of it]"
        )
    return text, digest, len(raw), truncated


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
