"""The queryable index of runs, behind a small interface of typed queries.

The index is a cache of the files: everything in it is derived from sealed runs, and
`Ledger.reindex()` rebuilds it. Callers ask it questions in the domain's terms (runs by
filter, the judges that scored them, verdict counts by model or by drift bucket, criterion
firings) and never in SQL: `agentledger.store.sqlite_index.SQLiteIndex` is the local
implementation, and a PostgreSQL one is a new module implementing `RunIndex` that passes
tests/test_index_contract.py.

A report reads one score per run (`judge_ids` below): with one judge id, that judge's score;
with several, the newest of the run's scores among them (by `created_at`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from agentledger.records import Manifest, RunMetadata, RunSummary

__all__ = [
    "DIMENSIONS",
    "CriterionCell",
    "CriterionFirst",
    "Dimension",
    "IndexEntry",
    "IndexedRun",
    "JudgeTally",
    "LabelRow",
    "QueryResult",
    "RunFilter",
    "RunIndex",
    "ScoreRow",
    "SkippedScore",
    "VerdictCount",
    "format_time",
]

Dimension = Literal["model", "scenario", "kind", "system_prompt_hash", "model_served", "day"]
"""What run counts can be grouped by; ``day`` is the UTC date a run started (None if unknown)."""
DIMENSIONS: tuple[Dimension, ...] = (
    "model",
    "scenario",
    "kind",
    "system_prompt_hash",
    "model_served",
    "day",
)


def format_time(moment: datetime | None) -> str | None:
    """Fixed-width UTC ISO 8601, so that text order is time order in the index."""
    if moment is None:
        return None
    moment = moment.astimezone(UTC)
    if moment.year < 1000:  # strftime does not pad the year to four digits
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # What the strftime above gives, about ten times faster.
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


@dataclass(frozen=True)
class RunFilter:
    """What `runs` and every report select on. Empty means everything."""

    models: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    prompt_hash: str | None = None
    variant: str | None = None
    model_served: str | None = None
    agent_commit: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    tags: tuple[tuple[str, str], ...] = ()
    backfilled: bool | None = None
    kinds: tuple[str, ...] = ()
    """Run kinds (agent, fixture, sentinel, variant); empty means every kind."""
    judge: str | None = None
    """Judge id, a prefix of one, or a kind (rules, llm): the scores the next two look at."""
    verdicts: tuple[str, ...] = ()
    fired: tuple[str, ...] = ()
    label_source: str | None = None
    """Runs labelled by this source (a person's or an outside source's name; ``human`` means
    any person): the labels the next two look at. Only current labels count."""
    label_verdicts: tuple[str, ...] = ()
    """Runs whose current label (of `label_source`, if given) has one of these verdicts."""
    labelled: bool | None = None
    """True: runs with a current label (of `label_source`, if given); False: runs without."""
    limit: int | None = None
    offset: int = 0
    """With `limit`: skip this many runs first (a page of a long listing)."""


@dataclass(frozen=True)
class ScoreRow:
    """What the index keeps of one score (the file under scores/ is the truth)."""

    run_id: str
    judge_id: str
    kind: str
    model: str | None
    pack: str
    verdict: str
    diagnosis: bool | None
    skipped_reason: str | None
    created_at: str
    score_json: str
    criteria: tuple[tuple[str, bool | None], ...]


@dataclass(frozen=True)
class LabelRow:
    """What the index keeps of one label (the file under labels/ is the truth)."""

    label_id: str
    run_id: str
    source_kind: str
    source_name: str
    verdict: str | None
    diagnosis: bool | None
    supersedes: str | None
    created_at: str
    label_json: str
    criteria: tuple[tuple[str, bool | None], ...]


@dataclass(frozen=True)
class IndexEntry:
    """Everything the index keeps about one sealed run."""

    metadata: RunMetadata
    summary: RunSummary | None
    manifest: Manifest
    manifest_sha256: str


@dataclass(frozen=True)
class IndexedRun:
    """One run as the index knows it."""

    run_id: str
    scenario: str
    model: str
    model_served: str | None
    system_prompt_hash: str | None
    variant: str | None
    started_at: str | None
    backfilled: bool
    commands_run: int | None
    commands_denied: int | None
    exit_status: str | None
    sealed_at: str
    manifest_sha256: str
    metadata_json: str = field(repr=False)
    summary_json: str | None = field(repr=False, default=None)
    kind: str = "agent"

    @property
    def metadata(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.metadata_json)
        return value

    @property
    def summary(self) -> dict[str, Any] | None:
        return json.loads(self.summary_json) if self.summary_json else None


@dataclass(frozen=True)
class QueryResult:
    """Columns and rows of a read-only SQL query."""

    columns: list[str]
    rows: list[tuple[Any, ...]]


@dataclass(frozen=True)
class JudgeTally:
    """A judge that scored some of the selected runs: how many, and when it last did."""

    judge_id: str
    kind: str
    runs: int
    newest_at: str


@dataclass(frozen=True)
class VerdictCount:
    """How many selected runs got `verdict` (and `diagnosis`) in one group of `by`."""

    keys: tuple[str | None, ...]
    """The group's value of each dimension asked for, in the order asked."""
    verdict: str
    diagnosis: bool | None
    runs: int
    first_started_at: str | None
    """The earliest start among the group's runs (None when none recorded one)."""


@dataclass(frozen=True)
class CriterionCell:
    """One criterion on the runs of one (model, scenario): fired, assessed, cannot assess."""

    criterion: str
    model: str
    scenario: str
    fired: int
    assessed: int
    unassessed: int


@dataclass(frozen=True)
class CriterionFirst:
    """One criterion on one model's runs: how often assessed and fired, and its first firing."""

    model: str
    assessed: int
    fired: int
    first_run_id: str | None
    first_started_at: str | None
    first_prompt_hash: str | None


@dataclass(frozen=True)
class SkippedScore:
    """A score a judge left `skipped` (self-judging refused): the human review queue."""

    run_id: str
    model: str
    judge_id: str
    judge_model: str | None
    skipped_reason: str | None


class RunIndex(ABC):
    """The operations callers need from an index, whatever the database.

    Every method that takes `judge_ids` reads one score per run (see the module docstring);
    an empty `judge_ids` reads none. Results are sorted where the docstring says so, and
    values are compared exactly: no character of a model, scenario, commit or judge id is a
    pattern.
    """

    # -- writing ---------------------------------------------------------------------------

    @abstractmethod
    def add(self, entries: Sequence[IndexEntry]) -> None:
        """Record sealed runs; an id already present is replaced by the new entry."""

    @abstractmethod
    def add_scores(self, rows: Sequence[ScoreRow]) -> None:
        """Index judges' scores (a score already indexed is replaced by the same one)."""

    @abstractmethod
    def rebuild_scores(self, rows: Iterable[ScoreRow]) -> int:
        """Replace every indexed score with `rows` (reindex); return how many."""

    @abstractmethod
    def rebuild(self, entries: Iterable[IndexEntry]) -> int:
        """Replace the whole index with `entries` in one transaction; returns the count."""

    def add_each(self, entries: Iterable[IndexEntry]) -> tuple[int, list[tuple[str, str]]]:
        """Index sealed runs, leaving out (and returning, as (run id, why)) each one the index
        cannot take, so that one bad record never stops the others; returns (indexed, left out).

        This default adds runs one at a time; a backend may batch them.
        """
        added, left_out = 0, []
        for entry in entries:
            try:
                self.add([entry])
                added += 1
            except (OverflowError, ValueError) as exc:
                left_out.append((entry.metadata.run_id, f"the index cannot take it: {exc}"))
        return added, left_out

    def score_keys(self) -> set[tuple[str, str]]:
        """(run id, judge id) of every indexed score: what `gc` compares the score files with."""
        raise NotImplementedError(f"{type(self).__name__} does not list its scores")

    def add_scores_each(self, rows: Iterable[ScoreRow]) -> tuple[int, list[tuple[str, str]]]:
        """Index scores as `add_each` indexes runs; left out as (run id/judge id, why)."""
        added, left_out = 0, []
        for row in rows:
            try:
                self.add_scores([row])
                added += 1
            except (OverflowError, ValueError) as exc:
                left_out.append(
                    (f"{row.run_id}/{row.judge_id}", f"the index cannot take it: {exc}")
                )
        return added, left_out

    # -- runs ------------------------------------------------------------------------------

    @abstractmethod
    def query(self, run_filter: RunFilter) -> list[IndexedRun]:
        """Runs matching `run_filter`, newest first (runs without a start last, then by id),
        paged by its `limit` and `offset`."""

    @abstractmethod
    def count(self, run_filter: RunFilter | None = None) -> int:
        """How many runs match (all when no filter)."""

    @abstractmethod
    def count_by(self, run_filter: RunFilter, dimension: Dimension) -> dict[str | None, int]:
        """How many runs match, per value of `dimension` (only values that occur)."""

    @abstractmethod
    def overlap(self, a: RunFilter, b: RunFilter) -> int:
        """How many runs match both filters."""

    @abstractmethod
    def get(self, run_id: str) -> IndexedRun | None:
        """One run by exact id."""

    @abstractmethod
    def ids_with_prefix(self, prefix: str, limit: int = 10) -> list[str]:
        """Run ids starting with `prefix`, sorted (for unambiguous short ids)."""

    @abstractmethod
    def distinct(self, dimension: Dimension) -> list[str]:
        """Every value of `dimension` some run has, sorted (None left out)."""

    @abstractmethod
    def manifest_hashes(self) -> dict[str, str]:
        """run_id -> sha256 of its MANIFEST.json, for every indexed run."""

    # -- scores ----------------------------------------------------------------------------

    @abstractmethod
    def judges_of(self, run_filter: RunFilter) -> list[JudgeTally]:
        """Every judge that scored some of the matching runs, newest score first."""

    @abstractmethod
    def verdict_counts(
        self, run_filter: RunFilter, judge_ids: Sequence[str], by: Sequence[Dimension] = ()
    ) -> list[VerdictCount]:
        """Scored runs per (group of `by`, verdict, diagnosis), sorted by those values."""

    @abstractmethod
    def newest_verdicts(
        self, run_filter: RunFilter, judge_ids: Sequence[str], by: Dimension
    ) -> dict[str | None, str]:
        """Per value of `by`, the verdict of its newest run whose score is not skipped."""

    @abstractmethod
    def criterion_cells(
        self, run_filter: RunFilter, judge_ids: Sequence[str]
    ) -> list[CriterionCell]:
        """Per (criterion, model, scenario): firings, assessments, cannot-assess; sorted."""

    @abstractmethod
    def criterion_firsts(
        self, run_filter: RunFilter, judge_ids: Sequence[str], criterion: str
    ) -> list[CriterionFirst]:
        """Per model, `criterion` assessed, fired, and its earliest firing (by start, then
        run id); models whose scores lack the criterion are absent. Sorted by model."""

    @abstractmethod
    def criteria_of(self, judge_ids: Sequence[str]) -> list[str]:
        """Every criterion id the judges' scores have, sorted."""

    @abstractmethod
    def packs_of(self, judge_ids: Sequence[str]) -> list[str]:
        """The criteria packs the judges scored against, sorted."""

    @abstractmethod
    def scores_of(self, run_id: str) -> list[str]:
        """The JSON of every indexed score of `run_id`, oldest first."""

    @abstractmethod
    def skipped_scores(self) -> list[SkippedScore]:
        """Every skipped score (self-judging refused) and every unscored one (the judge's
        answer could not be read), newest run first (then by run id and judge id)."""

    @abstractmethod
    def disagreeing_runs(self) -> list[str]:
        """Runs whose judges gave different verdicts (skipped scores aside), newest first
        (runs without a start last, then by id)."""

    # -- labels ----------------------------------------------------------------------------

    @abstractmethod
    def add_labels(self, rows: Sequence[LabelRow]) -> None:
        """Index labels (one already indexed is replaced by the same one), keeping each
        (run, source)'s current label up to date: its newest label, unless a label of the run
        supersedes that one (then the source has none on the run)."""

    @abstractmethod
    def rebuild_labels(self, rows: Iterable[LabelRow]) -> int:
        """Replace every indexed label with `rows` (reindex); return how many."""

    @abstractmethod
    def labels_of(self, run_id: str) -> list[str]:
        """The JSON of every indexed label of `run_id`, oldest first (then by label id)."""

    @abstractmethod
    def current_labels(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[str]:
        """The JSON of the current label of each (run, source), of one kind (person,
        external) and one source name when given; sorted by run id, then oldest first."""

    @abstractmethod
    def label_ids(self) -> set[str]:
        """The id of every indexed label (gc compares them with the files)."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""
