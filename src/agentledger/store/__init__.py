"""The evidence store: sealed runs on disk, and the index derived from them."""

from agentledger.store.index import IndexedRun, QueryResult, RunFilter, RunIndex
from agentledger.store.ledger import (
    DEFAULT_LEDGER,
    ENV_VAR,
    GcReport,
    Ledger,
    ReindexReport,
    StoredRun,
    default_ledger_path,
)
from agentledger.store.sealing import RunContent
from agentledger.store.sqlite_index import SQLiteIndex
from agentledger.store.storage import LocalStorage, RunStorage
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
    "RunStorage",
    "RunWriter",
    "SQLiteIndex",
    "SealedRun",
    "StoredRun",
    "VerifyReport",
    "default_ledger_path",
    "verify_ledger",
]
