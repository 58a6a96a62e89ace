"""The findings page: what `agentledger report all` says, with its charts, and what the gates
decided.

The report part is the one the CLI renders (`agentledger.analysis.build_reports` turned into
`agentledger.report.sections`): verdicts by model, the criterion firing map, the diagnosis /
remediation gap, drift, and the validity of the judges against held-out labels, so that the
page and ``report --format html`` cannot disagree. The charts are the reports' own SVG, inline:
they carry no script and no style attribute, which the viewer's Content-Security-Policy allows.

Below them, every decision record (newest first, with what superseded it, the rule and the
reasoning, per-model results and the runs it read) and, per sentinel suite, the history of its
checks per candidate model with the changes flagged (`agentledger sentinel history`).

The URL takes the runs filters of the runs page (``model``, ``scenario``, ``kind``, ...) to
narrow what the reports rest on, ``judge`` to choose the scores, and the drift options
``criterion`` (when it first fired on each model) and ``before_after`` (a prompt hash).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentledger.analysis import build_reports
from agentledger.gates.decisions import indexed_decisions
from agentledger.gates.sentinels.history import HistoryEntry, HistoryFlag, sentinel_history
from agentledger.records.decisions import Decision, superseded_by
from agentledger.records.filters import RunFilter
from agentledger.report.sections import Section, sections
from agentledger.viewer.app import in_worker, viewer_of
from agentledger.viewer.params import FILTER_PARAMS, check_params, one, parse_runs_query

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "FINDINGS_FILTERS",
    "FindingsView",
    "SentinelSuite",
    "findings_view",
    "routes",
]

FINDINGS_FILTERS: tuple[str, ...] = tuple(name for name in FILTER_PARAMS if name != "judge")
"""The runs filters the findings page takes (``judge`` chooses the scores instead)."""
_OWN_PARAMS = ("judge", "criterion", "before_after")


@dataclass
class SentinelSuite:
    """One sentinel suite's past checks, per candidate model, and the changes between them."""

    name: str
    models: dict[str, list[HistoryEntry]]
    flags: list[HistoryFlag]

    @property
    def checks(self) -> int:
        return sum(len(entries) for entries in self.models.values())

    def flags_of(self, model: str) -> list[HistoryFlag]:
        """The flagged changes between consecutive checks of candidate `model`."""
        return [flag for flag in self.flags if flag.candidate_model == model]


@dataclass
class FindingsView:
    """Everything the findings page shows."""

    sections: list[Section]
    decisions: list[Decision]
    """Newest first."""
    superseded: dict[str, str]
    """decision id -> the id of the decision that superseded it."""
    suites: list[SentinelSuite]
    judge: str | None = None
    criterion: str | None = None
    before_after: str | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)

    @property
    def filtered(self) -> bool:
        return bool(self.filters)

    def runs_link(self) -> str:
        """The runs page showing the runs the reports rest on."""
        pairs = [(name, value) for name, values in self.filters.items() for value in values]
        if self.judge:
            pairs.append(("judge", self.judge))
        return "/runs" + (f"?{urlencode(pairs)}" if pairs else "")


def findings_view(
    ledger: Ledger,
    run_filter: RunFilter | None = None,
    *,
    judge: str | None = None,
    criterion: str | None = None,
    before_after: str | None = None,
    filters: dict[str, list[str]] | None = None,
) -> FindingsView:
    """The findings of `ledger` over the runs `run_filter` selects (default: every agent
    run), scored by `judge` (default: the judge that scored them most recently), and every
    decision with the sentinel history. InputError for a judge that matches nothing."""
    reports = build_reports(
        "all",
        ledger.index,
        run_filter or RunFilter(),
        judge=judge,
        criterion=criterion,
        prompt=before_after,
        ledger=ledger,
    )
    every = indexed_decisions(ledger)
    by_suite: dict[str, list[Decision]] = defaultdict(list)
    for decision in every:
        if decision.kind == "sentinel":
            by_suite[decision.subject].append(decision)
    suites = []
    for name in sorted(by_suite):
        models, flags = sentinel_history(by_suite[name])
        suites.append(SentinelSuite(name, models, flags))
    return FindingsView(
        sections=sections(reports),
        decisions=list(reversed(every)),
        superseded=superseded_by(every),
        suites=suites,
        judge=judge,
        criterion=criterion,
        before_after=before_after,
        filters=dict(filters or {}),
    )


def _query(params: QueryParams) -> tuple[RunFilter, dict[str, list[str]], dict[str, str | None]]:
    """The run filter, the filter values as given, and the page's own options."""
    check_params(params, (*FINDINGS_FILTERS, *_OWN_PARAMS))
    own = {name: one(params, name) for name in _OWN_PARAMS}
    filters = [(name, value) for name in FINDINGS_FILTERS for value in params.getlist(name)]
    query = parse_runs_query(QueryParams(filters))
    return replace(query.run_filter, limit=None, offset=0), query.values, own


@in_worker
def findings_page(request: Request) -> Response:
    """GET /findings: the report sections, decisions and sentinel history."""
    viewer = viewer_of(request)
    run_filter, values, own = _query(request.query_params)
    view = findings_view(
        viewer.ledger,
        run_filter,
        judge=own["judge"],
        criterion=own["criterion"],
        before_after=own["before_after"],
        filters=values,
    )
    judges = viewer.ledger.index.judge_ids()
    context = {
        "view": view,
        "values": values,
        "judges": judges,
        "models": viewer.ledger.index.distinct("model"),
        "scenarios": viewer.ledger.index.distinct("scenario"),
        "criteria": viewer.ledger.index.criteria_of(judges),
    }
    return viewer.render(request, "findings.html", context)


routes = [Route("/findings", findings_page, name="findings")]
