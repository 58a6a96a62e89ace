"""The in-memory backend: a ledger's runs and records in a process's memory.

For tests, and as the second implementation that proves the storage seam isolates: a ledger on
it writes nothing under its directory but ledger.json and its index. Stores are named, so that
reopening ``memory://<name>`` (or a ledger.json saying ``"storage": "memory"``) in the same
process finds what was written; `forget` drops one.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

from agentledger.errors import InputError, RecordExistsError, RecordNotFoundError, RunNotFoundError
from agentledger.identity import HASH_PREFIX, check_run_id
from agentledger.records import FileEntry
from agentledger.store.storage import (
    MANIFEST_NAME,
    Leftover,
    ScannedRun,
    StagedRun,
    StorageBackend,
)

__all__ = ["MemoryStorage", "forget", "named"]

_CHUNK = 1024 * 1024
_named: dict[str, MemoryStorage] = {}
_named_lock = threading.Lock()


def named(name: str) -> MemoryStorage:
    """The process's in-memory store called `name`, made on first use."""
    with _named_lock:
        store = _named.get(name)
        if store is None:
            store = _named[name] = MemoryStorage(name)
        return store


def forget(name: str) -> None:
    """Drop the in-memory store called `name` and everything in it."""
    with _named_lock:
        _named.pop(name, None)


@dataclass
class _MemoryStagedRun(StagedRun):
    files: dict[str, bytes] = field(default_factory=dict, repr=False)
    closed: bool = False

    def _keep(self, name: str, data: bytes) -> FileEntry:
        entry = FileEntry(sha256=HASH_PREFIX + hashlib.sha256(data).hexdigest(), size=len(data))
        self.files[name] = data
        self.entries[name] = entry
        return entry

    def write(self, name: str, data: bytes) -> FileEntry:
        self._claim(name)
        if len(data) > self.max_artifact_bytes:
            raise self._too_large(name, len(data))
        return self._keep(name, bytes(data))

    def write_stream(self, name: str, source: BinaryIO) -> FileEntry:
        self._claim(name)
        chunks: list[bytes] = []
        size = 0
        while chunk := source.read(_CHUNK):
            size += len(chunk)
            if size > self.max_artifact_bytes:
                raise self._too_large(name, size)
            chunks.append(chunk)
        return self._keep(name, b"".join(chunks))


class MemoryStorage(StorageBackend):
    """Runs and records in dictionaries behind one lock: each publish and create is atomic."""

    shared_between_processes = False

    def __init__(self, name: str = "default") -> None:
        self.name = name
        self.uri = f"memory://{name}"
        self._lock = threading.Lock()
        self._journal_mutex = threading.Lock()
        self._records: dict[str, bytes] = {}
        self._groups: set[str] = set()
        self._runs: dict[str, dict[str, bytes]] = {}
        self._staged: dict[int, _MemoryStagedRun] = {}

    # -- records ---------------------------------------------------------------------------

    def _clash(self, key: str) -> str | None:
        """A stored key that `key` cannot sit beside (its parent, one under it, its group)."""
        parts = key.split("/")
        for end in range(1, len(parts)):
            parent = "/".join(parts[:end])
            if parent in self._records or parent in self._groups:
                return parent
        below = key + "/"
        return next((other for other in self._records if other.startswith(below)), None)

    def _create(self, key: str, data: bytes) -> None:
        with self._lock:
            if key in self._records or self._clash(key) is not None:
                raise RecordExistsError(f"{self._describe(key)} already exists; written once")
            self._records[key] = data

    def _create_group(self, prefix: str, values: dict[str, bytes]) -> None:
        with self._lock:
            if prefix in self._records or self._clash(prefix) is not None:
                raise RecordExistsError(f"{self._describe(prefix)} already exists; written once")
            for name, data in values.items():
                self._records[f"{prefix}/{name}"] = data
            self._groups.add(prefix)  # sealed: nothing is added under it later

    def _get(self, key: str) -> bytes:
        with self._lock:
            try:
                return self._records[key]
            except KeyError:
                raise RecordNotFoundError(f"{self._describe(key)} does not exist") from None

    def _exists(self, key: str) -> bool:
        with self._lock:
            return key in self._records

    def _keys(self, prefix: str) -> list[str]:
        below = prefix + "/"
        with self._lock:
            return sorted(key for key in self._records if key.startswith(below))

    def _replace(self, key: str, data: bytes) -> None:
        with self._lock:
            clash = self._clash(key)
            if clash is not None:
                raise InputError(f"{self._describe(key)} clashes with {clash}")
            self._records[key] = data

    def _describe(self, key: str) -> str:
        return f"{self.uri}/{key}"

    @contextmanager
    def journal_lock(self) -> Iterator[None]:
        with self._journal_mutex:
            yield

    def _remove(self, key: str) -> None:
        below = key + "/"
        with self._lock:
            self._records.pop(key, None)
            for other in [k for k in self._records if k.startswith(below)]:
                del self._records[other]
            self._groups.discard(key)

    # -- runs ------------------------------------------------------------------------------

    def stage(self, run_id: str, max_artifact_bytes: int) -> StagedRun:
        staged = _MemoryStagedRun(
            run_id=check_run_id(run_id), max_artifact_bytes=max_artifact_bytes
        )
        with self._lock:
            self._staged[id(staged)] = staged
        return staged

    def publish(self, staged: Sequence[StagedRun], manifests: Sequence[bytes]) -> list[str]:
        existing: list[str] = []
        for run, manifest in zip(staged, manifests, strict=True):
            mine = self._mine(run)
            files = {**mine.files, MANIFEST_NAME: bytes(manifest)}
            with self._lock:
                self._staged.pop(id(mine), None)
                mine.closed = True
                if mine.run_id in self._runs:
                    existing.append(mine.run_id)
                    continue
                self._runs[mine.run_id] = files  # one assignment: the whole run at once
        return existing

    def discard(self, staged: StagedRun) -> None:
        mine = self._mine(staged)
        with self._lock:
            self._staged.pop(id(mine), None)
            mine.closed = True
            mine.files.clear()

    @staticmethod
    def _mine(staged: StagedRun) -> _MemoryStagedRun:
        if not isinstance(staged, _MemoryStagedRun):
            raise TypeError("this staged run belongs to another storage backend")
        if staged.closed:
            raise InputError(f"run {staged.run_id} was already published or discarded")
        return staged

    def has_run(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._runs

    def run_ids(self) -> Iterator[str]:
        with self._lock:
            ids = list(self._runs)
        yield from ids

    def _files(self, run_id: str) -> dict[str, bytes]:
        check_run_id(run_id)
        with self._lock:
            files = self._runs.get(run_id)
        if files is None:
            raise RunNotFoundError(f"no run {run_id!r} in {self.uri}")
        return files

    def read(self, run_id: str, name: str) -> bytes:
        files = self._files(run_id)
        try:
            return files[name]
        except KeyError:
            raise FileNotFoundError(f"{self.locate(run_id, name)} does not exist") from None

    def scan_run(
        self, run_id: str, keep: frozenset[str] = frozenset(), names: Sequence[str] | None = None
    ) -> ScannedRun:
        files = self._files(run_id)
        return ScannedRun(
            files={
                name: (HASH_PREFIX + hashlib.sha256(data).hexdigest(), len(data))
                for name, data in files.items()
            },
            kept={name: data for name, data in files.items() if name in keep},
        )

    def list_files(self, run_id: str) -> list[str]:
        return sorted(self._files(run_id))

    def leftovers(self) -> list[Leftover]:
        # A writer in this process that has not finished: memory leaves no debris behind.
        with self._lock:
            runs = sorted(self._staged.values(), key=lambda run: run.run_id)
        return [
            Leftover(name=run.run_id, path=f"{self.uri}/.staging/{run.run_id}", in_progress=True)
            for run in runs
        ]

    def remove_leftover(self, leftover: Leftover) -> bool:
        return not leftover.in_progress

    def locate(self, run_id: str, name: str | None = None) -> str:
        path = f"{self.uri}/runs/{check_run_id(run_id)}"
        return f"{path}/{name}" if name else path
