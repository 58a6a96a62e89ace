"""Who ran sudo above this process, from what the kernel says about the sudo process itself.

SUDO_USER is an environment variable: the agent that starts the gate sets it, so it names
nobody (issue 33, cause 7). A process above the gate counts as sudo only when its program
(/proc/<pid>/exe, the file itself: device and inode) is the system's sudo: one of
`SYSTEM_SUDO`, a root-owned set-user-ID file that no one but root can write, on a path whose
every directory is root's and writable by no one else (or sticky); a file of that name
anywhere else, a script called sudo on PATH, or a bind mount over the system path (compared
with the file seen from pid 1's root) is not. The person is that sudo process's real uid,
which the kernel set when the person ran it, never our SUDO_USER. A process whose program
cannot be read (the gate does not run as root) is not believed.
"""

from __future__ import annotations

import os
import stat

__all__ = ["SYSTEM_SUDO", "is_system_sudo", "sudo_user"]

SYSTEM_SUDO = ("/usr/bin/sudo", "/bin/sudo", "/usr/sbin/sudo", "/usr/local/bin/sudo")
"""Where the system's sudo may be installed."""


def _trusted_path(path: str) -> os.stat_result | None:
    """The file at `path` when it and every directory above it are root's and writable by
    root alone (a sticky directory may be writable by all: its root-owned entries stay);
    the file must be set-user-ID."""
    real = os.path.realpath(path)  # /bin -> /usr/bin: checked where it leads
    parts = real.split("/")[1:]
    current = "/"
    for index in range(len(parts) + 1):
        try:
            info = os.lstat(current)
        except OSError:
            return None
        last = index == len(parts)
        if info.st_uid != 0:
            return None
        writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if last:
            if not stat.S_ISREG(info.st_mode) or writable or not info.st_mode & stat.S_ISUID:
                return None
            return info
        if not stat.S_ISDIR(info.st_mode) or (writable and not info.st_mode & stat.S_ISVTX):
            return None
        current = os.path.join(current, parts[index])
    return None


def is_system_sudo(pid: int, trusted: tuple[str, ...] | None = None) -> bool:
    """True when process `pid` runs the system's sudo (one of `trusted`, default
    `SYSTEM_SUDO`): the same file, which passes `_trusted_path`, and, where pid 1's root
    can be seen, the same file there too (no bind mount of our own mount namespace)."""
    try:
        program = os.stat(f"/proc/{pid}/exe")
    except OSError:
        return False
    for path in SYSTEM_SUDO if trusted is None else trusted:
        info = _trusted_path(path)
        if info is None or (info.st_dev, info.st_ino) != (program.st_dev, program.st_ino):
            continue
        try:
            host = os.stat(f"/proc/1/root{os.path.realpath(path)}")
        except OSError:
            return True  # pid 1 is not ours to see (another PID namespace, not root)
        return (host.st_dev, host.st_ino) == (program.st_dev, program.st_ino)
    return False


def _status(pid: int) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as handle:
            return {
                key: value.strip()
                for key, value in (line.split(":", 1) for line in handle if ":" in line)
            }
    except OSError:
        return None


def sudo_user(trusted: tuple[str, ...] | None = None) -> tuple[str, int] | None:
    """The user who ran the system's sudo above this process, and that sudo's pid: the
    real uid of the nearest such sudo process that is not root's (a root shell's sudo names
    no person; one further up may). None when there is none."""
    import pwd

    pid = os.getppid()
    for _ in range(64):
        if pid <= 1:
            return None
        status = _status(pid)
        if status is None:
            return None
        if is_system_sudo(pid, trusted):
            uids = status.get("Uid", "").split()
            if uids and uids[0].isdigit() and int(uids[0]) != 0:
                try:
                    return pwd.getpwuid(int(uids[0])).pw_name, pid
                except KeyError:
                    return uids[0], pid
        parent = status.get("PPid", "0")
        pid = int(parent) if parent.isdigit() else 0
    return None
