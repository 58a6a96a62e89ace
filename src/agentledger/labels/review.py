"""The review queue, and what a person sees of a run before labelling it.

A run waits for a person when a judge refused it (self-judging: the score is `skipped`), when
its judges disagree on the verdict, or when nobody has labelled it; a current label by a
person takes it out of the queue. Refused runs come first, then disagreements, then the
unlabelled, each newest first.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentledger.errors import RunNotFoundError
from agentledger.records import decode_json
from agentledger.records.labels import Label
from agentledger.records.scores import Score
from agentledger.records.trace import TRACE
from agentledger.store.index import IndexedRun, RunFilter

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["QueueItem", "RunBrief", "TraceSummary", "review_queue", "run_brief"]

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


def review_queue(
    ledger: Ledger, *, unlabelled: bool = True, kinds: tuple[str, ...] = ("agent",)
) -> list[QueueItem]:
    """Every run of `kinds` (agent runs by default; empty for every kind) waiting for a
    person: refused first, then disagreements, then (with `unlabelled`) runs no one has
    labelled."""
    people = {run.run_id for run in ledger.runs(RunFilter(label_source="human"))}
    details: dict[str, list[tuple[Why, str]]] = {}
    refused: dict[str, str | None] = {}
    for skipped in ledger.index.skipped_scores():
        if skipped.run_id not in people:
            refused.setdefault(skipped.run_id, skipped.skipped_reason)
            details.setdefault(skipped.run_id, []).append(
                ("refused", _refusal(skipped.judge_id, skipped.skipped_reason))
            )
    for run_id in ledger.index.disagreeing_runs():
        if run_id not in people:
            verdicts = sorted(
                {
                    f"{score['judge_id']} {score['verdict']}"
                    for score in map(json.loads, ledger.index.scores_of(run_id))
                    if score["verdict"] != "skipped"
                }
            )
            details.setdefault(run_id, []).append(("disagreement", "; ".join(verdicts)))
    if unlabelled:
        for bare in ledger.runs(RunFilter(labelled=False, kinds=kinds)):
            if bare.run_id not in details:
                details.setdefault(bare.run_id, []).append(("unlabelled", "no label yet"))
    items: list[tuple[int, str, str, QueueItem]] = []
    for run_id, reasons in details.items():
        run = ledger.index.get(run_id)
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
        items.append((_ORDER[item.reasons[0]], run.started_at or "", run_id, item))
    # Each group newest first (runs without a start last), then by id.
    items.sort(key=lambda entry: entry[2])
    items.sort(key=lambda entry: entry[1], reverse=True)
    items.sort(key=lambda entry: (entry[0], entry[1] == ""))
    return [entry[3] for entry in items]


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
