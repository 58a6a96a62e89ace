"""Where a fault test's ledgers live: a local directory, or S3 storage and a PostgreSQL index.

The kill suite builds one base ledger, then copies it for every kill point. A local ledger is
its directory; a ledger on S3 + PostgreSQL is a directory holding only ledger.json, a prefix
of the test bucket and a database of the test server, so a copy is all three: the objects
copied on the server to a new prefix, a new database made from the base's as its template,
and a ledger.json naming both.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentledger.store import Ledger
from pg_server import PostgresServer

__all__ = ["LOCAL", "S3_POSTGRESQL", "LedgerKind", "S3PostgresLedgers"]

LOCAL = "local"
S3_POSTGRESQL = "s3+postgresql"


class LedgerKind:
    """Makes and copies ledgers of one kind of backends: here, local ledgers (local storage,
    a SQLite index), which are their directories."""

    name = LOCAL

    def init(self, root: Path) -> Path:
        """A new, empty ledger at `root`."""
        Ledger.init(root).close()
        return root

    def copy(self, base: Path, target: Path) -> Path:
        """A ledger at `target` holding what the ledger at `base` holds."""
        shutil.copytree(base, target, symlinks=True)
        return target

    def close(self) -> None:
        """Drop what the ledgers made here hold outside their directories."""


@dataclass
class S3PostgresLedgers(LedgerKind):
    """Ledgers on one bucket of the S3 test server (a prefix each) and the PostgreSQL test
    server (a database each)."""

    bucket: str
    server: PostgresServer
    name = S3_POSTGRESQL
    databases: list[str] = field(default_factory=list)
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def _database(self, template: str | None = None) -> str:
        name = f"kill{os.getpid()}_{next(self._numbers)}"
        if template is None:
            self.server.create_database(name)
        else:
            self._create_from(name, template)
        self.databases.append(name)
        return name

    def _create_from(self, name: str, template: str) -> None:
        import psycopg

        for attempt in range(50):
            try:
                with self.server.admin() as db:  # type: ignore[attr-defined]
                    db.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                return
            except psycopg.errors.ObjectInUse:
                # A connection to the template is still closing (or autovacuum visits it).
                if attempt == 49:
                    raise
                time.sleep(0.1)

    def init(self, root: Path) -> Path:
        storage = f"s3://{self.bucket}/{root.name}"
        Ledger.init(root, storage=storage, index=self.server.url(self._database())).close()
        return root

    def copy(self, base: Path, target: Path) -> Path:
        from agentledger.store.storage.s3 import parse_location
        from agentledger.store.storage.s3.client import ObjectStore

        config = json.loads((base / "ledger.json").read_text())
        source_prefix = config["storage"].removeprefix(f"s3://{self.bucket}/")
        store = ObjectStore(parse_location(self.bucket))
        try:
            keys = [key for key, _size in store.list(f"{source_prefix}/")]
            client = store.client
            store.map(
                lambda key: client.copy_object(
                    Bucket=self.bucket,
                    Key=f"{target.name}/{key.removeprefix(source_prefix + '/')}",
                    CopySource={"Bucket": self.bucket, "Key": key},
                ),
                keys,
            )
        finally:
            store.close()
        shutil.copytree(base, target, symlinks=True)
        config["storage"] = f"s3://{self.bucket}/{target.name}"
        config["index"] = self.server.url(self._database(config["index"].rsplit("/", 1)[1]))
        (target / "ledger.json").write_text(json.dumps(config))
        return target

    def close(self) -> None:
        for name in self.databases:
            self.server.drop_database(name)
