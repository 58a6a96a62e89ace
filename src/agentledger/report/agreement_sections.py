"""Agreement and judge validity as sections: the same figures in text, Markdown and HTML.

Cells are plain text; the renderers escape them (run ids and source names included).
"""

from __future__ import annotations

from agentledger.analysis.agreement import SHOWN_DISAGREEMENTS, AgreementReport, Comparison
from agentledger.analysis.kappa import KappaResult
from agentledger.analysis.validity import JudgeValidityReport
from agentledger.report.sections import Section, Table

__all__ = ["agreement_section", "format_kappa", "validity_section"]


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def format_kappa(result: KappaResult) -> str:
    """``0.62 [0.41, 0.83]``, ``0.62 (no interval)``, or ``undefined``."""
    if result.kappa is None:
        return "undefined"
    if result.interval is None:
        return f"{result.kappa:.2f} (no interval)"
    low, high = result.interval
    return f"{result.kappa:.2f} [{low:.2f}, {high:.2f}]"


def _summary_line(comparison: Comparison) -> str:
    result = comparison.result
    words = f"{comparison.name}: kappa {format_kappa(result)} on {result.n} run(s)"
    if result.observed is not None:
        words += f", observed agreement {_percent(result.observed)}"
    if result.undefined:
        words += f" ({result.undefined})"
    if comparison.plan is not None:
        words += f"; {comparison.plan.describe()}"
    return words + "."


def _headline_cells(comparison: Comparison) -> list[str]:
    scores = comparison.headline()
    if scores is None:
        return ["-", "-", "-"]
    return [_number(scores["precision"]), _number(scores["recall"]), _number(scores["f1"])]


def _agreement_table(report: AgreementReport) -> Table:
    rows = []
    for comparison in report.comparisons:
        result = comparison.result
        nulls = comparison.nulls
        rows.append(
            [
                comparison.name,
                str(result.n),
                _percent(result.observed),
                format_kappa(result),
                comparison.positive or "-",
                *_headline_cells(comparison),
                f"{nulls['a_null']} / {nulls['b_null']} / {nulls['both_null']}",
            ]
        )
    return Table(
        "Agreement of A with B (B the reference)",
        ["compared", "n", "observed", "kappa [95%]", "positive", "P", "R", "F1", "nulls A/B/both"],
        rows,
        numeric={1, 2, 5, 6, 7},
    )


def _confusion_table(comparison: Comparison) -> Table:
    result = comparison.result
    rows = [
        [f"B {category}", *(str(value) for value in row), str(sum(row))]
        for category, row in zip(result.categories, result.matrix, strict=True)
    ]
    totals = [sum(row[i] for row in result.matrix) for i in range(len(result.categories))]
    rows.append(["A total", *(str(total) for total in totals), str(result.n)])
    return Table(
        f"Confusion: {comparison.name}",
        ["B \\ A", *(f"A {category}" for category in result.categories), "B total"],
        rows,
        numeric=set(range(1, len(result.categories) + 2)),
    )


def _per_category(comparison: Comparison) -> Table:
    return Table(
        f"Per category: {comparison.name} (A against B)",
        ["category", "precision", "recall", "F1", "support (B)"],
        [
            [
                scores.category,
                _number(scores.precision),
                _number(scores.recall),
                _number(scores.f1),
                str(scores.support),
            ]
            for scores in comparison.result.scores()
        ],
        numeric={1, 2, 3, 4},
    )


def _groups_table(report: AgreementReport) -> Table:
    rows = [
        [comparison.name, group, str(result.n), _percent(result.observed), format_kappa(result)]
        for comparison in report.comparisons
        for group, result in comparison.groups
    ]
    return Table(
        f"By {report.by}",
        ["compared", report.by or "", "n", "observed", "kappa [95%]"],
        rows,
        numeric={2, 3},
    )


def _disagreements(report: AgreementReport) -> tuple[Table, list[str]]:
    rows: list[list[str]] = []
    notes = []
    for comparison in report.comparisons:
        shown = comparison.disagreements[:SHOWN_DISAGREEMENTS]
        for item in shown:
            flag = f"DEVELOPMENT: {item.development}" if item.development else ""
            rows.append([comparison.name, item.run_id, item.a, item.b, flag])
        hidden = len(comparison.disagreements) - len(shown)
        if hidden:
            notes.append(f"{comparison.name}: {hidden} more disagreeing run(s); --json lists all")
    return Table("Runs where they disagree", ["compared", "run", "A", "B", ""], rows), notes


def agreement_section(report: AgreementReport) -> Section:
    """The agreement report as one section."""
    basis = (
        f"A = {report.a.describe()}, B = {report.b.describe()} (the reference). "
        f"{report.common} run(s) rated by both of {report.runs_selected} selected "
        f"({report.only_a} rated by A only, {report.only_b} by B only); "
        f"{report.describe_kinds()}."
    )
    if report.split is not None:
        basis += (
            f" Only the {report.split_part} part of split {report.split.split_id} "
            f"(labels:{report.split.source}); {report.outside_split} common run(s) outside it."
        )
    tables = [_agreement_table(report)]
    # A comparison on no run has no confusion to show (its row says n 0 and why).
    for comparison in (c for c in report.comparisons if c.result.n):
        tables.append(_confusion_table(comparison))
        if comparison.what == "verdict":
            tables.append(_per_category(comparison))
    if report.by is not None:
        tables.append(_groups_table(report))
    disagreements, notes = _disagreements(report)
    if disagreements.rows:
        tables.append(disagreements)
    elif any(comparison.result.n for comparison in report.comparisons):
        notes.append("No run where they disagree.")
    else:
        notes.append(
            "Nothing was compared: no run has a verdict or a criterion rated by both A and B."
        )
    first = report.comparisons[0].result
    method = (
        f"a seeded percentile bootstrap ({first.resamples} resamples, seed {first.seed})"
        if first.method == "bootstrap"
        else "analytic: kappa +- 1.96 SE, SE of Fleiss, Cohen & Everitt (1969)"
    )
    caveats = [
        *report.warnings,
        *notes,
        f"Intervals are 95%, {method}.",
        "Nulls (a judge that skipped a run or could not assess a criterion, a label that "
        "cannot tell) are counted apart, never as agreement.",
    ]
    return Section(
        "agreement",
        f"Agreement: {report.a.describe()} against {report.b.describe()}",
        basis,
        [_summary_line(comparison) for comparison in report.comparisons],
        tables,
        [],
        caveats,
    )


def validity_section(report: JudgeValidityReport) -> Section:
    """Each judge's agreement with the human labels on the held-out split, or why not."""
    rows = [
        [
            entry.judge_id,
            entry.judge_kind,
            str(entry.result.n) if entry.result else "-",
            format_kappa(entry.result) if entry.result else "-",
            entry.status,
        ]
        for entry in report.entries
    ]
    return Section(
        "judge-validity",
        "Judge validity: agreement with the human labels",
        report.basis(),
        [report.summary()],
        [Table("Judges", ["judge", "kind", "n", "verdict kappa [95%]", "status"], rows, {2})],
        [],
        [
            "Each judge's verdict against labels:human on the test part of the newest human "
            "split; 95% analytic intervals. A judge developed against those labels is not "
            "graded on them."
        ],
    )
