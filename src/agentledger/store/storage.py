"""Where run artifacts live, behind a small interface.

`RunStorage` is the seam: the local filesystem implementation is below; an S3-compatible one
is a new module implementing the same methods (staging = objects under a staging prefix,
publishing = copying them under `runs/` with MANIFEST.json last).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from agentledger.errors import ArtifactTooLargeError, InputError, RunNotFoundError
from agentledger.identity import HASH_PREFIX, check_artifact_name, check_run_id
from agentledger.records import FileEntry

__all__ = [
    "MANIFEST_NAME",
    "Leftover",
    "LocalStorage",
    "RunStorage",
    "ScannedRun",
    "StagedRun",
    "format_size",
    "parse_size",
]

MANIFEST_NAME = "MANIFEST.json"
_CHUNK = 1024 * 1024


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b|bytes)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes in a size such as ``100MB``, ``1.5GB``, ``512 KiB`` or ``1048576`` (units of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size (examples: 100MB, 1.5GB, 52428800)")
    unit = (match.group(2) or "").lower()
    unit = unit if unit in ("b", "bytes") else unit[:1]
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"{text!r}: a size limit must be more than 0 bytes")
    return size


def format_size(size: int) -> str:
    """A human size: ``100 MB``, ``1.5 KB``."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return (
                f"{value:.0f} {unit}"
                if unit == "bytes" or value == int(value)
                else (f"{value:.1f} {unit}")
            )
        value /= 1024
    raise AssertionError("unreachable")


@dataclass
class StagedRun(ABC):
    """A run being written: files go in one by one; nothing is visible until published."""

    run_id: str
    max_artifact_bytes: int
    entries: dict[str, FileEntry] = field(default_factory=dict)

    def _claim(self, name: str) -> None:
        check_artifact_name(name)
        if name == MANIFEST_NAME:
            raise InputError(f"{MANIFEST_NAME} is written by the ledger when it seals a run")
        if name in self.entries:
            raise InputError(f"artifact {name!r} was already written to run {self.run_id}")
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


@dataclass(frozen=True)
class ScannedRun:
    """The files found in a run: (sha256, size) for each, and the bytes of those asked for.

    A symlink or other non-regular file is reported with the hash ``not-a-file``.
    """

    files: dict[str, tuple[str, int]]
    kept: dict[str, bytes]


NOT_A_FILE = "not-a-file"


@dataclass(frozen=True)
class Leftover:
    """Staging debris from a writer that died before sealing."""

    name: str
    path: str
    in_progress: bool


class RunStorage(ABC):
    """The artifacts of sealed runs, and the staging area that seals them atomically."""

    @abstractmethod
    def stage(self, run_id: str, max_artifact_bytes: int) -> StagedRun:
        """Start writing a run; nothing is visible until `publish`."""

    @abstractmethod
    def publish(self, staged: Sequence[StagedRun], manifests: Sequence[bytes]) -> list[str]:
        """Write each manifest last and make each run visible in one atomic step.

        Returns the ids that were already sealed (and were therefore discarded, not replaced).
        """

    @abstractmethod
    def discard(self, staged: StagedRun) -> None:
        """Throw away a staged run that will not be published."""

    @abstractmethod
    def has_run(self, run_id: str) -> bool:
        """True when a run directory with this id is visible."""

    @abstractmethod
    def run_ids(self) -> Iterator[str]:
        """Every visible run id, in no particular order."""

    @abstractmethod
    def read(self, run_id: str, name: str) -> bytes:
        """The bytes of one artifact; RunNotFoundError or FileNotFoundError when absent."""

    @abstractmethod
    def scan_run(self, run_id: str, keep: frozenset[str] = frozenset()) -> ScannedRun:
        """Hash every file present in a sealed run in one pass (what `verify` compares)."""

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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _syncfs(fd: int) -> bool:
    """Flush the whole filesystem holding `fd` in one call (Linux); False if unavailable."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        return bool(libc.syncfs(fd) == 0)
    except (OSError, AttributeError):
        return False


class _LocalStagedRun(StagedRun):
    def __init__(self, run_id: str, max_artifact_bytes: int, directory: Path, lock_fd: int):
        super().__init__(run_id=run_id, max_artifact_bytes=max_artifact_bytes)
        self.directory = directory
        self.lock_fd = lock_fd

    def release(self) -> None:
        """Close the lock, once: a second close could hit a file another thread opened since."""
        fd, self.lock_fd = self.lock_fd, -1
        if fd >= 0:
            os.close(fd)

    def _open(self, name: str) -> int:
        # Relative to the staging directory's descriptor: no path walk per file.
        if "/" in name:
            parent = ""
            for part in name.split("/")[:-1]:
                parent = f"{parent}/{part}" if parent else part
                with contextlib.suppress(FileExistsError):
                    os.mkdir(parent, dir_fd=self.lock_fd)
        return os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644, dir_fd=self.lock_fd
        )

    def write(self, name: str, data: bytes) -> FileEntry:
        self._claim(name)
        if len(data) > self.max_artifact_bytes:
            raise self._too_large(name, len(data))
        fd = self._open(name)
        try:
            _write_all(fd, data)
            os.fchmod(fd, 0o444)
        finally:
            os.close(fd)
        entry = FileEntry(sha256=HASH_PREFIX + hashlib.sha256(data).hexdigest(), size=len(data))
        self.entries[name] = entry
        return entry

    def write_stream(self, name: str, source: BinaryIO) -> FileEntry:
        self._claim(name)
        digest = hashlib.sha256()
        size = 0
        fd = self._open(name)
        try:
            while chunk := source.read(_CHUNK):
                size += len(chunk)
                if size > self.max_artifact_bytes:
                    raise self._too_large(name, size)
                digest.update(chunk)
                _write_all(fd, chunk)
            os.fchmod(fd, 0o444)
        finally:
            os.close(fd)
        entry = FileEntry(sha256=HASH_PREFIX + digest.hexdigest(), size=size)
        self.entries[name] = entry
        return entry


def _make_writable(path: Path) -> None:
    """Give back write permission to a sealed tree so it can be removed."""
    for root, dirs, _files in os.walk(path):
        os.chmod(root, 0o755)
        for name in dirs:
            os.chmod(Path(root) / name, 0o755)


def _remove_tree(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        _make_writable(path)
    shutil.rmtree(path, ignore_errors=True)


class LocalStorage(RunStorage):
    """Runs as directories under ``<ledger>/runs``, staged under ``<ledger>/.staging``.

    Sealing: every file is written read-only into a private staging directory that its writer
    holds locked; MANIFEST.json is written last; the data is flushed to disk; one rename makes
    the run visible; the run's directories are then made read-only too. A writer that dies
    leaves only an unlocked staging directory, which `leftovers()` reports and gc removes.
    Writers create and lock their staging directory under a shared lock on ``.staging``, and
    `leftovers()` looks under an exclusive one, so it never mistakes a writer that has not
    locked its directory yet for a dead one.
    """

    def __init__(self, root: Path, *, durable: bool = True) -> None:
        self.root = root
        self.runs_dir = root / "runs"
        self.staging_dir = root / ".staging"
        self.durable = durable
        self._dirs_ready = False

    def run_path(self, run_id: str) -> Path:
        return self.runs_dir / check_run_id(run_id)

    def locate(self, run_id: str, name: str | None = None) -> str:
        path = self.run_path(run_id)
        return str(path / name) if name else str(path)

    @contextlib.contextmanager
    def _staging_lock(self, operation: int) -> Iterator[None]:
        """Hold a lock on the staging directory itself (shared: stage; exclusive: leftovers)."""
        fd = os.open(self.staging_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, operation)
            yield
        finally:
            os.close(fd)

    def stage(self, run_id: str, max_artifact_bytes: int) -> StagedRun:
        check_run_id(run_id)
        if not self._dirs_ready:
            # Once per process, not per run: an mkdir costs as much as a file on some disks.
            self.staging_dir.mkdir(exist_ok=True)
            self.runs_dir.mkdir(exist_ok=True)
            self._dirs_ready = True
        directory = self.staging_dir / f"{run_id}.{secrets.token_hex(4)}"
        # Between mkdir and flock the new directory looks like a dead writer's debris; doing
        # both under a shared lock that leftovers() takes exclusively closes that window.
        with self._staging_lock(fcntl.LOCK_SH):
            directory.mkdir()
            lock_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        return _LocalStagedRun(run_id, max_artifact_bytes, directory, lock_fd)

    def _flush(self, staged: Sequence[_LocalStagedRun]) -> None:
        if not self.durable or not staged:
            return
        if len(staged) > 1 and _syncfs(staged[0].lock_fd):
            return
        for run in staged:
            for name in [*run.entries, MANIFEST_NAME]:
                fd = os.open(run.directory / name, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def publish(self, staged: Sequence[StagedRun], manifests: Sequence[bytes]) -> list[str]:
        runs = [self._local(run) for run in staged]
        for run, manifest in zip(runs, manifests, strict=True):
            fd = run._open(MANIFEST_NAME)
            try:
                _write_all(fd, manifest)
                os.fchmod(fd, 0o444)
            finally:
                os.close(fd)
        self._flush(runs)
        existing: list[str] = []
        for run in runs:
            target = self.runs_dir / run.run_id
            try:
                if target.exists():
                    raise FileExistsError(errno.EEXIST, "exists", str(target))
                os.rename(run.directory, target)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                existing.append(run.run_id)
                self.discard(run)
                continue
            self._protect(target, run.entries)
            run.release()
        if self.durable:
            fd = os.open(self.runs_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return existing

    @staticmethod
    def _protect(target: Path, names: Iterable[str]) -> None:
        subdirs = {str(parent) for name in names if "/" in name for parent in Path(name).parents}
        subdirs.discard(".")
        # Deepest first, so each directory is still writable when its children change mode.
        for sub in sorted(subdirs, key=lambda d: d.count("/"), reverse=True):
            os.chmod(target / sub, 0o555)
        os.chmod(target, 0o555)

    def protect(self, run_id: str) -> None:
        target = self.run_path(run_id)
        self._protect(target, self.list_files(run_id))

    def discard(self, staged: StagedRun) -> None:
        run = self._local(staged)
        _remove_tree(run.directory)
        with contextlib.suppress(OSError):
            run.release()

    @staticmethod
    def _local(staged: StagedRun) -> _LocalStagedRun:
        if not isinstance(staged, _LocalStagedRun):
            raise TypeError("this staged run belongs to another storage backend")
        return staged

    def has_run(self, run_id: str) -> bool:
        return self.run_path(run_id).is_dir()

    def run_ids(self) -> Iterator[str]:
        try:
            with os.scandir(self.runs_dir) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        yield entry.name
        except FileNotFoundError:
            return

    def _file_path(self, run_id: str, name: str) -> Path:
        run_dir = self.run_path(run_id)
        if not run_dir.is_dir():
            raise RunNotFoundError(f"no run {run_id!r} in {self.runs_dir}")
        return run_dir / check_artifact_name(name)

    def read(self, run_id: str, name: str) -> bytes:
        return self._file_path(run_id, name).read_bytes()

    def scan_run(self, run_id: str, keep: frozenset[str] = frozenset()) -> ScannedRun:
        scanned = ScannedRun(files={}, kept={})
        run_fd = os.open(self.run_path(run_id), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self._scan_dir(run_fd, "", keep, scanned)
        finally:
            os.close(run_fd)
        return scanned

    def _scan_dir(self, dir_fd: int, prefix: str, keep: frozenset[str], out: ScannedRun) -> None:
        # Every open is relative to the directory's descriptor, and never follows a symlink:
        # a link planted in a sealed run is reported, not followed out of the ledger.
        with os.scandir(dir_fd) as entries:
            listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for name, is_dir in listed:
            rel = prefix + name
            if is_dir:
                sub_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                try:
                    self._scan_dir(sub_fd, rel + "/", keep, out)
                finally:
                    os.close(sub_fd)
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                out.files[rel] = (NOT_A_FILE, 0)
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    out.files[rel] = (NOT_A_FILE, 0)
                    continue
                digest = hashlib.sha256()
                size = 0
                chunks = []
                while chunk := os.read(fd, _CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    if rel in keep:
                        chunks.append(chunk)
            finally:
                os.close(fd)
            out.files[rel] = (HASH_PREFIX + digest.hexdigest(), size)
            if rel in keep:
                out.kept[rel] = b"".join(chunks)

    def list_files(self, run_id: str) -> list[str]:
        run_dir = self.run_path(run_id)
        found: list[str] = []
        for root, dirs, files in os.walk(run_dir):
            dirs.sort()
            rel_root = os.path.relpath(root, run_dir)
            for name in files + [d for d in dirs if (Path(root) / d).is_symlink()]:
                found.append(name if rel_root == "." else f"{rel_root}/{name}")
        return sorted(found)

    def leftovers(self) -> list[Leftover]:
        found: list[Leftover] = []
        try:
            with self._staging_lock(fcntl.LOCK_EX):
                entries = sorted(os.scandir(self.staging_dir), key=lambda e: e.name)
                for entry in entries:
                    locked = self._locked(entry.path)
                    if locked is None:
                        continue  # gone since the listing: its writer published or discarded it
                    found.append(Leftover(name=entry.name, path=entry.path, in_progress=locked))
        except FileNotFoundError:
            return []
        return found

    @staticmethod
    def _locked(path: str) -> bool | None:
        """Whether a live writer holds `path`; None when it no longer exists."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        else:
            # Unlocked: either debris, or its writer published (renamed) or discarded it and
            # let go of the lock after we opened it. Only debris is still at `path`.
            try:
                now = os.stat(path)
            except FileNotFoundError:
                return None
            opened = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
                return None
        finally:
            os.close(fd)
        return False

    def remove_leftover(self, leftover: Leftover) -> bool:
        path = Path(leftover.path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return True
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                _remove_tree(path)
            else:
                path.unlink(missing_ok=True)
            return True
        finally:
            os.close(fd)
