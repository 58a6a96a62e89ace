"""The review queue, and what a person sees of a run before labelling it.

A run waits for a person when a judge refused it (self-judging: the score is `skipped`), when
judges of the same criteria pack disagree on its verdict (two packs judge different things:
their verdicts differing is no disagreement), or when nobody has labelled it; a current label by a
person takes it out of the queue. Refused runs come first, then disagreements, then the
unlabelled, each newest first.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from agentledger.errors import RunNotFoundError
from agentledger.records import decode_json
from agentledger.records.labels import Label
from agentledger.records.scores import Score, unscored_reason
from agentledger.records.trace import TRACE
from agentledger.store.index import IndexedRun, RunFilter

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "QueueItem",
    "QueuePage",
    "RunBrief",
    "TraceSummary",
    "review_queue",
    "review_queue_page",
    "run_brief",
]

Why = Literal["refused", "disagreement", "unlabelled"]
_ORDER: dict[str, int] = {"refused": 0, "disagreement": 1, "unlabelled": 2}


@dataclass(frozen=True)
class QueueItem:
    """A run waiting for a person, and why it is there (one reason or several)."""

    run_id: str
    model: str
    scenario: str
    reasons: tuple[Why, ...]
    detail: tuple[str, ...]
    """One line per reason: which judge refused and why, which judges said what."""
    skipped_reason: str | None = None
    """Why the first judge that refused the run refused it."""


def _refusal(judge_id: str, reason: str | None) -> str:
    # An unscored score (the judge's answer could not be read) waits here too, said as such.
    if reason and "unscored:" in reason:
        return f"{judge_id} could not score it: {reason}"
    return f"{judge_id} refused: {reason or 'no reason'}"


@dataclass(frozen=True)
class QueuePage:
    """A window of the review queue, and what the whole queue holds."""

    items: list[QueueItem]
    total: int
    """Runs in the whole queue."""
    counts: dict[str, int]
    """Runs in the whole queue for each reason (a run may have two)."""


def _before(a: IndexedRun, b: IndexedRun) -> bool:
    """Whether `a` comes before `b` in a group of the queue (and in the index's `query`):
    newest first, runs without a start last, then by id."""
    if (a.started_at is None) != (b.started_at is None):
        return b.started_at is None
    if a.started_at != b.started_at:
        return (a.started_at or "") > (b.started_at or "")
    return a.run_id < b.run_id


_NO_VERDICT = ("skipped", "not-applicable")


def _disagreements(ledger: Ledger, run_ids: list[str]) -> dict[str, str]:
    """The runs of `run_ids` on which judges of one criteria pack give different verdicts,
    each with what they said (``pack: judge_id Verdict; judge_id Verdict``). Judges of two
    packs judge different criteria: their verdicts differing is no disagreement. Refusals,
    runs a pack does not apply to, and unscored answers say nothing either way."""
    found: dict[str, str] = {}
    for run_id in run_ids:
        by_pack: dict[str, dict[str, str]] = {}
        for score in map(json.loads, ledger.index.scores_of(run_id)):
            verdict = score.get("verdict")
            if verdict in _NO_VERDICT or unscored_reason(verdict, score.get("criteria") or []):
                continue
            pack = str((score.get("judge") or {}).get("pack") or "?")
            by_pack.setdefault(pack, {})[str(score.get("judge_id"))] = str(verdict)
        split = [
            f"{pack}: " + "; ".join(f"{judge} {verdict}" for judge, verdict in sorted(said.items()))
            for pack, said in sorted(by_pack.items())
            if len(set(said.values())) > 1
        ]
        if split:
            found[run_id] = " | ".join(split)
    return found


def _flagged(
    ledger: Ledger, kinds: tuple[str, ...], allowed: set[str] | None = None
) -> list[tuple[QueueItem, IndexedRun]]:
    """The runs of `kinds` a judge refused or whose judges disagree, that no person has
    labelled: refused first, then disagreements, each newest first. They are few (each
    needs a score), so they are built whole."""
    people = {run.run_id for run in ledger.runs(RunFilter(label_source="human"))}
    details: dict[str, list[tuple[Why, str]]] = {}
    refused: dict[str, str | None] = {}
    for skipped in ledger.index.skipped_scores():
        if skipped.run_id not in people and (allowed is None or skipped.run_id in allowed):
            refused.setdefault(skipped.run_id, skipped.skipped_reason)
            details.setdefault(skipped.run_id, []).append(
                ("refused", _refusal(skipped.judge_id, skipped.skipped_reason))
            )
    disagreeing = [
        run_id
        for run_id in ledger.index.disagreeing_runs()
        if run_id not in people and (allowed is None or run_id in allowed)
    ]
    for run_id, said in _disagreements(ledger, disagreeing).items():
        details.setdefault(run_id, []).append(("disagreement", said))
    runs = ledger.index.get_many(list(details))
    items: list[tuple[int, str, str, QueueItem, IndexedRun]] = []
    for run_id, reasons in details.items():
        run = runs.get(run_id)
        if run is None or (kinds and run.kind not in kinds):
            continue
        item = QueueItem(
            run_id=run_id,
            model=run.model,
            scenario=run.scenario,
            reasons=tuple(dict.fromkeys(why for why, _ in reasons)),
            detail=tuple(text for _, text in reasons),
            skipped_reason=refused.get(run_id),
        )
        items.append((_ORDER[item.reasons[0]], run.started_at or "", run_id, item, run))
    # Each group newest first (runs without a start last), then by id.
    items.sort(key=lambda entry: entry[2])
    items.sort(key=lambda entry: entry[1], reverse=True)
    items.sort(key=lambda entry: (entry[0], entry[1] == ""))
    return [(entry[3], entry[4]) for entry in items]


def _unlabelled_item(run: IndexedRun) -> QueueItem:
    return QueueItem(
        run_id=run.run_id,
        model=run.model,
        scenario=run.scenario,
        reasons=("unlabelled",),
        detail=("no person's label yet",),
    )


def review_queue_page(
    ledger: Ledger,
    *,
    offset: int = 0,
    limit: int | None = None,
    unlabelled: bool = True,
    kinds: tuple[str, ...] = ("agent",),
    run_filter: RunFilter | None = None,
) -> QueuePage:
    """The queue of `review_queue` from `offset`, at most `limit` runs (all with None);
    with `run_filter`, only the runs it selects (by model, scenario, tag, ...).

    The unlabelled runs are paged in the index, never all loaded: of them, only those also
    refused or disagreed on (listed once, with that reason) are looked at here, to find where
    the window starts among the rest.
    """
    chosen = replace(run_filter or RunFilter(), kinds=kinds, limit=None, offset=0)
    allowed = {run.run_id for run in ledger.runs(chosen)} if run_filter is not None else None
    flagged = _flagged(ledger, kinds, allowed)
    counts: Counter[str] = Counter(why for item, _ in flagged for why in item.reasons)
    end = None if limit is None else offset + limit
    items = [item for item, _ in flagged[offset:end]]
    if not unlabelled:
        return QueuePage(items, len(flagged), dict(counts))
    # Runs no person has labelled: an outside source's labels (a benchmark's checker, another
    # judge) are what a person reviews against, not a review.
    bare = replace(chosen, labelled=False, label_source="human")
    # Flagged runs have no person's label either: they are in `bare` too, skipped below.
    shown = [run for _item, run in flagged]
    shown_ids = {run.run_id for run in shown}
    rest = ledger.index.count(bare) - len(shown)
    if rest > 0:
        counts["unlabelled"] = rest
    total = len(flagged) + rest
    if limit is None:
        items += [_unlabelled_item(run) for run in ledger.runs(bare) if run.run_id not in shown_ids]
        return QueuePage(items, total, dict(counts))
    wanted = limit - len(items)
    start = max(0, offset - len(flagged))
    if wanted <= 0 or start >= rest:
        return QueuePage(items, total, dict(counts))
    # The rest's run of rank `start` lies at most len(shown) runs past the index's unlabelled
    # run at `start`: the shown runs before that one are as many ranks to make up, and each
    # shown run met on the way is skipped. One read of that stretch finds the window.
    stretch = ledger.index.query(replace(bare, limit=wanted + len(shown), offset=start))
    if stretch:
        rank = start - sum(1 for run in shown if _before(run, stretch[0]))
        for run in stretch:
            if run.run_id in shown_ids:
                continue
            if rank >= start:
                items.append(_unlabelled_item(run))
                if len(items) == limit:
                    break
            rank += 1
    return QueuePage(items, total, dict(counts))


def review_queue(
    ledger: Ledger,
    *,
    unlabelled: bool = True,
    kinds: tuple[str, ...] = ("agent",),
    run_filter: RunFilter | None = None,
) -> list[QueueItem]:
    """Every run of `kinds` (agent runs by default; empty for every kind) waiting for a
    person: refused first, then disagreements, then (with `unlabelled`) runs no one has
    labelled. `review_queue_page` gives a window of it without loading every run."""
    return review_queue_page(
        ledger, unlabelled=unlabelled, kinds=kinds, run_filter=run_filter
    ).items


@dataclass(frozen=True)
class TraceSummary:
    """A run's trace in a few numbers: steps by kind, and the commands it ran."""

    steps: int
    kinds: dict[str, int]
    commands: list[str]


@dataclass
class RunBrief:
    """Everything the walk-through shows of a run before asking for a label."""

    run: IndexedRun
    prompt: str | None
    report: str | None
    trace: TraceSummary | None
    scores: list[Score] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)

    @property
    def criteria(self) -> list[str]:
        """The criteria the run's judges assessed, in their order."""
        return list(dict.fromkeys(c.criterion for s in self.scores for c in s.criteria))


def _trace_summary(raw: bytes | None, shell: list[str]) -> TraceSummary | None:
    if raw is None:
        return TraceSummary(len(shell), {"command": len(shell)}, shell) if shell else None
    kinds: Counter[str] = Counter()
    commands: list[str] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        step = decode_json(line, TRACE, line=number)
        kind = str(step.get("kind", "other")) if isinstance(step, dict) else "other"
        kinds[kind] += 1
        if kind == "command" and isinstance(step, dict):
            command = step.get("command")
            if isinstance(command, str):
                commands.append(command)
    return TraceSummary(sum(kinds.values()), dict(sorted(kinds.items())), commands or shell)


def run_brief(ledger: Ledger, run_id: str) -> RunBrief:
    """What a person should see of run `run_id` (an exact id) before labelling it."""
    from agentledger.labels.store import labels_of_run
    from agentledger.store.evidence import load_run_evidence

    run = ledger.index.get(run_id)
    if run is None:
        raise RunNotFoundError(
            f"run {run_id} is sealed but not indexed yet: index it with `agentledger gc`"
        )
    evidence = load_run_evidence(ledger, run_id)
    log = evidence.shell_log
    shell = [command.command for command in log.commands] if log.commands else []
    return RunBrief(
        run=run,
        prompt=evidence.text("PROMPT.txt"),
        report=evidence.text("report.md"),
        trace=_trace_summary(evidence.read(TRACE), shell),
        scores=[Score.model_validate_json(text) for text in ledger.index.scores_of(run_id)],
        labels=labels_of_run(ledger, run_id),
    )
