"""Keeping the journal whole: starting it on a ledger older than it, and settling records
that a writer stored but died before journaling (`gc`).

A ledger written before the journal existed gets one on first open: a genesis entry saying
how many records were already there, then one entry for each of them, as they are at that
moment. They are anchored from then on, not before: the journal cannot say what they were
earlier.

A record without an entry was never accepted. `settle_unaccepted` (under the journal lock,
so that no live writer is caught between its record and its entry) completes it when its
bytes check out (a score, label or decision that parses and sits at its own key; a run whose
files match its manifest), and otherwise removes a record or reports a run (sealed run
directories are never removed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.identity import sha256_bytes
from agentledger.records import Manifest, parse_record
from agentledger.store.storage import MANIFEST_NAME, StorageBackend
from agentledger.store.storage.journal import (
    JOURNALED_AREAS,
    PendingEntry,
    record_entry,
    run_entry,
)

if TYPE_CHECKING:
    from agentledger.store.writer import LedgerParts

__all__ = [
    "SettleReport",
    "accept_records",
    "held_records",
    "run_checks_out",
    "settle_unaccepted",
    "start_journal_of_old_ledger",
]

UPGRADE_NOTE = (
    "journal started on a ledger that predates it: the records already there are anchored "
    "from this entry on, not before"
)


def held_records(storage: StorageBackend) -> dict[str, dict[str, bytes]]:
    """Every score, label and decision stored, by record key (a decision: its group), with
    the bytes of each of its keys."""
    records: dict[str, dict[str, bytes]] = {}
    for area in sorted(JOURNALED_AREAS):
        for key in storage.keys(area):
            parts = key.split("/")
            record = "/".join(parts[:2]) if area == "decisions" else key
            records.setdefault(record, {})[key] = storage.get(key)
    return records


def start_journal_of_old_ledger(storage: StorageBackend) -> int | None:
    """Give a ledger without a journal one; how many records it anchored (None: it had one)."""
    if storage.journal.started():
        return None
    with storage.journal.lock():
        pending: list[PendingEntry] = []
        for run_id in sorted(storage.run_ids()):
            try:
                manifest = storage.read(run_id, MANIFEST_NAME)
            except (InputError, OSError):
                continue  # not sealed: verify reports it, as before
            pending.append(run_entry(run_id, sha256_bytes(manifest)))
        for key, values in sorted(held_records(storage).items()):
            pending.append(record_entry(key, values))
        started = storage.journal.start(UPGRADE_NOTE, pending, predating=len(pending))
    return len(pending) if started else None


def run_checks_out(storage: StorageBackend, run_id: str) -> tuple[str | None, str | None]:
    """(sha256 of MANIFEST.json, None) when every file of the run matches its manifest, else
    (None, what is wrong)."""
    scanned = storage.scan_run(run_id, keep=frozenset({MANIFEST_NAME}))
    raw = scanned.kept.get(MANIFEST_NAME)
    if raw is None:
        return None, "it has no MANIFEST.json"
    try:
        manifest = parse_record(Manifest, raw, storage.locate(run_id, MANIFEST_NAME))
    except InputError as exc:
        return None, str(exc)
    if manifest.run_id != run_id:
        return None, f"its manifest names run {manifest.run_id!r}"
    present = {name: value for name, value in scanned.files.items() if name != MANIFEST_NAME}
    listed = {name: (entry.sha256, entry.size) for name, entry in manifest.files.items()}
    if present != listed:
        wrong = sorted(set(present.items()) ^ set(listed.items()))
        return None, f"its files do not match its manifest ({wrong[0][0]}, ...)"
    return sha256_bytes(raw), None


def _record_problem(key: str, values: dict[str, bytes]) -> str | None:
    """What is wrong with a stored record, or None when it is what its key says."""
    from pydantic import BaseModel

    from agentledger.records.decisions import DECISION_JSON, DECISION_MD, Decision
    from agentledger.records.labels import Label
    from agentledger.records.outcomes import Outcome
    from agentledger.records.scores import Score

    area = key.split("/", 1)[0]
    model: type[BaseModel]
    if area == "decisions":
        main = f"{key}/{DECISION_JSON}"
        for name in (DECISION_JSON, DECISION_MD):
            if f"{key}/{name}" not in values:
                # On S3 a group's members land one by one after its seal: a writer killed
                # between them leaves a part, never to be accepted as the whole.
                return f"the decision has no {name}"
        model, raw, expected = Decision, values[main], key.split("/")[1]
    else:
        model = Score if area == "scores" else Outcome if area == "outcomes" else Label
        raw = values[key]
        expected = key.split("/", 1)[1].removesuffix(".json")
    try:
        record = parse_record(model, raw, key)
    except InputError as exc:
        return str(exc)
    if isinstance(record, Score):
        named = f"{record.run_id}/{record.judge_id}"
    elif isinstance(record, Label):
        named = f"{record.run_id}/{record.label_id}"
    elif isinstance(record, Outcome):
        named = f"{record.run_id}/{record.outcome_id}"
    else:
        named = getattr(record, "decision_id", "")
    if named != expected:
        return f"it names {named!r} but is stored as {expected!r}"
    return None


@dataclass
class SettleReport:
    """What `settle_unaccepted` did with records that had no journal entry."""

    completed: list[str] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    refused_runs: list[tuple[str, str]] = field(default_factory=list)


def settle_unaccepted(
    ledger: LedgerParts, on_run: Callable[[str], None] | None = None
) -> SettleReport:
    """Complete or remove what writers that died between record and entry left behind."""
    storage = ledger.storage
    report = SettleReport()
    with storage.journal.lock():
        accepted = storage.journal.accepted()
        pending: list[PendingEntry] = []
        for run_id in sorted(storage.run_ids()):
            if f"runs/{run_id}/{MANIFEST_NAME}" in accepted:
                continue
            digest, problem = run_checks_out(storage, run_id)
            if digest is None:
                report.refused_runs.append((run_id, problem or "unreadable"))
                continue
            pending.append(run_entry(run_id, digest))
            report.completed.append(f"runs/{run_id}")
            if on_run is not None:
                on_run(run_id)
        for key, values in sorted(held_records(storage).items()):
            if all(name in accepted for name in values):
                continue
            problem = _record_problem(key, values)
            if problem is None:
                pending.append(record_entry(key, values))
                report.completed.append(key)
            else:
                storage.remove_unaccepted(key)
                report.removed.append((key, problem))
        storage.journal.append(pending)
    return report


def accept_runs(ledger: LedgerParts, run_ids: Sequence[str]) -> list[str]:
    """Accept the runs of `run_ids` that a writer sealed and died before journaling, when every
    file checks out against its manifest (what `gc` would do for them): the next import of the
    same runs completes the killed one's work. The ids accepted; InputError for a run that
    does not check out (it is left for `gc` and `verify` to report)."""
    storage = ledger.storage
    done: list[str] = []
    with storage.journal.lock():
        accepted = storage.journal.accepted()
        pending: list[PendingEntry] = []
        for run_id in run_ids:
            if f"runs/{run_id}/{MANIFEST_NAME}" in accepted:
                continue
            digest, problem = run_checks_out(storage, run_id)
            if digest is None:
                raise InputError(
                    f"run {run_id} is sealed without a journal entry and does not check out "
                    f"({problem}); `agentledger verify` and `agentledger gc` report it"
                )
            pending.append(run_entry(run_id, digest))
            done.append(run_id)
        if pending:
            storage.journal.append(pending)
    return done


def accept_records(
    ledger: LedgerParts, keys: Sequence[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Settle the records at `keys` that a writer stored and died before journaling (what
    `gc` does for every record, for these alone): each one whose bytes check out gets its
    entry, each one that does not is removed. (keys accepted, (key, why) removed)."""
    storage = ledger.storage
    done: list[str] = []
    removed: list[tuple[str, str]] = []
    with storage.journal.lock():
        accepted = storage.journal.accepted()
        pending: list[PendingEntry] = []
        for key in keys:
            if key in accepted:
                continue
            try:
                values = {key: storage.get(key)}
            except InputError:
                continue  # gone since it was listed
            problem = _record_problem(key, values)
            if problem is None:
                pending.append(record_entry(key, values))
                done.append(key)
            else:
                storage.remove_unaccepted(key)
                removed.append((key, problem))
        storage.journal.append(pending)
    return done, removed
