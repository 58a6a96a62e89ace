"""The local storage backend: a ledger's runs and records as files in its directory."""

from agentledger.store.local.storage import LocalStorage

__all__ = ["LocalStorage"]
