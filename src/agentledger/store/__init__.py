"""The evidence store: sealed runs and records behind a storage backend, and the index.

The in-memory backend (tests) is `agentledger.store.storage.memory.MemoryStorage`, imported only by
whoever uses it.
Its names are loaded on first use: `agentledger label` opens a ledger and writes one record,
and does not pay for sealing, reindexing or verifying, which it never does.
"""

from __future__ import annotations

from agentledger.lazy import lazy_exports

TYPE_CHECKING = False

if TYPE_CHECKING:
    from agentledger.store.gc import GcReport
    from agentledger.store.index import IndexedRun, QueryResult, RunFilter, RunIndex
    from agentledger.store.index.sqlite import SQLiteIndex
    from agentledger.store.ledger import (
        DEFAULT_LEDGER,
        ENV_VAR,
        Ledger,
        StoredRun,
        default_ledger_path,
        open_storage,
    )
    from agentledger.store.reindex import ReindexReport
    from agentledger.store.sealing import RunContent
    from agentledger.store.storage import StorageBackend
    from agentledger.store.storage.local import LocalStorage
    from agentledger.store.verify import Problem, VerifyReport, verify_ledger
    from agentledger.store.writer import RunWriter, SealedRun

__all__ = [
    "DEFAULT_LEDGER",
    "ENV_VAR",
    "GcReport",
    "IndexedRun",
    "Ledger",
    "LocalStorage",
    "Problem",
    "QueryResult",
    "ReindexReport",
    "RunContent",
    "RunFilter",
    "RunIndex",
    "RunWriter",
    "SQLiteIndex",
    "SealedRun",
    "StorageBackend",
    "StoredRun",
    "VerifyReport",
    "default_ledger_path",
    "open_storage",
    "verify_ledger",
]

_HOMES = {
    "IndexedRun": "agentledger.store.index",
    "QueryResult": "agentledger.store.index",
    "RunFilter": "agentledger.store.index",
    "RunIndex": "agentledger.store.index",
    "DEFAULT_LEDGER": "agentledger.store.ledger",
    "ENV_VAR": "agentledger.store.ledger",
    "GcReport": "agentledger.store.gc",
    "Ledger": "agentledger.store.ledger",
    "ReindexReport": "agentledger.store.reindex",
    "StoredRun": "agentledger.store.ledger",
    "default_ledger_path": "agentledger.store.ledger",
    "open_storage": "agentledger.store.ledger",
    "LocalStorage": "agentledger.store.storage.local",
    "RunContent": "agentledger.store.sealing",
    "SQLiteIndex": "agentledger.store.index.sqlite",
    "StorageBackend": "agentledger.store.storage",
    "Problem": "agentledger.store.verify",
    "VerifyReport": "agentledger.store.verify",
    "verify_ledger": "agentledger.store.verify",
    "RunWriter": "agentledger.store.writer",
    "SealedRun": "agentledger.store.writer",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
