"""Scores: one record per (run, judge id), beside the runs, never overwritten.

```
ledger/scores/<run_id>/<judge_id>.json
```

A judge id changes whenever anything that shapes the judge's output changes (kind, model,
template, pack content, verdict policy), so a new judge's scores sit beside the old ones.
They are stored, journal-checked and indexed by `agentledger.store.record_store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentledger.records.scores import Score
from agentledger.store.index import score_row
from agentledger.store.record_kinds import ScoreRecords

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["ScoreStore", "reindex_scores", "run_scores", "score_row"]


class ScoreStore(ScoreRecords):
    """A ledger's scores: write-once, one per (run, judge id), indexed as they land."""

    def scored(self, run_ids: Sequence[str], judge_id: str) -> set[str]:
        """Those of `run_ids` that `judge_id` has scored: `exists` for many runs at once (on
        S3, a listing of the scores rather than a HEAD for each)."""
        keys = {self.key(run_id, judge_id): run_id for run_id in run_ids}
        return {keys[key] for key in self.storage.existing(list(keys))}


def reindex_scores(ledger: Ledger) -> int:
    """Rebuild the index's scores from the files under scores/ (the files are the truth)."""
    return ScoreStore(ledger).reindex()


def run_scores(ledger: Ledger, run_id: str) -> list[Score]:
    """Every score of run `run_id`, from the index, in the order the journal accepted them
    (the last is the newest, whatever time its file gives)."""
    return [Score.model_validate_json(text) for text in ledger.index.scores_of(run_id)]
