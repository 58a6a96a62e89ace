"""Scores: one record per (run, judge id), beside the runs, never overwritten.

```
ledger/scores/<run_id>/<judge_id>.json
```

A judge id changes whenever anything that shapes the judge's output changes (kind, model,
template, pack content, verdict policy), so a new judge's scores sit beside the old ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from agentledger.errors import InputError, IntegrityError, RecordError, RecordExistsError
from agentledger.identity import check_run_id, sha256_bytes
from agentledger.records import parse_record
from agentledger.records.scores import JUDGE_ID, SCORES_DIR, Score
from agentledger.store.index import score_row
from agentledger.store.storage import StorageBackend
from agentledger.store.writer import record_bytes

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "ReviewItem",
    "ScoreStore",
    "reindex_scores",
    "review_queue",
    "run_scores",
    "score_row",
]

_JUDGE_ID = re.compile(JUDGE_ID)


class ScoreStore:
    """A ledger's scores, through its storage backend: write-once, one per (run, judge id)."""

    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage

    @staticmethod
    def key(run_id: str, judge_id: str) -> str:
        """The storage key of the score of `run_id` by `judge_id`."""
        check_run_id(run_id)
        if not _JUDGE_ID.match(judge_id):
            raise InputError(f"judge id {judge_id!r} is not valid (expected <kind>-<12 hex>)")
        return f"{SCORES_DIR}/{run_id}/{judge_id}.json"

    def exists(self, run_id: str, judge_id: str) -> bool:
        return self.storage.exists(self.key(run_id, judge_id))

    def scored(self, run_ids: Sequence[str], judge_id: str) -> set[str]:
        """Those of `run_ids` that `judge_id` has scored: `exists` for many runs at once (on
        S3, a listing of the scores rather than a HEAD for each)."""
        keys = {self.key(run_id, judge_id): run_id for run_id in run_ids}
        return {keys[key] for key in self.storage.existing(list(keys))}

    def write(self, score: Score) -> str:
        """Write `score` once; where it went. An existing score is never replaced."""
        key = self.key(score.run_id, score.judge_id)
        try:
            self.storage.create(key, record_bytes(score))
        except RecordExistsError:
            raise RecordExistsError(
                f"{self.storage.describe(key)}: this run is already scored by judge "
                f"{score.judge_id}"
            ) from None
        return self.storage.describe(key)

    def read(self, key: str, accepted: Mapping[str, str] | None = None) -> Score:
        """The score stored at `key`, checked against its place and its journal entry
        (`accepted`: the journal's keys and hashes, read once by callers reading many)."""
        where = self.storage.describe(key)
        raw = self.storage.get(key)
        score = parse_record(Score, raw, where)
        if key != self.key(score.run_id, score.judge_id):
            raise RecordError(where, "the file's place does not match its run_id and judge_id")
        expected = (self.storage.journal.accepted() if accepted is None else accepted).get(key)
        if expected is None:
            raise IntegrityError(f"{where}: the journal has no entry for this score")
        if sha256_bytes(raw) != expected:
            raise IntegrityError(
                f"{where}: changed since the journal accepted it (run `agentledger verify`)"
            )
        return score

    def load(self, run_id: str, judge_id: str) -> Score:
        return self.read(self.key(run_id, judge_id))

    def iter_scores(self) -> Iterator[Score]:
        """Every stored score the journal accepted (for reindexing), in a stable order.

        A score without an entry (its writer died before journaling it) is left out until
        `gc` settles it; one whose bytes changed raises IntegrityError.
        """
        accepted = self.storage.journal.accepted()
        for key in self.storage.keys(SCORES_DIR):
            if key.endswith(".json") and key.count("/") == 2 and key in accepted:
                yield self.read(key, accepted)


def reindex_scores(ledger: Ledger) -> int:
    """Rebuild the index's scores from the files under scores/ (the files are the truth)."""
    return ledger.index.rebuild_scores(
        score_row(score) for score in ScoreStore(ledger.storage).iter_scores()
    )


def run_scores(ledger: Ledger, run_id: str) -> list[Score]:
    """Every score of run `run_id`, oldest first, from the index."""
    return [Score.model_validate_json(text) for text in ledger.index.scores_of(run_id)]


class ReviewItem(BaseModel):
    """A run a judge would not score, waiting for a human."""

    run_id: str
    model: str
    judge_id: str
    judge_model: str | None
    skipped_reason: str | None


def review_queue(ledger: Ledger) -> list[ReviewItem]:
    """The human review queue, newest first: runs with a skipped score (self-judging refused)
    or an unscored one (the judge's answer could not be read)."""
    return [
        ReviewItem(
            run_id=row.run_id,
            model=row.model,
            judge_id=row.judge_id,
            judge_model=row.judge_model,
            skipped_reason=row.skipped_reason,
        )
        for row in ledger.index.skipped_scores()
    ]
