"""A run being written to S3: its artifacts as objects under the writer's staging area."""

from __future__ import annotations

import hashlib
from typing import BinaryIO

from agentledger.identity import HASH_PREFIX
from agentledger.records import FileEntry
from agentledger.store.s3.client import ObjectStore
from agentledger.store.storage import StagedRun

__all__ = ["S3StagedRun"]


class S3StagedRun(StagedRun):
    """A staged run: artifacts at ``.staging/<writer>/<area>/<run_id>/<name>``."""

    def __init__(self, run_id: str, max_artifact_bytes: int, store: ObjectStore, area: str) -> None:
        super().__init__(run_id=run_id, max_artifact_bytes=max_artifact_bytes)
        self.store = store
        self.area = area  # ".staging/<writer>/<area>/", shared by the runs of a batch
        self.closed = False

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
        self.store.put(self.staging_key(name), bytes(data))
        return self._entry(name, hashlib.sha256(data).hexdigest(), len(data))

    def write_stream(self, name: str, source: BinaryIO) -> FileEntry:
        self._claim(name)
        digest, size = self.store.upload(self.staging_key(name), source, self.max_artifact_bytes)
        if digest is None:
            raise self._too_large(name, size)
        return self._entry(name, digest, size)
