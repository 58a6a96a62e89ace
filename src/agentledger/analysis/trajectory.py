"""`report trajectory`: what each model's agents did step by step, with intervals.

Per model, over the selected runs (a run's trace.jsonl, or for runs without one the trace made
from its shell log):

- **actions**: agent steps that act (tool calls, commands, file reads and writes, browsing,
  code), median with a distribution-free 95% interval (order statistics of the binomial, so
  it needs no assumption on the distribution and is exact, `median_interval`);
- **actions to conclusion**: the actions taken before the run concluded. A run concludes at
  its first change attempted (a mutating or destructive command, run or denied, a file write
  or code: the agent had settled on a fix), else at its finish; runs with neither are counted
  apart. This is the conclusion of the `ran_before_conclusion` predicate, at step level;
- **mutating share**: actions that changed something (mutating or destructive commands that
  ran, file writes, code) of all actions, pooled over the model's runs, with its Wilson
  interval;
- **denied attempts**: commands the gate denied; runs with at least one (a share of runs, with
  its interval); and **retries**: a denied command followed later by an attempt of the same
  program at the same or a worse class, with how many of those retries then ran (the gate let
  the equivalent form through).

The criteria that fired are shown step by step: for each criterion of the chosen scores, the
first run of each model where it fired, with the steps its evidence cites and one step on
either side (`FiredTimeline`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentledger.analysis.criteria import criterion_order
from agentledger.analysis.select import ReportHead, Selection
from agentledger.analysis.stats import Rate
from agentledger.records.trace import TRACE, TraceStep, steps_from_shell_log

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "FiredTimeline",
    "Median",
    "ModelSteps",
    "RunSteps",
    "TrajectoryReport",
    "median_interval",
    "run_steps",
    "trajectory_report",
]

ACTIONS = frozenset({"tool_call", "command", "file_read", "file_write", "browse", "code"})
CHANGES = frozenset({"mutating", "destructive"})
TIMELINE_RUNS = 3
"""Fired criteria: the first firing of at most this many models each."""
TIMELINE_CONTEXT = 1
"""Steps shown either side of a cited step."""
_SEVERITY = {"read-only": 0, "unknown": 1, "mutating": 2, "destructive": 3}


@dataclass(frozen=True)
class RunSteps:
    """The step statistics of one run."""

    run_id: str
    model: str
    scenario: str
    steps: int
    actions: int
    to_conclusion: int | None
    """Actions before the conclusion (None: the run neither changed anything nor finished)."""
    concluded_by: str
    """``change``, ``finish`` or ``none``."""
    mutating: int
    denied: int
    retried: int
    """Denied commands followed by an attempt of the same program, at the same or worse class."""
    retried_ran: int
    """Of those, retries that ran (not denied)."""
    from_trace: bool
    """True when read from trace.jsonl; False when made from the shell log."""


def _class_of(step: TraceStep) -> str:
    if step.command_class and step.command_class.strip():
        return step.command_class.strip().lower()
    if step.command and step.command.strip():
        from agentledger.shell.classifier import classify

        return classify(step.command).kind
    return "unknown"


def _denied(step: TraceStep) -> bool:
    return step.gate is not None and step.gate.decision == "denied"


def _changes(step: TraceStep) -> bool:
    if step.kind in ("file_write", "code"):
        return True
    return step.kind == "command" and _class_of(step) in CHANGES


def run_steps(
    run_id: str, model: str, scenario: str, steps: Sequence[TraceStep], *, from_trace: bool
) -> RunSteps:
    """The step statistics of one run's trace."""
    from agentledger.judges.trajectory_match import program_of

    actions = [s for s in steps if s.actor == "agent" and s.kind in ACTIONS]
    to_conclusion: int | None = None
    concluded_by = "none"
    for position, step in enumerate(actions):
        if _changes(step):
            to_conclusion, concluded_by = position, "change"
            break
    if to_conclusion is None:
        finish = next((s.index for s in steps if s.kind == "finish"), None)
        if finish is not None:
            to_conclusion = sum(1 for s in actions if s.index < finish)
            concluded_by = "finish"
    mutating = sum(1 for s in actions if _changes(s) and not _denied(s))
    denied = [s for s in actions if _denied(s)]
    retried = retried_ran = 0
    for step in denied:
        program = program_of(step.command)
        if program is None:
            continue
        level = _SEVERITY.get(_class_of(step), 1)
        later = next(
            (
                s
                for s in actions
                if s.index > step.index
                and program_of(s.command) == program
                and _SEVERITY.get(_class_of(s), 1) >= level
            ),
            None,
        )
        if later is not None:
            retried += 1
            retried_ran += not _denied(later)
    return RunSteps(
        run_id,
        model,
        scenario,
        len(steps),
        len(actions),
        to_conclusion,
        concluded_by,
        mutating,
        len(denied),
        retried,
        retried_ran,
        from_trace,
    )


@dataclass(frozen=True)
class Median:
    """A median with its distribution-free 95% interval (None bounds: too few runs for one)."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def directional(self) -> bool:
        """Too few runs for a 95% interval, or fewer than 30 runs."""
        return self.n < 30 or self.low is None

    def text(self) -> str:
        if self.value is None:
            return "-"
        value = f"{self.value:g}"
        if self.low is None or self.high is None:
            return f"{value} [n<6]"
        return f"{value} [{self.low:g}-{self.high:g}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "median": self.value,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "directional": self.directional,
        }


def median_interval(values: Sequence[float], confidence: float = 0.95) -> Median:
    """The median and its order-statistic interval: the j-th and (n-j+1)-th smallest values,
    where j is the largest rank with P(B < j) <= (1 - confidence) / 2 for B ~ Binomial(n, 1/2).
    Its coverage is at least `confidence` whatever the distribution; below 6 values no such
    interval exists (bounds None)."""
    from scipy.stats import binom  # type: ignore[import-untyped]

    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return Median(None, None, None, 0)
    middle = n // 2
    value = ordered[middle] if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    tail = (1 - confidence) / 2
    j = int(binom.ppf(tail, n, 0.5))
    while j >= 1 and binom.cdf(j - 1, n, 0.5) > tail:
        j -= 1
    if j < 1:
        return Median(value, None, None, n)
    return Median(value, ordered[j - 1], ordered[n - j], n)


@dataclass(frozen=True)
class ModelSteps:
    """One model's step statistics over its selected runs."""

    model: str
    runs: int
    from_trace: int
    actions: Median
    to_conclusion: Median
    concluded: dict[str, int]
    mutating: Rate
    runs_with_denial: Rate
    denied: int
    retried: Rate
    """Denied attempts that were retried, of all denied attempts."""
    retried_ran: int

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "runs": self.runs,
            "runs_from_trace": self.from_trace,
            "actions": self.actions.to_json(),
            "actions_to_conclusion": self.to_conclusion.to_json(),
            "concluded_by": dict(self.concluded),
            "mutating_share": self.mutating.to_json(),
            "runs_with_denial": self.runs_with_denial.to_json(),
            "denied_attempts": self.denied,
            "retried_after_denial": self.retried.to_json(),
            "retries_that_ran": self.retried_ran,
        }


@dataclass(frozen=True)
class FiredTimeline:
    """A criterion's first firing on one model: the run, the reason and the steps cited."""

    criterion: str
    model: str
    run_id: str
    reason: str
    steps: list[TraceStep]
    """The cited steps and their neighbours, in order."""
    cited: list[int]

    def to_json(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "model": self.model,
            "run_id": self.run_id,
            "reason": self.reason,
            "cited_steps": list(self.cited),
            "steps": [step.model_dump(mode="json", exclude_none=True) for step in self.steps],
        }


@dataclass
class TrajectoryReport:
    """Step statistics per model, and the fired criteria step by step."""

    head: ReportHead
    models: list[ModelSteps]
    overall: ModelSteps | None
    runs: list[RunSteps]
    timelines: list[FiredTimeline] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "models": [entry.to_json() for entry in self.models],
            "all": self.overall.to_json() if self.overall else None,
            "fired_timelines": [timeline.to_json() for timeline in self.timelines],
        }


def _aggregate(name: str, runs: list[RunSteps]) -> ModelSteps:
    concluded = {"change": 0, "finish": 0, "none": 0}
    for run in runs:
        concluded[run.concluded_by] += 1
    denied = sum(r.denied for r in runs)
    return ModelSteps(
        model=name,
        runs=len(runs),
        from_trace=sum(r.from_trace for r in runs),
        actions=median_interval([r.actions for r in runs]),
        to_conclusion=median_interval(
            [r.to_conclusion for r in runs if r.to_conclusion is not None]
        ),
        concluded=concluded,
        mutating=Rate(sum(r.mutating for r in runs), sum(r.actions for r in runs)),
        runs_with_denial=Rate(sum(1 for r in runs if r.denied), len(runs)),
        denied=denied,
        retried=Rate(sum(r.retried for r in runs), denied),
        retried_ran=sum(r.retried_ran for r in runs),
    )


def _trace_of(ledger: Ledger, run_id: str) -> tuple[list[TraceStep] | None, bool]:
    from agentledger.store.evidence import load_run_evidence
    from agentledger.store.writer import PROMPT, REPORT

    evidence = load_run_evidence(ledger, run_id)
    if evidence.trace.steps is not None:
        return list(evidence.trace.steps), True
    events = evidence.shell_log.events
    if events is None:
        return None, False
    return steps_from_shell_log(evidence.text(PROMPT), events, evidence.text(REPORT)), False


def trajectory_report(selection: Selection, ledger: Ledger) -> TrajectoryReport:
    """Step statistics of the selected runs by model, and the fired criteria's timelines."""
    head = selection.head("trajectory")
    runs: list[RunSteps] = []
    unread: list[str] = []
    for indexed in selection.index.query(selection.filter):
        steps, stored = _trace_of(ledger, indexed.run_id)
        if steps is None:
            unread.append(indexed.run_id)
            continue
        runs.append(
            run_steps(indexed.run_id, indexed.model, indexed.scenario, steps, from_trace=stored)
        )
    by_model: dict[str, list[RunSteps]] = defaultdict(list)
    for run in runs:
        by_model[run.model].append(run)
    models = [_aggregate(model, by_model[model]) for model in sorted(by_model)]
    overall = _aggregate("all", runs) if runs else None
    derived = sum(not r.from_trace for r in runs)
    # The score-based "no score" warnings do not apply: step statistics need no judge.
    head.warnings = [w for w in head.warnings if "score" not in w]
    if unread:
        head.warnings.append(
            f"{len(unread)} run(s) have neither a trace nor a readable shell log: left out"
        )
    if derived:
        head.warnings.append(
            f"{derived} run(s) have no trace.jsonl: their steps are made from the shell log "
            "(commands and outputs only; no thoughts or tool calls)"
        )
    if any(entry.actions.directional for entry in models):
        head.warnings.append(
            "directional only: medians rest on few runs; below 6 runs a median has no 95% interval"
        )
    return TrajectoryReport(
        head=head,
        models=models,
        overall=overall,
        runs=runs,
        timelines=_timelines(selection, ledger),
    )


def _cited_steps(evidence: list[dict[str, Any]], steps: Sequence[TraceStep]) -> list[int]:
    """The trace steps a criterion's evidence points at (by trace line, or shell log line)."""
    by_log_line: dict[int, int] = {}
    command_steps = [s for s in steps if s.kind == "command" and s.command is not None]
    for number, command in enumerate(command_steps, start=1):
        source = command.source
        logged = source.line if source and source.file == "shell_audit.jsonl" else None
        by_log_line[logged if logged is not None else number] = command.index
    cited: list[int] = []
    for item in evidence:
        cited_step = item.get("step")  # evidence that names its step
        line = item.get("line")
        where = str(item.get("file") or "")
        index: int | None = None
        if isinstance(cited_step, int):
            index = cited_step
        elif where == TRACE and isinstance(line, int):
            index = line - 1
        elif where == "shell_audit.jsonl" and isinstance(line, int):
            index = by_log_line.get(line)
        elif where == "report.md":
            index = next((s.index for s in reversed(steps) if s.kind == "finish"), None)
        if index is not None and 0 <= index < len(steps) and index not in cited:
            cited.append(index)
    return sorted(cited)


def _timelines(selection: Selection, ledger: Ledger) -> list[FiredTimeline]:
    judge_ids = selection.judge.judge_ids
    if not judge_ids:
        return []
    out: list[FiredTimeline] = []
    criteria = sorted(selection.index.criteria_of(judge_ids), key=criterion_order)
    for criterion in criteria:
        firsts = selection.index.criterion_firsts(selection.filter, judge_ids, criterion)
        shown = 0
        for first in firsts:
            if first.first_run_id is None or shown >= TIMELINE_RUNS:
                continue
            result = _criterion_result(selection, first.first_run_id, criterion)
            steps, _stored = _trace_of(ledger, first.first_run_id)
            if result is None or steps is None:
                continue
            cited = _cited_steps(result.get("evidence") or [], steps)
            keep = {
                i
                for c in cited
                for i in range(c - TIMELINE_CONTEXT, c + TIMELINE_CONTEXT + 1)
                if 0 <= i < len(steps)
            }
            out.append(
                FiredTimeline(
                    criterion=criterion,
                    model=first.model,
                    run_id=first.first_run_id,
                    reason=str(result.get("reason") or ""),
                    steps=[steps[i] for i in sorted(keep)],
                    cited=cited,
                )
            )
            shown += 1
    return out


def _criterion_result(selection: Selection, run_id: str, criterion: str) -> dict[str, Any] | None:
    """The criterion's result in the run's newest score by the selection's judges."""
    chosen = None
    for raw in selection.index.scores_of(run_id):  # oldest first
        score = json.loads(raw)
        if score.get("judge_id") in selection.judge.judge_ids:
            chosen = score
    if chosen is None:
        return None
    for result in chosen.get("criteria") or []:
        if result.get("criterion") == criterion and result.get("fired"):
            found: dict[str, Any] = result
            return found
    return None
