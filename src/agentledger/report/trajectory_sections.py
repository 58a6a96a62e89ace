"""The trajectory report as a section: step statistics per model, and a step timeline for each
fired criterion (the steps its evidence cites, and their neighbours).

Every step's text came from the agent or its tools: it goes through `report.timeline`'s rows,
flattened to one inert line by `report.untrusted.one_line`, and every renderer escapes it
again for its format (the HTML template by autoescaping).
"""

from __future__ import annotations

from agentledger.analysis.stats import DIRECTIONAL_N
from agentledger.analysis.trajectory import FiredTimeline, ModelSteps, TrajectoryReport
from agentledger.report.sections import Section, Table, _basis, _caveats, _cell
from agentledger.report.timeline import timeline_rows
from agentledger.report.untrusted import one_line

__all__ = ["trajectory_section"]

CITED = "◀ cited"


def _row(entry: ModelSteps) -> list[str]:
    concluded = entry.concluded
    return [
        entry.model,
        str(entry.runs),
        entry.actions.text(),
        entry.to_conclusion.text(),
        f"{concluded['change']}/{concluded['finish']}/{concluded['none']}",
        _cell(entry.mutating),
        _cell(entry.runs_with_denial),
        str(entry.denied),
        _cell(entry.retried) if entry.denied else "-",
        str(entry.retried_ran),
    ]


def _timeline(timeline: FiredTimeline) -> Table:
    rows = timeline_rows(timeline.steps)
    return Table(
        f"{timeline.criterion} first fired on {one_line(timeline.model, 80)}: run "
        f"{one_line(timeline.run_id, 120)}; {one_line(timeline.reason, 200)}",
        ["step", "actor", "kind", "tool", "detail", "cited"],
        [
            [
                str(row.step),
                row.actor,
                row.kind,
                row.tool,
                row.detail,
                CITED if row.step in timeline.cited else "",
            ]
            for row in rows
        ],
        {0},
    )


def trajectory_section(report: TrajectoryReport) -> Section:
    """The report's section: a summary, the per-model table, one timeline per fired criterion."""
    summary = []
    overall = report.overall
    if overall is not None:
        summary.append(
            f"Over {overall.runs} run(s): median {overall.actions.text()} actions, "
            f"{overall.to_conclusion.text()} before the conclusion; "
            f"{overall.mutating.percent()} of actions changed something; "
            f"{overall.runs_with_denial.k} run(s) had a denied attempt "
            f"({overall.denied} attempts, {overall.retried.k} retried, "
            f"{overall.retried_ran} of the retries ran)."
        )
        worst = max(report.models, key=lambda m: (m.retried.k, m.denied, m.model))
        if worst.retried.k:
            summary.append(
                f"Most retries after a denial: {worst.model}, {worst.retried.k} of "
                f"{worst.denied} denied attempts ({worst.retried_ran} went through)."
            )
    else:
        summary.append("No selected run has a trace or a shell log.")
    if report.timelines:
        fired = sorted({timeline.criterion for timeline in report.timelines})
        summary.append(
            f"Fired criteria shown step by step below: {', '.join(fired)} (the first firing of "
            "each model)."
        )
    table = Table(
        "Steps by model",
        [
            "model",
            "runs",
            "actions",
            "to conclusion",
            "concluded change/finish/none",
            "mutating share",
            "runs with a denial",
            "denied",
            "retried",
            "retries ran",
        ],
        [_row(entry) for entry in [*report.models, *([overall] if overall else [])]],
        {1, 2, 3, 5, 6, 7, 8, 9},
    )
    caveats = _caveats(report.head)
    caveats.append(
        "Medians carry a distribution-free 95% interval (order statistics; none below 6 runs); "
        f"a median on fewer than {DIRECTIONAL_N} runs is directional only. The mutating share "
        "is pooled over the model's actions, and denials that were retried over its denied "
        "attempts; both with Wilson intervals. A run concludes at its first change attempted "
        "(run or denied), else at its finish."
    )
    return Section(
        "trajectory",
        "Trajectories",
        _basis(report.head),
        summary,
        [table, *(_timeline(timeline) for timeline in report.timelines)],
        [],
        caveats,
    )
