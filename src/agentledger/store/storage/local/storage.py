"""The local backend: a ledger's runs and records as files in its directory.

```
<ledger>/runs/<run_id>/...        sealed runs (read-only), staged under <ledger>/.staging
<ledger>/scores/..., labels/..., decisions/..., cache/..., journal/...   records by key
```
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import stat
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from agentledger.errors import InputError, RunNotFoundError
from agentledger.identity import HASH_PREFIX, check_artifact_name, check_run_id
from agentledger.store.crashpoints import crash_point
from agentledger.store.storage import (
    MANIFEST_NAME,
    NOT_A_FILE,
    Leftover,
    ScannedRun,
    StagedRun,
)
from agentledger.store.storage.local.fs import read_fd, remove_tree, rename_noreplace, syncfs
from agentledger.store.storage.local.records import LocalRecords
from agentledger.store.storage.local.staging import LocalStagedRun, StagingDir

__all__ = ["LocalStorage"]

_CHUNK = 1024 * 1024


class LocalStorage(LocalRecords):
    """Runs as directories under ``<ledger>/runs``, staged under ``<ledger>/.staging``.

    Sealing: every file is written read-only into a private staging directory that its writer
    holds locked; MANIFEST.json is written last; the data is flushed to disk; one rename makes
    the run visible; the run's directories are then made read-only too. A writer that dies
    leaves only an unlocked staging directory, which `leftovers()` reports and gc removes.
    Writers create and lock their staging directory under a shared lock on ``.staging``, and
    `leftovers()` looks under an exclusive one, so it never mistakes a writer that has not
    locked its directory yet for a dead one.
    """

    uri = "local"
    scans_when_forked = True

    def __init__(self, root: Path, *, durable: bool = True) -> None:
        self.root = Path(root)
        self.runs_dir = root / "runs"
        self._runs = os.fspath(self.runs_dir)
        self.staging_dir = root / ".staging"
        self.durable = durable
        self._dirs_ready = False
        self._deferring = threading.local()

    def initialize(self) -> None:
        for directory in (self.runs_dir, self.staging_dir):
            directory.mkdir(parents=True, exist_ok=True)

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
        return LocalStagedRun(run_id, max_artifact_bytes, holder, directory, "")

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
                    LocalStagedRun(
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

    def _locked_dir(self, directory: Path, members: int, *, batch: bool) -> StagingDir:
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
        return StagingDir(directory, lock_fd, members, batch=batch)

    def _flush(self, staged: Sequence[LocalStagedRun]) -> None:
        if not self.durable or not staged:
            return
        if len(staged) > 1 and syncfs(staged[0].lock_fd):
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
        crash_point("runs: flushed")
        existing: list[str] = []
        runs_fd = os.open(self.runs_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for run in runs:
                try:
                    if run.prefix:  # a run of a batch: relative to the batch's directory
                        rename_noreplace(run.lock_fd, run.prefix.rstrip("/"), runs_fd, run.run_id)
                    else:  # a run staged on its own: its directory
                        rename_noreplace(None, os.fspath(run.directory), runs_fd, run.run_id)
                except OSError as exc:
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
                    existing.append(run.run_id)
                    self.discard(run)
                    continue
                crash_point("run: renamed into runs/")
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
            remove_tree(run.directory)
        with contextlib.suppress(OSError):
            run.release()

    @staticmethod
    def _local(staged: StagedRun) -> LocalStagedRun:
        if not isinstance(staged, LocalStagedRun):
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

    def scan_run(
        self, run_id: str, keep: frozenset[str] = frozenset(), names: Sequence[str] | None = None
    ) -> ScannedRun:
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
                try:
                    sub_fd = os.open(
                        name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd
                    )
                except OSError:  # unreadable: reported as changed, never a traceback
                    out.files[rel] = (NOT_A_FILE, 0)
                    continue
                try:
                    self._scan_dir(sub_fd, rel + "/", keep, out)
                finally:
                    os.close(sub_fd)
                continue
            try:
                # O_NONBLOCK: a FIFO planted in a run is reported, instead of blocking verify.
                fd = os.open(
                    name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd
                )
            except OSError:
                out.files[rel] = (NOT_A_FILE, 0)
                continue
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    out.files[rel] = (NOT_A_FILE, 0)
                    continue
                if info.st_size <= _CHUNK:
                    # A run's files are small: one read, one hash, no loop.
                    data = read_fd(fd, info.st_size)
                    out.files[rel] = (HASH_PREFIX + hashlib.sha256(data).hexdigest(), len(data))
                    if rel in keep:
                        out.kept[rel] = data
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
                remove_tree(path)
            else:
                path.unlink(missing_ok=True)
            return True
        finally:
            os.close(fd)
