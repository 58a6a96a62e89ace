"""Drift: verdict rates over time and across identity changes, and when they moved.

For each model, the runs are grouped three ways: by system prompt hash, by model served, and by
ISO week of their start; groups are ordered by their first run. Between two consecutive groups
of a model, a change of the Unsafe or Safe share is *flagged* when the two 95% Wilson intervals
do not overlap (see `agentledger.analysis.stats`).

It also answers two questions: when a criterion first fired on each model (`criterion`), and a
model's verdicts before and after a prompt hash (`before_after`): "before" is the model's runs
on other hashes that started before its first run on that hash, "after" its runs on the hash;
Fisher's exact test on the Unsafe share compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from itertools import pairwise
from typing import Any

from agentledger.analysis.select import ReportHead, Selection, short_hash
from agentledger.analysis.stats import TestResult, fisher_test, intervals_disjoint
from agentledger.analysis.verdicts import VERDICTS, VerdictCounts
from agentledger.errors import InputError
from agentledger.identity import normalize_hash_prefix

__all__ = [
    "DIMENSIONS",
    "BeforeAfter",
    "Change",
    "DriftReport",
    "FirstFiring",
    "drift_report",
]

DIMENSIONS = ("prompt", "served", "week")
"""System prompt hash, model served, ISO week of the run's start."""
WATCHED = ("Unsafe", "Safe")


@dataclass(frozen=True)
class Change:
    """A move of a verdict's share between two consecutive groups, beyond the intervals."""

    dimension: str
    model: str
    before: str
    after: str
    verdict: str
    before_counts: VerdictCounts
    after_counts: VerdictCounts

    def sentence(self) -> str:
        a, b = self.before_counts.rate(self.verdict), self.after_counts.rate(self.verdict)
        return (
            f"{self.model}: {self.verdict} {a.percent()} ({a.k}/{a.n}) at {self.before} -> "
            f"{b.percent()} ({b.k}/{b.n}) at {self.after} ({self.dimension}); the intervals "
            "do not overlap"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "model": self.model,
            "before": self.before,
            "after": self.after,
            "verdict": self.verdict,
            "before_rate": self.before_counts.rate(self.verdict).to_json(),
            "after_rate": self.after_counts.rate(self.verdict).to_json(),
        }


@dataclass(frozen=True)
class FirstFiring:
    """When a criterion first fired on a model (None when it never did)."""

    model: str
    started_at: str | None
    run_id: str | None
    prompt_hash: str | None
    firings: int
    assessed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "first_fired_at": self.started_at,
            "run_id": self.run_id,
            "prompt_hash": self.prompt_hash,
            "firings": self.firings,
            "assessed": self.assessed,
        }


@dataclass(frozen=True)
class BeforeAfter:
    """One model's verdicts before and on a prompt hash."""

    model: str
    before: VerdictCounts
    after: VerdictCounts
    test: TestResult
    flagged: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "unsafe_test": self.test.to_json(),
            "flagged": list(self.flagged),
        }


@dataclass
class DriftReport:
    """Series by dimension and model, flagged changes, and the answers asked for."""

    head: ReportHead
    series: dict[str, dict[str, list[VerdictCounts]]]
    changes: list[Change]
    criterion: str | None = None
    first_firings: list[FirstFiring] = field(default_factory=list)
    prompt: str | None = None
    prompt_hashes: list[str] = field(default_factory=list)
    before_after: list[BeforeAfter] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "series": {
                dimension: {
                    model: [group.to_json() for group in groups]
                    for model, groups in by_model.items()
                }
                for dimension, by_model in self.series.items()
            },
            "changes": [change.to_json() for change in self.changes],
            "criterion": self.criterion,
            "first_firings": [first.to_json() for first in self.first_firings],
            "prompt": self.prompt,
            "prompt_hashes": list(self.prompt_hashes),
            "before_after": [entry.to_json() for entry in self.before_after],
        }


def iso_week(day: str) -> str:
    """``2026-W11`` for ``2026-03-12`` (ISO 8601: weeks start on Monday, W01 holds 4 January)."""
    year, week, _ = date.fromisoformat(day[:10]).isocalendar()
    return f"{year}-W{week:02d}"


def _cube(selection: Selection) -> list[tuple[Any, ...]]:
    """Verdicts by (model, prompt, served, day), in one pass; everything else derives from it."""
    return [
        (*count.keys, count.verdict, count.runs, count.first_started_at)
        for count in selection.verdict_counts(
            ("model", "system_prompt_hash", "model_served", "day"), diagnosis=False
        )
    ]


def _all_series(cube: list[tuple[Any, ...]]) -> dict[str, dict[str, list[VerdictCounts]]]:
    """The three series, summed from the cube."""
    groups: dict[str, dict[tuple[str, str], VerdictCounts]] = {name: {} for name in DIMENSIONS}
    weeks: dict[str, str] = {}  # a few hundred days, each on many rows of the cube
    for model, prompt, served, day, verdict, count, first in cube:
        week = (weeks.get(day) or weeks.setdefault(day, iso_week(day))) if day else None
        keys = {"prompt": prompt, "served": served, "week": week}
        for dimension, key in keys.items():
            name = "-" if key is None else str(key)
            entry = groups[dimension].get((model, name))
            if entry is None:
                entry = groups[dimension][(model, name)] = VerdictCounts(name)
            if verdict in entry.counts:
                entry.counts[verdict] += int(count)
            if first is not None:
                entry.first_seen = min(entry.first_seen or first, first)
    out: dict[str, dict[str, list[VerdictCounts]]] = {}
    for dimension, entries in groups.items():
        by_model: dict[str, list[VerdictCounts]] = {}
        for (model, _name), entry in entries.items():
            by_model.setdefault(model, []).append(entry)
        for series in by_model.values():
            series.sort(key=lambda e: (e.first_seen is None, e.first_seen or "", e.group))
        out[dimension] = dict(sorted(by_model.items()))
    return out


def _changes(dimension: str, series: dict[str, list[VerdictCounts]]) -> list[Change]:
    out: list[Change] = []
    for model, groups in series.items():
        for before, after in pairwise(groups):
            for verdict in WATCHED:
                if intervals_disjoint(before.rate(verdict), after.rate(verdict)):
                    out.append(
                        Change(dimension, model, before.group, after.group, verdict, before, after)
                    )
    return out


def _first_firings(selection: Selection, criterion: str) -> list[FirstFiring]:
    ids = selection.judge.judge_ids
    assessed = selection.index.criterion_firsts(selection.filter, ids, criterion)
    if not assessed:
        names = ", ".join(selection.index.criteria_of(ids)) or "none"
        raise InputError(
            f"unknown criterion {criterion!r}: the judge's scores of these runs have {names}"
        )
    return [
        FirstFiring(
            model=first.model,
            started_at=first.first_started_at,
            run_id=first.first_run_id,
            prompt_hash=first.first_prompt_hash,
            firings=first.fired,
            assessed=first.assessed,
        )
        for first in assessed
    ]


def _moment(text: str) -> datetime:
    """An index time (fixed-width UTC ISO 8601) or a UTC date as a datetime."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


Cube = list[tuple[Any, ...]]
"""Rows (model, prompt hash, model served, day, verdict, runs, first started_at)."""


def _before_after(
    selection: Selection, prompt: str, cube: Cube
) -> tuple[list[str], list[BeforeAfter]]:
    try:
        prefix = normalize_hash_prefix(prompt)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    on_prompt = [row for row in cube if row[1] and str(row[1]).startswith(prefix)]
    hashes = sorted({str(row[1]) for row in on_prompt})
    if not hashes:
        raise InputError(f"no scored run of the selection has prompt hash {prompt!r}")
    sides: dict[str, dict[str, VerdictCounts]] = {}

    def add(model: str, side: str, verdict: str, count: int) -> None:
        pair = sides.setdefault(
            model, {"before": VerdictCounts("before"), "after": VerdictCounts("after")}
        )
        if verdict in VERDICTS:
            pair[side].counts[verdict] += int(count)

    first_on: dict[str, str] = {}
    for model, _prompt, _served, _day, verdict, count, first in on_prompt:
        add(model, "after", verdict, count)
        if first is not None:
            first_on[model] = min(first_on.get(model, first), first)
    # Before: the model's runs on other hashes that started before its first run on the hash.
    # Whole days before that day come from the cube; that day itself needs the exact times.
    for model, prompt_hash, _served, day, verdict, count, _first in cube:
        t = first_on.get(model)
        off = not (prompt_hash and str(prompt_hash).startswith(prefix))
        if t is not None and off and day is not None and day < t[:10]:
            add(model, "before", verdict, count)
    for model, t in sorted(first_on.items()):
        since, until = _moment(t[:10]), _moment(t)
        own = selection.filter
        that_day = replace(
            own,
            models=(model,),
            since=max(since, own.since) if own.since else since,
            until=min(until, own.until) if own.until else until,
        )
        for count in selection.index.verdict_counts(
            that_day, selection.judge.judge_ids, ("system_prompt_hash",), diagnosis=False
        ):
            on_hash = count.keys[0] is not None and str(count.keys[0]).startswith(prefix)
            if not on_hash:
                add(model, "before", count.verdict, count.runs)
    out = []
    for model, pair in sorted(sides.items()):
        before, after = pair["before"], pair["after"]
        test = fisher_test(
            before.counts["Unsafe"], before.judged, after.counts["Unsafe"], after.judged
        )
        flagged = tuple(
            verdict
            for verdict in WATCHED
            if intervals_disjoint(before.rate(verdict), after.rate(verdict))
        )
        out.append(BeforeAfter(model, before, after, test, flagged))
    return hashes, out


def drift_report(
    selection: Selection, *, criterion: str | None = None, prompt: str | None = None
) -> DriftReport:
    """Drift over the selection; with `criterion` and `prompt` the two questions too."""
    head = selection.head("drift")
    cube = _cube(selection)
    series = _all_series(cube)
    changes = [change for name in DIMENSIONS for change in _changes(name, series[name])]
    report = DriftReport(head, series, changes)
    if criterion is not None:
        report.criterion = criterion
        report.first_firings = _first_firings(selection, criterion)
    if prompt is not None:
        report.prompt = prompt
        report.prompt_hashes, report.before_after = _before_after(selection, prompt, cube)
        if len(report.prompt_hashes) > 1:
            head.warnings.append(
                f"prompt {prompt!r} matches {len(report.prompt_hashes)} hashes "
                f"({', '.join(short_hash(h) for h in report.prompt_hashes)}): all count as after"
            )
    undated = sum(int(row[5]) for row in cube if not row[3])
    if undated:
        head.warnings.append(
            f"{undated} scored run(s) have no start time (their traces carry no times, or "
            "local times without a zone): they are in no ISO week (the week series' '-' "
            "group); local times are placed by importing them with --timezone"
        )
    groups = [g for by_model in series.values() for gs in by_model.values() for g in gs]
    if any(group.directional for group in groups):
        head.warnings.append(
            "a change is flagged only when the 95% intervals do not overlap; with few runs per "
            "group, real changes go unflagged (directional only)"
        )
    return report
