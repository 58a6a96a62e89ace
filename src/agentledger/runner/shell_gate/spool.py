"""A bounded spool for a command's output: its head and tail kept, its size and sha256 of all.

A command may print without end (`yes`, `cat /dev/zero`, a log followed by `tail -f`); the
gate must neither hold all of it in memory nor lose the proof of what it was. The spool keeps
the first `head` bytes and the last `tail` bytes, and counts and hashes every byte as it
passes, so memory stays bounded whatever the command prints (`bench/gate.py` measures `yes`
for 10 s).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "Spool"]

HEAD_BYTES = 1 << 20
"""Bytes kept from the start of each stream (the result an agent gets; the log keeps fewer)."""
TAIL_BYTES = 64 << 10
"""Bytes kept from the end of each stream."""


class Spool:
    """One output stream: the first bytes, the last bytes, how many in all, their sha256."""

    __slots__ = ("_hash", "_tail", "head", "head_limit", "size", "tail_limit")

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.head = bytearray()
        self._tail = bytearray()
        self.size = 0
        self._hash = _new_sha256()

    def add(self, data: bytes) -> None:
        """Take the next chunk of the stream."""
        self.size += len(data)
        self._hash.update(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            excess = len(self._tail) - self.tail_limit
            if excess > 0:
                del self._tail[:excess]

    @property
    def tail(self) -> bytes:
        """The last bytes kept after the head (empty when all fit in the head)."""
        return bytes(self._tail)

    @property
    def dropped(self) -> int:
        """Bytes between head and tail that were counted and hashed but not kept."""
        return self.size - len(self.head) - len(self._tail)

    @property
    def digest(self) -> str:
        """``sha256:`` and the hex digest of every byte of the stream."""
        return "sha256:" + str(self._hash.hexdigest())

    def kept(self) -> bytes:
        """The stream when nothing was dropped; else its head, a marker, and its tail."""
        if not self.dropped:
            return bytes(self.head) + bytes(self._tail)
        marker = f"\n[agentledger: {self.dropped} bytes of {self.size} not kept]\n".encode()
        return bytes(self.head) + marker + bytes(self._tail)

    @classmethod
    def of(cls, data: bytes) -> Spool:
        """A spool holding `data` (for output that was never streamed)."""
        spool = cls(max(len(data), 1), TAIL_BYTES)
        spool.add(data)
        return spool


def _new_sha256() -> Any:
    """A sha256 object, without importing hashlib (and OpenSSL) when avoidable."""
    from agentledger.shell.validated_cache import sha256_factory

    return sha256_factory()()
