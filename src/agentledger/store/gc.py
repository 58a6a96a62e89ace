"""Garbage collection of a ledger (`agentledger gc`): what writers that died left behind.

Records stored but never journaled are settled (`journal_upkeep.settle_unaccepted`), staging
debris of dead writers removed, and the sealed runs, scores, labels and decisions that the
index missed (a writer killed between journal and index) indexed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.store.journal_upkeep import settle_unaccepted
from agentledger.store.record_kinds import (
    DecisionRecords,
    OutcomeRecords,
    ScoreRecords,
    reposition_records,
    unpositioned,
)
from agentledger.store.record_store import LabelRecords

if TYPE_CHECKING:
    from agentledger.store.writer import LedgerParts

__all__ = ["GcReport", "collect_garbage"]


@dataclass
class GcReport:
    """What `gc` cleaned up."""

    removed: list[str] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)
    indexed: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    journaled: list[str] = field(default_factory=list)
    """Records a writer stored but died before journaling, whose bytes checked out: now
    accepted (their journal entry appended)."""
    unaccepted_removed: list[tuple[str, str]] = field(default_factory=list)
    """Such records whose bytes did not check out: removed, with why."""
    quarantined: list[tuple[str, str]] = field(default_factory=list)
    """(key, where it went) of records without an entry that no writer announced (put there
    by hand or by another program): moved to quarantine, never accepted."""
    indexed_scores: list[str] = field(default_factory=list)
    """Accepted scores the index lacked (a judge died before indexing them): now indexed."""
    unreadable_scores: list[tuple[str, str]] = field(default_factory=list)
    """(score file, why) of score files missing from the index that could not be indexed."""
    indexed_labels: list[str] = field(default_factory=list)
    """The ids of accepted labels the index lacked (a writer died before indexing them)."""
    unreadable_labels: list[tuple[str, str]] = field(default_factory=list)
    """(label key, why) of such labels that could not be indexed."""
    indexed_decisions: list[str] = field(default_factory=list)
    """Accepted decisions the index lacked (a gate died before indexing them): now indexed."""
    unreadable_decisions: list[tuple[str, str]] = field(default_factory=list)
    """(decision, why) of such decisions that could not be indexed."""
    indexed_outcomes: list[str] = field(default_factory=list)
    """Accepted outcomes the index lacked (a measurer died before indexing them): now indexed."""
    unreadable_outcomes: list[tuple[str, str]] = field(default_factory=list)
    """(outcome key, why) of such outcomes that could not be indexed."""
    repositioned: int = 0
    """Index rows that held no journal position (indexed before m013 / m015): every record
    was given its position again."""

    @property
    def ok(self) -> bool:
        return not (
            self.unreadable
            or self.unreadable_scores
            or self.unreadable_labels
            or self.unreadable_decisions
            or self.quarantined
            or self.unreadable_outcomes
        )


def collect_garbage(ledger: LedgerParts) -> GcReport:
    """Remove staging debris of dead writers; index the sealed runs, scores and labels the
    index missed."""
    ledger.storage.journal.check_writable()  # nothing is moved on a ledger found rolled back
    report = GcReport()
    settled = settle_unaccepted(ledger)
    report.journaled = settled.completed
    report.unaccepted_removed = settled.removed
    report.quarantined = settled.quarantined
    report.unreadable.extend(settled.refused_runs)
    refused = {run_id for run_id, _problem in settled.refused_runs}
    for leftover in ledger.storage.leftovers():
        if leftover.in_progress or not ledger.storage.remove_leftover(leftover):
            report.in_progress.append(leftover.name)
        else:
            report.removed.append(leftover.name)
    indexed = set(ledger.index.manifest_hashes())
    missing = [
        run_id
        for run_id in ledger.storage.run_ids()
        if run_id not in indexed and run_id not in refused
    ]
    entries = []
    for run_id in sorted(missing):
        try:
            entries.append(ledger.load(run_id).index_entry())
            ledger.storage.protect(run_id)
        except (InputError, OSError) as exc:
            report.unreadable.append((run_id, str(exc)))
    _added, left_out = ledger.index.add_each(entries)
    report.unreadable.extend(left_out)
    refused = {run_id for run_id, _why in left_out}
    report.indexed = [e.metadata.run_id for e in entries if e.metadata.run_id not in refused]
    report.indexed_scores, report.unreadable_scores = ScoreRecords(ledger).index_missing()
    labels, report.unreadable_labels = LabelRecords(ledger).index_missing()
    report.indexed_labels = sorted(key.rsplit("/", 1)[-1].removesuffix(".json") for key in labels)
    report.indexed_decisions, report.unreadable_decisions = DecisionRecords(ledger).index_missing()
    report.indexed_outcomes, report.unreadable_outcomes = OutcomeRecords(ledger).index_missing()
    report.repositioned = unpositioned(ledger)
    if report.repositioned:
        report.unreadable.extend(reposition_records(ledger))
    return report
