"""Stored responses: the ledger's response cache, and recordings for replay.

Both hold `RecordedResponse` files, written atomically (a temporary file in the same directory,
then a rename), so a reader sees a whole entry or none. The cache lives in the ledger at
``cache/<first 2 hex digits>/<64 hex digits>.json``; recordings are flat,
``<record_dir>/<64 hex digits>.json``, ready to be reviewed and committed.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from agentledger.identity import HASH_PREFIX
from agentledger.providers.base import RecordedResponse, request_key

__all__ = [
    "CACHE_DIR_NAME",
    "ResponseCache",
    "cache_dir_of",
    "recording_path",
    "write_atomically",
    "write_recording",
]

CACHE_DIR_NAME = "cache"
logger = logging.getLogger("agentledger.providers")


def cache_dir_of(ledger_root: str | Path) -> Path:
    """Where the response cache of the ledger at `ledger_root` lives."""
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
    """Responses by request key, in a directory (normally ``<ledger>/cache``).

    An entry that cannot be read (truncated, edited, from a newer agentledger, or holding
    another request) is treated as a miss and replaced by the next answer: the cache is an
    optimisation, never evidence, so a damaged entry must not stop a run.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path_for(self, key: str) -> Path:
        """The file that holds the answer to the request `key`."""
        digits = _hex(key)
        return self.root / digits[:2] / f"{digits}.json"

    def get(self, key: str) -> RecordedResponse | None:
        """The stored response to `key`, or None (missing or unreadable)."""
        path = self.path_for(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("cache entry %s cannot be read (%s); calling the model", path, exc)
            return None
        try:
            entry = RecordedResponse.model_validate_json(raw)
        except ValidationError as exc:
            logger.warning("cache entry %s is damaged (%s); calling the model", path, exc)
            raise CorruptEntry(path) from None
        if entry.key != key or request_key(entry.provider, entry.endpoint, entry.request) != key:
            logger.warning("cache entry %s holds another request; calling the model", path)
            raise CorruptEntry(path)
        return entry

    def put(self, entry: RecordedResponse) -> Path:
        """Store `entry` under its key, replacing any previous answer."""
        path = self.path_for(entry.key)
        write_atomically(path, _entry_bytes(entry))
        return path


class CorruptEntry(Exception):
    """A cache entry that exists but cannot be used; the caller treats it as a miss."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path
