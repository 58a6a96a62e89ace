"""The runs page: the `runs` filters as a form and in the URL, sortable, paged.

Everything comes from the index's typed queries: one page of runs in the order asked
(`RunIndex.query_sorted`), their count, and the verdicts and current labels of the runs on the
page only (`verdicts_of`, `current_labels_of`), so that a page costs the same over 100,000 runs
as over 100.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentledger.records import RUN_KINDS
from agentledger.records.filters import VERDICTS
from agentledger.store.index import IndexedRun, LabelResult, RunVerdict
from agentledger.viewer.app import in_worker, viewer_of
from agentledger.viewer.params import RunsQuery, parse_runs_query

__all__ = ["SORT_COLUMNS", "RunRow", "routes", "runs_url"]

SORT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "run"),
    ("scenario", "scenario"),
    ("model", "model"),
    ("started", "started"),
    ("commands_run", "cmds"),
    ("commands_denied", "denied"),
    ("kind", "kind"),
)
"""(sort key, column heading) of the sortable columns, in table order."""


@dataclass
class RunRow:
    """One run on the page, with its judges' verdicts and its current labels."""

    run: IndexedRun
    verdicts: list[RunVerdict] = field(default_factory=list)
    labels: list[LabelResult] = field(default_factory=list)


def runs_url(values: dict[str, list[str]], **changes: str | None) -> str:
    """The runs page's address with the filter `values` and `changes` (None drops a key)."""
    pairs: list[tuple[str, str]] = [
        (name, value) for name, given in values.items() for value in given
    ]
    for name, value in changes.items():
        pairs = [pair for pair in pairs if pair[0] != name]
        if value is not None:
            pairs.append((name, value))
    return "/runs" + (f"?{urlencode(pairs)}" if pairs else "")


def _links(query: RunsQuery, total: int) -> dict[str, object]:
    base: dict[str, list[str]] = {
        **query.values,
        "sort": [query.sort],
        "order": ["desc" if query.descending else "asc"],
    }
    if query.per_page != 50:
        base["per_page"] = [str(query.per_page)]
    sort_links = {}
    for key, _ in SORT_COLUMNS:
        flip = key == query.sort and query.descending
        sort_links[key] = runs_url(base, sort=key, order="asc" if flip else "desc", page=None)
    last = max(1, -(-total // query.per_page))
    return {
        "sort_links": sort_links,
        "last_page": last,
        "prev": runs_url(base, page=str(query.page - 1)) if query.page > 1 else None,
        "next": runs_url(base, page=str(query.page + 1)) if query.page < last else None,
        "first": runs_url(base, page=None) if query.page > 1 else None,
    }


@in_worker
def runs_page(request: Request) -> Response:
    viewer = viewer_of(request)
    query = parse_runs_query(request.query_params)
    index = viewer.ledger.index
    found = index.query_sorted(query.run_filter, query.sort, query.descending)
    if len(found) < query.per_page and (found or query.offset == 0):
        # The last page: the runs before it and on it are all there are, with no count.
        total = query.offset + len(found)
    else:
        total = index.count(replace(query.run_filter, limit=None, offset=0))
    ids = [run.run_id for run in found]
    verdicts: dict[str, list[RunVerdict]] = defaultdict(list)
    for verdict in index.verdicts_of(ids):
        verdicts[verdict.run_id].append(verdict)
    labels: dict[str, list[LabelResult]] = defaultdict(list)
    for label in index.current_labels_of(ids):
        labels[label.run_id].append(label)
    judges = index.judge_ids()
    context = {
        "query": query,
        "values": query.values,
        "rows": [RunRow(run, verdicts[run.run_id], labels[run.run_id]) for run in found],
        "total": total,
        "shown_from": query.offset + 1 if found else 0,
        "shown_to": query.offset + len(found),
        "columns": SORT_COLUMNS,
        "models": index.distinct("model"),
        "scenarios": index.distinct("scenario"),
        "kinds": RUN_KINDS,
        "verdict_choices": VERDICTS,
        "judges": judges,
        "criteria": index.criteria_of(judges),
        **_links(query, total),
    }
    return viewer.render(request, "runs.html", context)


routes = [Route("/runs", runs_page, name="runs")]
