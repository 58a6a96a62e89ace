"""The local backend's staging area: a run's files written read-only into a locked directory."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import stat
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import TypeAdapter

from agentledger.identity import HASH_PREFIX
from agentledger.records import FileEntry
from agentledger.store.storage import MANIFEST_NAME, HashedBytes, StagedRun
from agentledger.store.storage.checked import open_source
from agentledger.store.storage.local.fs import read_fd, write_fd

__all__ = ["LocalStagedRun", "StagingDir"]

_CHUNK = 1024 * 1024
_COPY_BUFFER = 256 * 1024
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_CLOEXEC
_KERNEL_CHUNK = 64 * 1024 * 1024
# Files up to this size are copied through memory (`_copy_small`), larger ones by the kernel.
_SMALL_COPY = 256 * 1024
# What copy_file_range answers where it cannot copy between two files (an old kernel, another
# filesystem on an old kernel, a filesystem without it).
_NO_KERNEL_COPY = frozenset({errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP})


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


def _kernel_copy(src: int, dst: int, limit: int) -> int | None:
    """Copy `src` to `dst` from their offsets in the kernel; the bytes copied (stopping once
    past `limit`), or None when this kernel or filesystem pair cannot (nothing copied)."""
    if not hasattr(os, "copy_file_range"):  # not Linux
        return None
    copied = 0
    while True:
        try:
            count = os.copy_file_range(src, dst, _KERNEL_CHUNK)
        except OSError as exc:
            if copied == 0 and exc.errno in _NO_KERNEL_COPY:
                return None
            raise
        if count == 0 or copied + count > limit:
            return copied + count
        copied += count


def _file_entry(digest: str, size: int) -> FileEntry:
    return FileEntry(sha256=HASH_PREFIX + digest, size=size)


class StagingDir:
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


class LocalStagedRun(StagedRun):
    def __init__(
        self,
        run_id: str,
        max_artifact_bytes: int,
        holder: StagingDir,
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
            write_fd(fd, data)
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
                write_fd(fd, chunk)
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
        """Copy a file into artifact `name`: (sha256, size) of what was written.

        The kernel copies (copy_file_range: no pass of the bytes through Python), and the copy
        is hashed as it now stands, so the entry is the stored file's whatever the source does
        meanwhile. Where the kernel cannot copy between the two, one pass through a buffer.
        """
        src = open_source(source)
        try:
            size = os.fstat(src).st_size
            if size > limit:
                raise self._too_large(name, size)
            if size <= _SMALL_COPY:
                return self._copy_small(name, src, size, limit)
            fd = self._open(name)
            try:
                copied = _kernel_copy(src, fd, limit)
            finally:
                os.close(fd)
            if copied is None:
                os.lseek(src, 0, os.SEEK_SET)
                os.unlink(self.prefix + name, dir_fd=self.holder.fd)
                return self._copy_through(name, src, limit)
            if copied > limit:
                raise self._too_large(name, copied)
            copy = os.open(self.prefix + name, _READ, dir_fd=self.holder.fd)
            with open(copy, "rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest(), copied
        finally:
            os.close(src)

    def _copy_small(self, name: str, src: int, size: int, limit: int) -> tuple[str, int]:
        """Copy a small file (`size` bytes by its stat) into artifact `name` through memory:
        one read, one write, the hash of the bytes written. Most files of a run directory are
        a few kilobytes, where the kernel copy's extra calls (a second copy to find the end,
        reopening the copy to hash it) cost more than the copy."""
        data = read_fd(src, size)
        if len(data) > limit:
            raise self._too_large(name, len(data))
        fd = self._open(name)
        try:
            write_fd(fd, data)
        finally:
            os.close(fd)
        return hashlib.sha256(data).hexdigest(), len(data)

    def _copy_through(self, name: str, src: int, limit: int) -> tuple[str, int]:
        """Copy the open file `src` into artifact `name` in one pass, hashing what it reads."""
        buffer = _buffer()
        view = memoryview(buffer)
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
                    write_fd(fd, chunk)
            finally:
                os.close(fd)
        finally:
            view.release()
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
                    write_fd(fd, data)
                finally:
                    os.close(fd)
                if isinstance(data, HashedBytes):
                    digest = data.sha256_hex
                else:
                    digest = hashlib.sha256(data).hexdigest()
            else:
                digest, size = self._copy(name, data, limit)
            found[name] = {"sha256": HASH_PREFIX + digest, "size": size}
        # One validation for all the entries, rather than one FileEntry(...) each.
        self.entries.update(_entries().validate_python(found))

    def write_manifest(self, data: bytes) -> None:
        fd = self._open(MANIFEST_NAME)
        try:
            write_fd(fd, data)
        finally:
            os.close(fd)
