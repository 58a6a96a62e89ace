"""The storage backend interface without its journal: what a backend implements.

`BareStorage` is the seam between the ledger and where its bytes live. It serves two kinds
of data:

- **Runs**, staged then sealed: artifacts go into a staging place one by one, MANIFEST.json
  last, and `publish` makes each run visible in one atomic step, never part of it.
- **Records** under a key (``scores/<run_id>/<judge_id>.json``, ``labels/<run_id>/<label_id>.json``,
  ``decisions/<decision_id>/decision.json``, ``cache/ab/<hex>.json``, ``journal/...``), with
  write-once semantics: `create` **creates the key if absent, else fails** with
  RecordExistsError and changes nothing. A reader sees a whole value or none. Only the response
  cache, an optimisation and never evidence, may be overwritten (`replace`).

Keys are relative, ``/``-separated, and start with one of `RECORD_AREAS`; a key that is absolute,
holds ``..`` or ``.`` or an empty segment, a segment starting with ``.`` (kept for a backend's
temporaries), a NUL or another control character is refused with UnsafeNameError. A key is a
value or a prefix of other keys, never both.

Backends subclass `agentledger.store.storage.StorageBackend`, which adds the journal. An object
store is a new module: records as objects written with a conditional put (``If-None-Match: *``),
staging as objects under a staging prefix, publishing as copying them under ``runs/`` with
MANIFEST.json last. `agentledger.store.backends` picks one by the URI in ledger.json, and
``tests/test_storage_contract.py`` holds every backend to the same behaviour.
"""

from __future__ import annotations

import os
import re
import secrets
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO

from agentledger.errors import ArtifactTooLargeError, InputError, UnsafeNameError
from agentledger.identity import check_artifact_name
from agentledger.records import FileEntry
from agentledger.store.crashpoints import crash_point
from agentledger.store.sizes import format_size
from agentledger.store.storage.checked import open_source

__all__ = [
    "MANIFEST_NAME",
    "NOT_A_FILE",
    "QUARANTINE_AREA",
    "RECORD_AREAS",
    "REPLACEABLE_AREAS",
    "BareStorage",
    "DeferredSync",
    "HashedBytes",
    "Leftover",
    "ScannedRun",
    "StagedRun",
    "check_key",
    "check_prefix",
]

MANIFEST_NAME = "MANIFEST.json"
NOT_A_FILE = "not-a-file"
"""The hash `scan_run` reports for a symlink or other non-regular file."""

RECORD_AREAS: frozenset[str] = frozenset(
    {"cache", "decisions", "journal", "labels", "outcomes", "quarantine", "scores", "splits"}
)
"""The first segment of every record key; runs are reached through the run methods only."""
REPLACEABLE_AREAS: frozenset[str] = frozenset({"cache"})
QUARANTINE_AREA = "quarantine"
"""Where `gc` moves records no writer announced (see `StorageBackend.quarantine`)."""
"""Areas whose values may be overwritten: derived data, never evidence."""

KEY_MAX = 1024
_SEGMENT = re.compile(r"^[^\x00-\x1f\x7f/\\.][^\x00-\x1f\x7f/\\]*$")

# Artifact names that passed check_artifact_name (most runs use the same few names).
_SAFE_NAMES: set[str] = set()
_SAFE_NAMES_SIZE = 4096


def _check_segments(text: str, what: str) -> list[str]:
    if not isinstance(text, str) or not text:
        raise UnsafeNameError(f"storage {what} is empty")
    if len(text) > KEY_MAX:
        raise UnsafeNameError(f"storage {what} is {len(text)} characters long (at most {KEY_MAX})")
    parts = text.split("/")
    for part in parts:
        if part in ("", ".", "..") or not _SEGMENT.match(part):
            raise UnsafeNameError(
                f"storage {what} {text!r} is not safe: it must be relative, without empty, '.' "
                "or '..' segments, segments starting with '.', backslashes, NUL or control "
                "characters"
            )
    if parts[0] not in RECORD_AREAS:
        raise UnsafeNameError(
            f"storage {what} {text!r} is outside the record areas "
            f"({', '.join(sorted(RECORD_AREAS))})"
        )
    return parts


def check_key(key: str) -> str:
    """`key` if it names a record (``<area>/<name>...``); UnsafeNameError otherwise."""
    if len(_check_segments(key, "key")) < 2:
        raise UnsafeNameError(f"storage key {key!r} names an area, not a record in it")
    return key


def check_prefix(prefix: str) -> str:
    """`prefix` if it is an area or a key prefix ending at a segment (``scores/<run_id>``)."""
    _check_segments(prefix, "prefix")
    return prefix


class HashedBytes(bytes):
    """An artifact's bytes with their sha256 (hex digits) computed already, by code that had
    to hash them anyway (an import's planning hashes each original for the run id): a backend
    may take `sha256_hex` instead of hashing the bytes again. Bytes are immutable, so the
    digest stays theirs."""

    sha256_hex: str

    def __new__(cls, data: bytes, sha256_hex: str) -> HashedBytes:
        made = super().__new__(cls, data)
        made.sha256_hex = sha256_hex
        return made


@dataclass
class DeferredSync:
    """What `BareStorage.deferred_sync` made durable: `done` once every record created inside
    it is (a batch appends their journal entries only then)."""

    done: bool = False


@dataclass
class StagedRun(ABC):
    """A run being written: files go in one by one; nothing is visible until published."""

    run_id: str
    max_artifact_bytes: int
    entries: dict[str, FileEntry] = field(default_factory=dict)
    manifest: bytes | None = field(default=None, repr=False)  # see write_manifest

    def _claim(self, name: str) -> None:
        if name not in _SAFE_NAMES:
            check_artifact_name(name)
            if len(_SAFE_NAMES) >= _SAFE_NAMES_SIZE:
                _SAFE_NAMES.clear()
            _SAFE_NAMES.add(name)
        if name == MANIFEST_NAME:
            raise InputError(f"{MANIFEST_NAME} is written by the ledger when it seals a run")
        if name in self.entries:
            raise InputError(f"artifact {name!r} was already written to run {self.run_id}")
        # One name inside the other ("a" and "a/b") needs a "/" in one of them.
        if "/" in name or any("/" in existing for existing in self.entries):
            for existing in self.entries:
                if existing.startswith(name + "/") or name.startswith(existing + "/"):
                    raise InputError(f"artifact {name!r} clashes with {existing!r}")

    def _too_large(self, name: str, size: int) -> ArtifactTooLargeError:
        return ArtifactTooLargeError(
            f"artifact {name!r} of run {self.run_id} is {format_size(size)}, over the "
            f"{format_size(self.max_artifact_bytes)} limit (raise it with --max-artifact-size "
            "or max_artifact_bytes in ledger.json)"
        )

    @abstractmethod
    def write(self, name: str, data: bytes) -> FileEntry:
        """Store `data` as artifact `name` and return its hash and size."""

    @abstractmethod
    def write_stream(self, name: str, source: BinaryIO) -> FileEntry:
        """Copy `source` into artifact `name`, hashing as it goes."""

    def copy_file(self, name: str, source: str | os.PathLike[str]) -> FileEntry:
        """Copy the file at `source` into artifact `name`, reading it once."""
        with open(open_source(source), "rb") as handle:
            return self.write_stream(name, handle)

    def write_all(self, artifacts: Sequence[tuple[str, bytes | str | os.PathLike[str]]]) -> None:
        """Write several artifacts: ``(name, bytes)``, or ``(name, path)`` of a file to copy."""
        for name, data in artifacts:
            if isinstance(data, bytes):
                self.write(name, data)
            else:
                self.copy_file(name, data)


@dataclass(frozen=True)
class ScannedRun:
    """The files found in a run: (sha256, size) for each, and the bytes of those asked for.

    A symlink or other non-regular file is reported with the hash `NOT_A_FILE`.
    """

    files: dict[str, tuple[str, int]]
    kept: dict[str, bytes]


@dataclass(frozen=True)
class Leftover:
    """Staging debris from a writer that died before sealing (or one still writing)."""

    name: str
    path: str
    in_progress: bool


class BareStorage(ABC):
    """Where a ledger's runs and records live; every record is written once and read back.
    Knows nothing of the journal (`StorageBackend` adds it), so the journal can build on it.

    Subclasses implement the abstract methods; the public record methods check keys first, so
    every backend refuses the same bad keys.
    """

    uri: str = ""
    """What ledger.json names this backend by (``local``, ``memory://name``, ...)."""
    shared_between_processes: bool = True
    """Whether another process opening the same ledger sees the same data (an import's
    worker processes write runs themselves only then)."""
    appends_at_cached_head: bool = False
    """Whether the journal appends after the head it saw last without first reading whether
    another writer appended since: a moved head fails the segment's create (which is
    create-if-absent at the position it claims) and the journal then reads and retries. Worth
    it where a read is a round trip (an object store); on a disk a failed create costs a
    written and flushed temporary file, and reading ahead is the cheaper check."""
    scans_when_forked: bool = False
    """Whether `scan_run` works in a process forked from this one (nothing shared that a fork
    breaks, such as a network client): `verify` then checks runs on every CPU."""

    def initialize(self) -> None:  # noqa: B027 - optional: most backends need nothing
        """Prepare the storage of a new, empty ledger."""

    def close(self) -> None:  # noqa: B027 - optional: most backends hold nothing
        """Release what this backend holds open (network clients, connection pools, threads).
        The ledger calls it on close; a backend used after it opens them again."""

    def deferred_sync(self) -> AbstractContextManager[DeferredSync]:
        """Records created inside are made durable together when it ends, rather than one by
        one (the journal's `batch` uses it: a batch's records are durable before their
        entries are appended). A backend whose creates are durable when they return (an
        object store) defers nothing."""
        return nullcontext(DeferredSync(done=True))

    # -- records: create if absent, else fail --------------------------------------------

    def create(self, key: str, data: bytes, writer: str | None = None) -> None:
        """Store `data` at `key` if nothing is there; else RecordExistsError, nothing changed.

        The value appears whole or not at all. Of several concurrent creates of one key,
        exactly one succeeds. A score or label also gets its journal entry, under the
        journal lock, announced first by an intent naming `writer` (see
        `agentledger.store.storage.journal`).
        """
        key = check_key(key)
        crash_point("record: before create")
        self._create_record(key, bytes(data), writer)
        crash_point("record: created")

    def create_group(
        self, prefix: str, values: Mapping[str, bytes], writer: str | None = None
    ) -> None:
        """Store ``prefix/<name>`` for each of `values` so that they all appear at once.

        RecordExistsError (and nothing written) when anything is stored at or under `prefix`
        already; once landed, the group is sealed: nothing can be created under `prefix`.
        Names are single key segments. A decision's JSON and Markdown use this.
        """
        check_key(prefix)
        if not values:
            raise InputError(f"storage group {prefix!r} has no values")
        for name in values:
            if "/" in name:
                raise UnsafeNameError(f"storage group member {name!r} must be one segment")
            check_key(f"{prefix}/{name}")
        crash_point("group: before create")
        self._create_record_group(
            prefix, {name: bytes(data) for name, data in values.items()}, writer
        )
        crash_point("group: created")

    def _create_record(self, key: str, data: bytes, writer: str | None) -> None:
        """`create` once the key is checked: `StorageBackend` journals it here."""
        self._create(key, data)

    def _create_record_group(
        self, prefix: str, values: dict[str, bytes], writer: str | None
    ) -> None:
        """`create_group` once the keys are checked: `StorageBackend` journals it here."""
        self._create_group(prefix, values)

    def get(self, key: str) -> bytes:
        """The value at `key`; RecordNotFoundError when there is none."""
        return self._get(check_key(key))

    def exists(self, key: str) -> bool:
        """True when a value is stored at `key`."""
        return self._exists(check_key(key))

    def existing(self, keys: Sequence[str]) -> set[str]:
        """Those of `keys` at which a value is stored: `exists` for many keys at once (a
        backend may answer from a listing rather than a look-up each)."""
        return self._existing([check_key(key) for key in keys])

    def keys(self, prefix: str) -> list[str]:
        """Every key stored under `prefix` (an area or a segment-aligned prefix), sorted."""
        return self._keys(check_prefix(prefix))

    def replace(self, key: str, data: bytes) -> None:
        """Store `data` at `key`, replacing any value: only in `REPLACEABLE_AREAS` (the cache).

        Readers see the old value or the new one, never part of either.
        """
        if check_key(key).split("/", 1)[0] not in REPLACEABLE_AREAS:
            raise InputError(f"storage key {key!r} is write-once; it cannot be replaced")
        self._replace(key, bytes(data))

    def describe(self, key: str) -> str:
        """A human-readable location of `key`, for messages."""
        return self._describe(check_key(key))

    def remove_unaccepted(self, key: str) -> None:
        """Remove a record (or group) the journal never accepted and whose bytes do not check
        out: what a writer that died between record and entry left. Only `gc` calls this,
        under the journal lock, after checking that no entry names `key`."""
        self._remove(check_key(key))

    def quarantine(self, key: str) -> str:
        """Move a record (or group) that no writer announced out of the way: its bytes to
        ``quarantine/<time>-<random>/<key>``, where `verify` names them until a person removes
        them, never accepted. Only `gc` calls this, under the journal lock. The new place."""
        key = check_key(key)
        stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
        place = f"{QUARANTINE_AREA}/{stamp}/{key}"
        members = [key] if self._exists(key) else self._keys(key)
        for member in members:
            self._create(f"{QUARANTINE_AREA}/{stamp}/{member}", self._get(member))
        self._remove(key)
        return place

    @abstractmethod
    def journal_lock(self) -> AbstractContextManager[None]:
        """An exclusive lock that journal writers of every process sharing this storage hold
        while they append (local: ``fcntl.flock``; memory: a mutex). Not re-entrant: the
        journal counts its own nesting."""

    @abstractmethod
    def _remove(self, key: str) -> None: ...

    @abstractmethod
    def _create(self, key: str, data: bytes) -> None: ...

    @abstractmethod
    def _create_group(self, prefix: str, values: dict[str, bytes]) -> None: ...

    @abstractmethod
    def _get(self, key: str) -> bytes: ...

    @abstractmethod
    def _exists(self, key: str) -> bool: ...

    def _existing(self, keys: list[str]) -> set[str]:
        return {key for key in keys if self._exists(key)}

    @abstractmethod
    def _keys(self, prefix: str) -> list[str]: ...

    @abstractmethod
    def _replace(self, key: str, data: bytes) -> None: ...

    @abstractmethod
    def _describe(self, key: str) -> str: ...

    # -- runs: staged, then sealed ---------------------------------------------------------

    @abstractmethod
    def stage(self, run_id: str, max_artifact_bytes: int) -> StagedRun:
        """Start writing a run; nothing is visible until `publish`."""

    @abstractmethod
    def publish(self, staged: Sequence[StagedRun], manifests: Sequence[bytes]) -> list[str]:
        """Write each manifest last and make each run visible in one atomic step.

        Returns the ids that were already sealed (and were therefore discarded, not replaced).
        """

    def stage_batch(self, run_ids: Sequence[str], max_artifact_bytes: int) -> list[StagedRun]:
        """Start writing several runs at once (a backend may give them one staging place)."""
        if len(set(run_ids)) != len(run_ids):
            raise InputError("a batch names the same run twice")
        staged: list[StagedRun] = []
        try:
            for run_id in run_ids:
                staged.append(self.stage(run_id, max_artifact_bytes))
        except BaseException:
            for run in staged:
                self.discard(run)
            raise
        return staged

    def write_manifest(self, staged: StagedRun, manifest: bytes) -> None:
        """Give a staged run its MANIFEST.json, after its last artifact.

        `publish_written` then publishes it; `publish(staged, manifests)` does both. This
        default keeps the bytes until `publish_written`.
        """
        staged.manifest = manifest

    def publish_written(self, staged: Sequence[StagedRun]) -> list[str]:
        """`publish` for runs given their manifest with `write_manifest`."""
        manifests = []
        for run in staged:
            if run.manifest is None:
                raise InputError(f"run {run.run_id} has no manifest yet")
            manifests.append(run.manifest)
        return self.publish(staged, manifests)

    @abstractmethod
    def discard(self, staged: StagedRun) -> None:
        """Throw away a staged run that will not be published."""

    @abstractmethod
    def has_run(self, run_id: str) -> bool:
        """True when a sealed run with this id is visible."""

    @abstractmethod
    def run_ids(self) -> Iterator[str]:
        """Every visible run id, in no particular order."""

    @abstractmethod
    def read(self, run_id: str, name: str) -> bytes:
        """The bytes of one artifact; RunNotFoundError or FileNotFoundError when absent."""

    def run_files(self) -> dict[str, list[str]] | None:
        """Every sealed run with its files (relative names), from one listing of all runs, on
        a backend where that costs less than listing each run (an object store: a page of
        1,000 keys a request); None where it does not (a directory is listed per run)."""
        return None

    @abstractmethod
    def scan_run(
        self, run_id: str, keep: frozenset[str] = frozenset(), names: Sequence[str] | None = None
    ) -> ScannedRun:
        """Hash every file present in a sealed run in one pass (what `verify` compares);
        `names`: the run's files as `run_files` listed them, so the run is not listed again."""

    @abstractmethod
    def list_files(self, run_id: str) -> list[str]:
        """Every file present in the run (relative names, MANIFEST.json included), sorted."""

    @abstractmethod
    def leftovers(self) -> list[Leftover]:
        """Staging debris, with whether a live writer still holds it."""

    @abstractmethod
    def remove_leftover(self, leftover: Leftover) -> bool:
        """Remove debris whose writer is gone; False if a writer took it back meanwhile."""

    @abstractmethod
    def locate(self, run_id: str, name: str | None = None) -> str:
        """A human-readable location of a run or artifact, for messages."""

    def protect(self, run_id: str) -> None:  # noqa: B027 - optional for backends without modes
        """Make a sealed run read-only again (after a writer died between publish and protect)."""
