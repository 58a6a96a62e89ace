"""Reading a source file as it was checked: the same file, not whatever its path names now.

An import checks each file it will keep (a regular file inside the folder it was given, not a
link out, one name only) and reads it later, often much later. Between the two, whoever can
write the folder can swap the file for a link to a secret, or a directory on its path for a
link elsewhere. `CheckedFile` is the checked path with the device and inode it had;
`open_source` opens it without following a link at its last step, without blocking on a
FIFO, and refuses it unless the open descriptor is a regular file with that device and inode:
what is read is exactly what was checked, whatever the path names now.

The check itself must not be fooled either: `lstat_inside` takes a file's device and inode
by walking from the folder the import was given, one directory at a time, never through a
link, so a directory on the path swapped for a link while the folder is listed leads nowhere.
"""

from __future__ import annotations

import errno
import os
import stat

from agentledger.errors import InputError

__all__ = ["CheckedFile", "lstat_inside", "open_source", "read_given", "require_plain_file"]


class CheckedFile(str):
    """A path (it is the str) with the `dev` and `ino` of the regular file it named when it
    was checked."""

    dev: int
    ino: int

    def __new__(cls, path: str, dev: int, ino: int) -> CheckedFile:
        self = super().__new__(cls, path)
        self.dev, self.ino = dev, ino
        return self

    def __getnewargs__(self) -> tuple[str, int, int]:  # type: ignore[override]
        return str(self), self.dev, self.ino  # a plan goes to and from import workers


def _shown(path: str) -> str:
    return path if path.isprintable() else repr(path)


def open_source(path: str | os.PathLike[str], shown: str | os.PathLike[str] | None = None) -> int:
    """A descriptor open for reading on `path`. For a `CheckedFile`: the last step is not
    followed, a FIFO does not block, and anything but the regular file that was checked (same
    device and inode) is refused with InputError naming `shown` (default: the path). Any
    other path opens as given (a file the program itself made)."""
    checked = isinstance(path, CheckedFile)
    name = _shown(os.fspath(shown if shown is not None else path))
    flags = os.O_RDONLY | os.O_CLOEXEC | (os.O_NOFOLLOW | os.O_NONBLOCK if checked else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if checked and exc.errno == errno.ELOOP:
            raise InputError(f"{name}: became a symlink while being imported; refused") from None
        raise InputError(f"{name}: cannot read ({exc.strerror})") from None
    if not checked:
        return fd
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{name}: not a regular file")
        assert isinstance(path, CheckedFile)
        if (info.st_dev, info.st_ino) != (path.dev, path.ino):
            raise InputError(
                f"{name}: replaced by another file while being imported (a link or a rename "
                "swapped in after it was checked); refused"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def lstat_inside(real: str, root: str, shown: str) -> os.stat_result:
    """The lstat of `real`, a real path below the directory `root` (itself a real path),
    reached from `root` one directory at a time without following a link (openat with
    O_NOFOLLOW): a directory on the way that became a link after `real` was worked out (an
    import listing a folder while someone swaps a folder in it for a link out) is refused with
    InputError naming `shown`, never followed out. FileNotFoundError when it is gone."""
    prefix = root.rstrip(os.sep) + os.sep
    if not real.startswith(prefix):
        raise InputError(
            f"{shown}: no longer inside {_shown(root)} (a folder on its path was swapped for a "
            "link while it was being imported); refused"
        )
    *folders, name = real[len(prefix) :].split(os.sep)
    flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC  # search permission is enough
    fd = os.open(root, flags)
    try:
        for folder in folders:
            below = os.open(folder, flags | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise InputError(
                f"{shown}: a folder on its path became a link (or a file) while it was being "
                "imported; refused"
            ) from None
        if exc.errno == errno.ENOENT:
            raise
        raise InputError(f"{shown}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def require_plain_file(info: os.stat_result, shown: str) -> None:
    """InputError unless `info` (an lstat) is a regular file with no other name. A hard link
    is refused: a second name of a file may lie outside the folder, and nothing in the folder
    can tell (fs.protected_hardlinks stops only unprivileged users)."""
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{shown}: not a regular file")
    if info.st_nlink > 1:
        raise InputError(
            f"{shown}: has {info.st_nlink} hard links; a hard-linked file may be a file from "
            "outside the folder, so it is refused (copy it: cp --no-preserve=links)"
        )


def read_given(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a file named on the command line, read as an import reads its files: a
    link that leaves the folder holding it is refused (naming the link, never quoting the
    target's content), and so is anything but a regular file with one name (a FIFO, a
    device, a hard link); more than `limit` bytes is refused as it is read."""
    shown = _shown(os.fspath(path))
    real = os.path.realpath(path)
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if not real.startswith(folder.rstrip(os.sep) + os.sep):
        raise InputError(
            f"{shown}: symlink points outside {_shown(folder)} (to {_shown(real)}); "
            "refusing to read it"
        )
    try:
        info = os.lstat(real)
    except OSError as exc:
        raise InputError(f"{shown}: cannot read ({exc.strerror})") from None
    require_plain_file(info, shown)
    if info.st_size > limit:
        raise InputError(f"{shown}: over the {limit} byte limit")
    with open(open_source(CheckedFile(real, info.st_dev, info.st_ino), shown), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{shown}: over the {limit} byte limit")
    return data
