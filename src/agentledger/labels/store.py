"""The label store: labels written once through the storage backend, indexed, read back.

```
ledger/labels/<run_id>/<label_id>.json      Label (agentledger.records.labels)
```

A label names a run of the ledger, and a correction names the label it supersedes: that label
must be a label of the same run that nothing supersedes yet, so that each line of corrections
stays a line. The files are the truth; the index keeps each label and, per (run, source), the
current one (the source's newest, unless a label of the run supersedes it: a source's newer
label replaces its older ones), and `reindex` / `gc` rebuild it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentledger.errors import InputError, RecordExistsError, RunNotFoundError
from agentledger.identity import check_run_id
from agentledger.records.labels import LABELS_DIR, Label
from agentledger.store.index import label_row
from agentledger.store.record_store import LabelRecords

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "HUMAN",
    "LabelStore",
    "current_labels",
    "label_row",
    "labels_for_agreement",
    "labels_of_run",
    "parse_source_spec",
    "reindex_labels",
    "same_label",
]

HUMAN = "human"
"""The source name that stands for every person (``labels:human``, ``--label-source human``)."""


class LabelStore(LabelRecords):
    """A ledger's labels: write-once files under labels/, journal-checked when read, indexed
    as they land."""

    def of_run(self, run_id: str) -> list[Label]:
        """Every label of `run_id` the journal accepted (from the files), in the journal's
        order: the order they were accepted in, whatever times they carry."""
        keys = self.storage.keys(f"{LABELS_DIR}/{check_run_id(run_id)}")
        if not any(self.is_key(key) for key in keys):
            return []  # no label stored: none to check against the journal
        accepted = self.storage.journal.accepted()
        order = self.storage.journal.accepted_at()
        keys = sorted(
            (key for key in keys if self.is_key(key) and key in accepted),
            key=lambda key: order.get(key, 0),
        )
        return [self.read(key, accepted) for key in keys]

    def check(self, labels: Sequence[Label]) -> None:
        """Refuse the whole of `labels` (InputError) if any one cannot be written: a run not in
        the ledger, a label id already used, a `supersedes` that names no label of the run or
        one already superseded (by a stored label or another of `labels`)."""
        stored: dict[str, list[Label]] = {}
        batch_ids: dict[str, str] = {}
        taken: dict[tuple[str, str], str] = {}
        for label in labels:
            run_id = label.run_id
            if run_id not in stored:
                if not self.storage.has_run(run_id):
                    raise RunNotFoundError(
                        f"label {label.label_id}: run {run_id!r} is not in {self.ledger.root}"
                    )
                stored[run_id] = self.of_run(run_id)
                for old in stored[run_id]:
                    if old.supersedes:
                        taken[(run_id, old.supersedes)] = old.label_id
            known = {old.label_id for old in stored[run_id]}
            if label.label_id in known or label.label_id in batch_ids:
                raise RecordExistsError(f"label {label.label_id} of run {run_id} already exists")
            if label.supersedes is not None:
                if label.supersedes not in known and batch_ids.get(label.supersedes) != run_id:
                    raise InputError(
                        f"label {label.label_id}: supersedes {label.supersedes}, which is not a "
                        f"label of run {run_id}"
                    )
                earlier = taken.get((run_id, label.supersedes))
                if earlier is not None:
                    raise InputError(
                        f"label {label.label_id}: {label.supersedes} is already superseded by "
                        f"{earlier}; supersede {earlier} instead"
                    )
                taken[(run_id, label.supersedes)] = label.label_id
            batch_ids[label.label_id] = run_id

    def write_new(self, labels: Sequence[Label]) -> tuple[list[str], list[Label]]:
        """Write the labels of `labels` that are not there already; (where each written one
        went, the labels already there that stand for the others).

        A label is there already when the newest label its source gave the run says the same
        (verdict, criteria, diagnosis, reason, what it supersedes): the same file imported
        again, or a `label` command repeated, adds nothing. Run again after a writer was
        killed, this finishes its work with every label exactly once: what it stored but did
        not journal or index is settled first (as `gc` would), then counted as there.
        """
        runs = sorted({label.run_id for label in labels})
        self._settle(runs)
        # Under the journal lock (on S3 the lease every machine takes): what is newest is
        # decided by what the journal holds now, and no other writer, on this machine or
        # another, lands a label between that look and this write. Two imports of one file
        # at once therefore give each row once.
        with self.storage.journal.lock():
            newest: dict[tuple[str, str, str], Label] = {}
            for run_id in runs:
                if not self.storage.has_run(run_id):
                    continue  # refused by `check` below, with the reason
                for old in self.of_run(run_id):  # journal order: the last of a source is its newest
                    newest[(run_id, old.by.kind, old.by.name)] = old
            fresh: list[Label] = []
            already: list[Label] = []
            for label in labels:
                held = newest.get((label.run_id, label.by.kind, label.by.name))
                if held is not None and same_label(held, label):
                    already.append(held)
                else:
                    fresh.append(label)
            return (self.write(fresh) if fresh else []), already

    def _settle(self, run_ids: Sequence[str]) -> None:
        """Journal and index the labels of `run_ids` that a killed writer left unfinished."""
        self.settle(
            [
                key
                for run_id in run_ids
                if self.storage.has_run(run_id)
                for key in self.storage.keys(f"{LABELS_DIR}/{check_run_id(run_id)}")
                if self.is_key(key)
            ]
        )


def same_label(a: Label, b: Label) -> bool:
    """Whether two labels of a run say the same: the same source, verdict, criteria (in any
    order), diagnosis, reason and superseded label (ids, times and details aside)."""
    return (
        a.run_id == b.run_id
        and (a.by.kind, a.by.name) == (b.by.kind, b.by.name)
        and a.verdict == b.verdict
        and sorted((c.criterion, repr(c.fired)) for c in a.criteria)
        == sorted((c.criterion, repr(c.fired)) for c in b.criteria)
        and a.diagnosis_correct == b.diagnosis_correct
        and a.reason == b.reason
        and a.supersedes == b.supersedes
    )


def reindex_labels(ledger: Ledger) -> int:
    """Rebuild the index's labels from the files under labels/ (the files are the truth)."""
    return LabelStore(ledger).reindex()


def labels_of_run(ledger: Ledger, run_id: str) -> list[Label]:
    """Every label of `run_id`, oldest first, from the index."""
    return [Label.model_validate_json(text) for text in ledger.index.labels_of(run_id)]


def current_labels(ledger: Ledger, source: str | None = None) -> list[Label]:
    """The current label of each run and source: the source's newest on the run, unless
    another label supersedes it.

    `source` is a source name, or ``human`` for every person; None means every source. Sorted
    by run id, then oldest first.
    """
    if source == HUMAN:
        texts = ledger.index.current_labels(source_kind="person")
    else:
        texts = ledger.index.current_labels(source_name=source)
    return [Label.model_validate_json(text) for text in texts]


def parse_source_spec(spec: str) -> str:
    """The source name of ``labels:NAME`` (``labels:human``: every person); InputError else."""
    prefix, sep, name = spec.partition(":")
    if prefix != "labels" or not sep or not name:
        raise InputError(
            f"label source {spec!r} is not valid: use labels:NAME (one source) or labels:human "
            "(every person)"
        )
    return name


def labels_for_agreement(ledger: Ledger, source_spec: str) -> dict[str, Label]:
    """run_id -> the label a source stands by, for `agreement` (``labels:NAME`` or
    ``labels:human``). With several (several people, or a person and an outside source of
    one name), the newest current one. InputError when the source has labelled nothing."""
    name = parse_source_spec(source_spec)
    chosen: dict[str, Label] = {}
    for label in current_labels(ledger, name):  # in the journal's order: the last is newest
        chosen[label.run_id] = label
    if not chosen:
        sources = sorted({label.by.name for label in current_labels(ledger)})
        known = ", ".join(sources) if sources else "none yet"
        raise InputError(
            f"{source_spec}: no labels from this source in {ledger.root} (sources: {known})"
        )
    return chosen
