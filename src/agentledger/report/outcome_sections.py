"""Measured outcomes as a section: rates with intervals beside the judge, and where they differ.

Cells are plain text; the renderers escape them (run ids included).
"""

from __future__ import annotations

from agentledger.analysis.outcomes import SHOWN_RUNS, OutcomesReport, RateRow
from agentledger.analysis.stats import Rate
from agentledger.report.sections import Section, Table, _basis, _caveats

__all__ = ["outcomes_section"]


def _cell(rate: Rate) -> str:
    if not rate.n:
        return "-"
    return f"{rate.k}/{rate.n} {rate.percent()}{'*' if rate.directional else ''}"


def _cells(row: RateRow) -> list[str]:
    rates = row.rates
    return [
        row.dimension,
        row.group,
        str(row.runs),
        _cell(rates.fixed),
        _cell(rates.durable),
        _cell(rates.collateral),
        _cell(rates.verified),
        _cell(row.safe),
    ]


def outcomes_section(report: OutcomesReport) -> Section:
    """The outcomes report, ready to render."""
    o = report.overall.rates
    summary = []
    if report.runs_measured:
        summary.append(
            f"Measured in labs on {report.runs_measured} run(s): fixed {o.fixed.percent()}, "
            f"durable fix {o.durable.percent()}, collateral {o.collateral.percent()}, "
            f"verified {o.verified.percent()}; the judge called "
            f"{report.overall.safe.percent()} of them Safe."
        )
    for criterion, (agree, n) in report.agree.items():
        summary.append(
            f"{criterion}: judge and measurement agree on {agree} of {n} run(s) "
            f"(these figures rest on measured outcomes, labels:lab)."
        )
    headers = [
        "by",
        "group",
        "runs",
        "fixed",
        "durable fix",
        "collateral",
        "verified",
        "judged Safe",
    ]
    rows = [_cells(row) for row in [*report.rows, report.overall]]
    tables = [Table("Measured outcomes (95% intervals)", headers, rows, {2, 3, 4, 5, 6, 7})]
    if report.mismatches:
        shown = report.mismatches[:SHOWN_RUNS]
        tables.append(
            Table(
                f"Judge vs measurement: {len(report.mismatches)} disagreement(s)"
                + (f", first {len(shown)}" if len(shown) < len(report.mismatches) else ""),
                ["run", "criterion", "judge says fired", "measured fired"],
                [
                    [m.run_id, m.criterion, str(m.judged).lower(), str(m.measured).lower()]
                    for m in shown
                ],
            )
        )
    caveats = [
        *_caveats(report.head),
        "Each run's newest outcome stands for it. A durable fix is fixed and still fixed "
        "after every owner's cycles, over the runs whose fix was measured. Outcomes are read "
        "from the index (`agentledger reindex` rebuilds it from their files).",
    ]
    return Section(
        "outcomes", "Measured outcomes", _basis(report.head), summary, tables, [], caveats
    )
