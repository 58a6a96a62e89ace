"""Leases kept by conditional writes: the journal's lock, and a writer's sign of life.

**The journal lock** is one object, ``journal/.lock`` under the ledger's prefix, taken and let
go by compare-and-swap on its ETag: a writer reads it; when it is free (or its holder stopped
renewing it for longer than the lease), it writes itself in with ``If-Match: <the ETag it
read>`` (``If-None-Match: *`` when there is no object yet). Of writers racing for it, exactly
one write lands; the others get 412 (or 409) and read again. The holder renews its lease every
third of the lease time, with ``If-Match`` on its own last ETag, and lets go the same way. A
holder that was killed stops renewing, and after the lease time (server clock against
server clock: its Last-Modified against the Date of the answer) the next writer takes the
lock over, again by compare-and-swap, so two writers never both take over from it.

The lock keeps writers on many machines from interleaving a record with another's journal
entry (see `agentledger.store.storage.journal`), and lets `verify` and `gc` see a cut with no writer
in the middle. The chain itself does not rest on it: each journal segment is created with
``If-None-Match: *`` at the position it claims, so even a holder whose lease was taken over
(a process paused for longer than the lease) cannot fork the chain; it retries after it.

**A writer's presence** (``.writers/<token>``) is renewed the same way while the process
stages runs; staging debris and claims of a writer whose presence went stale are what `gc`
removes.

`AGENTLEDGER_S3_LEASE_SECONDS` sets the lease time (default 30 s); tests shorten it.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from agentledger.errors import AgentLedgerError, InputError, StorageAccessError
from agentledger.identity import json_text_field
from agentledger.store.storage.s3.client import ObjectStore

__all__ = ["LEASE_ENV", "JournalLease", "Presence", "lease_seconds"]

LEASE_ENV = "AGENTLEDGER_S3_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS = 30.0
_MAX_POLL = 0.25
"""The longest wait between two reads of a held lock. Waiters poll, so each one costs the store
requests: at 50 ms, eight waiters kept a store that answers one request at a time too busy to
serve the holder; at 250 ms a freed lock is still taken within a fraction of a second."""


def lease_seconds() -> float:
    """The lease time: `AGENTLEDGER_S3_LEASE_SECONDS`, else 30 s."""
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return DEFAULT_LEASE_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 1.0 <= seconds <= 3600.0:
        raise InputError(f"{LEASE_ENV}={raw!r}: expected a number of seconds from 1 to 3600")
    return seconds


def _body(holder: str | None) -> bytes:
    state: dict[str, object] = {"holder": holder}
    if holder is not None:
        state.update(host=socket.gethostname(), pid=os.getpid())
    return json.dumps(state, sort_keys=True).encode()


class JournalLease:
    """The journal lock of one ledger on S3: an exclusive lease on ``journal/.lock``."""

    KEY = "journal/.lock"

    def __init__(self, store: ObjectStore, seconds: float) -> None:
        self.store = store
        self.seconds = seconds
        self._local = threading.Lock()  # threads of this process queue here, not on S3
        self.freed: str | None = None
        """The ETag of the free lock as this process last let go of it: when no one took
        it since, one PUT with ``If-Match`` on it takes it again, without reading it first."""

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock: wait for it, keep renewing it, let go of it on the way out."""
        with self._local:
            token = secrets.token_hex(12)
            etag = self._check_conditions(token, self._take(token))
            held = _Held(self, token, etag)
            held.start()
            try:
                yield
            finally:
                self.freed = held.stop()

    def _check_conditions(self, token: str, etag: str) -> str:
        """Check, with the lock just taken, that the store still honours conditional writes:
        creating the lock object again with ``If-None-Match: *`` must be refused. A store that
        stopped honouring them (a proxy or gateway put in front of it, a changed setting) would
        let two writers both create one journal segment, forking the chain; every writer then
        stops here, before it writes anything, and says why."""
        if self.store.put(self.KEY, _body(token), if_none_match=True) is None:
            return etag
        self.store.put(self.KEY, _body(None))  # let go, so that the next writer finds out too
        raise StorageAccessError(
            f"{self.store.location.uri}: the S3 store no longer honours conditional writes "
            "(a PUT with If-None-Match: * replaced an object that exists), so writers could "
            "overwrite each other's journal entries; nothing was written. Stop every writer and "
            "fix the store (or whatever stands in front of it) before writing again"
        )

    def _take(self, token: str) -> str:
        if self.freed is not None:
            etag = self.store.put(self.KEY, _body(token), if_match=self.freed)
            self.freed = None
            if etag:
                return etag
        delay = 0.005
        while True:
            current = self.store.get(self.KEY)
            if current is None:
                etag = self.store.put(self.KEY, _body(token), if_none_match=True)
            elif (
                # A lock that names no holder is not ours: anyone may take it.
                json_text_field(current.data, "holder") is None
                or current.info.age_seconds > self.seconds
            ):
                etag = self.store.put(self.KEY, _body(token), if_match=current.info.etag)
            else:
                etag = None
            if etag:
                return etag
            time.sleep(delay * (0.5 + random.random()))  # noqa: S311 - jitter, not secrecy
            delay = min(delay * 2, _MAX_POLL)


class _Held:
    """A lease held: renewed on a thread until let go."""

    def __init__(self, lease: JournalLease, token: str, etag: str) -> None:
        self.lease = lease
        self.token = token
        self.etag = etag
        self.lost = False
        self._stop = threading.Event()
        self._mutex = threading.Lock()
        self._thread = threading.Thread(
            target=self._renew, name="agentledger-journal-lease", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.lease.seconds / 3):
            with self._mutex:
                if self._stop.is_set():
                    return
                etag = self.lease.store.put(JournalLease.KEY, _body(self.token), if_match=self.etag)
                if etag is None:  # taken over: this process was paused past the lease
                    self.lost = True
                    return
                self.etag = etag

    def stop(self) -> str | None:
        """Let go of the lock; the ETag of the freed lock (None if it was taken over)."""
        freed = None
        with self._mutex:
            self._stop.set()
            if not self.lost:
                # If-Match: never frees a lock that another writer has since taken over.
                freed = self.lease.store.put(JournalLease.KEY, _body(None), if_match=self.etag)
        self._thread.join()
        return freed


class Presence:
    """This process's sign of life as a writer: ``.writers/<token>``, renewed while it has
    runs staged (from the first `token` until `close`)."""

    AREA = ".writers/"

    def __init__(self, store: ObjectStore, seconds: float) -> None:
        self.store = store
        self.seconds = seconds
        self._pid = -1
        self._token = ""
        self._mutex = threading.Lock()
        self._stop = threading.Event()

    def token(self) -> str:
        """This process's writer token, its presence written (and renewed from now on)."""
        if self._pid == os.getpid():
            return self._token
        with self._mutex:
            if self._pid != os.getpid():
                token = f"{secrets.token_hex(8)}"
                self.store.put(self.AREA + token, _body(token))
                self._token, self._pid = token, os.getpid()
                self._stop = threading.Event()
                threading.Thread(target=self._renew, args=(token, self._stop), daemon=True).start()
        return self._token

    def _renew(self, token: str, stop: threading.Event) -> None:
        while not stop.wait(self.seconds / 3):
            try:
                self.store.put(self.AREA + token, _body(token))
            except Exception:  # noqa: S112 - a missed renewal is retried next tick
                continue

    def alive(self, token: str) -> bool:
        """Whether the writer `token` renewed its presence within the lease time."""
        if self._pid == os.getpid() and token == self._token:
            return True
        info = self.store.head(self.AREA + token)
        return info is not None and info.age_seconds <= self.seconds

    def close(self) -> None:
        """Stop renewing and remove the presence (the writer has nothing staged any more)."""
        with self._mutex:
            if self._pid != os.getpid():
                return
            self._stop.set()
            token, self._pid = self._token, -1
        with contextlib.suppress(AgentLedgerError):  # a stale presence is only tidied later
            self.store.delete([self.AREA + token])
