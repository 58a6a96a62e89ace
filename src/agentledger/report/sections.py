"""Reports as sections: a title, what they rest on, a summary, tables, charts and caveats.

Every output format (text, markdown, HTML) renders the same `Section`s, so the figures cannot
differ between them. Cells are plain text; renderers escape them for their format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentledger.analysis import (
    AnyReport,
    CompareReport,
    CriteriaReport,
    DriftReport,
    GapReport,
    JudgeValidityReport,
    OutcomesReport,
    ReportHead,
    TrajectoryReport,
    VerdictsReport,
)
from agentledger.analysis.select import short_hash
from agentledger.analysis.stats import DIRECTIONAL_N, DIRECTIONAL_WIDTH, Rate, TestResult
from agentledger.analysis.verdicts import VERDICTS, VerdictCounts
from agentledger.report import charts

__all__ = ["Chart", "Section", "Table", "sections"]

BAR_WIDTH = 20
SERIES_ROWS = 12
"""Drift tables show each model's latest groups only (JSON has them all)."""
BAR_CHARS = {"Safe": "█", "Uncertain": "▓", "Unsafe": "░", "skipped": "·"}


@dataclass
class Table:
    """A table of text cells; `numeric` columns align right."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    numeric: set[int] = field(default_factory=set)


@dataclass
class Chart:
    """An SVG chart and the file name it takes with --charts."""

    name: str
    svg: str


@dataclass
class Section:
    """One report, ready to render."""

    kind: str
    title: str
    basis: str
    summary: list[str]
    tables: list[Table]
    charts: list[Chart]
    caveats: list[str]


def _basis(head: ReportHead) -> str:
    if head.runs_not_applicable:
        judged = head.runs_scored - head.runs_not_applicable
        rests = (
            f"Rests on {judged} judged run(s) of {head.runs_selected} selected "
            f"({head.runs_not_applicable} more scored not applicable: the judge's pack is not "
            "about them)"
        )
    else:
        rests = f"Rests on {head.runs_scored} scored run(s) of {head.runs_selected} selected"
    return " ".join(
        [
            f"{rests}; {head.describe_kinds()}; scores by {head.judge.describe()}.",
            *head.judge_checks,
        ]
    )


def _nothing_judged(head: ReportHead) -> bool:
    """Whether the report rests on no judged run (every score is not applicable)."""
    return head.runs_scored > 0 and head.runs_scored == head.runs_not_applicable


def _caveats(head: ReportHead) -> list[str]:
    return [
        *head.warnings,
        f"Intervals are 95% Wilson intervals. A figure is directional only when it rests on "
        f"fewer than {DIRECTIONAL_N} runs or its interval is wider than "
        f"{100 * DIRECTIONAL_WIDTH:.0f} points.",
    ]


def _cell(rate: Rate, count_first: bool = True) -> str:
    if not rate.n:
        return "-"
    mark = "*" if rate.directional else ""
    return f"{rate.k} ({rate.percent()}){mark}" if count_first else f"{rate.percent()}{mark}"


def verdict_bar(entry: VerdictCounts) -> str:
    """A text bar: Safe █, Uncertain ▓, Unsafe ░, skipped ·, scaled to the runs scored."""
    if not entry.scored:
        return ""
    out = ""
    for verdict in VERDICTS:
        out += BAR_CHARS[verdict] * round(BAR_WIDTH * entry.counts[verdict] / entry.scored)
    return out


def _verdict_row(entry: VerdictCounts, bar: bool = True, not_applicable: bool = False) -> list[str]:
    row = [entry.group, str(entry.judged)]
    row += [_cell(entry.rate(verdict)) for verdict in VERDICTS]
    if not_applicable:
        row.append(str(entry.not_applicable))
    return [*row, str(entry.unscored), verdict_bar(entry)] if bar else row


def _verdicts(report: VerdictsReport) -> Section:
    o = report.overall
    summary = []
    if o.judged:
        summary.append(
            f"Of {o.judged} judged run(s), {o.counts['Safe']} Safe ({o.rate('Safe').percent()}), "
            f"{o.counts['Uncertain']} Uncertain, {o.counts['Unsafe']} Unsafe "
            f"({o.rate('Unsafe').percent()}); {o.counts['skipped']} skipped."
        )
        judged = [entry for entry in report.models if entry.judged]
        worst = max(judged, key=lambda entry: (entry.rate("Unsafe").share or 0.0, entry.judged))
        if worst.counts["Unsafe"]:
            summary.append(
                f"Most often Unsafe: {worst.group}, {worst.counts['Unsafe']} of {worst.judged} "
                f"judged runs ({worst.rate('Unsafe').percent()})."
            )
    outside = o.not_applicable > 0
    if outside:
        summary.append(
            f"{o.not_applicable} run(s) not applicable: the judge's pack is not about them "
            "(no verdict, in no share; `agentledger judge` says why)."
        )
    headers = ["model", "judged", *VERDICTS, *(["not applicable"] if outside else [])]
    headers += ["unscored", "bar"]
    rows = [_verdict_row(entry, not_applicable=outside) for entry in [*report.models, o]]
    chart = charts.stacked_bars(
        "Verdicts by model",
        [
            charts.Bar(entry.group, [(v, entry.counts[v]) for v in VERDICTS])
            for entry in report.models
        ],
        charts.VERDICT_COLOURS,
    )
    caveats = _caveats(report.head)
    caveats.append(
        "Safe, Uncertain and Unsafe are shares of judged runs; skipped is a share of scored "
        "runs; * marks a directional-only figure. Bar: █ Safe ▓ Uncertain ░ Unsafe · skipped."
    )
    return Section(
        "verdicts",
        "Verdicts by model",
        _basis(report.head),
        summary,
        [Table("Verdict distribution", headers, rows, set(range(1, len(headers) - 1)))],
        [Chart("verdicts.svg", chart)],
        caveats,
    )


def _fires_on(report: CriteriaReport, criterion: str, limit: int = 6) -> str:
    cells = sorted(report.fires_on[criterion], key=lambda cell: (-cell[2], cell[0], cell[1]))
    text = ", ".join(
        f"{scenario}/{model}" + (f" x{k}" if k > 1 else "") for scenario, model, k in cells[:limit]
    )
    return text + (f", +{len(cells) - limit} more" if len(cells) > limit else "")


def _criteria(report: CriteriaReport) -> Section:
    summary = []
    if report.dominant:
        rates = [report.overall[criterion] for criterion in report.dominant]
        if len(rates) == 1:
            head = f"{report.dominant[0]} is the dominant criterion: it fired"
        else:
            head = f"{' and '.join(report.dominant)} are the dominant criteria (a tie): each fired"
        summary.append(
            f"{head} on {rates[0].k} of {rates[0].n} assessed runs ({rates[0].percent()})."
        )
        per_model = "; ".join(
            f"{model}: {' and '.join(ids) or 'none'}"
            for model, ids in report.dominant_by_model.items()
        )
        summary.append(f"Dominant per model: {per_model}.")
    summary += [signature.sentence() + "." for signature in report.signatures]
    if report.criteria and not report.signatures:
        summary.append("No criterion fires almost only on one model (80% of 3 or more firings).")
    if not report.criteria:
        summary.append(
            "No criterion was assessed on these runs"
            + (
                ": the judge's pack applies to none of them."
                if _nothing_judged(report.head)
                else "."
            )
        )
        return Section(
            "criteria", "Criteria", _basis(report.head), summary, [], [], _caveats(report.head)
        )
    overview = Table(
        "Criterion firing map",
        ["criterion", "title", "severity", "fired", "cannot assess", "fires on"],
        [
            [
                criterion,
                report.info[criterion].title or "",
                report.info[criterion].severity or "",
                _cell(report.overall[criterion]),
                str(report.cannot_assess[criterion]),
                _fires_on(report, criterion),
            ]
            for criterion in report.criteria
        ],
        {3, 4},
    )
    by_model = Table(
        "Criterion x model (fired / assessed)",
        ["criterion", *report.models],
        [[c, *(_frac(report.by_model[c][m]) for m in report.models)] for c in report.criteria],
        set(range(1, len(report.models) + 1)),
    )
    by_scenario = Table(
        "Criterion x scenario (fired / assessed)",
        ["scenario", *report.criteria],
        [
            [s, *(_frac(report.by_scenario[c][s]) for c in report.criteria)]
            for s in report.scenarios
        ],
        set(range(1, len(report.criteria) + 1)),
    )
    firsts = Table(
        "First firing per model",
        ["criterion", "model", "first fired", "run", "prompt", "fired / assessed"],
        [
            [
                criterion,
                first.model,
                (first.first_started_at or "-")[:10],
                first.first_run_id or "-",
                short_hash(first.first_prompt_hash),
                f"{first.fired}/{first.assessed}",
            ]
            for criterion in report.criteria
            for first in report.firsts.get(criterion, [])
        ],
        {5},
    )
    chart_model = charts.heatmap(
        "Criterion x model", report.criteria, report.models, report.by_model
    )
    chart_scenario = charts.heatmap(
        "Criterion x scenario", report.criteria, report.scenarios, report.by_scenario
    )
    return Section(
        "criteria",
        "Criteria",
        _basis(report.head),
        summary,
        [overview, by_model, by_scenario, *([firsts] if firsts.rows else [])],
        [
            Chart("criteria-by-model.svg", chart_model),
            Chart("criteria-by-scenario.svg", chart_scenario),
        ],
        _caveats(report.head),
    )


def _frac(rate: Rate) -> str:
    return f"{rate.k}/{rate.n}" if rate.n else "-"


def _gap(report: GapReport) -> Section:
    o = report.overall
    summary = []
    if o.gap_points is not None:
        summary.append(
            f"Diagnosis {o.diagnosis.percent()} ({o.diagnosis.k} of {o.diagnosis.n}), safe "
            f"remediation {o.safe.percent()} ({o.safe.k} of {o.safe.n}): a "
            f"{o.gap_points:.0f}-point gap. On the {o.paired} run(s) with both, "
            f"{o.right_but_unsafe} had the right diagnosis and a fix that is not Safe, "
            f"{o.wrong_but_safe} the wrong diagnosis and a Safe fix "
            f"({o.test.test} p = {o.test.p_value:.2g})."
        )
    rows = [
        [
            row.group,
            _cell(row.diagnosis),
            _cell(row.safe),
            "-" if row.gap_points is None else f"{row.gap_points:+.0f}",
            str(row.paired),
            f"{row.test.p_value:.2g}" if row.paired else "-",
        ]
        for row in [*report.models, o]
    ]
    table = Table(
        "Diagnosis vs safe remediation",
        ["model", "diagnosis correct", "safe remediation", "gap (points)", "paired", "McNemar p"],
        rows,
        {1, 2, 3, 4, 5},
    )
    chart = charts.interval_bars(
        "Diagnosis accuracy and safe remediation (95% intervals)",
        [
            (row.group, [("diagnosis", row.diagnosis), ("safe remediation", row.safe)])
            for row in [*report.models, o]
        ],
    )
    return Section(
        "gap",
        "Diagnosis vs remediation",
        _basis(report.head),
        summary,
        [table],
        [Chart("gap.svg", chart)],
        _caveats(report.head),
    )


def _group_label(dimension: str, group: str) -> str:
    return short_hash(group) if dimension == "prompt" and group != "-" else group


def _drift(report: DriftReport) -> Section:
    summary = [change.sentence() + "." for change in report.changes] or [
        "No judged run: there is no share to compare."
        if _nothing_judged(report.head) or not report.head.runs_scored
        else "No change in the Unsafe or Safe share between consecutive prompt hashes, served "
        "models or weeks is larger than the intervals allow."
    ]
    tables = []
    cut: list[str] = []
    titles = {"prompt": "By prompt hash", "served": "By model served", "week": "By ISO week"}
    for dimension, by_model in report.series.items():
        rows = [
            [
                model,
                _group_label(dimension, group.group),
                (group.first_seen or "-")[:10],
                str(group.judged),
                _cell(group.rate("Safe")),
                _cell(group.rate("Unsafe")),
            ]
            for model, groups in by_model.items()
            for group in groups[-SERIES_ROWS:]
        ]
        longest = max((len(groups) for groups in by_model.values()), default=0)
        if longest > SERIES_ROWS:
            cut.append(titles[dimension].lower())
        tables.append(
            Table(
                titles[dimension],
                ["model", dimension, "first run", "judged", "Safe", "Unsafe"],
                rows,
                {3, 4, 5},
            )
        )
    if report.criterion is not None:
        first = [f for f in report.first_firings if f.run_id]
        summary += [
            f"{report.criterion} first fired on {f.model} on {(f.started_at or '-')[:10]} "
            f"(run {f.run_id}); it fired on {f.firings} of that model's {f.assessed} assessed runs."
            for f in first
        ]
        tables.append(
            Table(
                f"When {report.criterion} first fired",
                ["model", "first fired", "run", "prompt", "fired / assessed"],
                [
                    [
                        f.model,
                        f.started_at or "never",
                        f.run_id or "-",
                        short_hash(f.prompt_hash),
                        f"{f.firings}/{f.assessed}",
                    ]
                    for f in report.first_firings
                ],
                {4},
            )
        )
    if report.prompt is not None:
        tables.append(_before_after(report, summary))
    caveats = _caveats(report.head)
    if cut:
        caveats.append(
            f"Tables {', '.join(cut)}: the latest {SERIES_ROWS} groups of each model only "
            "(--format json has every group); flagged changes cover them all."
        )
    return Section(
        "drift",
        "Drift",
        _basis(report.head),
        summary,
        tables,
        [Chart("drift-weekly-unsafe.svg", _weekly_unsafe(report))],
        caveats,
    )


def _before_after(report: DriftReport, summary: list[str]) -> Table:
    """The table before and after `--before-after PROMPT`; each flagged change said in `summary`."""
    rows = []
    for entry in report.before_after:
        for side in (entry.before, entry.after):
            rows.append(
                [entry.model, side.group, str(side.judged)]
                + [_cell(side.rate(v)) for v in VERDICTS]
                + [f"{entry.test.p_value:.2g}" if side is entry.after else ""]
            )
        if entry.flagged:
            summary.append(
                f"{entry.model}: the {' and '.join(entry.flagged)} share changed at prompt "
                f"{report.prompt} beyond the intervals."
            )
    return Table(
        f"Before and after prompt {report.prompt}",
        ["model", "side", "judged", *VERDICTS, "Fisher p (Unsafe)"],
        rows,
        {2, 3, 4, 5, 6, 7},
    )


def _weekly_unsafe(report: DriftReport) -> str:
    """The chart of each model's Unsafe share by ISO week (the latest weeks)."""
    week = report.series["week"]
    weeks = sorted({g.group for groups in week.values() for g in groups if g.group != "-"})
    weeks = weeks[-3 * SERIES_ROWS :]
    lines = {
        model: [next((g.rate("Unsafe") for g in groups if g.group == w), None) for w in weeks]
        for model, groups in week.items()
    }
    return charts.line_chart("Unsafe share by ISO week (95% intervals)", weeks, lines)


def _compare(report: CompareReport) -> Section:
    a, b = report.a, report.b
    groups = Table(
        "Groups",
        ["group", "filter", "judged", *VERDICTS],
        [
            ["A", report.a_label, str(a.judged), *(_cell(a.rate(v)) for v in VERDICTS)],
            ["B", report.b_label, str(b.judged), *(_cell(b.rate(v)) for v in VERDICTS)],
        ],
        {2, 3, 4, 5, 6},
    )
    tests = [["paired (scenarios both ran)", *_test_cells(report.paired_test)]]
    tests.append(["unpaired (all runs)", *_test_cells(report.unpaired_test)])
    tables = [
        groups,
        Table("Exact tests on Unsafe", ["comparison", "test", "counts", "p", "verdict"], tests),
    ]
    if report.criteria:
        tables.append(
            Table(
                "Criteria (fired / assessed)",
                ["criterion", "A", "B", "Fisher p", "verdict"],
                [
                    [
                        entry.criterion,
                        _cell(entry.a),
                        _cell(entry.b),
                        f"{entry.test.p_value:.3g}",
                        "significant" if entry.test.significant else "not significant",
                    ]
                    for entry in report.criteria
                ],
                {1, 2, 3},
            )
        )
    if report.pairs:
        tables.append(
            Table(
                "Paired scenarios",
                ["scenario", "A", "B"],
                [[pair.scenario, pair.a, pair.b] for pair in report.pairs],
            )
        )
    chart = charts.interval_bars(
        "Unsafe share (95% intervals)",
        [("A", [("Unsafe", a.rate("Unsafe"))]), ("B", [("Unsafe", b.rate("Unsafe"))])],
    )
    caveats = _caveats(report.head)
    caveats.append(
        "Paired: exact McNemar on the scenarios both groups ran, one run a side (the newest "
        "judged), counting the discordant pairs. "
        "Unpaired: Fisher's exact test on all judged runs of each group."
    )
    return Section(
        "compare",
        f"Compare A ({report.a_label}) with B ({report.b_label})",
        _basis(report.head),
        [report.summary],
        tables,
        [Chart("compare.svg", chart)],
        caveats,
    )


def _test_cells(test: TestResult | None) -> list[str]:
    if test is None:
        return ["-", "no scenario in common", "-", "-"]
    counts = ", ".join(f"{key}={value}" for key, value in test.detail.items())
    verdict = "significant" if test.significant else "not significant"
    return [test.test, counts, f"{test.p_value:.3g}", verdict]


def sections(reports: list[AnyReport]) -> list[Section]:
    """One Section per report."""
    out = []
    for report in reports:
        if isinstance(report, VerdictsReport):
            out.append(_verdicts(report))
        elif isinstance(report, CriteriaReport):
            out.append(_criteria(report))
        elif isinstance(report, GapReport):
            out.append(_gap(report))
        elif isinstance(report, DriftReport):
            out.append(_drift(report))
        elif isinstance(report, CompareReport):
            out.append(_compare(report))
        elif isinstance(report, TrajectoryReport):
            from agentledger.report.trajectory_sections import trajectory_section

            out.append(trajectory_section(report))
        elif isinstance(report, OutcomesReport):
            from agentledger.report.outcome_sections import outcomes_section

            out.append(outcomes_section(report))
        else:
            from agentledger.report.agreement_sections import agreement_section, validity_section

            if isinstance(report, JudgeValidityReport):
                out.append(validity_section(report))
            else:
                out.append(agreement_section(report))
    return out
