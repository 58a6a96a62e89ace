"""Filesystem primitives the local backend is built on: durable, atomic, never replacing."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

__all__ = [
    "read_fd",
    "remove_tree",
    "rename_noreplace",
    "syncfs",
    "write_fd",
]


def read_fd(fd: int, size: int) -> bytes:
    """Everything left to read from `fd`, a regular file `size` bytes long by its last stat.

    One read asks for a byte more than `size`: getting exactly `size` means the end was
    reached, without the second read that would find it. Anything else (the file changed
    since the stat) reads on to the end.
    """
    data = os.read(fd, size + 1)
    if len(data) == size:
        return data
    chunks = [data]
    while chunk := os.read(fd, max(size, 1 << 16)):
        chunks.append(chunk)
    return b"".join(chunks)


def write_fd(fd: int, data: bytes | memoryview) -> None:
    """Write all of `data` to the descriptor `fd` (os.write may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library (for syncfs and renameat2, which this Python's os module lacks);
    ctypes is loaded here, on first use, off the path of the commands that never flush."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def syncfs(fd: int) -> bool:
    """Flush the whole filesystem holding `fd` in one call (Linux); False if unavailable."""
    libc = _libc()
    try:
        return libc is not None and bool(libc.syncfs(fd) == 0)
    except AttributeError:
        return False


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_renameat2_works = True


def rename_noreplace(src_dir: int | None, src: str, dst_dir: int, dst: str) -> None:
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
            import ctypes

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


def _make_writable(path: Path) -> None:
    """Give back write permission to a sealed tree so it can be removed."""
    for root, dirs, _files in os.walk(path):
        os.chmod(root, 0o755)
        for name in dirs:
            os.chmod(Path(root) / name, 0o755)


def remove_tree(path: Path) -> None:
    """Remove a (possibly read-only) directory tree; what cannot be removed is left."""
    with contextlib.suppress(FileNotFoundError):
        _make_writable(path)
    shutil.rmtree(path, ignore_errors=True)
