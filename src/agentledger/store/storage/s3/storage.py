"""The S3 storage backend: a ledger's runs and records as objects under ``s3://bucket/prefix``.

The layout is the local one, as keys under the prefix (``runs/<run_id>/<file>``,
``scores/<run_id>/<judge_id>.json``, ``journal/<12 digits>.jsonl``, ...), plus the backend's
own objects, whose names start with ``.`` so that no record key can name them: the staging
areas, the claims of runs being published, the writers' presences, the journal lock, the seal
of a group.

- **Records** are created with ``PUT If-None-Match: *``: of writers on any number of machines,
  exactly one creates a key; the others get 412 (409 when they race) and RecordExistsError.
  What the conditional PUT cannot see (a value at a parent of the key, a sealed group it
  would join, a key under it) is looked for first, in one listing under the key's first
  parent. Nothing is created under a journal key, so a segment needs no such look.
- **Runs** are written to ``.staging/<writer>/<area>/<run_id>/`` and published in four steps:
  a claim on the run id (``.claims/<run_id>``, ``If-None-Match: *``), so that one writer alone
  copies into ``runs/<run_id>/``; the artifacts copied there on the server; MANIFEST.json
  written last (``If-None-Match: *``); the staging objects and the claim deleted. A run is
  visible (`has_run`, `run_ids`) only once its MANIFEST.json is there, so a writer killed
  at any step leaves nothing visible: staging objects, and perhaps a claim with the files it
  copied, which `leftovers` reports once the writer's presence went stale and `gc` removes.
  A writer meeting a claim whose writer still looks alive waits for it (up to a lease).
- **Groups** (a decision's two files) are claimed by their seal (``<prefix>/.group``,
  ``If-None-Match: *``), then their members are written. A writer killed between the two
  leaves a seal alone, which `leftovers` reports once it is older than the lease and `gc`
  removes; one killed between members leaves part of a record the journal never accepted,
  which `gc` removes whole.
- **The journal** is appended through the same seam (segments created with
  ``If-None-Match: *``), under the lease of `agentledger.store.storage.s3.lease`, after the
  head this handle saw last without reading ahead first (`appends_at_cached_head`): a head that
  moved on fails the create, and the journal then reads forward and retries.

`ObjectStore.requests` counts the requests sent, by operation (bench/scale.py reports them per
run; tests/test_s3_requests.py pins them).
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress

from agentledger.errors import (
    InputError,
    RecordExistsError,
    RecordNotFoundError,
    RunNotFoundError,
    StorageAccessError,
    UnsafeNameError,
    WriteRefusedError,
)
from agentledger.identity import check_artifact_name, check_run_id, json_text_field, sha256_bytes
from agentledger.store.crashpoints import crash_point
from agentledger.store.storage import (
    MANIFEST_NAME,
    ScannedRun,
    StagedRun,
)
from agentledger.store.storage.s3.client import ObjectStore, S3Location
from agentledger.store.storage.s3.lease import JournalLease, Presence, lease_seconds
from agentledger.store.storage.s3.leftovers import (
    CLAIMS,
    GROUP_SEAL,
    STAGING,
    S3Leftovers,
)
from agentledger.store.storage.s3.staging import S3StagedRun

__all__ = ["S3Storage"]

RUNS = "runs/"
_JOURNAL = "journal/"
_SEGMENT = re.compile(r"^journal/[0-9]{12}\.jsonl$")
_PREFETCH = 64
_CLASH_LISTING = 64  # keys `_clash` lists under a key's first parent before looking them up
_WIDE_AREAS = frozenset({"cache"})  # areas whose first parents hold many keys (a shard)
_EXISTING_PER_PAGE = 8  # keys asked about per page `_existing` may list instead of a HEAD each


def _hidden(key: str) -> bool:
    """Whether `key` is one of the backend's own objects (a segment starting with '.')."""
    return any(segment.startswith(".") for segment in key.split("/"))


def _common_prefix(first: str, last: str) -> str:
    """The longest string both start with."""
    for position, (one, other) in enumerate(zip(first, last, strict=False)):
        if one != other:
            return first[:position]
    return first[: min(len(first), len(last))]


def _check_journal_key(key: str, where: str) -> None:
    """UnsafeNameError unless `key` is a journal key of two segments (``journal/<name>``):
    nothing is created under a journal key, so a segment needs no look for what is under it."""
    if key.count("/") != 1:
        raise UnsafeNameError(
            f"{where}: the journal holds segments (journal/<name>) only, never keys under one"
        )


class S3Storage(S3Leftovers):
    """Runs and records as objects in an S3-compatible bucket, under a prefix."""

    shared_between_processes = True
    appends_at_cached_head = True  # a read ahead is a request; a failed create is one too

    def __init__(self, location: S3Location, *, lease: float | None = None) -> None:
        self.location = location
        self.uri = location.uri
        self.store = ObjectStore(location)
        seconds = lease_seconds() if lease is None else lease
        self.lease = JournalLease(self.store, seconds)
        self.presence = Presence(self.store, seconds)
        self._areas = itertools.count(1)
        self._open: dict[int, S3StagedRun] = {}  # this process's runs staged, not yet done
        self._open_mutex = threading.Lock()
        self._prefetched: dict[str, bytes] = {}  # journal segments read ahead, taken once
        self._prefetch_mutex = threading.Lock()

    def initialize(self) -> None:
        """Check that the bucket exists, the credentials may use it, and the store honours
        conditional writes (a store that ignored them would let writers overwrite records)."""
        self.store.check_bucket()
        probe = f"{Presence.AREA}probe-{secrets.token_hex(8)}"
        try:
            first = self.store.put(probe, b"1", if_none_match=True)
            again = self.store.put(probe, b"2", if_none_match=True)
            stale = self.store.put(probe, b"3", if_match='"0123456789abcdef0123456789abcdef"')
        finally:
            self.store.delete([probe])
        if first is None or again is not None or stale is not None:
            raise StorageAccessError(
                f"{self.uri}: this S3 endpoint does not honour conditional writes "
                "(If-None-Match / If-Match), so records could be overwritten; use a store "
                "that does (AWS S3, MinIO, R2, Ceph RGW of 2024 or later; docs/scale.md)"
            )

    def close(self) -> None:
        """Stop this process's presence if it has nothing staged, then close the client."""
        with self._open_mutex:
            idle = not self._open
        if idle:
            self.presence.close()
        self.store.close()

    # -- records ---------------------------------------------------------------------------

    def _clash(self, key: str) -> str | None:
        """A stored key that `key` cannot sit beside: a value at one of its parents, the seal
        of a group it would join, or anything under it. Checked before the conditional PUT
        (which refuses only the key itself); two writers racing to create a key and one under
        it are not both refused, a race the ledger's own keys (one shape per area) never run.

        One listing finds them all: each starts with the key's first parent
        (``<area>/<name>``), which sorts first, and everything under that parent sorts
        together after it (past any sibling whose name extends it with a character before
        ``/``), so the listing stops at the first key beyond. Where that parent holds many
        keys (the cache's shards), or the listing does not end within `_CLASH_LISTING` keys,
        each of them is looked up instead.
        """
        parts = key.split("/")
        if len(parts) == 2:  # no parent: only what is under the key
            found = next(self.store.list(key + "/", limit=1), None)
            return found[0] if found else None
        if parts[0] not in _WIDE_AREAS:
            top = f"{parts[0]}/{parts[1]}"
            inside = top + "/"
            parents = {"/".join(parts[:end]) for end in range(3, len(parts))}
            seals = {f"{'/'.join(parts[:end])}/{GROUP_SEAL}" for end in range(2, len(parts))}
            below = key + "/"
            seen = 0
            for stored, _size in self.store.list(top, limit=_CLASH_LISTING):
                seen += 1
                if stored == top or stored in parents or stored in seals:
                    return stored
                if stored.startswith(below):
                    return stored
                if stored > inside and not stored.startswith(inside):
                    return None  # past everything under the first parent
            if seen < _CLASH_LISTING:
                return None  # the listing ended: nothing more under the first parent
        return self._clash_by_lookups(parts)

    def _clash_by_lookups(self, parts: list[str]) -> str | None:
        """`_clash`, by a HEAD of each parent and its seal and a listing under the key."""
        looks: list[tuple[bool, str]] = []
        for end in range(2, len(parts)):
            parent = "/".join(parts[:end])
            looks += [(False, parent), (False, f"{parent}/{GROUP_SEAL}")]
        looks.append((True, "/".join(parts) + "/"))

        def look(item: tuple[bool, str]) -> str | None:
            below, target = item
            if below:
                found = next(self.store.list(target, limit=1), None)
                return found[0] if found else None
            return target if self.store.head(target) is not None else None

        return next((found for found in self.store.map(look, looks) if found), None)

    def _create(self, key: str, data: bytes) -> None:
        if key.startswith(_JOURNAL):
            # A journal key has no parent, and nothing is ever created under one (refused
            # here), so nothing can clash with it: the conditional PUT alone decides.
            _check_journal_key(key, self._describe(key))
            clash = None
        else:
            clash = self._clash(key)
        if clash is not None:
            raise RecordExistsError(
                f"{self._describe(key)} cannot be created: {self._describe(clash)} is stored "
                "there (a key is a value or holds values, never both; a group is sealed)"
            )
        if self.store.put(key, data, if_none_match=True) is None:
            if key.startswith(_JOURNAL):
                # A segment's bytes are unique to its writer (timestamps, chained hashes): the
                # same bytes there mean our own PUT landed and its answer was lost and retried.
                stored = self.store.get(key)
                if stored is not None and stored.data == data:
                    return
                if stored is not None and _SEGMENT.match(key):
                    # Another writer's segment: the journal reads it next, to catch up.
                    with self._prefetch_mutex:
                        self._prefetched[key] = stored.data
            raise RecordExistsError(
                f"{self._describe(key)} already exists; records are written once"
            )

    def _create_group(self, prefix: str, values: dict[str, bytes]) -> None:
        if prefix.startswith(_JOURNAL):  # its members would be keys under a journal key
            _check_journal_key(f"{prefix}/{GROUP_SEAL}", self._describe(prefix))
        clash = self._clash(prefix)
        if clash is not None:
            raise RecordExistsError(
                f"{self._describe(prefix)} already exists ({self._describe(clash)}); "
                "records are written once"
            )
        # The seal first, as the claim: of writers racing for the group one writes it, and
        # nothing is created under a sealed group afterwards.
        seal = json.dumps({"members": sorted(values)}).encode()
        if self.store.put(f"{prefix}/{GROUP_SEAL}", seal, if_none_match=True) is None:
            raise RecordExistsError(f"{self._describe(prefix)} already exists; written once")
        crash_point("group: sealed")
        self.store.map(self._put_member, [(f"{prefix}/{n}", data) for n, data in values.items()])

    def _put_member(self, member: tuple[str, bytes]) -> None:
        self.store.put(*member)
        crash_point("group: member written")

    def _get(self, key: str) -> bytes:
        segment = _SEGMENT.match(key) is not None
        if segment:
            with self._prefetch_mutex:
                prefetched = self._prefetched.pop(key, None)
            if prefetched is not None:
                return prefetched
        stored = self.store.get(key)
        if stored is None:
            raise RecordNotFoundError(f"{self._describe(key)} does not exist")
        if segment:
            self._prefetch_segments(key)
        return stored.data

    def _prefetch_segments(self, after: str) -> None:
        """Fetch the journal segments after `after` at once: the journal reads them one by
        one, in order, and one round trip each would make a long catch-up slow. Segments
        are written once, so what is fetched stays true."""
        with self._prefetch_mutex:
            for key in [key for key in self._prefetched if key <= after]:
                del self._prefetched[key]  # behind the reader (a segment it never asked for)
            if self._prefetched:
                return
        listed = self.store.list(_JOURNAL, limit=_PREFETCH, after=after)
        names = [key for key, _size in listed if _SEGMENT.match(key)]
        found = self.store.map(self.store.get, names)
        with self._prefetch_mutex:
            self._prefetched.update(
                (key, stored.data)
                for key, stored in zip(names, found, strict=True)
                if stored is not None
            )

    def _exists(self, key: str) -> bool:
        return self.store.head(key) is not None

    def _existing(self, keys: list[str]) -> set[str]:
        """Which of `keys` exist, from one listing in key order under their common prefix
        (S3's listings are as consistent as its HEADs): a page of up to 1,000 keys per
        request instead of a HEAD per key. The listing reads at most one page for every
        `_EXISTING_PER_PAGE` keys asked about; the keys it did not reach are looked up."""
        wanted = sorted(set(keys))
        if len(wanted) < _EXISTING_PER_PAGE:
            return {key for key in wanted if self._exists(key)}
        common = _common_prefix(wanted[0], wanted[-1])  # sorted: everyone's
        budget = self.store.page_size * (len(wanted) // _EXISTING_PER_PAGE)
        asked = set(wanted)
        found: set[str] = set()
        listed = 0
        last = ""
        for key, _size in self.store.list(common, limit=budget):
            listed += 1
            last = key
            if key in asked:
                found.add(key)
        if listed < budget:
            return found  # the listing ended: every key asked about was in its range
        rest = [key for key in wanted if key > last]
        looked = self.store.map(lambda key: key if self._exists(key) else None, rest)
        return found | {key for key in looked if key is not None}

    def _keys(self, prefix: str) -> list[str]:
        return sorted(key for key, _size in self.store.list(prefix + "/") if not _hidden(key))

    def _replace(self, key: str, data: bytes) -> None:
        self.store.put(key, data)  # one PUT: readers see the old object or the new one

    def _describe(self, key: str) -> str:
        return self.location.describe(key)

    @contextmanager
    def journal_lock(self) -> Iterator[None]:
        """The lease on ``journal/.lock``, taken and kept by compare-and-swap on its ETag.

        With credentials that may only read (the lease's PUT refused), a reader (`verify`,
        reports) goes on without it, as a reader of a read-only local ledger does; a writer
        then stops at its first write (its intent), saying why, nothing written."""
        with ExitStack() as stack:
            with suppress(WriteRefusedError):
                stack.enter_context(self.lease.hold())
            yield

    def _remove(self, key: str) -> None:
        self.store.delete([key, *(below for below, _size in self.store.list(key + "/"))])

    # -- runs: staged, then sealed ---------------------------------------------------------

    def _open_runs(self, run_ids: Sequence[str], max_artifact_bytes: int) -> list[StagedRun]:
        """Staged runs in one new staging area of this writer, which renews its presence
        while any of its runs is open (and removes it when the last one is done)."""
        with self._open_mutex:
            writer = self.presence.token()
            area = f"{STAGING}{writer}/{next(self._areas)}-{secrets.token_hex(4)}/"
            runs = [S3StagedRun(run_id, max_artifact_bytes, self.store, area) for run_id in run_ids]
            self._open.update((id(run), run) for run in runs)
        return list(runs)

    def stage(self, run_id: str, max_artifact_bytes: int) -> StagedRun:
        check_run_id(run_id)
        return self._open_runs([run_id], max_artifact_bytes)[0]

    def stage_batch(self, run_ids: Sequence[str], max_artifact_bytes: int) -> list[StagedRun]:
        """Several runs in one staging area of this writer."""
        for run_id in run_ids:
            check_run_id(run_id)
        if len(set(run_ids)) != len(run_ids):
            raise InputError("a batch names the same run twice")
        if not run_ids:
            return []
        return self._open_runs(run_ids, max_artifact_bytes)

    @staticmethod
    def _mine(staged: StagedRun) -> S3StagedRun:
        if not isinstance(staged, S3StagedRun):
            raise TypeError("this staged run belongs to another storage backend")
        if staged.closed:
            raise InputError(f"run {staged.run_id} was already published or discarded")
        return staged

    def write_manifest(self, staged: StagedRun, manifest: bytes) -> None:
        """Keep a staged run's MANIFEST.json: it is written last, by `publish_written`."""
        self._mine(staged).manifest = bytes(manifest)

    def publish(self, staged: Sequence[StagedRun], manifests: Sequence[bytes]) -> list[str]:
        for run, manifest in zip(staged, manifests, strict=True):
            self.write_manifest(run, manifest)
        return self.publish_written(staged)

    def publish_written(self, staged: Sequence[StagedRun]) -> list[str]:
        """Claim, copy into ``runs/``, write each MANIFEST.json last, then tidy up."""
        runs = [self._mine(run) for run in staged]
        for run in runs:
            if run.manifest is None:
                raise InputError(f"run {run.run_id} has no manifest yet")
        writer = self.presence.token()
        claimed = self.store.map(lambda run: self._claim(run.run_id, writer), runs)
        mine = [run for run, won in zip(runs, claimed, strict=True) if won]
        existing = [run.run_id for run, won in zip(runs, claimed, strict=True) if not won]
        crash_point("run: claimed")
        try:
            writes = [
                (
                    run.held.get(name),
                    run.staging_key(name),
                    f"{RUNS}{run.run_id}/{name}",
                    entry.size,
                )
                for run in mine
                for name, entry in run.entries.items()
            ]
            self.store.map(self._land, writes)
            crash_point("run: artifacts copied into runs/")
            sealed = self.store.map(self._write_manifest, mine)
        except Exception:
            # Let go of the claims of runs that did not land, and of what they copied.
            for run in mine:
                self._clear_unsealed(run.run_id)
            self.store.delete(CLAIMS + run.run_id for run in mine)
            raise
        existing += [run.run_id for run, landed in zip(mine, sealed, strict=True) if not landed]
        crash_point("run: manifests written, staging not tidied")
        self._tidy(runs, [CLAIMS + run.run_id for run in mine])
        return existing

    def _land(self, write: tuple[bytes | None, str, str, int]) -> None:
        """Put one artifact under ``runs/``: from memory, or copied from its staged object."""
        held, staged, target, size = write
        if held is not None:
            self.store.put(target, held)
        else:
            self.store.copy(staged, target, size)
        crash_point("run: artifact landed in runs/")

    def _write_manifest(self, run: S3StagedRun) -> bool:
        assert run.manifest is not None
        key = f"{RUNS}{run.run_id}/{MANIFEST_NAME}"
        landed = self.store.put(key, run.manifest, if_none_match=True) is not None
        crash_point("run: manifest written")
        return landed

    def _tidy(self, runs: Sequence[S3StagedRun], extra: Sequence[str] = ()) -> None:
        keys = [run.staging_key(name) for run in runs for name in run.staged_names]
        for run in runs:
            run.closed = True
            run.held.clear()
        try:
            if keys or extra:
                self.store.delete([*keys, *extra])
        finally:
            with self._open_mutex:
                for run in runs:
                    self._open.pop(id(run), None)
                if not self._open:
                    self.presence.close()

    def _claim(self, run_id: str, writer: str) -> bool:
        """Claim `run_id` for publishing; False when it is sealed or another live writer is
        publishing it. A dead writer's claim is taken over (by compare-and-swap) and what it
        had copied is removed first.

        A claim whose writer looks alive is waited on, for up to a lease: a publisher holds
        the journal lock, so the holder of a claim met under it has most likely just been
        killed, its presence renewed after the lock's last renewal and not yet stale. Taken
        for a live writer's, the run would be reported sealed ("already exists") when it is
        not."""
        key = CLAIMS + run_id
        body = json.dumps({"writer": writer, "nonce": secrets.token_hex(8)}).encode()
        attempts = 0
        waiting_until: float | None = None
        while attempts < 5:
            etag = self.store.put(key, body, if_none_match=True)
            if etag is None:
                current = self.store.get(key)
                if current is None:
                    attempts += 1
                    continue  # let go meanwhile: try again
                holder = json_text_field(current.data, "writer")
                if holder is not None and self.presence.alive(holder):
                    now = time.monotonic()
                    if waiting_until is None:
                        waiting_until = now + self.presence.seconds + 2  # + the clock's second
                    if self.has_run(run_id) or now >= waiting_until:
                        return False
                    time.sleep(min(1.0, self.presence.seconds / 10))
                    continue
                if self.has_run(run_id):
                    return False
                etag = self.store.put(key, body, if_match=current.info.etag)
                if etag is None:
                    attempts += 1
                    continue  # another writer took it over first
                self._clear_unsealed(run_id)
            if self.has_run(run_id):  # sealed before its claim was deleted: never copy over it
                self.store.delete([key])
                return False
            return True
        return False

    def _clear_unsealed(self, run_id: str) -> None:
        """Remove what a dead publisher copied into ``runs/<run_id>/`` (never a sealed run)."""
        if self.has_run(run_id):
            return
        self.store.delete(key for key, _size in self.store.list(f"{RUNS}{run_id}/"))

    def discard(self, staged: StagedRun) -> None:
        if isinstance(staged, S3StagedRun) and staged.closed:
            return  # published (or discarded) already: nothing of it is staged
        self._tidy([self._mine(staged)])

    def has_run(self, run_id: str) -> bool:
        return self.store.head(f"{RUNS}{check_run_id(run_id)}/{MANIFEST_NAME}") is not None

    def run_ids(self) -> Iterator[str]:
        for key, _size in self.store.list(RUNS):
            parts = key.split("/")
            if len(parts) == 3 and parts[2] == MANIFEST_NAME:
                yield parts[1]

    def read(self, run_id: str, name: str) -> bytes:
        check_run_id(run_id)
        stored = self.store.get(f"{RUNS}{run_id}/{check_artifact_name(name)}")
        if stored is not None:
            return stored.data
        if not self.has_run(run_id):
            raise RunNotFoundError(f"no run {run_id!r} in {self.uri}")
        raise FileNotFoundError(f"{self.locate(run_id, name)} does not exist")

    def _objects(self, run_id: str) -> list[str]:
        prefix = f"{RUNS}{check_run_id(run_id)}/"
        names = [key[len(prefix) :] for key, _size in self.store.list(prefix)]
        if not names:
            raise RunNotFoundError(f"no run {run_id!r} in {self.uri}")
        return names

    def run_files(self) -> dict[str, list[str]]:
        """Every sealed run's files, from one listing of ``runs/`` (paged), which `run_ids`
        reads anyway: `verify` scans each run without listing it again."""
        files: dict[str, list[str]] = {}
        for key, _size in self.store.list(RUNS):
            parts = key.split("/", 2)
            if len(parts) == 3:
                files.setdefault(parts[1], []).append(parts[2])
        return {run_id: names for run_id, names in files.items() if MANIFEST_NAME in names}

    def scan_run(
        self, run_id: str, keep: frozenset[str] = frozenset(), names: Sequence[str] | None = None
    ) -> ScannedRun:
        names = self._objects(run_id) if names is None else list(names)

        def fetch(name: str) -> tuple[str, bytes | None]:
            stored = self.store.get(f"{RUNS}{run_id}/{name}")
            return name, None if stored is None else stored.data

        scanned = ScannedRun(files={}, kept={})
        for name, data in self.store.map(fetch, names):
            if data is None:
                continue  # deleted since the listing: reported as missing
            scanned.files[name] = (sha256_bytes(data), len(data))
            if name in keep:
                scanned.kept[name] = data
        return scanned

    def list_files(self, run_id: str) -> list[str]:
        return sorted(self._objects(run_id))

    def locate(self, run_id: str, name: str | None = None) -> str:
        path = f"{RUNS}{check_run_id(run_id)}"
        return self.location.describe(f"{path}/{name}" if name else path)
