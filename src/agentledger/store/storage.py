"""Where run artifacts live, behind a small interface.

`RunStorage` is the seam: the local filesystem implementation is below; an S3-compatible one
is a new module implementing the same methods (staging = objects under a staging prefix,
publishing = copying them under `runs/` with MANIFEST.json last).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import hashlib
import os
import re
import secrets
import shutil
import stat
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import TypeAdapter

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
_COPY_BUFFER = 256 * 1024
# Artifact names that passed check_artifact_name (most runs use the same few names).
_SAFE_NAMES: set[str] = set()
_SAFE_NAMES_SIZE = 4096


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
    manifest: bytes | None = field(default=None, repr=False)  # see RunStorage.write_manifest

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
        with open(source, "rb") as handle:
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

    def stage_batch(self, run_ids: Sequence[str], max_artifact_bytes: int) -> list[StagedRun]:
        """Start writing several runs at once (a backend may give them one staging place)."""
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


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library (for syncfs and renameat2, which this Python's os module lacks)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _syncfs(fd: int) -> bool:
    """Flush the whole filesystem holding `fd` in one call (Linux); False if unavailable."""
    libc = _libc()
    try:
        return libc is not None and bool(libc.syncfs(fd) == 0)
    except AttributeError:
        return False


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_renameat2_works = True


def _rename_new(src_dir: int | None, src: str, dst_dir: int, dst: str) -> None:
    """Rename, refusing (FileExistsError) to replace anything already at `dst`.

    `src` is relative to the directory `src_dir` (None: the working directory), `dst` to
    `dst_dir`.
    """
    global _renameat2_works
    libc = _libc()
    if _renameat2_works and libc is not None:
        try:
            done = libc.renameat2(
                _AT_FDCWD if src_dir is None else src_dir,
                os.fsencode(src),
                dst_dir,
                os.fsencode(dst),
                _RENAME_NOREPLACE,
            )
        except AttributeError:  # a C library without renameat2
            done = None
        if done == 0:
            return
        if done is not None:
            code = ctypes.get_errno()
            if code not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: not supported here
                raise OSError(code, os.strerror(code), dst)
        _renameat2_works = False
    # Without renameat2: a directory can replace an empty one, so look first.
    try:
        os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
    else:
        raise FileExistsError(errno.EEXIST, "exists", dst)


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_CLOEXEC


@functools.cache
def _entries() -> TypeAdapter[dict[str, FileEntry]]:
    """A validator of many file entries at once (made on first use: it takes milliseconds)."""
    return TypeAdapter(dict[str, FileEntry])


_buffers = threading.local()


def _buffer() -> bytearray:
    """This thread's copy buffer."""
    buffer: bytearray | None = getattr(_buffers, "buffer", None)
    if buffer is None:
        buffer = _buffers.buffer = bytearray(_COPY_BUFFER)
    return buffer


# Stands for an artifact being written by write_all(), until its entry is known.
_PENDING = FileEntry(sha256=HASH_PREFIX + "0" * 64, size=0)


def _file_entry(digest: str, size: int) -> FileEntry:
    return FileEntry(sha256=HASH_PREFIX + digest, size=size)


class _StagingDir:
    """A directory under ``.staging`` that a writer holds locked: one run's, or a batch's.

    A batch directory (an import) holds one subdirectory per run; each is published (renamed
    out) or discarded on its own, and the lock is let go with the last of them.
    """

    def __init__(self, path: Path, fd: int, members: int, *, batch: bool) -> None:
        self.path = path
        self.fd = fd
        self.members = members
        self.batch = batch
        # Files are created read-only; checked on the first file (umask, default ACLs).
        self.mode_checked = False
        self.mode_ok = False
        self._mutex = threading.Lock()

    def release_member(self) -> None:
        with self._mutex:
            self.members -= 1
            if self.members or self.fd < 0:
                return
            fd, self.fd = self.fd, -1
        if self.batch:
            with contextlib.suppress(OSError):  # not empty: gc removes what is left
                os.rmdir(self.path)
        os.close(fd)


class _LocalStagedRun(StagedRun):
    def __init__(
        self,
        run_id: str,
        max_artifact_bytes: int,
        holder: _StagingDir,
        directory: Path,
        prefix: str,
    ) -> None:
        super().__init__(run_id=run_id, max_artifact_bytes=max_artifact_bytes)
        self.holder = holder
        self.directory = directory  # the run's own directory, renamed into runs/ when sealed
        self.prefix = prefix  # the run's directory relative to holder.fd ("" or "<run_id>/")
        self.released = False

    @property
    def lock_fd(self) -> int:
        return self.holder.fd

    def release(self) -> None:
        """Let go of the staging lock, once (the last run of a batch closes it)."""
        if not self.released:
            self.released = True
            self.holder.release_member()

    def _open(self, name: str) -> int:
        # Relative to the staging directory's descriptor: no path walk from the root per file.
        holder = self.holder
        path = self.prefix + name
        if "/" in name:
            parent = self.prefix
            for part in name.split("/")[:-1]:
                parent += part
                with contextlib.suppress(FileExistsError):
                    os.mkdir(parent, dir_fd=holder.fd)
                parent += "/"
        if holder.mode_ok:
            # Created read-only: the descriptor is still writable, no chmod needed.
            return os.open(path, _CREATE, 0o444, dir_fd=holder.fd)
        fd = os.open(path, _CREATE, 0o444, dir_fd=holder.fd)
        try:
            if not holder.mode_checked:
                holder.mode_checked = True
                holder.mode_ok = stat.S_IMODE(os.fstat(fd).st_mode) == 0o444
            if not holder.mode_ok:  # a umask or default ACL took bits away
                os.fchmod(fd, 0o444)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def write(self, name: str, data: bytes) -> FileEntry:
        self._claim(name)
        if len(data) > self.max_artifact_bytes:
            raise self._too_large(name, len(data))
        fd = self._open(name)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        entry = _file_entry(hashlib.sha256(data).hexdigest(), len(data))
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
        finally:
            os.close(fd)
        entry = _file_entry(digest.hexdigest(), size)
        self.entries[name] = entry
        return entry

    def copy_file(self, name: str, source: str | os.PathLike[str]) -> FileEntry:
        self._claim(name)
        digest, size = self._copy(name, source, self.max_artifact_bytes)
        entry = _file_entry(digest, size)
        self.entries[name] = entry
        return entry

    def _copy(self, name: str, source: str | os.PathLike[str], limit: int) -> tuple[str, int]:
        """Copy a file into artifact `name` in one pass, hashing what it reads: (sha256, size)."""
        buffer = _buffer()
        view = memoryview(buffer)
        src = os.open(source, _READ)
        try:
            hasher = hashlib.sha256()
            size = 0
            fd = self._open(name)
            try:
                # Into one reused buffer: no fresh memory (and page faults) per read.
                while count := os.readv(src, (buffer,)):
                    size += count
                    if size > limit:
                        raise self._too_large(name, size)
                    chunk = view[:count]
                    hasher.update(chunk)
                    _write_all(fd, chunk)
            finally:
                os.close(fd)
        finally:
            view.release()
            os.close(src)
        return hasher.hexdigest(), size

    def write_all(self, artifacts: Sequence[tuple[str, bytes | str | os.PathLike[str]]]) -> None:
        # The loops of write() and copy_file() in one, for runs written in bulk (an import).
        claimed = []
        try:
            for name, _data in artifacts:
                self._claim(name)
                self.entries[name] = _PENDING  # claimed: later names are checked against it
                claimed.append(name)
            self._write_claimed(artifacts)
        except BaseException:
            for name in claimed:
                if self.entries.get(name) is _PENDING:
                    del self.entries[name]
            raise

    def _write_claimed(
        self, artifacts: Sequence[tuple[str, bytes | str | os.PathLike[str]]]
    ) -> None:
        limit = self.max_artifact_bytes
        found: dict[str, dict[str, Any]] = {}
        for name, data in artifacts:
            if isinstance(data, bytes):
                size = len(data)
                if size > limit:
                    raise self._too_large(name, size)
                fd = self._open(name)
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
                digest = hashlib.sha256(data).hexdigest()
            else:
                digest, size = self._copy(name, data, limit)
            found[name] = {"sha256": HASH_PREFIX + digest, "size": size}
        # One validation for all the entries, rather than one FileEntry(...) each.
        self.entries.update(_entries().validate_python(found))

    def write_manifest(self, data: bytes) -> None:
        fd = self._open(MANIFEST_NAME)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)


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
        self._runs = os.fspath(self.runs_dir)
        self.staging_dir = root / ".staging"
        self.durable = durable
        self._dirs_ready = False

    def run_path(self, run_id: str) -> Path:
        return self.runs_dir / check_run_id(run_id)

    def locate(self, run_id: str, name: str | None = None) -> str:
        path = f"{self._runs}/{check_run_id(run_id)}"  # as str(run_path(run_id)), cheaper
        return str(Path(path) / name) if name else path

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
        self._ensure_dirs()
        directory = self.staging_dir / f"{run_id}.{secrets.token_hex(4)}"
        holder = self._locked_dir(directory, 1, batch=False)
        return _LocalStagedRun(run_id, max_artifact_bytes, holder, directory, "")

    def stage_batch(self, run_ids: Sequence[str], max_artifact_bytes: int) -> list[StagedRun]:
        """Several runs in one locked staging directory: one lock and one open for them all."""
        for run_id in run_ids:
            check_run_id(run_id)
        if len(set(run_ids)) != len(run_ids):
            raise InputError("a batch names the same run twice")
        if not run_ids:
            return []
        self._ensure_dirs()
        # "_" never starts a run id, so a batch never takes a run's staging name.
        directory = self.staging_dir / f"_batch.{secrets.token_hex(8)}"
        holder = self._locked_dir(directory, len(run_ids), batch=True)
        staged: list[StagedRun] = []
        try:
            for run_id in run_ids:
                os.mkdir(run_id, dir_fd=holder.fd)
                staged.append(
                    _LocalStagedRun(
                        run_id, max_artifact_bytes, holder, directory / run_id, run_id + "/"
                    )
                )
        except BaseException:
            for run in staged:
                self.discard(run)
            for _ in range(len(run_ids) - len(staged)):
                holder.release_member()
            raise
        return staged

    def _ensure_dirs(self) -> None:
        if not self._dirs_ready:
            # Once per process, not per run: an mkdir costs as much as a file on some disks.
            self.staging_dir.mkdir(exist_ok=True)
            self.runs_dir.mkdir(exist_ok=True)
            self._dirs_ready = True

    def _locked_dir(self, directory: Path, members: int, *, batch: bool) -> _StagingDir:
        # Between mkdir and flock the new directory looks like a dead writer's debris; doing
        # both under a shared lock that leftovers() takes exclusively closes that window.
        with self._staging_lock(fcntl.LOCK_SH):
            directory.mkdir()
            lock_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(lock_fd)
                raise
        return _StagingDir(directory, lock_fd, members, batch=batch)

    def _flush(self, staged: Sequence[_LocalStagedRun]) -> None:
        if not self.durable or not staged:
            return
        if len(staged) > 1 and _syncfs(staged[0].lock_fd):
            return
        for run in staged:
            for name in [*run.entries, MANIFEST_NAME]:
                fd = os.open(run.prefix + name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=run.lock_fd)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def write_manifest(self, staged: StagedRun, manifest: bytes) -> None:
        """Write a staged run's MANIFEST.json: the last file; `publish_written` comes next."""
        self._local(staged).write_manifest(manifest)

    def publish(self, staged: Sequence[StagedRun], manifests: Sequence[bytes]) -> list[str]:
        for run, manifest in zip(staged, manifests, strict=True):
            self.write_manifest(run, manifest)
        return self.publish_written(staged)

    def publish_written(self, staged: Sequence[StagedRun]) -> list[str]:
        """Flush and make visible runs whose MANIFEST.json is written (see `publish`)."""
        runs = [self._local(run) for run in staged]
        self._flush(runs)
        existing: list[str] = []
        runs_fd = os.open(self.runs_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for run in runs:
                try:
                    if run.prefix:  # a run of a batch: relative to the batch's directory
                        _rename_new(run.lock_fd, run.prefix.rstrip("/"), runs_fd, run.run_id)
                    else:  # a run staged on its own: its directory
                        _rename_new(None, os.fspath(run.directory), runs_fd, run.run_id)
                except OSError as exc:
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
                    existing.append(run.run_id)
                    self.discard(run)
                    continue
                self._protect(runs_fd, run.run_id, run.entries)
                run.release()
            if self.durable:
                os.fsync(runs_fd)
        finally:
            os.close(runs_fd)
        return existing

    @staticmethod
    def _protect(runs_fd: int, run_id: str, names: Iterable[str]) -> None:
        subdirs = {str(parent) for name in names if "/" in name for parent in Path(name).parents}
        subdirs.discard(".")
        # Deepest first, so each directory is still writable when its children change mode.
        for sub in sorted(subdirs, key=lambda d: d.count("/"), reverse=True):
            os.chmod(f"{run_id}/{sub}", 0o555, dir_fd=runs_fd)
        os.chmod(run_id, 0o555, dir_fd=runs_fd)

    def protect(self, run_id: str) -> None:
        self.run_path(run_id)  # checks the id
        runs_fd = os.open(self.runs_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self._protect(runs_fd, run_id, self.list_files(run_id))
        finally:
            os.close(runs_fd)

    def discard(self, staged: StagedRun) -> None:
        run = self._local(staged)
        if not run.released:
            _remove_tree(run.directory)
        with contextlib.suppress(OSError):
            run.release()

    @staticmethod
    def _local(staged: StagedRun) -> _LocalStagedRun:
        if not isinstance(staged, _LocalStagedRun):
            raise TypeError("this staged run belongs to another storage backend")
        return staged

    def has_run(self, run_id: str) -> bool:
        # Without pathlib: an import asks this for every run it checks.
        try:
            info = os.stat(f"{self._runs}/{check_run_id(run_id)}")
        except OSError as exc:  # as Path.is_dir(): only "there is none" means False
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
                raise
            return False
        except ValueError:
            return False
        return stat.S_ISDIR(info.st_mode)

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
