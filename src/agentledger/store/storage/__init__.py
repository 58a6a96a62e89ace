"""Storage: where a ledger's runs and records live, behind one seam, with their journal.

`base.BareStorage` is the interface a backend implements (runs staged then sealed, records
created once); `journal.Journal` is the hash chain built on it; `StorageBackend` is the one
wrapper every backend gets, which puts each score, label, decision and outcome created through
`create` / `create_group` into the journal, under the journal lock. Backends: `local` (a
directory, the default), `s3` (an object store), `memory` (tests, and proof that the seam
isolates); `agentledger.store.backends` picks one by the URI in ledger.json, and
``tests/test_storage_contract.py`` holds every backend to the same behaviour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentledger.store.storage.base import (
    MANIFEST_NAME,
    NOT_A_FILE,
    QUARANTINE_AREA,
    RECORD_AREAS,
    REPLACEABLE_AREAS,
    BareStorage,
    HashedBytes,
    Leftover,
    ScannedRun,
    StagedRun,
    check_key,
    check_prefix,
)

if TYPE_CHECKING:
    from agentledger.store.storage.journal import Journal

__all__ = [
    "MANIFEST_NAME",
    "NOT_A_FILE",
    "QUARANTINE_AREA",
    "RECORD_AREAS",
    "REPLACEABLE_AREAS",
    "BareStorage",
    "HashedBytes",
    "Leftover",
    "ScannedRun",
    "StagedRun",
    "StorageBackend",
    "check_key",
    "check_prefix",
]


class StorageBackend(BareStorage):
    """A storage backend with its journal: what every backend subclasses. A record created in
    a journaled area gets its journal entry, under the journal lock (see `journal`)."""

    @property
    def journal(self) -> Journal:
        """The journal of this storage: every score, label and decision created through
        `create` / `create_group`, and every run the ledger seals, gets an entry in it."""
        journal: Journal | None = self.__dict__.get("_journal")
        if journal is None:
            from agentledger.store.storage.journal import Journal

            journal = self.__dict__["_journal"] = Journal(self)
        return journal

    def _create_record(self, key: str, data: bytes, writer: str | None) -> None:
        from agentledger.store.storage.journal import JOURNALED_AREAS

        if key.split("/", 1)[0] in JOURNALED_AREAS:
            self.journal.create_record(key, data, writer)
        else:
            self._create(key, data)

    def _create_record_group(
        self, prefix: str, values: dict[str, bytes], writer: str | None
    ) -> None:
        from agentledger.store.storage.journal import JOURNALED_AREAS

        if prefix.split("/", 1)[0] in JOURNALED_AREAS:
            self.journal.create_group(prefix, values, writer)
        else:
            self._create_group(prefix, values)
