"""A sealed run's files checked as they are read: each against the run's manifest (its
size and sha256), and the manifest against its journal entry. What every reader of a run's
evidence does (judges, reports, exports, the viewer, `show`), so that bytes changed since
sealing are never judged or shown as the run's evidence (TamperedError, exit 3); `verify`
checks the same for every file at once, and reports instead.
"""

from __future__ import annotations

from agentledger.errors import TamperedError
from agentledger.identity import sha256_bytes
from agentledger.records import FileEntry
from agentledger.store.storage import MANIFEST_NAME, StorageBackend

__all__ = ["check_manifest_accepted", "check_run_journaled", "check_sealed"]


def check_sealed(
    storage: StorageBackend, run_id: str, name: str, data: bytes, entry: FileEntry
) -> None:
    """TamperedError (exit 3) when `data`, read as artifact `name` of run `run_id`, is not the
    file its manifest `entry` sealed (size first, then sha256): changed bytes never pass for
    the run's evidence, whether judged, shown or printed."""
    if len(data) == entry.size:
        found = sha256_bytes(data)
        if found == entry.sha256:
            return
    else:
        found = sha256_bytes(data)
    raise TamperedError(
        f"{name} of run {run_id} does not match its manifest ({found[:19]}..., "
        f"{len(data)} bytes; sealed as {entry.sha256[:19]}..., {entry.size} bytes): it was "
        f"changed after the run was sealed, so it is not read as the run's evidence; "
        f"`agentledger verify {run_id}` lists every problem, and the file is at "
        f"{storage.locate(run_id, name)}"
    )


def check_manifest_accepted(storage: StorageBackend, run_id: str, manifest_sha256: str) -> None:
    """TamperedError when run `run_id`'s MANIFEST.json (of sha256 `manifest_sha256`) is not
    the one the journal accepted, or the journal accepted none (a run put beside it): the
    manifest is what every artifact is checked against, so it is checked first. A ledger
    without a journal (an old one read-only, never opened to write) has nothing to hold it to."""
    key = f"runs/{run_id}/{MANIFEST_NAME}"
    if storage.journal.accepted(catch_up=False).get(key) == manifest_sha256:
        # Accepted in what this handle has read or appended: a run's manifest is written
        # once, so no newer segment is asked for (one request a run on an object store).
        return
    accepted = storage.journal.accepted()
    if not accepted:
        return
    expected = accepted.get(key)
    if expected == manifest_sha256:
        return
    why = (
        "the journal never accepted this run (put there by hand or by another program, or its "
        "writer died before journaling it)"
        if expected is None
        else f"it is not the one the journal accepted ({expected[:19]}...)"
    )
    raise TamperedError(
        f"{MANIFEST_NAME} of run {run_id} ({manifest_sha256[:19]}...): {why}, so the run is not "
        f"read as evidence; `agentledger verify {run_id}` lists every problem"
    )


def check_run_journaled(storage: StorageBackend, run_id: str, where: object) -> None:
    """TamperedError when run `run_id`, found in the storage but not in the index, was never
    journaled: a run folder put beside the sealed ones (copied from another ledger), of which
    nothing may be said or written. A ledger without a journal has nothing to hold it to."""
    accepted = storage.journal.accepted()
    if accepted and f"runs/{run_id}/{MANIFEST_NAME}" not in accepted:
        raise TamperedError(
            f"run {run_id!r} is in {where} but the journal never accepted it (put there by "
            "hand or by another program); `agentledger verify` lists it"
        )
