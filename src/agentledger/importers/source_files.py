"""Which files an import may read: regular files inside the folder it was given.

One rule for every format (run directories, OpenHands trajectories and the files kept beside
them, plain traces, OTLP spans, Inspect logs): a file is read only when its real path lies
inside the folder the import was given (for a file given itself, the folder that holds it).
A link whose target stays inside is followed; a link out of the folder (to a file or a
directory), a link loop, a dangling link, and anything that is not a regular file are refused,
naming the link and its target, before any byte is read. A sealed run can never be removed,
so a secrets file reached through a planted link would be kept, and shipped, for good.

Reads open the real path without following a link at its last step (``O_NOFOLLOW``) and
check the open descriptor (``fstat``, `open_source`): it must be the regular file that was
checked, same device and inode, so a file swapped for a link, another file, a FIFO or a device
between the check and the read is refused too, and a FIFO never blocks the import. A file with
more than one name (a hard link) is refused: its other name may lie outside the folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

from agentledger.errors import ArtifactTooLargeError, InputError, UnsafeNameError
from agentledger.store.sizes import format_size
from agentledger.store.storage.checked import (
    CheckedFile,
    lstat_inside,
    open_source,
    require_plain_file,
)

__all__ = [
    "MAX_JSON_CONTAINERS",
    "check_json_containers",
    "checked_file",
    "checked_real",
    "files_below",
    "given_file",
    "inside",
    "listing_refused",
    "open_regular",
    "read_regular",
    "refused_entry",
    "too_large",
]

_CHUNK = 1 << 20


def _shown(path: str | Path) -> str:
    text = str(path)
    return text if text.isprintable() else repr(text)


def inside(target: str, root: str) -> bool:
    """Whether the real path `target` is `root` or lies below it."""
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def _link_target(path: str | Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def checked_real(
    path: str | Path, root: str, folder: str | Path | None = None, name: str | Path | None = None
) -> str:
    """The real path of `path`, a file or link found in the folder whose real path is `root`
    (`folder`: that folder as the user named it, and `name`: the file as the user would name
    it, for messages).

    Raises UnsafeNameError for a link whose target lies outside the folder, InputError for a
    link loop or a dangling link. Reads nothing."""
    real = os.path.realpath(path)
    link = os.path.islink(path)
    shown_path, path = path, name if name is not None else path
    if not inside(real, root):
        where = _shown(folder) if folder is not None else _shown(root)
        if link:
            raise UnsafeNameError(
                f"{_shown(path)}: symlink points outside {where} (to {_shown(real)}); "
                "refusing to import it"
            )
        raise UnsafeNameError(f"{_shown(path)}: outside {where}; refusing to import it")
    try:
        os.stat(real)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(
                f"{_shown(path)}: symlink loop (it points to {_shown(_link_target(shown_path))}); "
                "refusing to import it"
            ) from None
        if exc.errno == errno.ENOENT and link:
            raise InputError(
                f"{_shown(path)}: broken symlink (to {_shown(_link_target(shown_path))})"
            ) from None
        raise InputError(f"{_shown(path)}: cannot read ({exc.strerror})") from None
    return real


def given_file(path: Path) -> str:
    """The real path of a file named on the command line: it must stay inside the folder that
    holds it (a link to elsewhere is refused as a link found in a folder is)."""
    parent = os.path.realpath(path.parent)
    return checked_real(path, parent, path.parent)


_refused: ContextVar[list[tuple[Path, InputError]] | None] = ContextVar("refused", default=None)


@contextlib.contextmanager
def listing_refused() -> Iterator[list[tuple[Path, InputError]]]:
    """Within this block, a file or directory that finding the runs refuses (a link out of the
    folder, a link loop, a dangling link, no regular file) is added to the list it gives, with
    its error, instead of raised: an import names every bad file at once, and under
    --skip-invalid imports the rest. Nothing refused is ever read either way."""
    listed: list[tuple[Path, InputError]] = []
    token = _refused.set(listed)
    try:
        yield listed
    finally:
        _refused.reset(token)


def refused_entry(path: str | Path, error: InputError) -> None:
    """Raise `error` for the entry `path` found in a folder, or list it (`listing_refused`)."""
    listed = _refused.get()
    if listed is None:
        raise error
    listed.append((Path(path), error))


def files_below(folder: Path, wanted: Callable[[str], bool]) -> list[tuple[Path, str]]:
    """Every file below `folder` whose name `wanted` accepts, with its real path, in a stable
    order. Links to directories are not entered (one inside is met again under its own name;
    one outside the folder is refused); a wanted name that is a link out of the folder, a loop
    or no regular file is refused. Names starting with '.' are skipped."""
    root = os.path.realpath(folder)
    found: list[tuple[Path, str]] = []
    stack = [str(folder)]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            raise InputError(f"{_shown(directory)}: cannot list ({exc.strerror})") from None
        real_dir = os.path.realpath(directory)
        for entry in reversed(entries):
            if entry.name.startswith("."):
                continue
            try:
                real = _wanted_file(entry, (root, real_dir), folder, wanted, stack)
            except InputError as exc:
                refused_entry(entry.path, exc)
                continue
            if real is not None:
                found.append((Path(entry.path), real))
    return sorted(found, key=lambda pair: str(pair[0]))


def _wanted_file(
    entry: os.DirEntry[str],
    roots: tuple[str, str],
    folder: Path,
    wanted: Callable[[str], bool],
    stack: list[str],
) -> str | None:
    """The real path of `entry` if it is a file `wanted` accepts (`roots`: the real paths of
    `folder`, where the search started, and of the directory listed); a directory inside goes
    on `stack`. Raises for one that is refused."""
    root, real_dir = roots
    if entry.is_symlink():
        target = os.path.realpath(entry.path)
        if not inside(target, root) and (wanted(entry.name) or os.path.isdir(target)):
            checked_real(entry.path, root, folder)  # raises, naming link and target
        if not wanted(entry.name) or os.path.isdir(target):
            return None
        real = checked_real(entry.path, root, folder)
    elif entry.is_dir(follow_symlinks=False):
        stack.append(entry.path)
        return None
    elif not wanted(entry.name):
        return None
    else:
        real = os.path.join(real_dir, entry.name)
    try:
        info = lstat_inside(real, root, _shown(entry.path))
    except FileNotFoundError:
        raise InputError(f"{_shown(entry.path)}: removed while being imported") from None
    return checked_file(real, info, entry.path)


def open_regular(real: str, shown: str | Path | None = None) -> BinaryIO:
    """The file at the real path `real`, open for reading, if it is still the regular file that
    was checked (`open_source`: the last step is not followed, the open descriptor must be
    the same device and inode; a path never checked is checked now, with lstat)."""
    fd = open_source(real if isinstance(real, CheckedFile) else _checked(real, shown), shown)
    return os.fdopen(fd, "rb")


def _checked(real: str, shown: str | Path | None) -> CheckedFile:
    """`real` as the file it names now, when no check recorded it (a file named on the command
    line): lstat, refused if not a regular file (or a link), or if it has other names."""
    try:
        info = os.lstat(real)
    except OSError as exc:
        raise InputError(f"{_shown(shown or real)}: cannot read ({exc.strerror})") from None
    return checked_file(real, info, shown)


def checked_file(real: str, info: os.stat_result, shown: str | Path | None = None) -> CheckedFile:
    """`real` (its lstat `info`) as a file an import may read: a regular file with no other
    name (`require_plain_file`)."""
    require_plain_file(info, _shown(shown if shown is not None else real))
    return CheckedFile(real, info.st_dev, info.st_ino)


def read_regular(real: str, limit: int, shown: str | Path | None = None) -> bytes:
    """The bytes of the regular file at the real path `real`, refused when more than `limit`
    (counted as read: a file that grows after its size was taken is refused too)."""
    name = _shown(shown if shown is not None else real)
    with open_regular(real, shown) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise ArtifactTooLargeError(too_large(name, size, limit))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ArtifactTooLargeError(too_large(name, len(data), limit))
    return data


def too_large(name: str | Path, size: int, limit: int) -> str:
    """The message refusing the file `name` of `size` bytes over the import's `limit`."""
    return (
        f"{_shown(name)}: {format_size(size)} is over the {format_size(limit)} artifact size limit "
        "(raise it for this import with --max-artifact-size, or set max_artifact_bytes in "
        "ledger.json)"
    )


MAX_JSON_CONTAINERS = 1_000_000
"""Objects and arrays one imported JSON (an Inspect log's entry, an OTLP file) may hold.
Memory grows with them, not with bytes: 93 MB of ``{},{},...`` (100 kB zipped, under the
artifact limit) is 31 million objects, 3 GB once parsed. A trace of 50,000 steps holds a few
hundred thousand."""


def check_json_containers(raw: bytes, where: str) -> None:
    """Refuse a JSON of more than `MAX_JSON_CONTAINERS` objects and arrays before it is
    parsed: counted by a streaming parser (ijson) that stops there, and only when the bytes
    ``{`` and ``[`` (an upper bound: those in strings count too) are more than that."""
    if raw.count(b"{") + raw.count(b"[") <= MAX_JSON_CONTAINERS:
        return
    import ijson  # type: ignore[import-untyped, unused-ignore]

    count = 0
    try:
        for event, _value in ijson.basic_parse(raw, use_float=True):
            if event in ("start_map", "start_array"):
                count += 1
                if count > MAX_JSON_CONTAINERS:
                    raise InputError(
                        f"{where}: more than {MAX_JSON_CONTAINERS:,} JSON objects and arrays; "
                        "parsed, they would take gigabytes of memory, so the file is refused "
                        "before it is read (split it into smaller files)"
                    )
    except ijson.JSONError:
        return  # malformed: the strict parser says where
