"""A cache of validated YAML files (policies, command knowledge), keyed by their exact bytes.

Parsing YAML and validating it with pydantic costs more than the rest of a gated command
together, and the same policy is read by every command of a run. So the first read validates
the file and stores the result; later reads of the same bytes load it back with `marshal`.
A changed file has a new key, so it is validated again; an unusable cache is ignored.

The cache lives in ``$AGENTLEDGER_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentledger``, else
``~/.cache/agentledger``, in a directory only its owner can read or write. The agent that
starts a gate sets those variables, so the cache is trusted only as the kernel describes it
(`trusted_dir`): a directory (not a link) this user owns and alone may write, on a path no
one else can rename or replace a part of, and each entry a regular file this user owns that
no one else can read or write; anything else is ignored (the file is validated again from
its source, and nothing is stored), and a cache in a sandbox scratch directory is refused
(exit 2).
"""

from __future__ import annotations

import marshal
import os

from agentledger import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "cache_dir",
    "load_cached",
    "open_private",
    "parse_yaml",
    "sha256_factory",
    "sha256_hex",
    "trusted_dir",
]

FORMAT = 1
"""Bumped when the shape of what is cached changes."""


_factory: list[Callable[..., Any]] = []


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of `data`, without importing hashlib (and OpenSSL) when avoidable."""
    return str(sha256_factory()(data).hexdigest())


def sha256_factory() -> Callable[..., Any]:
    """`sha256` of CPython's own module (``_sha256``, ``_sha2`` from 3.12), else hashlib's;
    looked for once (a failed import searches every directory on sys.path)."""
    if not _factory:
        import importlib
        import sys

        module = "_sha2" if sys.version_info >= (3, 12) else "_sha256"
        try:
            _factory.append(importlib.import_module(module).sha256)
        except (ImportError, AttributeError):
            import hashlib

            _factory.append(hashlib.sha256)
    return _factory[0]


def cache_dir() -> str:
    """Where validated files are cached (created on first write)."""
    explicit = os.environ.get("AGENTLEDGER_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "agentledger")


_trusted: dict[str, str | None] = {}


def trusted_dir(folder: str) -> str | None:
    """Why `folder` is no private cache directory of this user (None when it is, made
    when missing): a directory, not a symbolic link, owned by this user and writable by no
    one else (its entries are each checked too), outside any sandbox scratch (refused:
    InputError), and each directory above it writable by no one else but root or this user,
    or sticky (``/tmp``) with the part below it owned by this user or root."""
    if folder in _trusted:
        return _trusted[folder]
    from agentledger.shell.trusted_files import refuse_in_scratch

    refuse_in_scratch(folder, "cache directory")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        why = _why_not_private(os.path.abspath(folder))
    except OSError as exc:
        why = f"cannot be used: {exc.strerror or exc}"
    _trusted[folder] = why
    return why


def _why_not_private(folder: str) -> str | None:
    import stat

    uid = os.geteuid()
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a directory (a link?)"
    if st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o022:
        return f"{folder} is not this user's alone (uid {st.st_uid}, mode {st.st_mode & 0o7777:o})"
    child, parent = folder, os.path.dirname(folder)
    while True:
        above = os.stat(parent)
        below = os.lstat(child)
        if above.st_uid not in (uid, 0) and above.st_mode & 0o200:
            return f"{parent} is owned by uid {above.st_uid}"
        if above.st_mode & 0o022:
            sticky = above.st_mode & stat.S_ISVTX
            if not sticky or below.st_uid not in (uid, 0):
                return f"{parent} is writable by others (mode {above.st_mode & 0o7777:o})"
        if parent == child or parent == os.sep:
            return None
        child, parent = parent, os.path.dirname(parent)


def open_private(path: str) -> int | None:
    """A descriptor of `path` open for reading when it is a regular file this user owns
    that no one else may read or write (not following a final link); None otherwise."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
        return fd
    os.close(fd)
    return None


def read_source(path: str) -> bytes:
    """The bytes of `path`; a RecordError naming it when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        from agentledger.errors import RecordError

        raise RecordError(path, f"cannot be read: {exc.strerror or exc}") from None


def load_cached(path: str, kind: str, build: Callable[[bytes, str], Any]) -> Any:
    """The validated content of the file at `path`: from the cache, or `build(raw, path)`.

    `build` parses and validates (raising RecordError for a bad file) and returns plain data
    (dicts, lists, strings, numbers, booleans, None) that marshal can store.
    """
    from agentledger.shell.trusted_files import refuse_in_scratch

    refuse_in_scratch(path, f"{kind.split('-', 1)[0]} file")
    raw = read_source(path)
    key = sha256_hex(f"{kind}\0{FORMAT}\0{__version__}\0".encode() + raw)
    folder = os.path.join(cache_dir(), "gate")
    if trusted_dir(cache_dir()) is not None or trusted_dir(folder) is not None:
        return build(raw, path)  # a cache others could have written is not read
    cached = os.path.join(folder, f"{kind}-{key}.marshal")
    fd = open_private(cached)
    if fd is not None:
        try:
            with os.fdopen(fd, "rb") as handle:
                # This user's own file, in a directory only this user can write to.
                return marshal.loads(handle.read())  # noqa: S302
        except (OSError, ValueError, EOFError, TypeError):
            pass
    value = build(raw, path)
    _store(cached, value)
    return value


def _store(cached: str, value: Any) -> None:
    temporary = f"{cached}.{os.getpid()}.tmp"
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(temporary, flags, 0o600), "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(marshal.dumps(value))
        os.replace(temporary, cached)
    except (OSError, ValueError):
        # A read-only home or a full disk only costs speed.
        pass


def parse_yaml(raw: bytes, source: str) -> Any:
    """Parse YAML `raw`; a RecordError naming `source` and the line when it is malformed.

    Only called when a file is not in the cache, so PyYAML is imported here, not at start-up.
    """
    import yaml

    from agentledger.errors import RecordError

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(source, f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line = mark.line + 1 if mark is not None else None
        raise RecordError(source, f"malformed YAML: {problem}", line=line) from None
