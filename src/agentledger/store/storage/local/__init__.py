"""The local storage backend: a ledger's runs and records as files in its directory."""

from agentledger.store.storage.local.storage import LocalStorage

__all__ = ["LocalStorage"]
