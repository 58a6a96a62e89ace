"""Stored responses: the ledger's response cache, and recordings for replay.

Both hold `RecordedResponse` entries, written atomically, so a reader sees a whole entry or
none. The cache lives in the ledger's storage backend at
``cache/<first 2 hex digits>/<64 hex digits>.json``; recordings are files in a directory of
the user's, flat, ``<record_dir>/<64 hex digits>.json``, ready to be reviewed and committed.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from agentledger.errors import RecordNotFoundError
from agentledger.identity import HASH_PREFIX
from agentledger.providers.base import RecordedResponse, request_key

if TYPE_CHECKING:
    from agentledger.store.storage import StorageBackend

__all__ = [
    "CACHE_DIR_NAME",
    "CorruptEntry",
    "ResponseCache",
    "cache_dir_of",
    "recording_path",
    "write_atomically",
    "write_recording",
]

CACHE_DIR_NAME = "cache"
logger = logging.getLogger("agentledger.providers")


def cache_dir_of(ledger_root: str | Path) -> Path:
    """Where the response cache of a local ledger at `ledger_root` lives (what replay reads)."""
    return Path(ledger_root) / CACHE_DIR_NAME


def _hex(key: str) -> str:
    digits = key.removeprefix(HASH_PREFIX)
    if len(digits) != 64 or any(c not in "0123456789abcdef" for c in digits):
        raise ValueError(f"not a full sha256 key: {key!r}")
    return digits


def recording_path(record_dir: str | Path, key: str) -> Path:
    """The file a recording of the request `key` is written to."""
    return Path(record_dir) / f"{_hex(key)}.json"


def _entry_bytes(entry: RecordedResponse) -> bytes:
    data = entry.model_dump(mode="json")
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file, or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_recording(record_dir: str | Path, entry: RecordedResponse) -> Path:
    """Write `entry` as a recording that `ReplayProvider` can answer from."""
    path = recording_path(record_dir, entry.key)
    write_atomically(path, _entry_bytes(entry))
    return path


class ResponseCache:
    """Responses by request key, in a ledger's storage backend (the ``cache/`` area).

    An entry that cannot be read (truncated, edited, from a newer agentledger, or holding
    another request) is treated as a miss and replaced by the next answer: the cache is an
    optimisation, never evidence, so a damaged entry must not stop a run. For the same reason
    it is the one area whose values the backend lets a writer replace, and it is not journaled:
    an entry's answer is trusted as far as the storage's ``cache/`` area is. A stored verdict
    does not depend on it (a score is journaled, and names the sha256 of the answer it was read
    from: the LLM judge's ``usage.response_sha256``); see docs/providers.md.
    """

    def __init__(self, storage: StorageBackend | Callable[[], StorageBackend]) -> None:
        # A callable opens the storage on first use: a client is made (and checked) before the
        # command creates the ledger it will write to.
        self._storage: StorageBackend | None = None
        self._opener: Callable[[], StorageBackend] | None = None
        if callable(storage):
            self._opener = storage
        else:
            self._storage = storage
        self._lock = threading.Lock()

    @property
    def storage(self) -> StorageBackend:
        """The backend the entries are stored in."""
        if self._storage is None:
            with self._lock:
                if self._storage is None:
                    assert self._opener is not None
                    self._storage = self._opener()
        return self._storage

    @staticmethod
    def key_for(key: str) -> str:
        """The storage key that holds the answer to the request `key`."""
        digits = _hex(key)
        return f"{CACHE_DIR_NAME}/{digits[:2]}/{digits}.json"

    def get(self, key: str) -> RecordedResponse | None:
        """The stored response to `key`, or None (missing or unreadable)."""
        storage = self.storage
        where = self.key_for(key)
        shown = storage.describe(where)
        try:
            raw = storage.get(where)
        except RecordNotFoundError:
            return None
        except OSError as exc:
            logger.warning(
                "cache entry %s cannot be read (%s); calling the model",
                storage.describe(where),
                exc,
            )
            return None
        try:
            entry = RecordedResponse.model_validate_json(raw)
        except ValidationError as exc:
            logger.warning("cache entry %s is damaged (%s); calling the model", shown, exc)
            raise CorruptEntry(shown) from None
        if entry.key != key or request_key(entry.provider, entry.endpoint, entry.request) != key:
            logger.warning("cache entry %s holds another request; calling the model", shown)
            raise CorruptEntry(shown)
        return entry

    def put(self, entry: RecordedResponse) -> str:
        """Store `entry` under its key, replacing any previous answer; where it went."""
        where = self.key_for(entry.key)
        self.storage.replace(where, _entry_bytes(entry))
        return self.storage.describe(where)


class CorruptEntry(Exception):
    """A cache entry that exists but cannot be used; the caller treats it as a miss."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where
