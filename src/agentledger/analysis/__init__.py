"""Findings from the index: verdict rates, firing maps, the diagnosis gap, drift, comparisons.

Every report is computed in SQL over the index (`runs`, `scores`, `score_criteria`), from one
score per run: the newest by the chosen judge (see `agentledger.analysis.select`). Statistics
(Wilson intervals, exact tests, the directional-only flag) are in `agentledger.analysis.stats`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentledger.analysis.agreement import AgreementReport, agreement_report
from agentledger.analysis.compare import CompareReport, compare_report
from agentledger.analysis.criteria import CriteriaReport, criteria_report
from agentledger.analysis.drift import DriftReport, drift_report
from agentledger.analysis.gap import GapReport, gap_report
from agentledger.analysis.outcomes import OutcomesReport, outcomes_report
from agentledger.analysis.select import DEFAULT_KINDS, JudgeChoice, ReportHead, Selection
from agentledger.analysis.stats import Rate, TestResult, fisher_test, mcnemar_test, wilson
from agentledger.analysis.trajectory import TrajectoryReport, trajectory_report
from agentledger.analysis.validity import JudgeValidityReport, check_judges
from agentledger.analysis.verdicts import VerdictCounts, VerdictsReport, verdicts_report
from agentledger.errors import InputError
from agentledger.store.index import RunFilter, RunIndex

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "REPORT_KINDS",
    "AgreementReport",
    "AnyReport",
    "CompareReport",
    "CriteriaReport",
    "DriftReport",
    "GapReport",
    "JudgeChoice",
    "JudgeValidityReport",
    "OutcomesReport",
    "Rate",
    "ReportHead",
    "Selection",
    "TestResult",
    "TrajectoryReport",
    "VerdictCounts",
    "VerdictsReport",
    "agreement_report",
    "build_reports",
    "compare_report",
    "criteria_report",
    "drift_report",
    "fisher_test",
    "gap_report",
    "mcnemar_test",
    "outcomes_report",
    "trajectory_report",
    "verdicts_report",
    "wilson",
]

AnyReport = (
    VerdictsReport
    | CriteriaReport
    | GapReport
    | DriftReport
    | CompareReport
    | JudgeValidityReport
    | AgreementReport
    | TrajectoryReport
    | OutcomesReport
)
REPORT_KINDS = (
    "verdicts",
    "criteria",
    "gap",
    "drift",
    "compare",
    "trajectory",
    "outcomes",
    "all",
)


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
    ledger: Ledger | None = None,
) -> list[AnyReport]:
    """The report(s) of `kind` (``all``: every report; compare only when `a` and `b` are given).

    ``trajectory`` (and ``all``, with it) reads the runs' traces from `ledger`.
    With `ledger` (whose index `index` is), each report says whether its judge has been checked
    against held-out human labels and how well, and ``all`` ends with the judge-validity
    section."""
    if kind not in REPORT_KINDS:
        raise InputError(f"unknown report {kind!r}: choose from {', '.join(REPORT_KINDS)}")
    if kind == "trajectory" and ledger is None:
        raise InputError("the trajectory report reads the runs' traces: it needs the ledger")
    if kind == "outcomes" and ledger is None:
        raise InputError("the outcomes report reads the runs' outcomes: it needs the ledger")
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
        if kind == "trajectory" or (kind == "all" and ledger is not None):
            assert ledger is not None
            out.append(trajectory_report(selection, ledger))
        if kind == "outcomes" or (kind == "all" and ledger is not None):
            assert ledger is not None
            measured = outcomes_report(selection, ledger)
            if kind == "outcomes" or measured.runs_measured:
                out.append(measured)
    if a is not None and b is not None and kind in ("compare", "all"):
        out.append(compare_report(index, run_filter, a, b, judge, choice=choice))
    if ledger is not None:
        _add_judge_checks(ledger, run_filter, out, every_judge=kind == "all")
    return out


def _add_judge_checks(
    ledger: Ledger, run_filter: RunFilter, reports: list[Any], *, every_judge: bool
) -> None:
    """A line on each report's judge(s) saying how far it is checked; the validity section."""
    # The judges of the runs the reports cover: agent runs unless --kind says otherwise.
    tallies = ledger.index.judges_of(replace(run_filter, kinds=run_filter.kinds or DEFAULT_KINDS))
    kinds = {tally.judge_id: tally.kind for tally in tallies}
    used = sorted({i for report in reports for i in report.head.judge.judge_ids})
    wanted = [(i, kinds.get(i, "?")) for i in used]
    if every_judge:
        wanted += [(t.judge_id, t.kind) for t in tallies[:10] if t.judge_id not in used]
    validity = check_judges(ledger, wanted, run_filter)
    lines = {entry.judge_id: entry.line() for entry in validity.entries}
    for report in reports:
        report.head.judge_checks = [lines[i] for i in report.head.judge.judge_ids if i in lines]
    if every_judge:
        reports.append(validity)
