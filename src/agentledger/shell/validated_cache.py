"""A cache of validated YAML files (policies, command knowledge), keyed by their exact bytes.

Parsing YAML and validating it with pydantic costs more than the rest of a gated command
together, and the same policy is read by every command of a run. So the first read validates
the file and stores the result; later reads of the same bytes load it back with `marshal`.
A changed file has a new key, so it is validated again; an unusable cache is ignored.

The cache lives in ``$AGENTLEDGER_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentledger``, else
``~/.cache/agentledger``, in a directory only its owner can read or write.
"""

from __future__ import annotations

import marshal
import os

from agentledger import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["cache_dir", "load_cached", "parse_yaml", "sha256_factory", "sha256_hex"]

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
    raw = read_source(path)
    key = sha256_hex(f"{kind}\0{FORMAT}\0{__version__}\0".encode() + raw)
    cached = os.path.join(cache_dir(), "gate", f"{kind}-{key}.marshal")
    try:
        with open(cached, "rb") as handle:
            # Written by _store, in a directory only this user can write to.
            return marshal.loads(handle.read())  # noqa: S302
    except (OSError, ValueError, EOFError, TypeError):
        pass
    value = build(raw, path)
    _store(cached, value)
    return value


def _store(cached: str, value: Any) -> None:
    folder = os.path.dirname(cached)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        temporary = f"{cached}.{os.getpid()}.tmp"
        with open(temporary, "wb") as handle:
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
