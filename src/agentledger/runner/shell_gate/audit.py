"""The shell audit log: one JSON line per command, appended safely by concurrent gates.

Each line has the fields of `records.ShellEvent` (it is written here as plain JSON so that a
gated command does not pay for pydantic; the tests parse what is written with
`records.parse_shell_audit`). Several gate processes may append to the same file at once: the
file is opened with O_APPEND, locked with flock, and each line is written in one write.

What the gate writes in the run directory (the log, its pending folder, the gate's errors)
goes to no other file whatever a command left there: the run directory is reached from `/`
one directory at a time without following a link (`open_run_dir`; only a system link, owned
by root in a directory only root may write, like /var/run, is followed), and its files are
opened without following a link and without blocking (O_NOFOLLOW, O_NONBLOCK), then refused
unless they are a regular file with one name (`AuditLogError`, naming the file). A log that
is a symlink would send the gate's lines to whatever it names; a FIFO would hang the gate;
a hard link may be a file outside the run directory (root can link any file of the same
filesystem), so it is refused too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import stat
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agentledger.runner.shell_gate.redact import Redactor
    from agentledger.runner.shell_gate.spool import Spool

__all__ = [
    "INTENT_SUFFIX",
    "AuditLogError",
    "append_event",
    "append_line",
    "check_log",
    "clear_intent",
    "encode_json",
    "iso_time",
    "open_run_dir",
    "recover_unfinished",
    "stored_output",
    "write_intent",
]

_MARGIN = 8192
"""Output past the kept bytes that is still redacted, so that a secret cut by the truncation
is recognised whole (private key blocks are the longest, a few kilobytes)."""
_TAIL_SHOWN = 4096
"""At most this many bytes of the end of a cut output are logged after the marker."""

try:
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - CPython always has _json
    from json.encoder import encode_basestring_ascii as _quote


def iso_time(seconds: float) -> str:
    """UTC ISO 8601 with milliseconds: ``2026-03-12T10:15:00.123Z``."""
    whole = int(seconds)
    millis = int((seconds - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def clean_text(text: str) -> str:
    """`text` as valid Unicode: undecodable bytes (from argv or paths) become ``\\xNN``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")


def stored_output(spool: Spool, redactor: Redactor, limit: int) -> tuple[str, str, int, bool]:
    """How output is logged: (redacted text cut to `limit` bytes, sha256 and size of all the
    bytes, whether it was cut). A cut text ends with the last bytes of the output. Bytes
    that are not UTF-8 are kept as ``\\xNN``."""
    head = bytes(spool.head[: limit + _MARGIN])
    text = redactor.redact(head.decode("utf-8", "backslashreplace"))
    encoded = text.encode("utf-8")
    truncated = len(encoded) > limit or spool.size > len(head)
    if truncated:
        tail_room = min(_TAIL_SHOWN, limit // 4)
        text = encoded[: limit - tail_room].decode("utf-8", "ignore")
        text += (
            f"\n[agentledger: output truncated to {limit} bytes of {spool.size}; "
            "the sha256 covers all of it; its end follows]\n"
        )
        tail = (bytes(spool.head) + spool.tail)[-(tail_room + _MARGIN) :]
        ending = redactor.redact(tail.decode("utf-8", "backslashreplace"))
        text += ending.encode("utf-8")[-tail_room:].decode("utf-8", "ignore") if tail_room else ""
    return text, spool.digest, spool.size, truncated


def encode_json(value: Any) -> str:
    """Compact JSON for the values an event holds (no floats that are not finite)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return str(_quote(value))
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("not a finite number")
        return repr(value)
    if isinstance(value, dict):
        items = (f"{_quote(str(key))}:{encode_json(item)}" for key, item in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode_json(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to the audit log")


class AuditLogError(OSError):
    """A file the gate writes in the run directory is not one it may write (a link, a FIFO, a
    device, a directory, a hard link); `strerror` says which and why."""


_PATH = getattr(os, "O_PATH", 0) | os.O_DIRECTORY | os.O_CLOEXEC
_SYSTEM_LINK_HOPS = 40


def open_run_dir(folder: str) -> int:
    """An O_PATH descriptor of the directory `folder`, reached from `/` one component at a
    time without following a link the agent could have made: a link on the way is followed
    only when it and the directory holding it are owned by root and that directory is not
    writable by group or others (a system link like /var/run -> /run); any other is refused
    with AuditLogError naming it."""
    path = os.path.abspath(folder)
    parts = path.split(os.sep)[::-1]  # a stack: the next component last
    fd = os.open(os.sep, _PATH)
    hops = 0
    try:
        while parts:
            name = parts.pop()
            if name in ("", "."):
                continue
            try:
                below = os.open(name, _PATH | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                holder = os.fstat(fd)
                if not stat.S_ISLNK(info.st_mode):
                    raise
                if info.st_uid or holder.st_uid or holder.st_mode & 0o022:
                    raise AuditLogError(
                        errno.ELOOP,
                        f"{name!r} on the path of the run directory {path} is a symbolic link "
                        "that is not the system's (owned by root in a directory only root may "
                        "write); give the run directory's real path",
                    ) from None
                hops += 1
                target = os.readlink(name, dir_fd=fd)
                if hops > _SYSTEM_LINK_HOPS:
                    raise AuditLogError(
                        errno.ELOOP, f"too many links on the way to {path}"
                    ) from None
                parts.extend(target.split(os.sep)[::-1])
                if target.startswith(os.sep):
                    below = os.open(os.sep, _PATH)
                else:
                    continue
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


_SEEN: dict[str, tuple[int, ...]] = {}
"""What each run directory (device, inode, mount id) and file (device, inode) this process
writes in was when it first saw it: a mount over either since (`mount --bind` by a command
run as root) or a file replaced is refused, not written to."""


def _mount_id(fd: int) -> int:
    """The id of the mount `fd` is on (/proc/self/fdinfo), or -1 when it cannot be read."""
    try:
        info = os.open(f"/proc/self/fdinfo/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    try:
        text = os.read(info, 4096)
    except OSError:
        return -1
    finally:
        os.close(info)
    start = text.find(b"mnt_id:")
    if start < 0:
        return -1
    end = text.find(b"\n", start)
    try:
        return int(text[start + 7 : end if end >= 0 else None])
    except ValueError:
        return -1


def _same_as_before(key: str, now: tuple[int, ...], shown: str) -> None:
    before = _SEEN.setdefault(key, now)
    if before != now:
        raise AuditLogError(
            errno.ESTALE,
            f"{shown} is not the one the gate began with (something was mounted over it, or "
            "it was replaced); the gate does not write there",
        )


def _run_dir(folder: str) -> int:
    """`open_run_dir`, refused when the directory is not the one this process first saw."""
    path = os.path.abspath(folder)
    fd = open_run_dir(path)
    try:
        info = os.fstat(fd)
        shown = path if path.isprintable() else repr(path)
        _same_as_before(
            path, (info.st_dev, info.st_ino, _mount_id(fd)), f"the run directory {shown}"
        )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_file(path: str, shown: str, fd: int, folder_mount: int) -> None:
    """The file opened as `fd` is on its run directory's mount (a file mounted over it is
    not) and is the file this process first wrote there."""
    mount = _mount_id(fd)
    if mount != folder_mount:
        raise AuditLogError(
            errno.EXDEV,
            f"{shown} is not on the run directory's mount (a file is mounted over it); "
            "the gate does not write to it",
        )
    info = os.fstat(fd)
    _same_as_before(os.path.abspath(path), (info.st_dev, info.st_ino), shown)


def _refuse_kind(shown: str, info: os.stat_result) -> None:
    """AuditLogError unless `info` is a regular file with one name."""
    mode = info.st_mode
    if not stat.S_ISREG(mode):
        kind = (
            "a symbolic link" if stat.S_ISLNK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode)
            else "a directory" if stat.S_ISDIR(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file"
        )  # fmt: skip
        raise AuditLogError(
            errno.EINVAL, f"{shown} is {kind}, not a regular file; the gate writes only there"
        )
    if info.st_nlink > 1:
        raise AuditLogError(
            errno.EMLINK,
            f"{shown} has {info.st_nlink} hard links; another name of it may be a file outside "
            "the run directory, so the gate does not write to it",
        )


def _open_append(path: str) -> int:
    """`path` opened to append (created if missing) as the module's docstring says."""
    shown = path if path.isprintable() else repr(path)
    folder = _run_dir(os.path.dirname(os.path.abspath(path)))
    name = os.path.basename(path)
    folder_mount = _mount_id(folder)
    try:
        # Anything but a regular file is refused before it is opened (opening a device can
        # act on it); the open below refuses one swapped in since, without blocking.
        try:  # noqa: SIM105 - contextlib costs every gated command its import
            _refuse_kind(shown, os.stat(name, dir_fd=folder, follow_symlinks=False))
        except FileNotFoundError:
            pass
        # Read too: `append_line` looks at the log's last line before it appends.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOCTTY
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644, dir_fd=folder)
        except OSError as exc:
            # replaced since the look above: a link (ELOOP), a FIFO with no reader (ENXIO)
            raise AuditLogError(
                exc.errno, f"{shown} cannot be opened as a regular file ({exc.strerror})"
            ) from None
    finally:
        os.close(folder)
    try:
        _refuse_kind(shown, os.fstat(fd))
        _check_file(path, shown, fd, folder_mount)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_log(path: str, *, create: bool = True) -> None:
    """AuditLogError unless the gate can append to the audit log at `path` (see the module's
    docstring), created if missing when `create`. Called before a command runs: none runs
    that could not be logged."""
    if create:
        os.close(_open_append(path))
        return
    shown = path if path.isprintable() else repr(path)
    folder = _run_dir(os.path.dirname(os.path.abspath(path)))
    try:
        info = os.stat(os.path.basename(path), dir_fd=folder, follow_symlinks=False)
        _refuse_kind(shown, info)
        _same_as_before(os.path.abspath(path), (info.st_dev, info.st_ino), shown)
    except FileNotFoundError:
        pass
    finally:
        os.close(folder)


def unlimit_file_size() -> None:
    """Raise this process's file size limit (RLIMIT_FSIZE, ``ulimit -f``) to its hard limit;
    AuditLogError when that is not unlimited. The agent that starts the gate sets its
    limits: one just above the log's size cuts an event line in half (the command has run)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if hard != resource.RLIM_INFINITY:
        raise AuditLogError(
            errno.EFBIG,
            f"the file size limit (ulimit -f, RLIMIT_FSIZE) is {hard} bytes, not unlimited: "
            "an audit event could be cut short",
        )
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))


def append_line(path: str, data: bytes) -> None:
    """Append `data` to the file at `path` (created if missing), locked, in whole or not at
    all: a write cut short (disk full, a file size limit) is taken back, and a last line
    left without its newline (a gate that died mid-write) is cut off first: its event's
    intent is still pending and is logged as `unfinished` (`recover_unfinished`)."""
    fd = _open_append(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = _whole_lines(fd)
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except BaseException:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def _whole_lines(fd: int) -> int:
    """The size of the log open at `fd` once a last line without its newline is cut off."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - 65536)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            end = start + found + 1
            break
        end = start
    os.ftruncate(fd, end)
    return end


def append_event(path: str, event: dict[str, Any]) -> None:
    """Append `event` as one line to the audit log at `path` (created if missing)."""
    append_line(path, (encode_json(event) + "\n").encode("ascii"))


INTENT_SUFFIX = ".pending"
"""The directory beside the audit log (``shell_audit.jsonl.pending``) that holds the events
of commands running now: written before a command starts, removed once its event is in the
log. One left behind by a gate that died (killed, out of memory) is moved into the log as
`unfinished` by the next gate on the same log (`recover_unfinished`)."""


def _open_folder(run: int, name: str, flags: int) -> int:
    """The directory `name` in the run directory `run`, never through a link."""
    try:
        return os.open(name, flags | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=run)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise AuditLogError(
            exc.errno, f"{name} in the run directory is not a directory (a link or a file)"
        ) from None


def write_intent(path: str, event: dict[str, Any]) -> str:
    """Record that the command of `event` is about to run; the intent file's path."""
    entry = f"{event['event_id']}.json"
    folder_name = os.path.basename(path) + INTENT_SUFFIX
    name = os.path.join(path + INTENT_SUFFIX, entry)
    data = (encode_json({**event, "gate_pid": os.getpid()}) + "\n").encode("ascii")
    run = _run_dir(os.path.dirname(os.path.abspath(path)))
    try:
        for _ in range(3):
            try:  # noqa: SIM105
                os.mkdir(folder_name, 0o755, dir_fd=run)
            except FileExistsError:
                pass
            try:
                folder = _open_folder(run, folder_name, _PATH)
                try:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                    fd = os.open(entry, flags, 0o644, dir_fd=folder)
                finally:
                    os.close(folder)
            except FileNotFoundError:
                continue  # another gate removed the empty directory just now
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            return name
    finally:
        os.close(run)
    raise FileNotFoundError(f"cannot create {name}")


def clear_intent(name: str) -> None:
    """The command's event is in the log: its intent is no longer needed."""
    folder_path = os.path.dirname(name)
    run = _run_dir(os.path.dirname(os.path.abspath(folder_path)))
    folder_name = os.path.basename(folder_path)
    # try/except rather than contextlib.suppress: contextlib loads functools and collections,
    # which `agentledger exec` otherwise does without.
    try:
        try:
            folder = _open_folder(run, folder_name, _PATH)
            try:
                os.unlink(os.path.basename(name), dir_fd=folder)
            finally:
                os.close(folder)
        except FileNotFoundError:
            pass
        try:  # noqa: SIM105
            os.rmdir(folder_name, dir_fd=run)
        except OSError:
            pass  # another command's intent is still there
    finally:
        os.close(run)


def recover_unfinished(path: str) -> int:
    """Append to the log, as `unfinished`, every intent whose gate is no longer alive; how
    many. A command whose gate died has run (or begun to), and the log must say so."""
    folder_path = path + INTENT_SUFFIX
    run = _run_dir(os.path.dirname(os.path.abspath(path)))
    try:
        folder = _open_folder(run, os.path.basename(folder_path), os.O_RDONLY)
    except FileNotFoundError:
        return 0
    finally:
        os.close(run)
    try:
        names = sorted(os.listdir(folder))
        recovered = 0
        for entry in names:
            if not entry.endswith(".json"):
                continue
            event = _read_intent(folder, entry)
            if event is None or _alive(event.pop("gate_pid", None)):
                continue
            claimed = f"{entry}.{os.getpid()}"
            try:  # two gates recovering at once: one wins
                os.rename(entry, claimed, src_dir_fd=folder, dst_dir_fd=folder)
            except FileNotFoundError:
                continue
            event["state"] = "unfinished"
            event["reason"] = (
                f"{event.get('reason', '')}; the gate stopped before the command ended"
            )
            append_event(path, event)
            clear_intent(os.path.join(folder_path, claimed))
            recovered += 1
    finally:
        os.close(folder)
    return recovered


def _read_intent(folder: int, entry: str) -> dict[str, Any] | None:
    """The event of the intent file `entry` of `folder`; None unless it is a regular file
    (opened without following a link, without blocking on a FIFO) holding one."""
    import json

    try:
        fd = os.open(
            entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder
        )
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) and "event_id" in data else None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
