"""The evidence store: sealed runs and records behind a storage backend, and the index.

The in-memory backend (tests) is `agentledger.store.memory.MemoryStorage`, imported only by
whoever uses it.
"""

from agentledger.store.index import IndexedRun, QueryResult, RunFilter, RunIndex
from agentledger.store.index.sqlite import SQLiteIndex
from agentledger.store.ledger import (
    DEFAULT_LEDGER,
    ENV_VAR,
    GcReport,
    Ledger,
    ReindexReport,
    StoredRun,
    default_ledger_path,
    open_storage,
)
from agentledger.store.local import LocalStorage
from agentledger.store.sealing import RunContent
from agentledger.store.storage import StorageBackend
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
