"""The review queue: the runs waiting for a person (`agentledger.labels.review`), the way to
the next one, and how far each judge agrees with people's labels so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from agentledger.analysis.agreement import agreement_report, resolve_source
from agentledger.analysis.kappa import KappaResult
from agentledger.errors import InputError
from agentledger.labels.review import QueueItem, review_queue, review_queue_page
from agentledger.records import RUN_KINDS
from agentledger.records.filters import RunFilter, parse_kind
from agentledger.store.index import JudgeTally
from agentledger.store.ledger import Ledger
from agentledger.viewer.app import in_worker, viewer_of
from agentledger.viewer.params import BadParam, check_params, one, page_number, run_id_param

__all__ = ["JudgeAgreement", "judge_agreements", "routes"]

PER_PAGE = 50
AGREEMENT_JUDGES = 6
"""The newest judges whose agreement with people's labels the page shows."""
HUMAN_LABELS = "labels:human"
NOTHING_IN_COMMON = "no run is both scored by it and labelled"


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge against people's labels: the verdict's agreement, or why there is none."""

    judge: JudgeTally
    verdict: KappaResult | None
    unsafe: KappaResult | None
    """Unsafe against the rest (the binary collapse)."""
    problem: str | None


def judge_agreements(ledger: Ledger, kinds: tuple[str, ...]) -> list[JudgeAgreement]:
    """Each of the newest judges of runs of `kinds` against people's labels (labels:human)."""
    run_filter = RunFilter(kinds=kinds)
    found = []
    # People's labels read once for every judge; with none yet, no judge's scores are read.
    unlabelled: str | None
    try:
        people = resolve_source(ledger, HUMAN_LABELS, run_filter)
    except InputError as exc:  # nobody has labelled a run yet
        unlabelled = str(exc)
    else:
        unlabelled = None if people.ratings.run_ids else NOTHING_IN_COMMON
    for tally in ledger.index.judges_of(run_filter)[:AGREEMENT_JUDGES]:
        if unlabelled is not None:
            found.append(JudgeAgreement(tally, None, None, unlabelled))
            continue
        try:
            report = agreement_report(ledger, f"judge:{tally.judge_id}", people, run_filter)
        except InputError as exc:
            found.append(JudgeAgreement(tally, None, None, str(exc)))
            continue
        by_what = {comparison.what: comparison.result for comparison in report.comparisons}
        problem = None if report.common else NOTHING_IN_COMMON
        found.append(JudgeAgreement(tally, by_what.get("verdict"), by_what.get("binary"), problem))
    return found


def _kinds(request: Request) -> tuple[str, ...]:
    try:
        kinds = tuple(parse_kind(value) for value in request.query_params.getlist("kind") if value)
    except ValueError as exc:
        raise BadParam("kind", str(exc)) from None
    return kinds or ("agent",)


def _unlabelled(request: Request) -> bool:
    value = (one(request.query_params, "unlabelled") or "yes").lower()
    if value not in ("yes", "no"):
        raise BadParam("unlabelled", f"{value!r}: use yes or no")
    return value == "yes"


def _narrowed(request: Request) -> tuple[str, str, RunFilter | None]:
    """The model and scenario the queue is narrowed to ("" for any), as a run filter."""
    model = (one(request.query_params, "model") or "").strip()
    scenario = (one(request.query_params, "scenario") or "").strip()
    if not (model or scenario):
        return model, scenario, None
    chosen = RunFilter(models=(model,) if model else (), scenarios=(scenario,) if scenario else ())
    return model, scenario, chosen


@in_worker
def review_page(request: Request) -> Response:
    check_params(request.query_params, ("kind", "unlabelled", "page", "model", "scenario"))
    viewer = viewer_of(request)
    kinds = _kinds(request)
    unlabelled = _unlabelled(request)
    model, scenario, narrowed = _narrowed(request)
    page = page_number(request.query_params, maximum=1_000_000)
    found = review_queue_page(
        viewer.ledger,
        offset=(page - 1) * PER_PAGE,
        limit=PER_PAGE,
        unlabelled=unlabelled,
        kinds=kinds,
        run_filter=narrowed,
    )
    shown: list[QueueItem] = found.items
    last = max(1, -(-found.total // PER_PAGE))
    base = [("kind", kind) for kind in kinds] + [("unlabelled", "yes" if unlabelled else "no")]
    base += [(name, value) for name, value in (("model", model), ("scenario", scenario)) if value]

    first = shown[0] if page == 1 and shown else None
    if first is None and found.total:
        head = review_queue_page(
            viewer.ledger, limit=1, unlabelled=unlabelled, kinds=kinds, run_filter=narrowed
        )
        first = head.items[0]

    def page_url(number: int) -> str:
        return "/review?" + urlencode([*base, ("page", str(number))])

    context = {
        "queue": shown,
        "total": found.total,
        "counts": sorted(found.counts.items()),
        "kinds": kinds,
        "all_kinds": RUN_KINDS,
        "unlabelled": unlabelled,
        "model": model,
        "scenario": scenario,
        "models": viewer.ledger.index.distinct("model"),
        "scenarios": viewer.ledger.index.distinct("scenario"),
        "page": page,
        "last_page": last,
        "prev": page_url(page - 1) if page > 1 else None,
        "next": page_url(page + 1) if page < last else None,
        "agreements": judge_agreements(viewer.ledger, kinds),
        "start": f"/runs/{quote(first.run_id)}?review=1" if first else None,
    }
    return viewer.render(request, "review.html", context)


def _still_queued(ledger: Ledger, run_id: str) -> bool:
    """Whether `run_id` may still wait in the queue: no person's current label on it."""
    labels = ledger.index.current_labels_of([run_id])
    return not any(label.source_kind == "person" for label in labels)


@in_worker
def next_in_queue(request: Request) -> Response:
    """The run after `after` in the queue (the first, when `after` has left it)."""
    check_params(request.query_params, ("after",))
    viewer = viewer_of(request)
    after_text = one(request.query_params, "after")
    after = run_id_param(after_text, "after") if after_text else None
    head = review_queue_page(viewer.ledger, limit=1).items
    if after is None or not _still_queued(viewer.ledger, after):
        # The usual case (`after` was just labelled and left): the first, without the rest.
        if not head:
            return RedirectResponse("/review", status_code=303)
        return RedirectResponse(f"/runs/{quote(head[0].run_id)}?review=1", status_code=303)
    ids = [item.run_id for item in review_queue(viewer.ledger)]
    if after in ids:
        position = ids.index(after)
        ids = ids[position + 1 :] + ids[:position]
    if not ids:
        return RedirectResponse("/review", status_code=303)
    return RedirectResponse(f"/runs/{quote(ids[0])}?review=1", status_code=303)


routes = [
    Route("/review", review_page, name="review"),
    Route("/review/next", next_in_queue, name="review_next"),
]
