"""The review queue, and what a person sees of a run before labelling it.

A run waits for a person when judges of the same criteria pack disagree on its verdict (two
packs judge different things: their verdicts differing is no disagreement), or outside sources'
labels do (a data set's checker and its LLM judge, both rating the run), when a judge refused
it (self-judging: the score is `skipped`), or when nobody has labelled it; a current label by a
person takes it out of the queue. What is most worth a person's time comes first: disagreements
(those where one judge says Safe and another Unsafe before the others), then refusals, then the
unlabelled, each newest first; last, the runs in which nothing ran (every judge skipped them:
the gated shell could start no command), where a label has nothing to rest on.
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

Why = Literal["disagreement", "refused", "unlabelled", "nothing-ran"]
_ORDER: dict[str, int] = {"disagreement": 0, "refused": 1, "unlabelled": 2, "nothing-ran": 3}
_NOTHING_RAN = "nothing ran:"
"""How a judge's skip of a run in which nothing ran opens (judges.scoring)."""


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
    if reason and reason.startswith(_NOTHING_RAN):
        return f"{judge_id} skipped it: {reason}"
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


def _disagreements(ledger: Ledger, run_ids: list[str]) -> dict[str, tuple[str, bool]]:
    """The runs of `run_ids` on which judges of one criteria pack give different verdicts,
    each with what they said (``pack: judge_id Verdict; judge_id Verdict``) and whether one
    said Safe and another Unsafe. Judges of two packs judge different criteria: their verdicts
    differing is no disagreement. Refusals, runs a pack does not apply to, and unscored
    answers say nothing either way."""
    found: dict[str, tuple[str, bool]] = {}
    for run_id in run_ids:
        by_pack: dict[str, dict[str, str]] = {}
        for score in map(json.loads, ledger.index.scores_of(run_id)):
            verdict = score.get("verdict")
            if verdict in _NO_VERDICT or unscored_reason(verdict, score.get("criteria") or []):
                continue
            pack = str((score.get("judge") or {}).get("pack") or "?")
            by_pack.setdefault(pack, {})[str(score.get("judge_id"))] = str(verdict)
        split = {
            pack: said for pack, said in sorted(by_pack.items()) if len(set(said.values())) > 1
        }
        if split:
            text = " | ".join(
                f"{pack}: "
                + "; ".join(f"{judge} {verdict}" for judge, verdict in sorted(said.items()))
                for pack, said in split.items()
            )
            opposite = any({"Safe", "Unsafe"} <= set(said.values()) for said in split.values())
            found[run_id] = (text, opposite)
    return found


def _outside_disagreements(ledger: Ledger) -> dict[str, tuple[str, bool]]:
    """The runs on which outside sources' current labels give different verdicts (a data
    set's checker against its LLM judge: two sources rating the same thing, the run's
    verdict), each with what they said (``labels: source Verdict; source Verdict``) and whether
    one said Safe and another Unsafe."""
    by_run: dict[str, dict[str, str]] = {}
    for label in ledger.index.current_label_results(source_kind="external"):
        if label.verdict is not None:
            by_run.setdefault(label.run_id, {})[label.source_name] = label.verdict
    return {
        run_id: (
            "labels: " + "; ".join(f"{name} {verdict}" for name, verdict in sorted(said.items())),
            {"Safe", "Unsafe"} <= set(said.values()),
        )
        for run_id, said in by_run.items()
        if len(set(said.values())) > 1
    }


def _flagged(
    ledger: Ledger, kinds: tuple[str, ...], allowed: set[str] | None = None
) -> list[tuple[QueueItem, IndexedRun]]:
    """The runs of `kinds` whose judges disagree, a judge refused, or in which nothing ran,
    that no person has labelled, in the queue's order (see the module): disagreements with a
    Safe and an Unsafe first, then the other disagreements, then refusals, each newest first;
    the runs in which nothing ran are the last group. They are few (each needs a score), so
    they are built whole."""
    people = {run.run_id for run in ledger.runs(RunFilter(label_source="human"))}
    details: dict[str, list[tuple[Why, str]]] = {}
    refused: dict[str, str | None] = {}
    for skipped in ledger.index.skipped_scores():
        if skipped.run_id not in people and (allowed is None or skipped.run_id in allowed):
            refused.setdefault(skipped.run_id, skipped.skipped_reason)
            why: Why = (
                "nothing-ran"
                if (skipped.skipped_reason or "").startswith(_NOTHING_RAN)
                else "refused"
            )
            details.setdefault(skipped.run_id, []).append(
                (why, _refusal(skipped.judge_id, skipped.skipped_reason))
            )
    disagreeing = [
        run_id
        for run_id in ledger.index.disagreeing_runs()
        if run_id not in people and (allowed is None or run_id in allowed)
    ]
    opposite: set[str] = set()
    found = _disagreements(ledger, disagreeing)
    for run_id, (said, split) in _outside_disagreements(ledger).items():
        if run_id not in people and (allowed is None or run_id in allowed):
            text, sharp = found.get(run_id, ("", False))
            found[run_id] = (f"{text} | {said}" if text else said, sharp or split)
    for run_id, (said, split) in found.items():
        details.setdefault(run_id, []).insert(0, ("disagreement", said))
        if split:
            opposite.add(run_id)
    runs = ledger.index.get_many(list(details))
    items: list[tuple[tuple[int, bool], str, str, QueueItem, IndexedRun]] = []
    for run_id, reasons in details.items():
        run = runs.get(run_id)
        if run is None or (kinds and run.kind not in kinds):
            continue
        whys = tuple(dict.fromkeys(why for why, _ in reasons))
        if "nothing-ran" in whys and len(whys) > 1:
            # Another judge refused it or judged it too: nothing ran in it all the same.
            whys = ("nothing-ran", *(why for why in whys if why != "nothing-ran"))
        item = QueueItem(
            run_id=run_id,
            model=run.model,
            scenario=run.scenario,
            reasons=whys,
            detail=tuple(text for _, text in reasons),
            skipped_reason=refused.get(run_id),
        )
        group = (_ORDER[whys[0]], run_id not in opposite)
        items.append((group, run.started_at or "", run_id, item, run))
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
    # The runs in which nothing ran go after every other, the unlabelled ones included.
    front = [entry for entry in flagged if entry[0].reasons[0] != "nothing-ran"]
    tail = [entry[0] for entry in flagged[len(front) :]]
    end = None if limit is None else offset + limit
    if not unlabelled:
        items = [item for item, _ in flagged[offset:end]]
        return QueuePage(items, len(flagged), dict(counts))
    items = [item for item, _ in front[offset:end]]
    # Runs no person has labelled: an outside source's labels (a benchmark's checker, another
    # judge) are what a person reviews against, not a review.
    bare = replace(chosen, labelled=False, label_source="human")
    # Flagged runs have no person's label either: they are in `bare` too, skipped below.
    shown = [run for _item, run in flagged]
    shown_ids = {run.run_id for run in shown}
    rest = ledger.index.count(bare) - len(shown)
    if rest > 0:
        counts["unlabelled"] = rest
    total = len(flagged) + max(rest, 0)
    if limit is None:
        items += [_unlabelled_item(run) for run in ledger.runs(bare) if run.run_id not in shown_ids]
        return QueuePage(items + tail, total, dict(counts))
    items += _unlabelled_window(
        ledger, bare, shown, max(0, offset - len(front)), limit - len(items), rest
    )
    wanted = limit - len(items)
    start = max(0, offset - len(front) - max(rest, 0))
    if wanted > 0:
        items += tail[start : start + wanted]
    return QueuePage(items, total, dict(counts))


def _unlabelled_window(
    ledger: Ledger, bare: RunFilter, shown: list[IndexedRun], start: int, wanted: int, rest: int
) -> list[QueueItem]:
    """At most `wanted` of the unlabelled runs not `shown` (already listed as flagged), from
    the one of rank `start` among them (`rest` in all)."""
    if wanted <= 0 or start >= rest:
        return []
    shown_ids = {run.run_id for run in shown}
    # The rest's run of rank `start` lies at most len(shown) runs past the index's unlabelled
    # run at `start`: the shown runs before that one are as many ranks to make up, and each
    # shown run met on the way is skipped. One read of that stretch finds the window.
    stretch = ledger.index.query(replace(bare, limit=wanted + len(shown), offset=start))
    items: list[QueueItem] = []
    if stretch:
        rank = start - sum(1 for run in shown if _before(run, stretch[0]))
        for run in stretch:
            if run.run_id in shown_ids:
                continue
            if rank >= start:
                items.append(_unlabelled_item(run))
                if len(items) == wanted:
                    break
            rank += 1
    return items


def review_queue(
    ledger: Ledger,
    *,
    unlabelled: bool = True,
    kinds: tuple[str, ...] = ("agent",),
    run_filter: RunFilter | None = None,
) -> list[QueueItem]:
    """Every run of `kinds` (agent runs by default; empty for every kind) waiting for a
    person: disagreements first, then refusals, then (with `unlabelled`) runs no one has
    labelled, and last the runs in which nothing ran. `review_queue_page` gives a window of it
    without loading every run."""
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
