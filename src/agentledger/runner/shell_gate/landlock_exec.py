"""Run a command with every file outside given places closed to writing (Linux Landlock).

The sandbox (`sandbox`) binds the host's filesystem read-only, but the kernel checks a
mount's read-only flag only for files whose content lives on it: a FIFO, a socket file or a
device node under a read-only mount can still be opened for writing. As root (the owner of
most of them) a command could so write to a daemon's control FIFO (`/run/initctl`, a mail
system's `pickup`) from inside the sandbox. Landlock (Linux 5.13 and later) refuses, for
this process and all it starts, opening any file for writing and making, removing, linking,
renaming or truncating anything, except beneath the places named on the command line (the
sandbox's scratch directory and its own minimal `/dev`). Reading and running are untouched.
Since ABI 6 it also keeps the command from reaching abstract Unix sockets and signalling
processes outside it.

    python -I -S landlock_exec.py PLACE... -- COMMAND [ARG...]

It is the first program bubblewrap starts (after bubblewrap has made its mounts, which
Landlock would forbid) and replaces itself with COMMAND. It imports nothing of agentledger
and only the standard library, so that `-I -S` keeps its start short. On a kernel without
Landlock it runs COMMAND without it, unless `AGENTLEDGER_REQUIRE_LANDLOCK=1`, where it
refuses (exit 126) instead; `agentledger doctor` says which this machine does (`abi`).
"""

from __future__ import annotations

import os
import sys

__all__ = ["abi", "main", "restrict"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_WRITES = (
    (1, (1 << 1) | (1 << 4) | (1 << 5) | (0x7F << 6)),  # write, remove, make any kind of file
    (2, 1 << 13),  # link or rename from one directory into another (REFER)
    (3, 1 << 14),  # truncate
)
_SCOPES = (6, 1 | 2)  # abstract Unix sockets and signals outside the domain
_EXIT_REFUSED = 126


def _syscall() -> object:
    import ctypes

    return ctypes.CDLL(None, use_errno=True).syscall


def abi() -> int:
    """Landlock's ABI version in this kernel, 0 where it has none."""
    try:
        found = _syscall()(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)  # type: ignore[operator]
    except (AttributeError, OSError):
        return 0
    return max(int(found), 0)


def restrict(places: list[str]) -> int:
    """Close every file outside `places` (directories) to writing, for good; the ABI used,
    0 when the kernel has no Landlock (nothing restricted). OSError when it has but refused."""
    import ctypes
    import struct

    syscall = _syscall()
    version = abi()
    if version == 0:
        return 0
    handled = 0
    for since, access in _WRITES:
        if version >= since:
            handled |= access
    scoped = _SCOPES[1] if version >= _SCOPES[0] else 0
    attr = struct.pack("=QQQ", handled, 0, scoped) if scoped else struct.pack("=Q", handled)
    ruleset = syscall(_CREATE_RULESET, ctypes.c_char_p(attr), len(attr), 0)  # type: ignore[operator]
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for place in places:
            fd = os.open(place, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                rule = struct.pack("=Qi", handled, fd)
                if syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.c_char_p(rule), 0) < 0:  # type: ignore[operator]
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {place}")
            finally:
                os.close(fd)
        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if syscall(_RESTRICT_SELF, ruleset, 0) < 0:  # type: ignore[operator]
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return version


def main(argv: list[str]) -> int:
    """`PLACE... -- COMMAND [ARG...]`: restrict, then become COMMAND (returns only on error)."""
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        _say("usage: landlock_exec.py PLACE... -- COMMAND [ARG...]")
        return 2
    split = argv.index("--")
    places, command = argv[:split], argv[split + 1 :]
    try:
        used = restrict(places)
    except OSError as exc:
        _say(f"agentledger: Landlock refused to restrict the command: {exc}")
        return _EXIT_REFUSED
    if not used and os.environ.get("AGENTLEDGER_REQUIRE_LANDLOCK") == "1":
        _say(
            "agentledger: this kernel has no Landlock and AGENTLEDGER_REQUIRE_LANDLOCK=1: "
            "nothing was run"
        )
        return _EXIT_REFUSED
    try:
        os.execvp(command[0], command)  # noqa: S606 - becoming the command is the point
    except OSError as exc:
        _say(f"agentledger: cannot run {command[0]}: {exc.strerror}")
        return 127 if isinstance(exc, FileNotFoundError) else 126
    return 0  # not reached: execvp returns only by raising


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
