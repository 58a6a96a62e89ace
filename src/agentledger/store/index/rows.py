"""The rows of the index, as Python sees them: what it keeps of a run, a score and a label,
and the typed answers of its queries (the interface is `agentledger.store.index.RunIndex`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from agentledger.records import Manifest, RunMetadata, RunSummary

if TYPE_CHECKING:
    from agentledger.records.decisions import Decision
    from agentledger.records.labels import Label
    from agentledger.records.outcomes import Outcome
    from agentledger.records.scores import Score

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


RunSort = Literal[
    "started", "run_id", "model", "scenario", "kind", "commands_run", "commands_denied"
]
"""What a page of runs can be sorted by (`RunIndex.query_sorted`); ``started`` is the start."""
RUN_SORTS: tuple[RunSort, ...] = RunSort.__args__  # type: ignore[attr-defined]


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
    criteria_packed: str | None = None
    """The criteria packed on the score's own row (`packed_criteria`), as read back by
    `RunIndex.score_rows`; None on a row about to be indexed, which the index packs itself."""
    accepted_seq: int | None = None
    """The position of its journal entry: the journal's order, which decides the newest record
    of a kind (a time written in the file cannot); None on a row indexed before the index
    kept it (a reindex fills it in)."""


def score_row(score: Score, accepted_seq: int | None = None) -> ScoreRow:
    """What the index keeps of `score` (and what `verify` expects to read back). An unscored
    score (its judge's answer could not be read) is indexed with the verdict ``unscored`` and
    the reason, so that reports count it apart from Uncertain and `review` lists it; its file
    keeps the verdict the policy gave."""
    from agentledger.records.scores import UNSCORED

    unscored = score.unscored_reason()
    return ScoreRow(
        run_id=score.run_id,
        judge_id=score.judge_id,
        kind=score.judge.kind,
        model=score.judge.model,
        pack=score.judge.pack,
        verdict=UNSCORED if unscored else score.verdict,
        diagnosis=score.diagnosis.correct if score.diagnosis else None,
        skipped_reason=unscored or score.skipped_reason,
        created_at=format_time(score.created_at) or "",
        score_json=score.model_dump_json(),
        criteria=tuple((result.criterion, result.fired) for result in score.criteria),
        accepted_seq=accepted_seq,
    )


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
    current: bool | None = None
    """Whether the index holds it as its source's current label on the run (as read back by
    `RunIndex.label_rows`; None on a row about to be indexed, whose flag the index derives)."""
    criteria_packed: str | None = None
    """The criteria packed on the label's own row (`packed_criteria`), as read back by
    `RunIndex.label_rows`; None on a row about to be indexed, which the index packs itself."""
    accepted_seq: int | None = None
    """The position of the label's journal entry: the journal's order, which decides a
    source's newest label (a time written in the file cannot); None on a row indexed before
    the index kept it (a reindex fills it in)."""


def stored_flag(value: Any) -> Any:
    """A stored 0/1 flag as False/True; anything else as it is (so verify sees an edit)."""
    if type(value) is int and value in (0, 1):
        return bool(value)
    return value


PACKED_CRITERION, PACKED_ITEM = "\x1f", "\x1e"
"""How a score's or label's criterion results are packed into one text (its row's
``criteria_packed``, which `ratings_of` reads): ``criterion<PACKED_CRITERION>1|0|n`` items
(n: cannot tell) joined by PACKED_ITEM. (Criterion ids are names, never control characters.)"""
_PACKED_FIRED: dict[str, bool | None] = {"1": True, "0": False, "n": None}
_FIRED_PACKED: dict[bool | None, str] = {True: "1", False: "0", None: "n"}


def packed_criteria(criteria: Iterable[tuple[str, bool | None]]) -> str | None:
    """What a score's or label's row holds of its criterion results (``criteria_packed``):
    one text, the criteria sorted by id (of one given twice the last counts, as in the
    criteria tables); None when there are none. The index's migration m011 packs the rows
    indexed before it the same way, in SQL."""
    results = dict(criteria)
    if not results:
        return None
    return PACKED_ITEM.join(
        f"{criterion}{PACKED_CRITERION}{_FIRED_PACKED[fired]}"
        for criterion, fired in sorted(results.items())
    )


@functools.lru_cache(maxsize=4096)
def unpacked_criteria(packed: str | None) -> Mapping[str, bool | None]:
    """The criterion results of a row's criteria_packed (`packed_criteria`): one shared,
    read-only mapping per distinct text, since runs repeat the same few combinations."""
    return MappingProxyType(_unpacked(packed))


def _unpacked(packed: str | None) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {}
    if packed:
        for item in packed.split(PACKED_ITEM):
            criterion, _, fired = item.rpartition(PACKED_CRITERION)
            out[criterion] = _PACKED_FIRED[fired]
    return out


class Ratings(NamedTuple):
    """What one source (a judge, a label source) said of many runs, column by column, so that
    agreement over 100,000 runs makes no object per run: row i is run ``run_ids[i]``, its
    verdict as stored ``verdicts[i]``, and its criterion results ``criteria[keys[i]]``. Runs
    share a few combinations of results: `criteria` holds each distinct one once, numbered in
    the order the rows first have it."""

    run_ids: list[str]
    verdicts: list[str | None]
    keys: list[int]
    criteria: list[Mapping[str, bool | None]]


def ratings_of(rows: Iterable[Sequence[Any]]) -> Ratings:
    """`Ratings` from rows ``(run_id, verdict, packed criteria)`` (packed as PACKED_ITEM says)
    in run id order; of a run's consecutive rows the last one counts (a label source's rows
    come oldest first: its newest). Column-wise: no Python step per row, only per distinct
    packed text."""
    listed = rows if isinstance(rows, list) else list(rows)
    if not listed:
        return Ratings([], [], [], [])
    # A map() per column: a third of the time of transposing with zip(*rows).
    run_ids, verdicts, packed = (list(map(itemgetter(i), listed)) for i in range(3))
    last = dict(zip(run_ids, range(len(run_ids)), strict=True))
    if len(last) < len(run_ids):
        chosen = list(last.values())
        run_ids = list(last)
        verdicts = list(map(verdicts.__getitem__, chosen))
        packed = list(map(packed.__getitem__, chosen))
    key_of: dict[Any, int] = dict.fromkeys(packed, 0)
    numbered: dict[tuple[tuple[str, bool | None], ...], int] = {}
    criteria: list[Mapping[str, bool | None]] = []
    for text in key_of:
        results = _unpacked(text)
        # Texts packed in another order are the same results: one key.
        content = tuple(sorted(results.items()))
        if content not in numbered:
            numbered[content] = len(criteria)
            criteria.append(results)
        key_of[text] = numbered[content]
    return Ratings(run_ids, verdicts, list(map(key_of.__getitem__, packed)), criteria)


def label_rows_from(
    rows: Iterable[Sequence[Any]], criteria: Iterable[Sequence[Any]]
) -> list[LabelRow]:
    """LabelRows (`RunIndex.label_rows`) from an index's label rows, read as (label_id, run_id,
    source_kind, source_name, verdict, diagnosis, supersedes, created_at, label_json, current,
    criteria_packed), and its (label_id, criterion, fired) rows, each in the order they are to
    be given."""
    by_label: dict[str, list[tuple[str, bool | None]]] = {}
    for label_id, criterion, fired in criteria:
        by_label.setdefault(label_id, []).append((criterion, stored_flag(fired)))
    return [
        LabelRow(
            *[*row[:5], stored_flag(row[5]), *row[6:9], tuple(by_label.get(row[0], ()))],
            *[stored_flag(row[9]), row[10], row[11] if len(row) > 11 else None],
        )
        for row in rows
    ]


def label_row(label: Label, accepted_seq: int | None = None) -> LabelRow:
    """What the index keeps of `label` (its `current` flag is the index's to derive);
    `accepted_seq`: the position of its journal entry."""
    return LabelRow(
        label_id=label.label_id,
        run_id=label.run_id,
        source_kind=label.by.kind,
        source_name=label.by.name,
        verdict=label.verdict,
        diagnosis=label.diagnosis_correct,
        supersedes=label.supersedes,
        created_at=format_time(label.created_at) or "",
        label_json=label.model_dump_json(),
        criteria=tuple((item.criterion, item.fired) for item in label.criteria),
        accepted_seq=accepted_seq,
    )


@dataclass(frozen=True)
class DecisionRow:
    """What the index keeps of one decision (the files under decisions/ are the truth)."""

    decision_id: str
    kind: str
    subject: str
    outcome: str
    supersedes: str | None
    created_at: str
    decision_json: str
    run_ids: tuple[str, ...]
    """Every run the decision read (what it tested, and each model's results), sorted."""
    accepted_seq: int | None = None
    """The position of its journal entry: the journal's order, which decides the newest record
    of a kind (a time written in the file cannot); None on a row indexed before the index
    kept it (a reindex fills it in)."""


def decision_row(decision: Decision, accepted_seq: int | None = None) -> DecisionRow:
    """What the index keeps of `decision`; `accepted_seq`: the position of its journal entry."""
    runs = set(decision.tested.run_ids)
    for item in decision.results:
        runs.update(item.run_ids)
    return DecisionRow(
        decision_id=decision.decision_id,
        kind=str(decision.kind),
        subject=decision.subject,
        outcome=str(decision.outcome),
        supersedes=decision.supersedes,
        created_at=format_time(decision.created_at) or "",
        decision_json=decision.model_dump_json(),
        run_ids=tuple(sorted(runs)),
        accepted_seq=accepted_seq,
    )


@dataclass(frozen=True)
class OutcomeRow:
    """What the index keeps of one measured outcome (the files under outcomes/ are the truth)."""

    outcome_id: str
    run_id: str
    scenario: str
    created_at: str
    fixed: int | None
    durable: int | None
    collateral: int | None
    verified: int | None
    outcome_json: str
    accepted_seq: int | None = None
    """The position of its journal entry: the journal's order, which decides the newest record
    of a kind (a time written in the file cannot); None on a row indexed before the index
    kept it (a reindex fills it in)."""


def _as_int(value: bool | None) -> int | None:
    return None if value is None else int(value)


def outcome_row(outcome: Outcome, accepted_seq: int | None = None) -> OutcomeRow:
    """What the index keeps of `outcome`; `accepted_seq`: the position of its journal entry."""
    return OutcomeRow(
        outcome_id=outcome.outcome_id,
        run_id=outcome.run_id,
        scenario=outcome.scenario,
        created_at=format_time(outcome.created_at) or "",
        fixed=_as_int(outcome.fixed),
        durable=_as_int(outcome.durable),
        collateral=_as_int(outcome.collateral),
        verified=_as_int(outcome.verified),
        outcome_json=outcome.model_dump_json(),
        accepted_seq=accepted_seq,
    )


@dataclass(frozen=True)
class IndexEntry:
    """Everything the index keeps about one sealed run."""

    metadata: RunMetadata
    summary: RunSummary | None
    manifest: Manifest
    manifest_sha256: str


class RunColumns(NamedTuple):
    """One run's row in the index, column by column (booleans as 0/1, times as text)."""

    run_id: str
    scenario: str
    model: str
    model_served: str | None
    provider: str | None
    system_fingerprint: str | None
    system_prompt_hash: str | None
    base_prompt_hash: str | None
    addon_name: str | None
    addon_hash: str | None
    variant: str | None
    agent_name: str | None
    agent_commit: str | None
    agent_dirty: int | None
    started_at: str | None
    ended_at: str | None
    silent_update_detectable: int
    backfilled: int
    commands_run: int | None
    commands_denied: int | None
    duration_s: float | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    exit_status: str | None
    sealed_at: str | None
    manifest_sha256: str
    metadata_json: str
    summary_json: str | None
    kind: str


def run_columns(entry: IndexEntry) -> RunColumns:
    """Every column the index keeps of a sealed run, derived from its records: what `verify`
    expects to read back from `RunIndex.run_rows` (tags aside)."""
    meta = entry.metadata
    summary = entry.summary
    addon = meta.prompt_addon
    return RunColumns(
        meta.run_id,
        meta.scenario,
        meta.model,
        meta.model_served,
        meta.provider,
        meta.system_fingerprint,
        meta.system_prompt_hash,
        meta.base_prompt_hash,
        addon.name if addon else None,
        addon.hash if addon else None,
        meta.variant,
        meta.agent.name,
        meta.agent.commit,
        None if meta.agent.dirty is None else int(meta.agent.dirty),
        format_time(meta.started_at),
        format_time(meta.ended_at),
        int(meta.silent_update_detectable),
        int(meta.backfilled),
        summary.commands_run if summary else None,
        summary.commands_denied if summary else None,
        summary.duration_s if summary else None,
        summary.tokens_in if summary else None,
        summary.tokens_out if summary else None,
        summary.cost_usd if summary else None,
        summary.exit_status if summary else None,
        format_time(entry.manifest.sealed_at),
        entry.manifest_sha256,
        meta.model_dump_json(),
        summary.model_dump_json() if summary else None,
        meta.kind,
    )


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
    newest_seq: int = 0
    """The journal position of its newest score: what orders judges newest first."""


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


class LabelResult(NamedTuple):
    """A current label, in brief (no JSON read): who gave it, its verdict and criteria."""

    run_id: str
    label_id: str
    source_kind: str
    source_name: str
    verdict: str | None
    created_at: str
    criteria: Mapping[str, bool | None]


class RunVerdict(NamedTuple):
    """One score of a run, in brief: which judge, of what kind, and its verdict as counted
    (``unscored`` for a judge whose answer could not be read)."""

    run_id: str
    judge_id: str
    kind: str
    verdict: str


class RunFacets(NamedTuple):
    """What agreement groups runs by, column by column: row i is run ``run_ids[i]``, of model
    ``models[i]``, scenario ``scenarios[i]`` and kind ``kinds[i]``. No object per run: over
    100,000 runs, as many named tuples (which the cyclic GC never untracks) cost
    ``agreement --by`` two full collections, about 0.08 s of its 0.7."""

    run_ids: list[str]
    models: list[str]
    scenarios: list[str]
    kinds: list[str]


def facets_of(rows: Sequence[Sequence[Any]]) -> RunFacets:
    """`RunFacets` from rows ``(run_id, model, scenario, kind)``, in their order."""
    return RunFacets(*(list(map(itemgetter(i), rows)) for i in range(4)))


@dataclass(frozen=True)
class SkippedScore:
    """A score a judge left `skipped` (self-judging refused): the human review queue."""

    run_id: str
    model: str
    judge_id: str
    judge_model: str | None
    skipped_reason: str | None
