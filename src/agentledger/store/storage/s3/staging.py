"""A run being written to S3: its artifacts as objects under the writer's staging area."""

from __future__ import annotations

import hashlib
import io
from typing import BinaryIO, cast

from agentledger.identity import HASH_PREFIX
from agentledger.records import FileEntry
from agentledger.store.storage import StagedRun
from agentledger.store.storage.s3.client import ObjectStore, read_up_to

__all__ = ["S3StagedRun"]


HELD_BYTES = 256 * 1024
"""Artifacts up to this size are held in memory until published, then written straight to
``runs/`` (one PUT each instead of a PUT to staging, a copy and a delete); larger ones are
staged as objects and copied on the server. Either way nothing is visible before the
manifest."""


class S3StagedRun(StagedRun):
    """A staged run: small artifacts in memory, others at
    ``.staging/<writer>/<area>/<run_id>/<name>``."""

    def __init__(self, run_id: str, max_artifact_bytes: int, store: ObjectStore, area: str) -> None:
        super().__init__(run_id=run_id, max_artifact_bytes=max_artifact_bytes)
        self.store = store
        self.area = area  # ".staging/<writer>/<area>/", shared by the runs of a batch
        self.held: dict[str, bytes] = {}
        self.closed = False

    @property
    def staged_names(self) -> list[str]:
        """The artifacts staged as objects (not held in memory)."""
        return [name for name in self.entries if name not in self.held]

    def staging_key(self, name: str) -> str:
        """The object key (relative to the ledger's prefix) of staged artifact `name`."""
        return f"{self.area}{self.run_id}/{name}"

    def _entry(self, name: str, digest: str, size: int) -> FileEntry:
        entry = FileEntry(sha256=HASH_PREFIX + digest, size=size)
        self.entries[name] = entry
        return entry

    def write(self, name: str, data: bytes) -> FileEntry:
        self._claim(name)
        if len(data) > self.max_artifact_bytes:
            raise self._too_large(name, len(data))
        if len(data) <= HELD_BYTES:
            self.held[name] = bytes(data)
        else:
            self.store.put(self.staging_key(name), bytes(data))
        return self._entry(name, hashlib.sha256(data).hexdigest(), len(data))

    def write_stream(self, name: str, source: BinaryIO) -> FileEntry:
        self._claim(name)
        head = read_up_to(source, HELD_BYTES + 1)
        if len(head) <= HELD_BYTES and len(head) <= self.max_artifact_bytes:
            self.held[name] = head
            return self._entry(name, hashlib.sha256(head).hexdigest(), len(head))
        source = cast(BinaryIO, _Rejoined(head, source))
        digest, size = self.store.upload(self.staging_key(name), source, self.max_artifact_bytes)
        if digest is None:
            raise self._too_large(name, size)
        return self._entry(name, digest, size)


class _Rejoined(io.RawIOBase):
    """What was read of a stream already, then the rest of it."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head = head
        self.rest = rest

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.head:
            taken = self.head if size < 0 else self.head[:size]
            self.head = self.head[len(taken) :]
            return taken
        return self.rest.read(size)
