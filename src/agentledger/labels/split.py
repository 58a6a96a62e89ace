"""The held-out split: each labelled run of a source in `dev` or `test`, made once, kept.

At 30 labels, developing a judge and grading it on the same labels is train/test leakage: its
agreement figure says how well it fits what it was tuned on. `make_split` puts a share of a
label source's runs aside for grading, deterministically:

- runs are grouped in strata by the run's model and the label's verdict, so that test holds
  each model and each verdict in about the share asked for;
- within a stratum, runs are ordered by sha256(seed, run id): the same seed and labels give the
  same split on any machine, and a new seed a new one;
- walking the strata in order, run i goes to test when round((i + 1) * share) > round(i * share)
  (systematic allocation): about `share` of every stratum, and round(n * share) runs in all,
  even when strata hold one or two runs each.

The split is a record (`agentledger.records.splits.Split`) written once under splits/; its id
is a hash of its content, so making the same split again finds the one on record.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentledger.errors import InputError, RecordExistsError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.records.labels import Label
from agentledger.records.splits import SPLITS_DIR, Split
from agentledger.store.index import LabelResult

if TYPE_CHECKING:
    from agentledger.store.writer import LedgerParts

__all__ = ["SplitStore", "make_split", "split_id_of"]


def split_id_of(source: str, test_share: float, seed: str, dev: list[str], test: list[str]) -> str:
    """``split_<12 hex>`` of what a split holds (its time of making aside)."""
    content = {"source": source, "test_share": test_share, "seed": seed, "dev": dev, "test": test}
    return "split_" + sha256_bytes(canonical_json(content)).removeprefix("sha256:")[:12]


def _order(seed: str, run_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{run_id}".encode()).hexdigest()


def make_split(
    labels: Mapping[str, Label] | Mapping[str, LabelResult],
    models: Mapping[str, str],
    *,
    source: str,
    test_share: float,
    seed: str,
) -> Split:
    """Split the runs of `labels` (run id -> the source's label) into dev and test.

    `models` gives each run's model (a run the index does not know is its own stratum "?").
    InputError on a share outside (0, 1), an empty seed, or no labelled run.
    """
    if not isinstance(test_share, float | int) or not math.isfinite(test_share):
        raise InputError(f"--test-share must be a number between 0 and 1 (got {test_share})")
    if not 0 < test_share < 1:
        raise InputError(f"--test-share must be between 0 and 1, both excluded (got {test_share})")
    if not seed:
        raise InputError("--seed must not be empty")
    if not labels:
        raise InputError(f"labels:{source} has no labelled run to split")
    strata: dict[tuple[str, str], list[str]] = {}
    for run_id, label in labels.items():
        key: tuple[str, str] = (models.get(run_id, "?"), label.verdict or "-")
        strata.setdefault(key, []).append(run_id)
    dev: list[str] = []
    test: list[str] = []
    position = 0
    for key in sorted(strata):
        for run_id in sorted(strata[key], key=lambda run_id: _order(seed, run_id)):
            # round() rounds halves to even; floor(x + 0.5) keeps the walk monotone.
            before = math.floor(position * test_share + 0.5)
            after = math.floor((position + 1) * test_share + 0.5)
            (test if after > before else dev).append(run_id)
            position += 1
    dev.sort()
    test.sort()
    share = float(test_share)
    return Split(
        split_id=split_id_of(source, share, seed, dev, test),
        source=source,
        test_share=share,
        seed=seed,
        dev=dev,
        test=test,
    )


class SplitStore:
    """A ledger's splits: write-once records journaled like scores and labels
    (`store.record_kinds.SplitRecords`); a split the journal never accepted (planted beside
    it) is never read, one whose bytes changed since is an IntegrityError, and the newest of a
    source is the one the journal accepted last, not the one with the latest time in its file."""

    def __init__(self, ledger: LedgerParts) -> None:
        from agentledger.store.record_kinds import SplitRecords

        self.records = SplitRecords(ledger)

    @staticmethod
    def key(split_id: str) -> str:
        return f"{SPLITS_DIR}/{split_id}.json"

    def write(self, split: Split) -> tuple[Split, bool]:
        """Record `split` once; (the split on record, True when it was written now). The same
        split made again (same content, so the same id) is the one already on record."""
        key = self.key(split.split_id)
        try:
            self.records.write([split])
        except RecordExistsError:
            return self.records.read(key), False
        return split, True

    def read(self, key: str) -> Split:
        """The split at `key`, checked against its journal entry."""
        return self.records.read(key)

    def all(self) -> list[Split]:
        """Every split on record, oldest first (in the journal's order)."""
        return self.records.oldest_first()

    def get(self, split_id: str) -> Split:
        """The split called `split_id` (or an unambiguous prefix of it); InputError if none."""
        splits = self.all()
        found = [split for split in splits if split.split_id.startswith(split_id)]
        if len(found) != 1:
            known = ", ".join(split.split_id for split in splits) or "none"
            how = "matches several splits" if found else "is not a split on record"
            raise InputError(f"split {split_id!r} {how} (splits: {known})")
        return found[0]

    def newest(self, source: str) -> Split | None:
        """The newest split of label source `source` (None when it has none)."""
        mine = [split for split in self.all() if split.source == source]
        return mine[-1] if mine else None
