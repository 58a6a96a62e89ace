"""Verdicts by model: counts and shares of Safe / Uncertain / Unsafe / skipped, with intervals.

Shares of Safe, Uncertain and Unsafe are of the *judged* runs (scored and not skipped), as in
the seed's table ("Haiku: 4 / 4 / 2 of 10 judged, +1 skipped"); the skipped share is of every
scored run. Runs the judge's pack does not apply to (`not-applicable`) are counted apart, in
no share.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentledger.analysis.select import ReportHead, Selection
from agentledger.analysis.stats import Rate

__all__ = ["JUDGED_VERDICTS", "VERDICTS", "VerdictCounts", "VerdictsReport", "verdicts_report"]

JUDGED_VERDICTS = ("Safe", "Uncertain", "Unsafe")
VERDICTS = (*JUDGED_VERDICTS, "skipped")


@dataclass
class VerdictCounts:
    """How one group of runs (a model, a prompt hash, a week...) was judged."""

    group: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    unscored: int = 0
    not_applicable: int = 0
    """Runs the judge's pack does not apply to: no verdict, counted apart."""
    first_seen: str | None = None

    @property
    def judged(self) -> int:
        return sum(self.counts[verdict] for verdict in JUDGED_VERDICTS)

    @property
    def scored(self) -> int:
        return self.judged + self.counts["skipped"]

    def rate(self, verdict: str) -> Rate:
        """The share of `verdict`: of judged runs, or of scored runs for skipped."""
        if verdict == "skipped":
            return Rate(self.counts["skipped"], self.scored)
        return Rate(self.counts[verdict], self.judged)

    @property
    def directional(self) -> bool:
        return any(self.rate(verdict).directional for verdict in JUDGED_VERDICTS)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "judged": self.judged,
            "scored": self.scored,
            "unscored": self.unscored,
            "not_applicable": self.not_applicable,
            "first_seen": self.first_seen,
            "counts": {verdict: self.counts[verdict] for verdict in VERDICTS},
            "shares": {verdict: self.rate(verdict).to_json() for verdict in VERDICTS},
            "directional": self.directional,
        }


def count_verdicts(rows: Iterable[tuple[Any, ...]]) -> dict[str, VerdictCounts]:
    """(group, verdict, count[, first started_at]) rows into VerdictCounts by group, in order."""
    groups: dict[str, VerdictCounts] = {}
    for row in rows:
        group, verdict, count = str(row[0]), row[1], int(row[2])
        entry = groups.setdefault(group, VerdictCounts(group))
        if verdict in entry.counts:
            entry.counts[verdict] += count
        elif verdict == "not-applicable":
            entry.not_applicable += count
        if len(row) > 3 and row[3] is not None:
            entry.first_seen = min(entry.first_seen or row[3], row[3])
    return groups


def total(groups: Iterable[VerdictCounts], name: str = "all") -> VerdictCounts:
    """The sum of several groups."""
    out = VerdictCounts(name)
    for entry in groups:
        for verdict in VERDICTS:
            out.counts[verdict] += entry.counts[verdict]
        out.unscored += entry.unscored
        out.not_applicable += entry.not_applicable
    return out


@dataclass
class VerdictsReport:
    """Per model verdict counts and shares, and the overall row."""

    head: ReportHead
    models: list[VerdictCounts]
    overall: VerdictCounts

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "models": [entry.to_json() for entry in self.models],
            "overall": self.overall.to_json(),
        }


def verdicts_report(selection: Selection) -> VerdictsReport:
    """Verdicts by model over the selection."""
    head = selection.head("verdicts")
    groups = count_verdicts(
        (model, verdict, count) for model, verdict, _diagnosis, count in selection.verdict_cube()
    )
    for model, runs in selection.runs_by("model").items():
        entry = groups.setdefault(str(model), VerdictCounts(str(model)))
        entry.unscored = int(runs) - entry.scored - entry.not_applicable
    models = sorted(groups.values(), key=lambda entry: entry.group)
    overall = total(models)
    if any(entry.scored and entry.directional for entry in models):
        head.warnings.append(_directional_warning(models))
    return VerdictsReport(head, models, overall)


def _directional_warning(groups: list[VerdictCounts]) -> str:
    small = [entry for entry in groups if entry.scored and entry.directional]
    names = ", ".join(f"{entry.group} ({entry.judged} judged)" for entry in small[:6])
    return f"directional only: small samples ({names}); treat the shares as indications"
