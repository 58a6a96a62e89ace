"""Storage and index backends by URI scheme: ledger.json names a URI, never a class.

``"storage": "local"`` (the ledger directory), ``"memory"`` or ``"memory://<name>"``,
``"s3://<bucket>/<prefix>"`` (an S3-compatible object store, with the ``s3`` extra);
``"index": "sqlite"`` (``index.sqlite`` in the ledger), ``"sqlite:///<path>"``, or
``"postgresql://host/db"`` (``"postgresql"`` alone: the database the environment names; see
`agentledger.store.index.postgres_url`), with the ``postgres`` extra. A package adds
a scheme by registering a factory here, or through the entry-point groups
``agentledger.storage_backends`` and ``agentledger.index_backends`` (looked up only for a scheme
that is not built in, so opening a ledger costs nothing extra).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from agentledger.errors import UnknownBackendError

if TYPE_CHECKING:
    from agentledger.store.index import RunIndex
    from agentledger.store.storage import StorageBackend

__all__ = [
    "INDEX_GROUP",
    "INDEX_NAME",
    "STORAGE_GROUP",
    "IndexFactory",
    "StorageFactory",
    "UnknownBackendError",
    "check_index",
    "make_index",
    "make_storage",
    "register_index",
    "register_storage",
    "split_uri",
]

INDEX_NAME = "index.sqlite"
STORAGE_GROUP = "agentledger.storage_backends"
INDEX_GROUP = "agentledger.index_backends"

StorageFactory = Callable[[Path, str], "StorageBackend"]
"""Makes a storage backend from (the ledger directory, the part of the URI after the scheme)."""
IndexFactory = Callable[[Path, str], "RunIndex"]
"""Makes an index from (the ledger directory, the part of the URI after the scheme)."""

_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)(?::(.*))?$", re.DOTALL)
_Factory = TypeVar("_Factory")


def split_uri(uri: str) -> tuple[str, str]:
    """(scheme, rest) of a backend URI: ``memory://x`` gives (memory, x), ``local`` (local, "")."""
    match = _SCHEME.match(uri) if isinstance(uri, str) else None
    if match is None:
        raise UnknownBackendError(f"{uri!r} is not a backend URI (examples: local, memory://name)")
    rest = match.group(2) or ""
    return match.group(1), rest.removeprefix("//")


def _local(root: Path, rest: str) -> StorageBackend:
    from agentledger.store.storage.local import LocalStorage

    if rest:
        raise UnknownBackendError("local storage is the ledger directory itself; give no path")
    return LocalStorage(root)


def _memory(root: Path, rest: str) -> StorageBackend:
    from agentledger.store.storage.memory import named

    # Without a name, one store per ledger directory: reopening the ledger finds its runs.
    return named(rest or str(root.resolve()))


def _s3(root: Path, rest: str) -> StorageBackend:
    from agentledger.store.storage.s3 import S3Storage, parse_location

    return S3Storage(parse_location(rest))


def _sqlite(root: Path, rest: str) -> RunIndex:
    from agentledger.store.index.sqlite import SQLiteIndex

    return SQLiteIndex(Path(rest) if rest else root / INDEX_NAME)


def _postgresql(root: Path, rest: str) -> RunIndex:
    from agentledger.store.index.postgres_url import connection_url

    url = connection_url(rest)  # refuses a password in ledger.json before any import
    try:
        from agentledger.store.index.postgres import PostgresIndex
    except ImportError as exc:
        raise UnknownBackendError(
            f"the postgresql index needs psycopg ({exc}): pip install 'agentledger[postgres]'"
        ) from None
    return PostgresIndex(url)


def _check_postgresql(rest: str) -> None:
    from agentledger.store.index.postgres_url import check_ledger_url

    if rest:
        check_ledger_url(rest)


_storage: dict[str, StorageFactory] = {"local": _local, "memory": _memory, "s3": _s3}
_index: dict[str, IndexFactory] = {
    "sqlite": _sqlite,
    "postgresql": _postgresql,
    "postgres": _postgresql,
}
# What an index URI must be, checked before a ledger.json naming it is written.
_index_checks: dict[str, Callable[[str], None]] = {
    "postgresql": _check_postgresql,
    "postgres": _check_postgresql,
}


def register_storage(scheme: str, factory: StorageFactory) -> None:
    """Serve storage URIs of `scheme` with `factory`."""
    _storage[split_uri(scheme)[0]] = factory


def register_index(scheme: str, factory: IndexFactory) -> None:
    """Serve index URIs of `scheme` with `factory`."""
    _index[split_uri(scheme)[0]] = factory


def _factory(registry: dict[str, _Factory], group: str, scheme: str, what: str) -> _Factory:
    found = registry.get(scheme)
    if found is None:
        from importlib.metadata import entry_points  # only for a scheme not built in

        for entry in entry_points(group=group, name=scheme):
            found = registry[scheme] = entry.load()
            break
    if found is None:
        known = ", ".join(sorted(registry))
        raise UnknownBackendError(f"unknown {what} backend {scheme!r} (known: {known})")
    return found


def make_storage(uri: str, root: Path) -> StorageBackend:
    """The storage backend `uri` names, for the ledger at `root`."""
    scheme, rest = split_uri(uri)
    return _factory(_storage, STORAGE_GROUP, scheme, "storage")(root, rest)


def check_index(uri: str) -> None:
    """Raise UnknownBackendError unless an index backend serves `uri` and ledger.json may hold
    it (no password in it, for one); nothing is opened."""
    scheme, rest = split_uri(uri)
    _factory(_index, INDEX_GROUP, scheme, "index")
    check = _index_checks.get(scheme)
    if check is not None:
        check(rest)


def make_index(uri: str, root: Path) -> RunIndex:
    """The index backend `uri` names, for the ledger at `root`."""
    scheme, rest = split_uri(uri)
    return _factory(_index, INDEX_GROUP, scheme, "index")(root, rest)
