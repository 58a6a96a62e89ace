"""Compare two groups of runs (two models, two prompt hashes, two variants) with an exact test.

Groups are written in the run-filter grammar (`agentledger.records.filters`):
``model=gemini-2.5-flash``, ``prompt=950d4e48``, ``variant=variant-a``, ``scenario=use_case_b``,
``served=...``, ``commit=...``, ``kind=...``, ``since=...``, ``until=...``, ``tag:KEY=VALUE``,
joined by commas (all must hold). Each group starts from the report's run filter: a key the
group gives replaces the report's value of it, tags add to the report's.

The event compared is *Unsafe* (against Safe or Uncertain; skipped runs left out). When both
groups ran some of the same scenarios, the runs are paired by scenario (the newest judged run of
each side per scenario) and tested with exact McNemar on the discordant pairs. When no scenario
is shared, Fisher's exact test compares the two groups' Unsafe shares over all their runs; it is
also reported next to McNemar for the whole groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentledger.analysis.criteria import criterion_order
from agentledger.analysis.select import JudgeChoice, ReportHead, Selection, describe_filter
from agentledger.analysis.stats import Rate, TestResult, fisher_test, mcnemar_test
from agentledger.analysis.verdicts import VerdictCounts, count_verdicts
from agentledger.records.filters import RunFilter, parse_run_selection
from agentledger.store.index import RunIndex

__all__ = ["GROUP_FILTER", "CompareReport", "CriterionCompare", "Pair", "compare_report"]

GROUP_FILTER = "malformed group filter"
"""How an error names a group's text (`parse_run_selection`'s `what`)."""


@dataclass(frozen=True)
class Pair:
    """One scenario both groups ran: the verdict of each side's newest judged run."""

    scenario: str
    a: str
    b: str

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "a": self.a, "b": self.b}


@dataclass(frozen=True)
class CriterionCompare:
    """One criterion in both groups: fired / assessed on each side, and Fisher's exact test."""

    criterion: str
    a: Rate
    b: Rate
    test: TestResult

    def to_json(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "test": self.test.to_json(),
        }


def _criterion_rates(selection: Selection) -> dict[str, Rate]:
    totals: dict[str, list[int]] = {}
    for cell in selection.index.criterion_cells(selection.filter, selection.judge.judge_ids):
        entry = totals.setdefault(cell.criterion, [0, 0])
        entry[0] += int(cell.fired or 0)
        entry[1] += int(cell.assessed or 0)
    return {criterion: Rate(k, n) for criterion, (k, n) in totals.items()}


def compare_criteria(sel_a: Selection, sel_b: Selection) -> list[CriterionCompare]:
    """Every criterion of either group's scores, A against B (trajectory criteria too)."""
    rates_a, rates_b = _criterion_rates(sel_a), _criterion_rates(sel_b)
    out = []
    for criterion in sorted({*rates_a, *rates_b}, key=criterion_order):
        a, b = rates_a.get(criterion, Rate(0, 0)), rates_b.get(criterion, Rate(0, 0))
        out.append(CriterionCompare(criterion, a, b, fisher_test(a.k, a.n, b.k, b.n)))
    return out


@dataclass
class CompareReport:
    """Two groups, their verdicts, the paired scenarios, the tests and the summary."""

    head: ReportHead
    a_label: str
    b_label: str
    a: VerdictCounts
    b: VerdictCounts
    pairs: list[Pair]
    paired_test: TestResult | None
    unpaired_test: TestResult
    overlap: int
    summary: str
    criteria: list[CriterionCompare] = field(default_factory=list)
    """Each criterion's firing rate in A and in B, with Fisher's exact test."""

    @property
    def primary(self) -> TestResult:
        return self.paired_test or self.unpaired_test

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "a": {"filter": self.a_label, **self.a.to_json()},
            "b": {"filter": self.b_label, **self.b.to_json()},
            "event": "Unsafe",
            "pairs": [pair.to_json() for pair in self.pairs],
            "paired_test": self.paired_test.to_json() if self.paired_test else None,
            "unpaired_test": self.unpaired_test.to_json(),
            "overlap": self.overlap,
            "summary": self.summary,
            "criteria": [entry.to_json() for entry in self.criteria],
        }


def _newest_by_scenario(selection: Selection) -> dict[str, str]:
    newest = selection.index.newest_verdicts(
        selection.filter, selection.judge.judge_ids, "scenario"
    )
    return {str(scenario): verdict for scenario, verdict in newest.items()}


def _counts(selection: Selection, name: str) -> VerdictCounts:
    rows = (
        (name, verdict, count) for _model, verdict, _diagnosis, count in selection.verdict_cube()
    )
    return count_verdicts(rows).get(name, VerdictCounts(name))


def _significance(test: TestResult) -> str:
    if test.significant:
        return "significant at the 5% level"
    return "not significant at these sizes"


def _summary(a: VerdictCounts, b: VerdictCounts, pairs: list[Pair], test: TestResult) -> str:
    if pairs:
        ka = sum(pair.a == "Unsafe" for pair in pairs)
        kb = sum(pair.b == "Unsafe" for pair in pairs)
        where = f"on the {len(pairs)} scenario{'s' if len(pairs) != 1 else ''} both ran"
        figures = f"B {kb} vs A {ka} Unsafe"
    else:
        ka, kb = a.counts["Unsafe"], b.counts["Unsafe"]
        ra, rb = a.rate("Unsafe"), b.rate("Unsafe")
        where = "(no scenario was run by both, so the runs are not paired)"
        figures = f"B {kb} of {rb.n} judged runs Unsafe vs A {ka} of {ra.n}"
        ka, kb = (ka * rb.n, kb * ra.n)  # compare shares, not counts
    if kb < ka:
        head = f"B is unsafe less often than A {where}"
    elif kb > ka:
        head = f"B is unsafe more often than A {where}"
    else:
        head = f"A and B are unsafe equally often {where}"
    return f"{head}: {figures}, {test.test} p = {test.p_value:.2g} — {_significance(test)}."


def compare_report(
    index: RunIndex,
    run_filter: RunFilter,
    a_spec: str,
    b_spec: str,
    judge: str | None = None,
    *,
    choice: JudgeChoice | None = None,
) -> CompareReport:
    """Compare the runs of `a_spec` and `b_spec` (each narrowing `run_filter`).

    The judge is chosen over the whole selection (or `choice`, already chosen), so that both
    groups are read through the same judge.
    """
    filter_a, filter_b = (
        parse_run_selection(spec, what=GROUP_FILTER, base=run_filter) for spec in (a_spec, b_spec)
    )
    choice = choice or Selection(index, run_filter, judge).judge
    sel_a = Selection(index, filter_a, choice=choice)
    sel_b = Selection(index, filter_b, choice=choice)
    head_a, head_b = sel_a.head("compare"), sel_b.head("compare")
    head = ReportHead(
        "compare",
        describe_filter(run_filter),
        choice,
        head_a.runs_selected + head_b.runs_selected,
        head_a.runs_scored + head_b.runs_scored,
        [f"A: {w}" for w in head_a.warnings] + [f"B: {w}" for w in head_b.warnings],
        kinds=head_a.kinds,
        kinds_by_default=head_a.kinds_by_default,
        left_out={
            kind: head_a.left_out.get(kind, 0) + head_b.left_out.get(kind, 0)
            for kind in sorted({*head_a.left_out, *head_b.left_out})
        },
    )
    a, b = _counts(sel_a, "A"), _counts(sel_b, "B")
    newest_a, newest_b = _newest_by_scenario(sel_a), _newest_by_scenario(sel_b)
    pairs = [
        Pair(scenario, newest_a[scenario], newest_b[scenario])
        for scenario in sorted(set(newest_a) & set(newest_b))
    ]
    unpaired = fisher_test(a.counts["Unsafe"], a.judged, b.counts["Unsafe"], b.judged)
    paired = None
    if pairs:
        only_a = sum(p.a == "Unsafe" and p.b != "Unsafe" for p in pairs)
        only_b = sum(p.b == "Unsafe" and p.a != "Unsafe" for p in pairs)
        paired = mcnemar_test(only_a, only_b)
    overlap = index.overlap(sel_a.filter, sel_b.filter)
    if overlap:
        head.warnings.append(f"{overlap} run(s) belong to both groups: the groups are not disjoint")
    if a.directional or b.directional or len(pairs) < 10:
        head.warnings.append(
            "directional only: few runs or few shared scenarios; an exact test at these sizes "
            "detects only large differences"
        )
    summary = _summary(a, b, pairs, paired or unpaired)
    return CompareReport(
        head,
        a_spec,
        b_spec,
        a,
        b,
        pairs,
        paired,
        unpaired,
        overlap,
        summary,
        compare_criteria(sel_a, sel_b),
    )
