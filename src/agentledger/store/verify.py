"""Integrity checks: every record against its journal entry, the chain itself, each run's
files against its manifest, and every indexed column against the records.

What is read is taken under the journal lock (a consistent cut: no writer is between its
record and its entry); the hashing happens after, outside it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.identity import sha256_bytes
from agentledger.records import Manifest, RunMetadata, RunSummary, parse_record
from agentledger.records.journal import JournalEntry
from agentledger.store.index import LabelRow, RunColumns, ScoreRow
from agentledger.store.journal import Checkpoint, JournalRead
from agentledger.store.journal_upkeep import held_records
from agentledger.store.storage import MANIFEST_NAME, NOT_A_FILE, Leftover
from agentledger.store.verify_index import check_label_rows, check_run_row, check_score_rows
from agentledger.store.writer import METADATA, SUMMARY

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger, Progress

__all__ = ["Problem", "VerifyReport", "verify_ledger"]

_KEEP = frozenset({MANIFEST_NAME, METADATA, SUMMARY})
_UNACCEPTED = (
    "the journal has no entry for it: written by a writer that died before journaling it "
    "(`agentledger gc` completes or removes it), or added by hand"
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a record, the journal or the index.

    `record` is what it is about (run, score, label, decision, journal, checkpoint, index);
    `run_id` the run id, the record's key, or the journal segment. `kind` is one of:
    changed, missing, extra, manifest, metadata, unaccepted, journal, checkpoint,
    not-indexed, index-stale, index-mismatch, index-orphan, leftover.
    """

    run_id: str
    kind: str
    detail: str
    file: str | None = None
    record: str = "run"


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
    """What verify reads under the journal lock."""

    journal: JournalRead
    run_ids: list[str]
    records: dict[str, dict[str, bytes]]
    run_rows: dict[str, tuple[RunColumns, dict[str, str]]]
    score_rows: list[ScoreRow]
    label_rows: list[LabelRow]


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


def _check_files(
    ledger: Ledger,
    run_id: str,
    raw: bytes,
    present: dict[str, tuple[str, int]],
    report: VerifyReport,
) -> Manifest | None:
    problems = report.problems
    try:
        manifest = parse_record(Manifest, raw, ledger.storage.locate(run_id, MANIFEST_NAME))
    except InputError as exc:
        problems.append(Problem(run_id, "manifest", f"broken manifest: {exc}", MANIFEST_NAME))
        return None
    if manifest.run_id != run_id:
        problems.append(
            Problem(run_id, "manifest", f"manifest names run {manifest.run_id!r}", MANIFEST_NAME)
        )
    for name, expected in manifest.files.items():
        actual = present.get(name)
        if actual is None:
            problems.append(Problem(run_id, "missing", "file listed in the manifest is gone", name))
            continue
        digest, size = actual
        report.files_checked += 1
        report.bytes_checked += size
        if digest != expected.sha256 or size != expected.size:
            what = (
                "not a regular file (a symlink?)"
                if digest == NOT_A_FILE
                else (
                    f"content changed: sha256 {digest[7:19]}... size {size}, "
                    f"manifest says {expected.sha256[7:19]}... size {expected.size}"
                )
            )
            problems.append(Problem(run_id, "changed", what, name))
    for name in sorted(set(present) - set(manifest.files) - {MANIFEST_NAME}):
        problems.append(Problem(run_id, "extra", "file not in the manifest was added", name))
    return manifest


def _verify_run(
    ledger: Ledger,
    run_id: str,
    accepted: dict[str, str],
    cut: _Cut,
    report: VerifyReport,
) -> None:
    problems = report.problems
    scanned = ledger.storage.scan_run(run_id, keep=_KEEP)
    raw = scanned.kept.get(MANIFEST_NAME)
    if raw is None:
        problems.append(
            Problem(
                run_id, "manifest", "MANIFEST.json is missing: the run is not sealed", MANIFEST_NAME
            )
        )
        return
    digest = sha256_bytes(raw)
    journaled = accepted.get(f"runs/{run_id}/{MANIFEST_NAME}")
    if journaled is None:
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
    manifest = _check_files(ledger, run_id, raw, scanned.files, report)
    metadata_raw = scanned.kept.get(METADATA)
    metadata = None
    if manifest is not None and metadata_raw is not None and METADATA in manifest.files:
        try:
            named = json.loads(metadata_raw).get("run_id")
        except (ValueError, AttributeError):
            named = None  # unreadable: its hash cannot have matched, reported as changed
        if named is not None and named != run_id:
            problems.append(Problem(run_id, "metadata", f"names run {named!r}", METADATA))
        try:
            metadata = RunMetadata.model_validate_json(metadata_raw)
        except ValueError:
            metadata = None
    row = cut.run_rows.get(run_id)
    if row is None:
        problems.append(
            Problem(
                run_id,
                "not-indexed",
                "sealed run missing from the index "
                "(`agentledger gc` or `agentledger reindex` adds it)",
            )
        )
        return
    if row[0].manifest_sha256 != digest and journaled in (None, digest):
        # (a manifest the journal does not know is reported above, once)
        problems.append(
            Problem(
                run_id,
                "index-stale",
                "MANIFEST.json differs from the one indexed when the run was sealed",
                MANIFEST_NAME,
            )
        )
    if manifest is None or metadata is None:
        return  # what the index should hold cannot be known; the files are reported above
    summary = None
    summary_raw = scanned.kept.get(SUMMARY)
    if summary_raw is not None and SUMMARY in manifest.files:
        try:
            summary = RunSummary.model_validate_json(summary_raw)
        except ValueError:
            return
    problems.extend(
        Problem(run_id, "index-mismatch", detail, record="run")
        for detail in check_run_row(metadata, summary, manifest, digest, row)
    )


def _take_cut(ledger: Ledger) -> _Cut:
    storage = ledger.storage
    with storage.journal.lock():
        return _Cut(
            journal=storage.journal.read(),
            run_ids=sorted(storage.run_ids()),
            records=held_records(storage),
            run_rows=ledger.index.run_rows(),
            score_rows=ledger.index.score_rows(),
            label_rows=ledger.index.label_rows(),
        )


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
    cut: _Cut, accepted: dict[str, str], kinds: dict[str, str], report: VerifyReport
) -> dict[str, dict[str, bytes]]:
    """Scores, labels and decisions against the journal; the intact scores' and labels'
    bytes, by area."""
    intact: dict[str, dict[str, bytes]] = {"scores": {}, "labels": {}}
    held = {key: data for values in cut.records.values() for key, data in values.items()}
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


def verify_ledger(
    ledger: Ledger,
    run_ids: Sequence[str] | None = None,
    progress: Progress | None = None,
    *,
    checkpoint: Checkpoint | None = None,
) -> VerifyReport:
    """Check runs (all, or `run_ids`), records, the journal and the index; with `checkpoint`,
    also that the journal still extends that head."""
    report = VerifyReport()
    cut = _take_cut(ledger)
    read = cut.journal
    report.journal_entries = len(read.entries)
    report.head = read.head
    whole = not run_ids
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
    journaled_runs = {key.split("/")[1] for key in accepted if key.startswith("runs/")}
    targets = cut.run_ids if whole else list(dict.fromkeys(run_ids or ()))
    on_disk = set(cut.run_ids)
    for done, run_id in enumerate(targets, start=1):
        if run_id in on_disk:
            _verify_run(ledger, run_id, accepted, cut, report)
        else:
            _report_gone(run_id, run_id in journaled_runs, run_id in cut.run_rows, report)
        report.runs_checked += 1
        if progress:
            progress(done, len(targets))
    if not whole:
        return report
    for run_id in sorted((journaled_runs | set(cut.run_rows)) - on_disk):
        _report_gone(run_id, run_id in journaled_runs, run_id in cut.run_rows, report)
    kinds = {"scores": "score", "labels": "label", "decisions": "decision"}
    intact = _check_records(cut, accepted, kinds, report)
    held = _held_keys(cut, "scores/")
    for key, detail in check_score_rows(intact["scores"], held, cut.score_rows):
        report.problems.append(Problem(key, _index_kind(detail), detail, record="score"))
    held = _held_keys(cut, "labels/")
    for key, detail in check_label_rows(intact["labels"], held, cut.label_rows):
        report.problems.append(Problem(key, _index_kind(detail), detail, record="label"))
    _check_leftovers(ledger.storage.leftovers(), report)
    return report


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


def _held_keys(cut: _Cut, prefix: str) -> set[str]:
    """The keys of every score (or label) file present."""
    return {key for key in cut.records if key.startswith(prefix)}


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
