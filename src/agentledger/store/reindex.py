"""Rebuilding the index from the files, beside the old one, and swapping it in atomically.

The index is a cache of the files, but a cache users rely on: a rebuild that fails half-way
(a full disk, a record that cannot be indexed, Ctrl-C) must leave the old index as it was.
For the SQLite index the new one is written to ``index.sqlite.new``, flushed to disk, and
renamed over the old one; on any failure the new file is removed and the old one is untouched.
An index of another kind is rebuilt in place, in one transaction per part.

A record the index cannot take (unreadable, or a value SQLite refuses) is reported and left
out: one bad record never stops the others from being indexed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.errors import (
    IndexUnusableError,
    InputError,
    IntegrityError,
    WriteFailedError,
)
from agentledger.records.limits import check_storable
from agentledger.store.backends import INDEX_NAME, split_uri
from agentledger.store.index import IndexEntry, ScoreRow, score_row
from agentledger.store.storage import MANIFEST_NAME

if TYPE_CHECKING:
    from agentledger.store.writer import LedgerParts, OpenLedger, Progress

__all__ = [
    "ReindexReport",
    "index_path",
    "rebuild_index",
    "score_row",
    "stored_score_rows",
]

_SIDE_FILES = ("-wal", "-shm", "-journal")


NOT_ACCEPTED = (
    "the journal has no entry for it: a writer died while sealing it "
    "(`agentledger gc` completes it when its files check out)"
)
"""Why a sealed run the journal never accepted is left out of the index."""


@dataclass
class ReindexReport:
    """What `reindex` rebuilt, and the records it had to leave out."""

    indexed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(run id, why) of the runs that could not be indexed."""
    replaced_index: bool = False
    """True when the old index could not be opened at all (it was replaced)."""
    journal_started_now: int | None = None
    """As `Ledger.journal_started_now`, for the open the rebuild made."""
    scores: int = 0
    skipped_scores: list[tuple[str, str]] = field(default_factory=list)
    """(score file, why) of the scores that could not be indexed."""
    labels: int = 0
    skipped_labels: list[tuple[str, str]] = field(default_factory=list)
    """(label file, why) of the labels that could not be indexed."""
    decisions: int = 0
    skipped_decisions: list[tuple[str, str]] = field(default_factory=list)
    """(decision, why) of the decisions that could not be indexed."""
    outcomes: int = 0
    skipped_outcomes: list[tuple[str, str]] = field(default_factory=list)
    """(outcome file, why) of the outcomes that could not be indexed."""

    @property
    def ok(self) -> bool:
        return not (
            self.skipped
            or self.skipped_scores
            or self.skipped_labels
            or self.skipped_decisions
            or self.skipped_outcomes
        )


def index_path(root: Path, index_uri: str) -> Path | None:
    """Where the SQLite index of a ledger lives, or None for an index of another kind."""
    scheme, rest = split_uri(index_uri)
    if scheme != "sqlite":
        return None
    return Path(rest) if rest else root / INDEX_NAME


def _remove(path: Path) -> None:
    for suffix in ("", *_SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _checkpoint_old(path: Path) -> None:
    """Fold the old index's write-ahead log into its file, so that no log of the old database
    is left beside the new one (SQLite would apply it to the wrong file)."""
    if not path.exists():
        return
    try:
        db = sqlite3.connect(path, timeout=60)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
    except sqlite3.DatabaseError:
        pass  # an unusable old index: it is replaced whole, its log with it


def stored_score_rows(
    ledger: LedgerParts, problems: list[tuple[str, str]], keys: Iterable[str] | None = None
) -> Iterator[ScoreRow]:
    """The index rows of the scores at `keys` (default: every score) that the journal
    accepted, appending (file, why) of each one that cannot be indexed (changed since,
    unreadable, not where its run and judge say, holding what the index cannot take) to
    `problems` instead of stopping. A score without an entry is left out: its writer, on
    another machine, is between writing it and journaling it, or died there (`gc`)."""
    from agentledger.store.record_kinds import ScoreRecords

    store = ScoreRecords(ledger)
    accepted = ledger.storage.journal.accepted()
    order = ledger.storage.journal.accepted_at()
    chosen = store.accepted_keys(accepted) if keys is None else [k for k in keys if k in accepted]
    for key in chosen:
        where = ledger.storage.describe(key)
        try:
            score = store.read(key, accepted)
            check_storable(score, where)
        except (InputError, IntegrityError, OSError) as exc:
            problems.append((where, str(exc)))
            continue
        yield store.row(score, order.get(key))


def _records(ledger: LedgerParts, report: ReindexReport) -> None:
    """Index the labels, decisions and outcomes the journal accepted (the scores are indexed
    apart, leaving out each one the index cannot take)."""
    from agentledger.store.record_kinds import DecisionRecords, OutcomeRecords
    from agentledger.store.record_store import LabelRecords

    report.labels = LabelRecords(ledger).reindex(report.skipped_labels)
    report.decisions = DecisionRecords(ledger).reindex(report.skipped_decisions)
    report.outcomes = OutcomeRecords(ledger).reindex(report.skipped_outcomes)


def _fill(ledger: LedgerParts, entries: Iterable[IndexEntry], report: ReindexReport) -> None:
    index = ledger.index
    report.indexed, left_out = index.add_each(entries)
    report.skipped.extend(left_out)
    problems: list[tuple[str, str]] = []
    report.scores, left_out = index.add_scores_each(stored_score_rows(ledger, problems))
    report.skipped_scores.extend(problems)
    report.skipped_scores.extend(left_out)
    _records(ledger, report)


def _entries(
    ledger: LedgerParts, progress: Progress | None, report: ReindexReport
) -> Iterator[IndexEntry]:
    accepted = ledger.storage.journal.accepted()
    for run_id, stored, problem in ledger.iter_stored(progress):
        if stored is None:
            report.skipped.append((run_id, problem or "unreadable"))
        elif f"runs/{run_id}/{MANIFEST_NAME}" not in accepted:
            report.skipped.append((run_id, NOT_ACCEPTED))
        else:
            yield stored.index_entry()


def rebuild_index(
    root: Path,
    *,
    open_ledger: OpenLedger,
    index_uri: str,
    old_usable: bool,
    progress: Progress | None = None,
) -> ReindexReport:
    """Rebuild the index of the ledger at `root` from its files (see the module docstring).

    `open_ledger(index)` opens the ledger on the given index (None: its own). `old_usable` says
    whether the current index could be opened; when it could not, it is replaced whole.
    """
    report = ReindexReport(replaced_index=not old_usable)
    target = index_path(root, index_uri)
    if target is None:
        # Another kind of index: replaced in place, one transaction for the runs and one for
        # the scores, leaving out (and reporting) what it cannot take.
        with open_ledger(None) as ledger:
            report.indexed, left_out = ledger.index.rebuild_each(_entries(ledger, progress, report))
            report.skipped.extend(left_out)
            report.scores, left_out = ledger.index.rebuild_scores_each(
                stored_score_rows(ledger, report.skipped_scores)
            )
            report.skipped_scores.extend(left_out)
            _records(ledger, report)
        return report
    from agentledger.store.index.sqlite import SQLiteIndex

    fresh = Path(f"{target}.new")
    _remove(fresh)  # debris of a rebuild that died: never the index in use
    try:
        new_index = SQLiteIndex(fresh)
        with open_ledger(new_index) as ledger:
            _fill(ledger, _entries(ledger, progress, report), report)
            new_index.seal_file()
        fd = os.open(fresh, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        _checkpoint_old(target)
        for suffix in _SIDE_FILES:
            with contextlib.suppress(FileNotFoundError):
                Path(f"{target}{suffix}").unlink()
        os.replace(fresh, target)
        _fsync_dir(target.parent)
    except BaseException as exc:
        _remove(fresh)
        if isinstance(exc, OSError | sqlite3.Error | WriteFailedError | IndexUnusableError):
            raise WriteFailedError(
                f"reindex failed while writing {fresh} ({exc}); the index in use, "
                f"{target}, was left as it was"
            ) from None
        raise
    return report
