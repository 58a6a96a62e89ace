"""The one check of a place a command writes to: an output redirection (`> F`, `>> F`) or a
write option (`tee F`, `dd of=F`, `sort -o F`, `curl -o F`, `git log --output=F`, ...).

A text glob cannot say where a path leads: `/dev/fd/../../1234/root/etc/passwd` matches
`/dev/fd/*` and is another process's view of the host's files. So the path is taken as the
kernel takes it: made absolute against the working directory, with `..` and symbolic links
resolved (realpath). Only one place is harmless: `/dev/null`, given as exactly that (no `..`,
no link to it) and resolving to it; and the command's own output streams by their names
(`/dev/stdout`, `/dev/stderr`, and `-` for an option that takes it as standard output).
Everything else writes: a block device (a disk) is destructive; a regular file, anything
under `/proc` or `/sys` (kernel settings, other processes), `/dev/fd`, `/dev/tty` and other
devices are mutating; none is ever harmless. The same text over ssh, where no
sandbox holds and nothing can be resolved, is judged by the same rule: only the exact
`/dev/null` is harmless there too.

The classifier (redirections and write options), the fixtures' guard (through the
classifier) and remote commands all use `write_target`.
"""

from __future__ import annotations

import os
import posixpath
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["HARMLESS_STREAMS", "NULL_DEVICE", "write_target"]

NULL_DEVICE = "/dev/null"
HARMLESS_STREAMS = frozenset(("/dev/stdout", "/dev/stderr"))
"""The command's own output, by name: what it writes there goes to the gate (or through a
redirection the classifier judged on its own)."""
_KERNEL_PLACES = ("/proc", "/sys")
_DESTRUCTIVE = "destructive"
_MUTATING = "mutating"


def write_target(
    target: str,
    *,
    cwd: str | None = None,
    option: bool = False,
    destructive: Iterable[str] = (),
) -> tuple[str | None, str]:
    """What writing to `target` is: (None, why) when harmless, else (class, what it is).

    `cwd` is where a relative path starts (default: this process's directory). `option`:
    `-` means standard output (write options such as `-o -`); a redirection to `-` writes
    a file named so. `destructive` are extra globs (the knowledge's `redirects.destructive`)
    for places that count as destructive, matched against the text and the resolved path.
    """
    if option and target == "-":
        return None, "standard output"
    if target in HARMLESS_STREAMS:
        return None, f"the command's own {target.rsplit('/', 1)[1]}"
    if target == NULL_DEVICE and _null_device_is_real():
        return None, NULL_DEVICE
    lexical = _lexical(target)
    resolved, sure, mode = _resolved(target, cwd)
    if lexical == NULL_DEVICE and resolved == NULL_DEVICE:
        return None, NULL_DEVICE
    from agentledger.shell.knowledge import glob_match

    where = target if resolved == target or not sure else f"{target} (that is, {resolved})"
    patterns = tuple(destructive)
    # The text before a glob's first `*` must start the path (str.startswith on a tuple is
    # one call): most targets are ruled out without matching a glob.
    heads = tuple(pattern.split("*", 1)[0] for pattern in patterns)
    for text in (target, resolved):
        if text.startswith(heads) and any(glob_match(pattern, text) for pattern in patterns):
            return _DESTRUCTIVE, f"the device {where}"
    if _under(resolved, _KERNEL_PLACES) or _under(lexical, _KERNEL_PLACES):
        return _MUTATING, f"{where}, a kernel setting or another process's file"
    kind = _file_kind(resolved, mode)
    if kind == "block":
        return _DESTRUCTIVE, f"the disk device {where}"
    if kind == "device" or _under(resolved, ("/dev",)) or _under(lexical, ("/dev",)):
        return _MUTATING, f"the device {where}"
    return _MUTATING, f"the file {where}"


_null_checked: list[bool] = []


def _null_device_is_real() -> bool:
    """True when /dev/null is the kernel's null device (character device 1:3), not a link or
    a file put in its place; looked at once per process."""
    if not _null_checked:
        try:
            found = os.lstat(NULL_DEVICE)
            real = stat.S_ISCHR(found.st_mode) and found.st_rdev == os.makedev(1, 3)
        except OSError:
            real = False
        _null_checked.append(real)
    return _null_checked[0]


def _lexical(target: str) -> str:
    """`target` with `//` and `/./` folded; `..` kept (it is only resolved with links)."""
    parts = [part for part in target.split("/") if part not in ("", ".")]
    prefix = "/" if target.startswith("/") else ""
    return prefix + "/".join(parts)


def _resolved(target: str, cwd: str | None) -> tuple[str, bool, int | None]:
    """The absolute path the kernel opens for `target`, links and `..` resolved, and the
    file's mode when it exists (read from the same descriptor: no second walk of the path).

    The kernel resolves it (an O_PATH descriptor of the path, or of its directory for a file
    not made yet, read back through /proc/self/fd): `/proc/PID/root` and `/dev/fd` are links
    that only it follows right. Where neither the path nor its directory exists, its text
    with `..` folded is taken (and the flag returned is False): writing there fails anyway,
    or it is on another host."""
    if not posixpath.isabs(target):
        try:
            base = cwd if cwd is not None else os.getcwd()
        except OSError:
            base = "/"
        target = posixpath.join(base, target)
    for _ in range(40):  # the kernel's own limit on links followed
        found, mode = _kernel_path(target)
        if found is not None:
            return found, True, mode
        try:
            link = os.readlink(target)  # a link to nothing (yet): where it points
        except OSError:
            break
        target = posixpath.join(posixpath.dirname(target), link)
    folder, name = posixpath.split(target)
    found, _ = _kernel_path(folder)
    if found is not None:
        return posixpath.join(found, name), True, None
    return posixpath.normpath(target), False, None


def _kernel_path(path: str) -> tuple[str | None, int | None]:
    """(the path the kernel resolved `path` to, the file's mode), or (None, None)."""
    flags = getattr(os, "O_PATH", 0)
    if not flags or not path:
        return None, None
    try:
        fd = os.open(path, flags | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None, None
    try:
        found = os.readlink(f"/proc/self/fd/{fd}")
        mode: int | None = os.fstat(fd).st_mode
    except OSError:
        return None, None
    finally:
        os.close(fd)
    return (found, mode) if found.startswith("/") else (None, None)


def _under(path: str, places: tuple[str, ...]) -> bool:
    return any(path == place or path.startswith(place + "/") for place in places)


def _file_kind(path: str, mode: int | None = None) -> str:
    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            return "missing"
    if stat.S_ISBLK(mode):
        return "block"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return "device"
    return "file"
