"""Findings from the index: verdict rates, firing maps, the diagnosis gap, drift, comparisons.

Every report is computed in SQL over the index (`runs`, `scores`, `score_criteria`), from one
score per run: the newest by the chosen judge (see `agentledger.analysis.select`). Statistics
(Wilson intervals, exact tests, the directional-only flag) are in `agentledger.analysis.stats`.
"""

from __future__ import annotations

from typing import Any

from agentledger.analysis.compare import CompareReport, compare_report
from agentledger.analysis.criteria import CriteriaReport, criteria_report
from agentledger.analysis.drift import DriftReport, drift_report
from agentledger.analysis.gap import GapReport, gap_report
from agentledger.analysis.select import JudgeChoice, ReportHead, Selection
from agentledger.analysis.stats import Rate, TestResult, fisher_test, mcnemar_test, wilson
from agentledger.analysis.verdicts import VerdictCounts, VerdictsReport, verdicts_report
from agentledger.errors import InputError
from agentledger.store.index import RunFilter, RunIndex

__all__ = [
    "REPORT_KINDS",
    "AnyReport",
    "CompareReport",
    "CriteriaReport",
    "DriftReport",
    "GapReport",
    "JudgeChoice",
    "Rate",
    "ReportHead",
    "Selection",
    "TestResult",
    "VerdictCounts",
    "VerdictsReport",
    "build_reports",
    "compare_report",
    "criteria_report",
    "drift_report",
    "fisher_test",
    "gap_report",
    "mcnemar_test",
    "verdicts_report",
    "wilson",
]

AnyReport = VerdictsReport | CriteriaReport | GapReport | DriftReport | CompareReport
REPORT_KINDS = ("verdicts", "criteria", "gap", "drift", "compare", "all")


def build_reports(
    kind: str,
    index: RunIndex,
    run_filter: RunFilter,
    *,
    judge: str | None = None,
    criterion: str | None = None,
    prompt: str | None = None,
    a: str | None = None,
    b: str | None = None,
) -> list[AnyReport]:
    """The report(s) of `kind` (``all``: every report; compare only when `a` and `b` are given)."""
    if kind not in REPORT_KINDS:
        raise InputError(f"unknown report {kind!r}: choose from {', '.join(REPORT_KINDS)}")
    if kind == "compare" and (a is None or b is None):
        raise InputError("compare needs two groups: --a FILTER and --b FILTER")
    if (a is None) != (b is None):
        raise InputError("give both --a and --b, or neither")
    out: list[Any] = []
    choice = None
    if kind != "compare":
        selection = Selection(index, run_filter, judge)
        choice = selection.judge
        if kind in ("verdicts", "all"):
            out.append(verdicts_report(selection))
        if kind in ("criteria", "all"):
            out.append(criteria_report(selection))
        if kind in ("gap", "all"):
            out.append(gap_report(selection))
        if kind in ("drift", "all"):
            out.append(drift_report(selection, criterion=criterion, prompt=prompt))
    if a is not None and b is not None and kind in ("compare", "all"):
        out.append(compare_report(index, run_filter, a, b, judge, choice=choice))
    return out
