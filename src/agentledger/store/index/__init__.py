"""The queryable index of runs, behind a small interface of typed queries.

The index is a cache of the files: everything in it is derived from sealed runs, and
`Ledger.reindex()` rebuilds it. Callers ask it questions in the domain's terms (runs by
filter, the judges that scored them, verdict counts by model or by drift bucket, criterion
firings) and never in SQL. The package is the only SQL in agentledger:

- `rows`: what the index keeps of a run, a score, a label, and the typed answers;
- `dialect` and `where`: what SQLite and PostgreSQL say differently, and the SQL of a filter;
- `migrations`: one forward-only list of schema steps, each written once over the dialect;
- `queries.SqlQueries` and `sql.SqlIndex`: every query and write of `RunIndex`, written once;
- `sqlite.SQLiteIndex` and `postgres.PostgresIndex`: each engine's connection, transactions,
  bulk writes and locks, and nothing else. A third engine is a dialect and such a module,
  held to tests/test_index_contract.py.

A report reads one score per run (`judge_ids` below): with one judge id, that judge's score;
with several, the newest of the run's scores among them. "Oldest first" and "newest" mean, for
every kind of record (scores, labels, decisions, outcomes), the order the journal accepted them
in (`where.journal_order`), never a time written in a file.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import replace

from agentledger.records.filters import RunFilter
from agentledger.store.index.rows import (
    DIMENSIONS,
    RUN_SORTS,
    CriterionCell,
    CriterionFirst,
    DecisionRow,
    Dimension,
    IndexedRun,
    IndexEntry,
    JudgeTally,
    LabelResult,
    LabelRow,
    OutcomeRow,
    QueryResult,
    Ratings,
    RunColumns,
    RunFacets,
    RunSort,
    RunVerdict,
    ScoreRow,
    SkippedScore,
    VerdictCount,
    decision_row,
    facets_of,
    format_time,
    label_row,
    label_rows_from,
    outcome_row,
    packed_criteria,
    ratings_of,
    run_columns,
    score_row,
    stored_flag,
)

__all__ = [
    "DIMENSIONS",
    "RUN_SORTS",
    "CriterionCell",
    "CriterionFirst",
    "DecisionRow",
    "Dimension",
    "IndexEntry",
    "IndexedRun",
    "JudgeTally",
    "LabelResult",
    "LabelRow",
    "OutcomeRow",
    "QueryResult",
    "Ratings",
    "RunColumns",
    "RunFacets",
    "RunFilter",
    "RunIndex",
    "RunSort",
    "RunVerdict",
    "ScoreRow",
    "SkippedScore",
    "VerdictCount",
    "decision_row",
    "facets_of",
    "format_time",
    "label_row",
    "label_rows_from",
    "outcome_row",
    "packed_criteria",
    "ratings_of",
    "run_columns",
    "score_row",
    "stored_flag",
]


class RunIndex(ABC):
    """The operations callers need from an index, whatever the database.

    Every method that takes `judge_ids` reads one score per run (see the module docstring);
    an empty `judge_ids` reads none. Results are sorted where the docstring says so, and
    values are compared exactly: no character of a model, scenario, commit or judge id is a
    pattern.
    """

    upgraded_by: tuple[str, ...] = ()
    """The migrations that opening this index applied to an index that existed (a new one
    lists none): the ledger fills from its files what such a migration added a table for."""

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

    def rebuild_each(self, entries: Iterable[IndexEntry]) -> tuple[int, list[tuple[str, str]]]:
        """`rebuild`, leaving out (and returning, as (run id, why)) each run the index cannot
        take, as `add_each` does; the replacement is still one transaction.

        This default leaves nothing out (one bad run fails the rebuild); a backend that
        rebuilds in place overrides it.
        """
        return self.rebuild(entries), []

    def rebuild_scores_each(self, rows: Iterable[ScoreRow]) -> tuple[int, list[tuple[str, str]]]:
        """`rebuild_scores`, leaving out each score the index cannot take (as `rebuild_each`)."""
        return self.rebuild_scores(rows), []

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

    def query_sorted(
        self, run_filter: RunFilter, sort: RunSort = "started", descending: bool = True
    ) -> list[IndexedRun]:
        """Runs matching `run_filter` sorted by `sort` (runs without a value last), ties by
        id in the same direction, paged by its `limit` and `offset`: a page of the viewer's
        runs list.

        This default sorts every match in Python; a backend orders them in its query.
        """
        if sort not in RUN_SORTS:
            raise ValueError(f"unknown sort {sort!r}: choose from {', '.join(RUN_SORTS)}")
        runs = self.query(replace(run_filter, limit=None, offset=0))
        attribute = "started_at" if sort == "started" else sort
        present = [run for run in runs if getattr(run, attribute) is not None]
        present.sort(key=lambda run: (getattr(run, attribute), run.run_id), reverse=descending)
        ordered = present + sorted(
            (run for run in runs if getattr(run, attribute) is None),
            key=lambda run: run.run_id,
            reverse=descending,
        )
        end = None if run_filter.limit is None else run_filter.offset + run_filter.limit
        return ordered[run_filter.offset : end]

    def judge_ids(self) -> list[str]:
        """Every judge that scored some run, sorted (what a form offers to choose from).

        This default tallies every judge's scores; a backend only lists the ids.
        """
        return sorted(tally.judge_id for tally in self.judges_of(RunFilter()))

    def newest_judge(self, run_filter: RunFilter, kind: str) -> str | None:
        """The judge of `kind` (rules, llm, ...) whose newest score of the matching runs is the
        latest, on a tie the largest id: the first of that kind `judges_of` lists; None when
        no judge of that kind scored them.

        This default tallies every judge's scores; a backend finds that one score.
        """
        return next((t.judge_id for t in self.judges_of(run_filter) if t.kind == kind), None)

    def verdicts_of(self, run_ids: Sequence[str]) -> list[RunVerdict]:
        """Every score of the runs `run_ids`, in brief, sorted by run id, then oldest first
        (by the journal).

        This default reads each run's scores one by one; a backend reads them in one query.
        """
        from agentledger.records.scores import shown_verdict

        found = []
        for run_id in sorted(set(run_ids)):
            for text in self.scores_of(run_id):
                score = json.loads(text)
                found.append(
                    RunVerdict(
                        run_id,
                        score["judge_id"],
                        score["judge"]["kind"],
                        shown_verdict(score["verdict"], score.get("criteria") or []),
                    )
                )
        return found

    def current_labels_of(self, run_ids: Sequence[str]) -> list[LabelResult]:
        """The current labels of the runs `run_ids`, in brief, as `current_label_results`
        orders them.

        This default filters every current label; a backend selects the runs in its query.
        """
        wanted = set(run_ids)
        return [label for label in self.current_label_results() if label.run_id in wanted]

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

    def get_many(self, run_ids: Sequence[str]) -> dict[str, IndexedRun]:
        """The runs of `run_ids` by id (ids not indexed left out).

        This default looks each one up; a backend reads them in a few queries."""
        found = {run_id: self.get(run_id) for run_id in dict.fromkeys(run_ids)}
        return {run_id: run for run_id, run in found.items() if run is not None}

    @abstractmethod
    def ids_with_prefix(self, prefix: str, limit: int = 10) -> list[str]:
        """Run ids starting with `prefix`, sorted (for unambiguous short ids)."""

    @abstractmethod
    def distinct(self, dimension: Dimension) -> list[str]:
        """Every value of `dimension` some run has, sorted (None left out)."""

    @abstractmethod
    def run_rows(self) -> dict[str, tuple[RunColumns, dict[str, str]]]:
        """run_id -> (every column of its row, its tags), for every indexed run: what `verify`
        compares with the records."""

    @abstractmethod
    def score_rows(self) -> list[ScoreRow]:
        """Every indexed score as the index holds it (criteria in no set order), sorted
        by run id and judge id."""

    @abstractmethod
    def manifest_hashes(self) -> dict[str, str]:
        """run_id -> sha256 of its MANIFEST.json, for every indexed run."""

    # -- scores ----------------------------------------------------------------------------

    @abstractmethod
    def judges_of(self, run_filter: RunFilter) -> list[JudgeTally]:
        """Every judge that scored some of the matching runs, newest score first."""

    @abstractmethod
    def verdict_counts(
        self,
        run_filter: RunFilter,
        judge_ids: Sequence[str],
        by: Sequence[Dimension] = (),
        *,
        diagnosis: bool = True,
    ) -> list[VerdictCount]:
        """Scored runs per (group of `by`, verdict, diagnosis), sorted by those values.

        `diagnosis=False` leaves diagnosis out of the groups (every count's `diagnosis` is
        None): fewer groups for a caller that counts verdicts only, such as drift's series.
        """

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
    def run_facets(self, run_filter: RunFilter) -> RunFacets:
        """Model, scenario and kind of every matching run, column by column, sorted by run
        id."""

    @abstractmethod
    def score_ratings(self, run_filter: RunFilter, judge_ids: Sequence[str]) -> Ratings:
        """The chosen score of every matching run that has one, column by column, sorted by
        run id: the score's verdict as stored (``skipped`` included) and its criteria."""

    @abstractmethod
    def scores_of(self, run_id: str) -> list[str]:
        """The JSON of every indexed score of `run_id`, oldest first (by the journal)."""

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
        """The JSON of every indexed label of `run_id`, oldest first (by the journal)."""

    @abstractmethod
    def current_label_results(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[LabelResult]:
        """`current_labels` in brief, from the index's columns (for agreement over many
        runs); the same selection and order."""

    @abstractmethod
    def label_ratings(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> Ratings:
        """`current_label_results` column by column, one row per run: of each run's current
        labels (one kind, one source name when given) the newest, that is the last one
        `current_label_results` gives; sorted by run id."""

    @abstractmethod
    def current_labels(
        self, source_kind: str | None = None, source_name: str | None = None
    ) -> list[str]:
        """The JSON of the current label of each (run, source), of one kind (person,
        external) and one source name when given; sorted by run id, then oldest first (by the
        journal)."""

    @abstractmethod
    def label_rows(self) -> list[LabelRow]:
        """Every indexed label as the index holds it, its `current` flag included (criteria
        in no set order), sorted by label id: what `verify` compares with the records."""

    @abstractmethod
    def label_ids(self) -> set[str]:
        """The id of every indexed label (gc compares them with the files)."""

    # -- decisions -------------------------------------------------------------------------

    @abstractmethod
    def add_decisions(self, rows: Sequence[DecisionRow]) -> None:
        """Index decisions (one already indexed is replaced by the same one)."""

    @abstractmethod
    def rebuild_decisions(self, rows: Iterable[DecisionRow]) -> int:
        """Replace every indexed decision with `rows` (reindex); return how many."""

    @abstractmethod
    def decision_ids(self) -> set[str]:
        """The id of every indexed decision (gc compares them with the files)."""

    @abstractmethod
    def decisions(
        self, kind: str | None = None, subject: str | None = None, run_id: str | None = None
    ) -> list[str]:
        """The JSON of the indexed decisions of `kind`, about `subject`, that read run
        `run_id` (each when given), oldest first (by the journal)."""

    # -- outcomes --------------------------------------------------------------------------

    @abstractmethod
    def add_outcomes(self, rows: Sequence[OutcomeRow]) -> None:
        """Index measured outcomes (one already indexed is replaced by the same one)."""

    @abstractmethod
    def rebuild_outcomes(self, rows: Iterable[OutcomeRow]) -> int:
        """Replace every indexed outcome with `rows` (reindex); return how many."""

    @abstractmethod
    def outcome_ids(self) -> set[str]:
        """The id of every indexed outcome (gc compares them with the files)."""

    @abstractmethod
    def outcomes(self, run_ids: Sequence[str] | None = None, *, latest: bool = False) -> list[str]:
        """The JSON of the indexed outcomes of `run_ids` (default: of every run), sorted by
        run id, then oldest first (by the journal); with `latest`, only the newest
        outcome of each run, the one that stands for it."""

    @abstractmethod
    def record_positions(self) -> dict[str, int | None]:
        """The journal position every indexed score, label, decision and outcome holds, by
        the storage key of its record (a decision: its decision.json); None for a row
        indexed before the index kept positions (m013, m015), until a reindex fills it in:
        what `verify` holds to the journal, for every kind alike."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""
