"""Keeping the journal whole: starting it on a ledger older than it, and settling records
that a writer stored but died before journaling (`gc`).

A ledger written before the journal existed gets one on first open: a genesis entry saying
how many records were already there, then one entry for each of them, as they are at that
moment. They are anchored from then on, not before: the journal cannot say what they were
earlier.

A record without an entry was never accepted. `settle_unaccepted` (under the journal lock,
so that no live writer is caught between its record and its entry) completes it only when a
writer announced it (an intent in the journal names its key with the sha256 its bytes have)
and its bytes check out (a score, label or decision that parses and sits at its own key; a
run whose files match its manifest). An announced record that does not check out is removed
(its writer died mid-way). A record no writer announced was put there by hand or by another
program: it is moved to quarantine (`StorageBackend.quarantine`), where `verify` names it,
and never accepted; such a run is reported and left (sealed run directories are never
removed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.identity import sha256_bytes
from agentledger.records import Manifest, Record, parse_record
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
    from agentledger.records.decisions import DECISION_JSON, DECISION_MD, Decision
    from agentledger.records.labels import Label
    from agentledger.records.outcomes import Outcome
    from agentledger.records.scores import Score
    from agentledger.records.splits import Split

    area = key.split("/", 1)[0]
    model: type[Record]
    if area == "decisions":
        main = f"{key}/{DECISION_JSON}"
        for name in (DECISION_JSON, DECISION_MD):
            if f"{key}/{name}" not in values:
                # On S3 a group's members land one by one after its seal: a writer killed
                # between them leaves a part, never to be accepted as the whole.
                return f"the decision has no {name}"
        model, raw, expected = Decision, values[main], key.split("/")[1]
    else:
        models: dict[str, type[Record]] = {"scores": Score, "outcomes": Outcome, "splits": Split}
        model = models.get(area, Label)
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
    elif isinstance(record, Split):
        named = record.split_id
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
    quarantined: list[tuple[str, str]] = field(default_factory=list)
    """(key, where it was moved): records no writer announced."""


UNANNOUNCED = "no writer of this ledger announced it (no intent in the journal)"


def unannounced(storage: StorageBackend, values: dict[str, bytes]) -> str | None:
    """Why the record of `values` (each key's bytes) was not announced by a writer, or None
    when an intent named every key with the very bytes it holds."""
    for key, data in values.items():
        if storage.journal.announced(key, sha256_bytes(data)) is None:
            known = storage.journal.intended().get(key)
            if known:
                return "its bytes are not the ones its writer announced"
            return UNANNOUNCED
    return None


def _settle_record(
    storage: StorageBackend, key: str, values: dict[str, bytes], report: SettleReport
) -> PendingEntry | None:
    """The entry completing an announced, intact record; else it is quarantined (never
    announced) or removed (announced, and its writer died mid-way)."""
    why = unannounced(storage, values)
    if why is not None:
        report.quarantined.append((key, storage.quarantine(key)))
        return None
    problem = _record_problem(key, values)
    if problem is None:
        report.completed.append(key)
        return record_entry(key, values)
    storage.remove_unaccepted(key)
    report.removed.append((key, problem))
    return None


def _run_unannounced(storage: StorageBackend, run_id: str, digest: str) -> str | None:
    key = f"runs/{run_id}/{MANIFEST_NAME}"
    if storage.journal.announced(key, digest) is None:
        return f"not accepted: {UNANNOUNCED}"
    return None


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
            if digest is not None:
                problem = _run_unannounced(storage, run_id, digest)
            if digest is None or problem is not None:
                report.refused_runs.append((run_id, problem or "unreadable"))
                continue
            pending.append(run_entry(run_id, digest))
            report.completed.append(f"runs/{run_id}")
            if on_run is not None:
                on_run(run_id)
        for key, values in sorted(held_records(storage).items()):
            if all(name in accepted for name in values):
                continue
            entry = _settle_record(storage, key, values, report)
            if entry is not None:
                pending.append(entry)
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
            if digest is not None:
                problem = _run_unannounced(storage, run_id, digest)
            if digest is None or problem is not None:
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
    `gc` does for every record, for these alone): each one announced and intact gets its
    entry, each announced one that does not check out is removed, and each one no writer
    announced is quarantined. (keys accepted, (key, why) removed or quarantined)."""
    storage = ledger.storage
    report = SettleReport()
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
            entry = _settle_record(storage, key, values, report)
            if entry is not None:
                pending.append(entry)
        storage.journal.append(pending)
    moved = [(key, f"{UNANNOUNCED}; moved to {place}") for key, place in report.quarantined]
    return report.completed, report.removed + moved
