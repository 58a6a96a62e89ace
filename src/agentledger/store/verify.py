"""Integrity checks: every record against its journal entry, the chain itself, each run's
files against its manifest, and every indexed column against the records.

What is read is taken under the journal lock (a consistent cut: no writer is between its
record and its entry); the hashing happens after, outside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import RecordNotFoundError
from agentledger.identity import sha256_bytes
from agentledger.records.journal import JournalEntry
from agentledger.store.index import LabelRow, RunColumns, ScoreRow
from agentledger.store.storage import (
    MANIFEST_NAME,
    QUARANTINE_AREA,
    Leftover,
    StorageBackend,
)
from agentledger.store.storage.journal import (
    JOURNALED_AREAS,
    KINDS_OF_AREAS,
    Checkpoint,
    JournalRead,
    check_segments,
    claim_of,
)
from agentledger.store.verify_index import check_label_rows, check_score_rows
from agentledger.store.verify_runs import Problem, RunExam, examine_run, examine_runs

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger, Progress

__all__ = ["Problem", "VerifyReport", "verify_ledger"]

_UNACCEPTED = (
    "the journal has no entry for it: announced by a writer that died before journaling it "
    "(`agentledger gc` completes or removes it)"
)
_UNANNOUNCED = (
    "the journal has no entry for it and no writer announced it: added by hand or by another "
    "program; never accepted (`agentledger gc` moves it to quarantine/)"
)
_UNANNOUNCED_RUN = (
    "the journal has no entry for it and no writer announced it: put there by hand or by another "
    "program; never accepted, indexed or reported (`gc` leaves a sealed run's directory where "
    "it is: examine it, then remove runs/{run_id})"
)
_QUARANTINED = (
    "no writer announced it; `gc` moved it aside, never accepted: look at it, then remove "
    "quarantine/{stamp}"
)


@dataclass
class VerifyReport:
    """The outcome of `verify`: what was checked and every problem found."""

    runs_checked: int = 0
    files_checked: int = 0
    bytes_checked: int = 0
    records_checked: int = 0
    journal_entries: int = 0
    head: Checkpoint | None = None
    problems: list[Problem] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class _Cut:
    """What verify reads under the journal lock: the journal's segments, which runs and
    records there are, and the index's rows. Records are write-once, so their bytes are read
    after the lock (a record added since is not in the cut; one changed is what verify finds).
    """

    segments: list[tuple[str, bytes]]
    run_ids: list[str]
    run_files: dict[str, list[str]] | None
    """Each run's files, where the storage lists them all at once (`run_files`)."""
    record_keys: list[str]
    run_rows: dict[str, tuple[RunColumns, dict[str, str]]]
    score_rows: list[ScoreRow]
    label_rows: list[LabelRow]
    positions: dict[str, int | None]
    """The journal position each indexed record holds (`RunIndex.record_positions`)."""
    quarantined: list[str]


def _accepted(entries: Sequence[JournalEntry], report: VerifyReport) -> dict[str, str]:
    """key -> sha256 the journal accepted; a key accepted twice is a problem."""
    keys: dict[str, str] = {}
    for entry in entries:
        for key, digest in entry.keys.items():
            if key in keys:
                report.problems.append(
                    Problem(
                        key,
                        "journal",
                        f"accepted twice (again at entry {entry.seq})",
                        record="journal",
                    )
                )
            keys[key] = digest
    return keys


def _report_run(
    exam: RunExam,
    journaled: str | None,
    intended: Mapping[str, Mapping[str, object]],
    report: VerifyReport,
) -> None:
    """A run's problems, in order: its manifest against the journal, its files, its index row."""
    problems = report.problems
    run_id, digest = exam.run_id, exam.digest
    if digest is None:
        problems.append(
            Problem(
                run_id, "manifest", "MANIFEST.json is missing: the run is not sealed", MANIFEST_NAME
            )
        )
        return
    if journaled is None:
        key = f"runs/{run_id}/{MANIFEST_NAME}"
        if intended.get(key, {}).get(digest) is None:
            detail = _UNANNOUNCED_RUN.format(run_id=run_id)
            problems.append(Problem(run_id, "unannounced", detail, MANIFEST_NAME))
            report.files_checked += exam.files
            report.bytes_checked += exam.size
            return  # never accepted: its files and index row are not the ledger's
        else:
            problems.append(Problem(run_id, "unaccepted", _UNACCEPTED, MANIFEST_NAME))
    elif journaled != digest:
        problems.append(
            Problem(
                run_id,
                "changed",
                "MANIFEST.json is not the one the journal accepted",
                MANIFEST_NAME,
            )
        )
    problems.extend(exam.problems)
    report.files_checked += exam.files
    report.bytes_checked += exam.size
    if exam.indexed_manifest is None:
        problems.append(
            Problem(
                run_id,
                "not-indexed",
                "sealed run missing from the index "
                "(`agentledger gc` or `agentledger reindex` adds it)",
            )
        )
        return
    if exam.indexed_manifest != digest and journaled in (None, digest):
        # (a manifest the journal does not know is reported above, once)
        problems.append(
            Problem(
                run_id,
                "index-stale",
                "MANIFEST.json differs from the one indexed when the run was sealed",
                MANIFEST_NAME,
            )
        )
    problems.extend(exam.mismatches)


def _take_cut(ledger: Ledger) -> _Cut:
    storage = ledger.storage
    with storage.journal.lock():
        files = storage.run_files()
        return _Cut(
            segments=storage.journal.segments(),
            run_ids=sorted(storage.run_ids() if files is None else files),
            run_files=files,
            record_keys=[key for area in sorted(JOURNALED_AREAS) for key in storage.keys(area)],
            quarantined=storage.keys(QUARANTINE_AREA),
            run_rows=ledger.index.run_rows(),
            score_rows=ledger.index.score_rows(),
            label_rows=ledger.index.label_rows(),
            positions=ledger.index.record_positions(),
        )


def _held_records(storage: StorageBackend, keys: Sequence[str]) -> dict[str, dict[str, bytes]]:
    """The bytes of the records at `keys`, by record (a decision: its group); one removed
    since the cut is left out (and reported missing)."""
    records: dict[str, dict[str, bytes]] = {}
    for key in keys:
        parts = key.split("/")
        record = "/".join(parts[:2]) if parts[0] == "decisions" else key
        try:
            records.setdefault(record, {})[key] = storage.get(key)
        except RecordNotFoundError:
            continue
    return records


def _check_checkpoint(read: JournalRead, checkpoint: Checkpoint, report: VerifyReport) -> None:
    at = next((entry for entry in read.entries if entry.seq == checkpoint.count), None)
    where = f"entry {checkpoint.count}"
    if at is None:
        count = read.entries[-1].seq if read.entries else 0
        report.problems.append(
            Problem(
                where,
                "checkpoint",
                f"the journal has {count} entries, fewer than the checkpoint's "
                f"{checkpoint.count}: entries were removed or the journal was rebuilt",
                record="checkpoint",
            )
        )
    elif at.hash != checkpoint.hash:
        report.problems.append(
            Problem(
                where,
                "checkpoint",
                "its hash is not the checkpoint's: the ledger was rewritten since the checkpoint",
                record="checkpoint",
            )
        )


def _check_records(
    records: dict[str, dict[str, bytes]],
    journal: _Journal,
    kinds: dict[str, str],
    report: VerifyReport,
) -> dict[str, dict[str, bytes]]:
    """Scores, labels and decisions against the journal; the intact scores' and labels'
    bytes, by area."""
    accepted, intended = journal.accepted, journal.intended
    intact: dict[str, dict[str, bytes]] = {"scores": {}, "labels": {}}
    held = {key: data for values in records.values() for key, data in values.items()}
    for key in sorted(set(held) | {k for k in accepted if k.split("/", 1)[0] in kinds}):
        area = key.split("/", 1)[0]
        what = kinds[area]
        expected = accepted.get(key)
        data = held.get(key)
        report.records_checked += 1
        if data is None:
            report.problems.append(
                Problem(key, "missing", "accepted by the journal, and gone", record=what)
            )
        elif expected is None:
            if intended.get(key, {}).get(sha256_bytes(data)) is None:
                report.problems.append(Problem(key, "unannounced", _UNANNOUNCED, record=what))
            else:
                report.problems.append(Problem(key, "unaccepted", _UNACCEPTED, record=what))
        elif sha256_bytes(data) != expected:
            report.problems.append(
                Problem(
                    key,
                    "changed",
                    "its bytes are not the ones the journal accepted",
                    record=what,
                )
            )
        elif area in intact:
            intact[area][key] = data
    return intact


@dataclass
class _Journal:
    """The journal as verify reads it: its entries, head, and the keys it accepted."""

    read: JournalRead = field(default_factory=JournalRead)
    accepted: dict[str, str] = field(default_factory=dict)
    intended: dict[str, dict[str, str]] = field(default_factory=dict)
    """key -> {sha256 announced: the writer}, from every intent."""


def _check_journal(
    cut: _Cut, whole: bool, checkpoint: Checkpoint | None, report: VerifyReport
) -> _Journal:
    """The chain and the checkpoint checked; what the journal accepted."""
    read = check_segments(cut.segments)
    report.journal_entries = len(read.entries)
    report.head = read.head
    if whole:
        for key, detail in read.problems:
            report.problems.append(Problem(key, "journal", detail, record="journal"))
        if not read.entries:
            report.problems.append(
                Problem("journal", "journal", "the journal is empty or gone", record="journal")
            )
    if checkpoint is not None:
        _check_checkpoint(read, checkpoint, report)
    accepted = (
        _accepted(read.entries, report)
        if whole
        else {key: digest for entry in read.entries for key, digest in entry.keys.items()}
    )
    intended: dict[str, dict[str, str]] = {}
    for entry in read.entries:
        for key, digest in (entry.intends or {}).items():
            intended.setdefault(key, {}).setdefault(digest, entry.writer or "")
    return _Journal(read, accepted, intended)


def verify_ledger(
    ledger: Ledger,
    run_ids: Sequence[str] | None = None,
    progress: Progress | None = None,
    *,
    checkpoint: Checkpoint | None = None,
    processes: int | None = None,
) -> VerifyReport:
    """Check runs (all, or `run_ids`), records, the journal and the index; with `checkpoint`,
    also that the journal still extends that head.

    Runs are checked on up to `processes` processes (default: every CPU for a large ledger;
    see `agentledger.store.verify_runs`); the answer is the same on any number."""
    report = VerifyReport()
    cut = _take_cut(ledger)
    whole = not run_ids
    targets = cut.run_ids if whole else list(dict.fromkeys(run_ids or ()))
    on_disk = set(cut.run_ids)
    present = [run_id for run_id in targets if run_id in on_disk]
    # The journal, the records, their index rows and the staging area are checked here while
    # helper processes check the runs; the problems are reported in the order they always
    # were: the journal's, the runs', then the rest.
    journal = _Journal()
    others = VerifyReport()

    def check_the_rest() -> None:
        nonlocal journal
        journal = _check_journal(cut, whole, checkpoint, report)
        if whole:
            _check_everything_else(ledger, cut, journal, others)

    exams = examine_runs(
        ledger.storage,
        present,
        cut.run_rows,
        files=cut.run_files,
        processes=processes,
        between=check_the_rest,
        progress=progress if len(present) == len(targets) else None,
    )
    accepted = journal.accepted
    journaled_runs = {key.split("/")[1] for key in accepted if key.startswith("runs/")}
    by_id = {exam.run_id: exam for exam in exams}
    for done, run_id in enumerate(targets, start=1):
        exam = by_id.get(run_id)
        if exam is None:
            _report_gone(run_id, run_id in journaled_runs, run_id in cut.run_rows, report)
        else:
            journaled = accepted.get(f"runs/{run_id}/{MANIFEST_NAME}")
            if exam.lenient and journaled != exam.digest:
                # Bytes the journal did not accept: read by the strict reader after all.
                names = cut.run_files.get(run_id) if cut.run_files is not None else None
                exam = examine_run(
                    ledger.storage, run_id, cut.run_rows.get(run_id), strict=True, names=names
                )
            _report_run(exam, journaled, journal.intended, report)
        report.runs_checked += 1
        if progress is not None and len(present) != len(targets):
            progress(done, len(targets))
    if not whole:
        return report
    for run_id in sorted((journaled_runs | set(cut.run_rows)) - on_disk):
        _report_gone(run_id, run_id in journaled_runs, run_id in cut.run_rows, report)
    report.problems.extend(others.problems)
    report.records_checked += others.records_checked
    report.in_progress.extend(others.in_progress)
    return report


def _check_everything_else(
    ledger: Ledger, cut: _Cut, journal: _Journal, report: VerifyReport
) -> None:
    """Scores, labels and decisions against the journal, their index rows, the staging area."""
    kinds = dict(KINDS_OF_AREAS)
    records = _held_records(ledger.storage, cut.record_keys)
    intact = _check_records(records, journal, kinds, report)
    accepted_at = {key: e.seq for e in journal.read.entries for key in e.keys}
    held = {key for key in records if key.startswith("scores/")}
    for key, detail in check_score_rows(intact["scores"], held, cut.score_rows, accepted_at):
        report.problems.append(Problem(key, _index_kind(detail), detail, record="score"))
    held = {key for key in records if key.startswith("labels/")}
    for key, detail in check_label_rows(intact["labels"], held, cut.label_rows, accepted_at):
        report.problems.append(Problem(key, _index_kind(detail), detail, record="label"))
    _check_positions(cut.positions, accepted_at, set(records), report)
    _check_leftovers(ledger.storage.leftovers(), report)
    _check_quarantine(cut.quarantined, report)
    _check_strangers(journal, intact, report)


UNPOSITIONED = (
    "index column accepted_seq is empty: indexed before the index kept journal positions "
    "(migrations m013 and m015), so which {what} is newest falls back to the time written in "
    "its file, which the journal does not vouch for; `agentledger gc` or `agentledger "
    "reindex` fills it in"
)


def _check_positions(
    positions: Mapping[str, int | None],
    accepted_at: Mapping[str, int],
    held: set[str],
    report: VerifyReport,
) -> None:
    """Every indexed record's journal position (scores, labels, decisions, outcomes alike)
    against the journal: the position alone decides which record of a kind is newest, so an
    edited one, or one never filled in, would change what reports and gates read."""
    for key, seq in sorted(positions.items()):
        area = key.split("/", 1)[0]
        what = KINDS_OF_AREAS.get(area, "record")
        record = key.removesuffix("/decision.json") if area == "decisions" else key
        expected = accepted_at.get(key)
        if expected is None:
            if record not in held and area in ("decisions", "outcomes"):
                # (scores and labels: reported by their rows' check)
                detail = "indexed, but the journal accepted no such record"
                report.problems.append(Problem(key, "index-orphan", detail, record=what))
            continue
        if seq is None:
            detail = UNPOSITIONED.format(what=what)
            report.problems.append(Problem(key, "unpositioned", detail, record=what))
        elif seq != expected:
            detail = f"index column accepted_seq is {seq}, the journal says {expected}"
            report.problems.append(Problem(key, "index-mismatch", detail, record=what))


def _check_strangers(
    journal: _Journal, intact: dict[str, dict[str, bytes]], report: VerifyReport
) -> None:
    """Flag accepted scores and labels whose judge, source or author no writer of this ledger
    announced: accepted with no intent once the journal had intents (an entry appended by
    hand), or under an intent of another writer."""
    first = next((e.seq for e in journal.read.entries if e.kind == "intent"), None)
    if first is None:
        return  # a journal older than intents: nothing to hold its records to
    accepted_at = {key: e.seq for e in journal.read.entries for key in e.keys}
    for area in ("scores", "labels"):
        for key, data in intact[area].items():
            claim = claim_of(key, data)
            writer = journal.intended.get(key, {}).get(sha256_bytes(data))
            if writer is None and accepted_at.get(key, 0) > first:
                detail = "accepted with no intent: no writer of this ledger announced it"
            elif writer is not None and claim is not None and writer != claim:
                detail = f"it names {claim}, but the writer that announced it was {writer}"
            else:
                continue
            report.problems.append(Problem(key, "stranger", detail, record=area[:-1]))


def _check_quarantine(keys: Sequence[str], report: VerifyReport) -> None:
    """Name every record `gc` moved to quarantine: evidence someone planted, until a person
    has looked at it and removed it."""
    for key in keys:
        _area, stamp, original = key.split("/", 2)
        report.problems.append(
            Problem(
                original,
                "quarantined",
                _QUARANTINED.format(stamp=stamp),
                key,
                record="quarantine",
            )
        )


def _report_gone(run_id: str, journaled: bool, indexed: bool, report: VerifyReport) -> None:
    if journaled:
        report.problems.append(
            Problem(run_id, "missing", "accepted by the journal, and its directory is gone")
        )
    if indexed:
        report.problems.append(
            Problem(run_id, "index-orphan", "indexed, but the run directory is gone")
        )
    if not journaled and not indexed:
        report.problems.append(Problem(run_id, "missing", "no such run directory"))


def _index_kind(detail: str) -> str:
    if detail.startswith("indexed, but"):
        return "index-orphan"
    if detail.startswith("missing from the index"):
        return "not-indexed"
    return "index-mismatch"


def _check_leftovers(leftovers: list[Leftover], report: VerifyReport) -> None:
    for leftover in leftovers:
        if leftover.in_progress:
            report.in_progress.append(leftover.name)
        else:
            report.problems.append(
                Problem(
                    leftover.name,
                    "leftover",
                    "staging debris of a writer that died before sealing "
                    "(`agentledger gc` removes it)",
                    leftover.path,
                )
            )
