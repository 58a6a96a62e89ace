"""Scores: one file per (run, judge id), beside the runs, never overwritten.

```
ledger/scores/<run_id>/<judge_id>.json
```

A judge id changes whenever anything that shapes the judge's output changes (kind, model,
template, pack content, verdict policy), so a new judge's scores sit beside the old ones.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agentledger.errors import InputError, RecordError
from agentledger.identity import check_run_id
from agentledger.judges.base import CriterionResult, DiagnosisResult
from agentledger.judges.verdict import Verdict
from agentledger.records import Record, parse_record, utc_now
from agentledger.store.index import ScoreRow, format_time
from agentledger.store.writer import record_bytes

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "SCORES_DIR",
    "JudgeInfo",
    "ReviewItem",
    "Score",
    "ScoreStore",
    "reindex_scores",
    "review_queue",
    "run_scores",
    "score_row",
]

SCORES_DIR = "scores"
JUDGE_ID = r"^[a-z0-9-]{1,40}-[0-9a-f]{12}$"


class JudgeInfo(BaseModel):
    """Which judge made a score: everything its id was computed from, in readable form."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str = Field(description="rules, llm or human.")
    model: str | None = Field(default=None, description="The judge's model, for LLM judges.")
    provider: str | None = Field(default=None, description="The judge model's provider.")
    pack: str = Field(description="Criteria pack id.")
    pack_version: str = Field(description="Criteria pack version.")
    pack_digest: str = Field(description="sha256 of the pack's content.")


class Score(Record):
    """One judge's score of one run (scores/<run_id>/<judge_id>.json)."""

    run_id: str = Field(description="The run scored.")
    judge_id: str = Field(pattern=JUDGE_ID, description="<kind>-<12 hex> of the judge identity.")
    judge: JudgeInfo = Field(description="The judge, readable.")
    identity: dict[str, Any] = Field(description="Everything the judge id is a hash of.")
    created_at: datetime = Field(default_factory=utc_now, description="When it was scored.")
    verdict: Verdict = Field(description="Safe, Uncertain, Unsafe, or skipped.")
    skipped_reason: str | None = Field(
        default=None, description="Why the run was not judged (self-judging refused, ...)."
    )
    criteria: list[CriterionResult] = Field(
        default_factory=list, description="Per criterion: fired true/false/null with evidence."
    )
    diagnosis: DiagnosisResult | None = Field(
        default=None, description="Root cause against the scenario's expected one, if asked."
    )
    usage: dict[str, Any] | None = Field(
        default=None, description="Model calls, tokens and cost of an LLM judge."
    )

    def fired(self) -> list[str]:
        """Ids of the criteria that fired."""
        return [result.criterion for result in self.criteria if result.fired]


class ScoreStore:
    """The scores directory of a ledger: write-once files, one per (run, judge id)."""

    def __init__(self, ledger_root: Path) -> None:
        self.root = ledger_root / SCORES_DIR

    def path(self, run_id: str, judge_id: str) -> Path:
        check_run_id(run_id)
        return self.root / run_id / f"{judge_id}.json"

    def exists(self, run_id: str, judge_id: str) -> bool:
        return self.path(run_id, judge_id).is_file()

    def write(self, score: Score) -> Path:
        """Write `score` once: atomically, read-only; an existing score is never replaced."""
        target = self.path(score.run_id, score.judge_id)
        if target.exists():
            raise InputError(f"{target}: this run is already scored by judge {score.judge_id}")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        data = record_bytes(score)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(tmp, target)  # fails if a concurrent judge got there first
            except FileExistsError:
                raise InputError(
                    f"{target}: this run is already scored by judge {score.judge_id}"
                ) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return target

    def read(self, path: Path) -> Score:
        score = parse_record(Score, path.read_bytes(), str(path))
        if path.stem != score.judge_id or path.parent.name != score.run_id:
            raise RecordError(path, "the file's place does not match its run_id and judge_id")
        return score

    def load(self, run_id: str, judge_id: str) -> Score:
        return self.read(self.path(run_id, judge_id))

    def iter_scores(self) -> Iterator[Score]:
        """Every score on disk (for reindexing), in a stable order."""
        if not self.root.is_dir():
            return
        for run_dir in sorted(self.root.iterdir()):
            if run_dir.is_dir():
                for path in sorted(run_dir.glob("*.json")):
                    yield self.read(path)


def score_row(score: Score) -> ScoreRow:
    """What the index keeps of `score`."""
    return ScoreRow(
        run_id=score.run_id,
        judge_id=score.judge_id,
        kind=score.judge.kind,
        model=score.judge.model,
        pack=score.judge.pack,
        verdict=score.verdict,
        diagnosis=score.diagnosis.correct if score.diagnosis else None,
        skipped_reason=score.skipped_reason,
        created_at=format_time(score.created_at) or "",
        score_json=score.model_dump_json(),
        criteria=tuple((result.criterion, result.fired) for result in score.criteria),
    )


def reindex_scores(ledger: Ledger) -> int:
    """Rebuild the index's scores from the files under scores/ (the files are the truth)."""
    return ledger.index.rebuild_scores(
        score_row(score) for score in ScoreStore(ledger.root).iter_scores()
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
    """The human review queue: runs with a skipped score (self-judging refused), newest first."""
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
