"""Files and places the gate trusts, checked as the kernel sees them, not as the agent names them.

The agent that starts a gate sets its environment (AGENTLEDGER_RUN_DIR, AGENTLEDGER_POLICY,
AGENTLEDGER_LAB, AGENTLEDGER_CACHE_DIR, ...), and a sandboxed command could write its own
scratch directory while it ran. So a file whose contents decide what runs (a lab target, a
cached policy) is read only when it is a regular file, opened without following a symbolic
link, owned by this user or root and writable by no one else (`read_trusted`); and no file or
directory the gate uses may lie inside a sandbox scratch directory (`refuse_in_scratch`).
"""

from __future__ import annotations

import errno
import os
import stat

from agentledger.errors import InputError

__all__ = ["SCRATCH_PREFIX", "in_scratch", "read_trusted", "refuse_in_scratch", "trusted_stat"]

SCRATCH_PREFIX = "agentledger-scratch-"
"""The name every sandbox scratch directory starts with (`sandbox.make_scratch`)."""


def in_scratch(path: str | os.PathLike[str]) -> bool:
    """True when `path` (resolved: symbolic links and ``..`` followed) lies in a sandbox
    scratch directory, or names one."""
    resolved = os.path.realpath(os.fspath(path))
    return any(part.startswith(SCRATCH_PREFIX) for part in resolved.split(os.sep))


def refuse_in_scratch(path: str | os.PathLike[str], what: str) -> None:
    """InputError (exit 2) when `path` lies in a sandbox scratch directory: a sandboxed
    command could have written it, and will not see it removed as its own."""
    if in_scratch(path):
        raise InputError(
            f"{os.fspath(path)}: the {what} lies in a sandbox scratch directory "
            f"({SCRATCH_PREFIX}*), which a sandboxed command can write; refused"
        )


def trusted_stat(st: os.stat_result) -> str | None:
    """Why a file of this stat is not trusted (None when it is): not a regular file, owned
    by neither this user nor root, or writable by its group or others."""
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid not in (os.geteuid(), 0):
        return f"owned by uid {st.st_uid}, neither this user nor root"
    if st.st_mode & 0o022:
        return f"writable by its group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def read_trusted(path: str | os.PathLike[str], *, what: str) -> str:
    """The text of `path`, read through one descriptor opened without following a final
    symbolic link and checked by `trusted_stat` and `in_scratch`; InputError naming the file
    and why otherwise (``/dev/stdin`` and ``/dev/fd/N`` are refused: they are links)."""
    name = os.fspath(path)
    refuse_in_scratch(name, what)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        why = "it is a symbolic link (as /dev/stdin and /dev/fd/N are)"
        why = why if exc.errno == errno.ELOOP else str(exc.strerror or exc)
        raise InputError(f"{name}: the {what} cannot be read: {why}") from None
    try:
        why_not = trusted_stat(os.fstat(fd))
        if why_not is not None:
            raise InputError(f"{name}: the {what} is not trusted: {why_not}")
        with os.fdopen(fd, "rb", closefd=False) as source:
            data = source.read()
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: the {what} is not UTF-8: {exc}") from None
