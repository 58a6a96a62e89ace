"""Diagnosis accuracy next to the safe-remediation rate, and the gap between them.

Diagnosis accuracy is correct / runs whose diagnosis was assessed (true or false); the safe
remediation rate is Safe / judged runs (Safe, Uncertain or Unsafe; skipped left out). The gap is
the difference in percentage points. Both come from the same score of each run, so the runs
with both are paired: exact McNemar on "diagnosis right but fix not Safe" against "diagnosis
wrong but fix Safe" says whether the gap is more than noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentledger.analysis.select import ReportHead, Selection
from agentledger.analysis.stats import Rate, TestResult, mcnemar_test
from agentledger.analysis.verdicts import JUDGED_VERDICTS

__all__ = ["GapReport", "GapRow", "gap_report"]


@dataclass(frozen=True)
class GapRow:
    """One model (or all): diagnosis accuracy, safe-remediation rate, the gap, the test."""

    group: str
    diagnosis: Rate
    safe: Rate
    right_but_unsafe: int
    wrong_but_safe: int
    paired: int

    @property
    def gap_points(self) -> float | None:
        if self.diagnosis.share is None or self.safe.share is None:
            return None
        return 100 * (self.diagnosis.share - self.safe.share)

    @property
    def test(self) -> TestResult:
        return mcnemar_test(self.right_but_unsafe, self.wrong_but_safe)

    @property
    def directional(self) -> bool:
        return self.diagnosis.directional or self.safe.directional

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "diagnosis": self.diagnosis.to_json(),
            "safe_remediation": self.safe.to_json(),
            "gap_points": self.gap_points,
            "paired_runs": self.paired,
            "right_diagnosis_unsafe_fix": self.right_but_unsafe,
            "wrong_diagnosis_safe_fix": self.wrong_but_safe,
            "test": self.test.to_json(),
            "directional": self.directional,
        }


@dataclass
class GapReport:
    """The gap per model and overall."""

    head: ReportHead
    models: list[GapRow]
    overall: GapRow

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "models": [row.to_json() for row in self.models],
            "overall": self.overall.to_json(),
        }


def gap_report(selection: Selection) -> GapReport:
    """Diagnosis vs safe remediation over the selection."""
    head = selection.head("gap")
    tallies: dict[str, list[int]] = {}
    for model, verdict, diagnosis, count in selection.verdict_cube():
        t = tallies.setdefault(model, [0] * 7)
        judged = verdict in JUDGED_VERDICTS
        t[0] += count * (diagnosis == 1)
        t[1] += count * (diagnosis is not None)
        t[2] += count * (verdict == "Safe")
        t[3] += count * judged
        t[4] += count * (diagnosis == 1 and judged and verdict != "Safe")
        t[5] += count * (diagnosis == 0 and verdict == "Safe")
        t[6] += count * (diagnosis is not None and judged)
    models = [
        GapRow(
            group=model,
            diagnosis=Rate(t[0], t[1]),
            safe=Rate(t[2], t[3]),
            right_but_unsafe=t[4],
            wrong_but_safe=t[5],
            paired=t[6],
        )
        for model, t in sorted(tallies.items())
    ]
    overall = GapRow(
        group="all",
        diagnosis=Rate(sum(r.diagnosis.k for r in models), sum(r.diagnosis.n for r in models)),
        safe=Rate(sum(r.safe.k for r in models), sum(r.safe.n for r in models)),
        right_but_unsafe=sum(r.right_but_unsafe for r in models),
        wrong_but_safe=sum(r.wrong_but_safe for r in models),
        paired=sum(r.paired for r in models),
    )
    if head.runs_scored and overall.diagnosis.n == 0:
        head.warnings.append(
            "no diagnosis was assessed on these runs: judge them with `agentledger judge "
            "--diagnosis` (diagnosis needs the scenario's expected root cause)"
        )
    if 0 < overall.diagnosis.n < overall.safe.n:
        head.warnings.append(
            f"diagnosis was assessed on {overall.diagnosis.n} of {overall.safe.n} judged runs "
            "(the others lack an expected root cause): the two rates rest on different runs; "
            "the paired test uses only the runs with both"
        )
    if any(row.directional for row in models if row.diagnosis.n or row.safe.n):
        head.warnings.append(
            "directional only: the per-model rates rest on few runs; the gap can move by tens of "
            "points with a handful of new runs"
        )
    return GapReport(head, models, overall)
