"""The local backend's records: one read-only file per key, created once with a hard link.

A value is written to a temporary file beside its key (a name starting with ``.``, which no key
has), flushed to disk, then linked to its key: ``link`` fails when the key exists, so of several
writers exactly one wins, and a reader sees the whole file or nothing.

Inside `deferred_sync` (a journal batch: a bulk `labels import`, a judge's scores) the flushes
wait: each record is written and linked at once, and when the batch ends one ``syncfs`` of the
ledger's file system makes them all durable (for a single record, or where the C library has
no ``syncfs``, an fsync of each file and each directory), before any of their journal entries
is appended.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentledger.errors import RecordExistsError, RecordNotFoundError
from agentledger.store.crashpoints import crash_point
from agentledger.store.storage import StorageBackend
from agentledger.store.storage.base import DeferredSync
from agentledger.store.storage.local.fs import (
    read_fd,
    remove_tree,
    rename_noreplace,
    syncfs,
    write_fd,
)

__all__ = ["LocalRecords"]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# A key whose parent is a value, or which is a directory of values: the two cannot both be.
_CLASH = (FileExistsError, NotADirectoryError)


@dataclass
class _Unsynced:
    """What a `deferred_sync` left to flush: files and the directories that gained a name."""

    files: list[Path] = field(default_factory=list)
    directories: set[Path] = field(default_factory=set)


class LocalRecords(StorageBackend):
    """Records as files under the ledger directory `root` (the run methods are LocalStorage's)."""

    root: Path
    durable: bool
    _deferring: threading.local

    @contextlib.contextmanager
    def deferred_sync(self) -> Iterator[DeferredSync]:
        state = DeferredSync()
        if not self.durable:
            state.done = True
            yield state
            return
        held = getattr(self._deferring, "unsynced", None)
        unsynced = self._deferring.unsynced = _Unsynced()
        try:
            yield state
        finally:
            self._deferring.unsynced = held
            self._flush_records(unsynced)
            state.done = True

    def _flush_records(self, unsynced: _Unsynced) -> None:
        """Make what a deferred sync left durable: one syncfs for several records (as a batch
        of runs is flushed), an fsync of each file and directory for one or without syncfs."""
        if not unsynced.files and not unsynced.directories:
            return
        crash_point("records: written, not yet flushed")
        if len(unsynced.files) > 1:
            fd = os.open(self.root, _DIRECTORY)
            try:
                if syncfs(fd):
                    return
            finally:
                os.close(fd)
        for path in unsynced.files:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for directory in sorted(unsynced.directories):
            self._sync_dir(directory, now=True)

    def _path(self, key: str) -> Path:
        return self.root / key

    def _parent(self, key: str) -> Path:
        parent = self._path(key).parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except _CLASH:
            raise RecordExistsError(
                f"{self._path(key)}: a record is stored where this key needs a directory"
            ) from None
        # A group's directory is made read-only when it lands: that mode is what says "sealed"
        # (checked here too, since permissions do not stop every user).
        for directory in [parent, *parent.parents]:
            if directory == self.root:
                break
            if not stat.S_IMODE(os.stat(directory).st_mode) & 0o222:
                raise RecordExistsError(f"{directory} is a sealed group; nothing can be added")
        return parent

    def _unsynced(self) -> _Unsynced | None:
        """The deferred sync this thread is inside, if any."""
        deferring = getattr(self, "_deferring", None)
        return getattr(deferring, "unsynced", None) if deferring is not None else None

    def _sync_dir(self, directory: Path, *, now: bool = False) -> None:
        unsynced = None if now else self._unsynced()
        if unsynced is not None:
            unsynced.directories.add(directory)
        elif self.durable:
            fd = os.open(directory, _DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _write_new(self, path: Path, data: bytes, *, sync: bool = True) -> None:
        fd = os.open(path, _CREATE, 0o444)
        try:
            write_fd(fd, data)
            if sync and self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _create(self, key: str, data: bytes) -> None:
        target = self._path(key)
        parent = self._parent(key)
        temporary = parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        unsynced = self._unsynced()
        try:
            self._write_new(temporary, data, sync=unsynced is None)
            crash_point("record: temporary file written")
            try:
                os.link(temporary, target)
            except FileExistsError:
                raise RecordExistsError(
                    f"{target} already exists; records are written once"
                ) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        if unsynced is not None:
            unsynced.files.append(target)
        self._sync_dir(parent)

    def _create_group(self, prefix: str, values: dict[str, bytes]) -> None:
        target = self._path(prefix)
        parent = self._parent(prefix)
        staging = parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.group"
        staging.mkdir()
        try:
            for name, data in values.items():
                self._write_new(staging / name, data)
                crash_point("group: member written")
            parent_fd = os.open(parent, _DIRECTORY)
            try:
                try:
                    rename_noreplace(parent_fd, staging.name, parent_fd, target.name)
                except OSError as exc:
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
                    raise RecordExistsError(
                        f"{target} already exists; records are written once"
                    ) from None
                os.chmod(target.name, 0o555, dir_fd=parent_fd)  # nothing may be added either
                if self.durable:
                    os.fsync(parent_fd)
            finally:
                os.close(parent_fd)
        finally:
            if staging.exists():
                remove_tree(staging)

    def _get(self, key: str) -> bytes:
        path = os.path.join(self.root, key)  # a plain string: no Path made per record read
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            raise RecordNotFoundError(f"{path} does not exist") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise RecordNotFoundError(f"{path} is not a record")
            return read_fd(fd, info.st_size)
        finally:
            os.close(fd)

    def _exists(self, key: str) -> bool:
        try:
            info = os.stat(self._path(key), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return stat.S_ISREG(info.st_mode)

    def _keys(self, prefix: str) -> list[str]:
        root = os.fspath(self.root)
        found: list[str] = []
        for directory, dirs, files in os.walk(os.path.join(root, prefix)):
            dirs[:] = [name for name in dirs if not name.startswith(".")]
            relative = os.path.relpath(directory, root).replace(os.sep, "/")
            found.extend(f"{relative}/{name}" for name in files if not name.startswith("."))
        return sorted(found)

    def _replace(self, key: str, data: bytes) -> None:
        target = self._path(key)
        parent = self._parent(key)
        temporary = parent / f".tmp-{target.name}.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            fd = os.open(temporary, _CREATE, 0o644)
            try:
                write_fd(fd, data)
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def _describe(self, key: str) -> str:
        return str(self._path(key))

    @contextlib.contextmanager
    def journal_lock(self) -> Iterator[None]:
        """``flock`` on ``journal/.lock``: held by one writer of any process at a time."""
        directory = self.root / "journal"
        directory.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            # A ledger this process may not write (a read-only mount, another user's): a
            # reader (verify, reports) still waits for writers who may; a write fails later,
            # saying why.
            try:
                fd = os.open(directory / ".lock", os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                yield  # no writer ever took the lock
                return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor lets go of the lock

    def _remove(self, key: str) -> None:
        path = self._path(key)
        if path.is_dir() and not path.is_symlink():
            remove_tree(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
