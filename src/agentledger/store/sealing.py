"""Sealing many runs known in advance (an import): batches, each flushed once, in a pipeline.

`RunWriter` collects one run as it happens. An import knows every run before it writes one, so
`seal_runs` writes them batch by batch into one staging directory per batch, and hands each
written batch to a second thread that flushes it to disk, renames its runs into place and
indexes them, while the next batch is being written. The guarantees are those of
`Ledger.seal_batch`: every file, MANIFEST.json last, is on disk before its run becomes visible
with one rename, and a run is indexed only once it is visible.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentledger.errors import InputError, RunExistsError
from agentledger.identity import sha256_bytes
from agentledger.records import Manifest, RunMetadata, RunSummary, parse_record, utc_now
from agentledger.records.limits import check_storable
from agentledger.store.crashpoints import crash_point
from agentledger.store.index import IndexEntry
from agentledger.store.interrupts import deferred_interrupt
from agentledger.store.storage import MANIFEST_NAME, StagedRun, StorageBackend
from agentledger.store.storage.journal import run_entry, run_intent
from agentledger.store.writer import METADATA, SUMMARY, SealedRun, record_bytes

if TYPE_CHECKING:
    from agentledger.store.writer import LedgerParts

__all__ = ["RunContent", "seal_runs"]

# (name, bytes) or (name, path of a file to copy)
Artifact = tuple[str, bytes | str | os.PathLike[str]]


@dataclass(frozen=True)
class RunContent:
    """A whole run, known before it is written: its records and its artifacts.

    Each artifact is ``(name, bytes)`` or ``(name, path)`` of a file copied (and hashed) as it
    is read. They are stored as given: shell_audit.jsonl is not parsed again, so the caller
    checks it and gives the summary (an import's planning does both).
    """

    metadata: RunMetadata
    summary: RunSummary
    artifacts: Sequence[Artifact]
    checked: bool = False
    """True when the caller has already passed both records through `check_storable` (an
    import's planning), so that they are not walked twice."""

    @property
    def run_id(self) -> str:
        return self.metadata.run_id


_Written = list[tuple[StagedRun, IndexEntry]]


def _write_batch(storage: StorageBackend, batch: Sequence[RunContent], limit: int) -> _Written:
    """Stage every run of the batch, MANIFEST.json last in each; nothing is visible yet."""
    for content in batch:
        if not content.checked:
            check_storable(content.metadata, f"run {content.run_id}: {METADATA}")
            check_storable(content.summary, f"run {content.run_id}: {SUMMARY}")
    staged = storage.stage_batch([content.run_id for content in batch], limit)
    written: _Written = []
    try:
        for content, run in zip(batch, staged, strict=True):
            for name, _data in content.artifacts:
                if name in (METADATA, SUMMARY):
                    raise InputError(f"{name} is written by the ledger from the run's records")
            run.write_all(
                [
                    *content.artifacts,
                    (METADATA, record_bytes(content.metadata)),
                    (SUMMARY, record_bytes(content.summary)),
                ]
            )
            manifest = Manifest(
                run_id=content.run_id, sealed_at=utc_now(), files=dict(sorted(run.entries.items()))
            )
            manifest_bytes = record_bytes(manifest)
            crash_point("run: artifacts staged")
            storage.write_manifest(run, manifest_bytes)
            crash_point("run: manifest staged")
            entry = IndexEntry(
                content.metadata, content.summary, manifest, sha256_bytes(manifest_bytes)
            )
            written.append((run, entry))
    except BaseException:
        for run in staged:
            storage.discard(run)
        raise
    return written


def _publish_batch(ledger: LedgerParts, written: _Written) -> list[SealedRun]:
    """Flush, rename into place and index a written batch (in the publishing thread)."""
    storage = ledger.storage
    # Record, then entry (the batch's as one segment), then index, under the journal lock.
    with storage.journal.lock():
        try:
            storage.journal.announce(
                [
                    run_intent(
                        [(entry.metadata.run_id, entry.manifest_sha256) for _run, entry in written]
                    )
                ]
            )
            existing = set(storage.publish_written([run for run, _entry in written]))
        except BaseException:
            for run, _entry in written:
                storage.discard(run)  # those already published are left alone
            raise
        landed = [entry for run, entry in written if run.run_id not in existing]
        crash_point("after-record")
        storage.journal.append(
            [run_entry(entry.metadata.run_id, entry.manifest_sha256) for entry in landed]
        )
        ledger.index.add(landed)
    ours = {run.run_id: entry for run, entry in written}
    for run_id in sorted(existing):
        if not _same_files(storage, run_id, ours[run_id].manifest):
            raise RunExistsError(
                f"run {run_id} already exists in {ledger.root} with other content; "
                "sealed runs are never replaced"
            )
    # A run another writer sealed meanwhile, with the very same files (two imports of the same
    # runs at once): it landed once, and this writer has nothing to add; not an error.
    return [
        SealedRun(
            run_id=entry.metadata.run_id,
            manifest=entry.manifest,
            manifest_sha256=entry.manifest_sha256,
            location=storage.locate(entry.metadata.run_id),
            already=entry.metadata.run_id in existing,
        )
        for _run, entry in written
    ]


def _same_files(storage: StorageBackend, run_id: str, manifest: Manifest) -> bool:
    """Whether the sealed run `run_id` holds exactly the files of `manifest` (names, sizes and
    hashes: the time of sealing aside)."""
    try:
        stored = parse_record(Manifest, storage.read(run_id, MANIFEST_NAME), run_id)
    except (InputError, OSError):
        return False
    return stored.files == manifest.files


def _batches(runs: Iterable[RunContent], size: int) -> Iterator[list[RunContent]]:
    batch: list[RunContent] = []
    for run in runs:
        batch.append(run)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def seal_runs(
    ledger: LedgerParts,
    runs: Iterable[RunContent],
    *,
    batch_size: int,
    max_artifact_bytes: int,
    progress: Callable[[int], None] | None = None,
) -> list[SealedRun]:
    """Seal `runs` in batches; see `Ledger.seal_runs`."""
    if batch_size < 1:
        raise InputError("the batch size must be at least 1")
    ledger.storage.journal.check_writable()  # a ledger found rolled back: nothing is staged
    sealed: list[SealedRun] = []
    with ThreadPoolExecutor(1, thread_name_prefix="agentledger-publish") as publisher:
        pending: Future[list[SealedRun]] | None = None
        try:
            for batch in _batches(runs, batch_size):
                # Ctrl-C lands between batches: a batch is staged and handed to the publisher
                # whole, so an interrupt never leaves a staging directory behind.
                with deferred_interrupt():
                    written = _write_batch(ledger.storage, batch, max_artifact_bytes)
                    if pending is not None:
                        try:
                            sealed += pending.result()
                        except BaseException:
                            for run, _entry in written:
                                ledger.storage.discard(run)
                            raise
                        finally:
                            pending = None
                        if progress:
                            progress(len(sealed))
                    pending = publisher.submit(_publish_batch, ledger, written)
            if pending is not None:
                try:
                    sealed += pending.result()
                finally:
                    pending = None
                if progress:
                    progress(len(sealed))
        finally:
            if pending is not None:
                # Failing while the previous batch is being published: let it land (it is
                # complete), but report the failure that stopped us rather than its outcome.
                with contextlib.suppress(BaseException):
                    pending.result()
    return sealed
