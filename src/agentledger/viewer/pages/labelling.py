"""The labelling form's target: a person's label of a run, written through `labels/`.

The one thing the viewer writes. The form's words are those of `agentledger label` (verdict
safe / uncertain / unsafe, each criterion yes / no / unknown, diagnosis correct / incorrect, a
reason, who labels), read by `agentledger.labels.entry`, so that a label made here and one made
at the terminal are the same record. A bad form is refused whole (400), with nothing written.
"""

from __future__ import annotations

from functools import partial
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from agentledger.errors import InputError
from agentledger.labels import LabelStore
from agentledger.labels.entry import (
    known_criteria,
    make_label,
    parse_diagnosis,
    parse_fired,
    parse_label_verdict,
    source_name,
)
from agentledger.records.labels import Label
from agentledger.viewer.app import viewer_of
from agentledger.viewer.params import BadParam, check_params
from agentledger.viewer.security import CSRF_FIELD

__all__ = ["CRITERION_PREFIX", "LABELLER_COOKIE", "label_from_form", "routes"]

CRITERION_PREFIX = "criterion."
_FIELDS = (CSRF_FIELD, "verdict", "diagnosis", "reason", "by", "next")
LABELLER_COOKIE = "agentledger_by"
"""The cookie that remembers, in one browser, who labels there (the label form's "By")."""
_YEAR = 365 * 24 * 3600
MAX_REASON = 10_000


def _single(form: FormData, name: str) -> str:
    values = form.getlist(name)
    if len(values) > 1:
        raise BadParam(name, "given more than once")
    value = values[0] if values else ""
    if not isinstance(value, str):
        raise BadParam(name, "a file was sent where text was expected")
    return value.strip()


def label_from_form(form: FormData, run_id: str, known: list[str]) -> Label:
    """The label the form describes; BadParam (or InputError) naming the field at fault."""
    check_params(
        [name for name in form if not name.startswith(CRITERION_PREFIX)],
        _FIELDS,
    )
    try:
        verdict = _single(form, "verdict")
        diagnosis = _single(form, "diagnosis")
        by = _single(form, "by")
        reason = _single(form, "reason")
        criteria: list[tuple[str, bool | None]] = []
        for name in form:
            if not name.startswith(CRITERION_PREFIX):
                continue
            criterion = name[len(CRITERION_PREFIX) :]
            value = _single(form, name)
            if value:
                criteria.append((criterion, parse_fired(value)))
        verdict_word = parse_label_verdict(verdict) if verdict else None
        diagnosis_word = parse_diagnosis(diagnosis) if diagnosis else None
    except BadParam:
        raise
    except InputError as exc:
        raise BadParam("form", str(exc)) from None
    if not by:
        raise BadParam("by", "who is labelling? give a name")
    if len(reason) > MAX_REASON:
        raise BadParam("reason", f"at most {MAX_REASON} characters")
    if verdict_word is None and not criteria and diagnosis_word is None:
        raise BadParam("verdict", "give a verdict, a criterion or a diagnosis: nothing to label")
    return make_label(
        run_id,
        source_name(by, "by"),
        verdict=verdict_word,
        criteria=criteria,
        diagnosis_correct=diagnosis_word,
        reason=reason or None,
        known=known,
    )


async def label_run(request: Request) -> Response:
    check_params(request.query_params, ())
    async with request.form() as form:
        viewer = viewer_of(request)
        return await run_in_threadpool(viewer.one_at_a_time, partial(_label, form), request)


def _label(form: FormData, request: Request) -> Response:
    """Write the label the form gives (in a worker thread, as pages are read: `in_worker`)."""
    viewer = viewer_of(request)
    run = viewer.run(request.path_params["run_id"])
    given = form.get(CSRF_FIELD)
    viewer.check_csrf(request, given if isinstance(given, str) else None)
    label = label_from_form(form, run.run_id, known_criteria(viewer.ledger, run.run_id))
    go_next = _single(form, "next") == "1"
    LabelStore(viewer.ledger).write([label])
    if go_next:
        target = f"/review/next?after={quote(run.run_id)}"
    else:
        target = f"/runs/{quote(run.run_id)}?saved={quote(label.label_id)}#labels"
    response = RedirectResponse(target, status_code=303)
    # The next form in this browser says who labels; another visitor's browser does not.
    response.set_cookie(
        LABELLER_COOKIE, label.by.name, max_age=_YEAR, httponly=True, samesite="strict"
    )
    return response


routes = [Route("/runs/{run_id}/label", label_run, methods=["POST"], name="label")]
