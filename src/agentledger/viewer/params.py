"""Reading a page's URL: every parameter checked, a bad one refused by name (HTTP 400).

The runs page takes the words of `agentledger runs` (``model``, ``scenario``, ``prompt``,
``variant``, ``served``, ``commit``, ``since``, ``until``, ``tag``, ``kind``, ``judge``,
``verdict``, ``fired``, ``label_source``, ``label_verdict``, ``labelled``), each value read by
the grammar of `agentledger.records.filters`, plus ``select``: one ``KEY=VALUE,...`` selection
in the same grammar as `report compare --a`. Run ids and artifact names from the URL go
through `agentledger.identity`'s checks before anything looks them up.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

from starlette.datastructures import QueryParams

from agentledger.errors import InputError, UnsafeNameError
from agentledger.identity import check_artifact_name, check_run_id
from agentledger.records.filters import (
    RunFilter,
    parse_label_verdict,
    parse_run_selection,
    parse_tag,
    parse_verdict,
    selection_value,
)
from agentledger.store.index import RUN_SORTS, RunSort

__all__ = [
    "FILTER_PARAMS",
    "PER_PAGE",
    "BadParam",
    "RunsQuery",
    "artifact_param",
    "check_params",
    "one",
    "page_number",
    "parse_runs_query",
    "run_id_param",
]

PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_PAGE = 1_000_000

FILTER_PARAMS: tuple[str, ...] = (
    "select",
    "model",
    "scenario",
    "prompt",
    "variant",
    "served",
    "commit",
    "since",
    "until",
    "tag",
    "kind",
    "judge",
    "verdict",
    "fired",
    "label_source",
    "label_verdict",
    "labelled",
)
"""The runs page's filter parameters, in the order its form shows them."""
_REPEATABLE = frozenset({"model", "scenario", "tag", "kind", "verdict", "fired", "label_verdict"})
_LABELLED = {"yes": True, "no": False}


class BadParam(InputError):
    """A URL or form parameter that is not valid: the viewer answers 400, saying which."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        super().__init__(f"parameter {name!r}: {problem}")


def check_params(params: QueryParams | Iterable[str], accepted: Collection[str]) -> None:
    """Refuse a parameter this page does not take (a typo would otherwise select everything)."""
    names = params.keys() if isinstance(params, QueryParams) else params
    for name in names:
        if name not in accepted:
            raise BadParam(name, f"unknown here (this page takes: {', '.join(accepted)})")


def one(params: QueryParams, name: str) -> str | None:
    """The single value of `name` (stripped; None when absent or empty); BadParam if repeated."""
    values = [value.strip() for value in params.getlist(name) if value.strip()]
    if len(values) > 1:
        raise BadParam(name, "given more than once")
    return values[0] if values else None


def page_number(params: QueryParams, name: str = "page", *, maximum: int | None = None) -> int:
    """A 1-based page number (1 when absent)."""
    text = one(params, name)
    if text is None:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise BadParam(name, f"{text!r} is not a page number (1, 2, ...)")
    value = int(text)
    if maximum is not None and value > maximum:
        raise BadParam(name, f"{value} is above {maximum}")
    return value


def run_id_param(value: str, name: str = "run") -> str:
    """A run id from the URL, refused unless it is safe as a name in the store."""
    try:
        return check_run_id(value)
    except UnsafeNameError as exc:
        raise BadParam(name, str(exc)) from None


def artifact_param(value: str, name: str = "file") -> str:
    """An artifact name from the URL, refused unless it is a safe relative name."""
    try:
        return check_artifact_name(value)
    except UnsafeNameError as exc:
        raise BadParam(name, str(exc)) from None


@dataclass(frozen=True)
class RunsQuery:
    """What the runs page was asked: the filter, the order and the page."""

    run_filter: RunFilter
    sort: RunSort
    descending: bool
    page: int
    per_page: int
    values: dict[str, list[str]]
    """Every filter parameter as given (empty ones left out): what the form shows again and
    what the sort and page links carry."""

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


def _values(params: QueryParams, name: str) -> list[str]:
    values = [value.strip() for value in params.getlist(name) if value.strip()]
    if len(values) > 1 and name not in _REPEATABLE:
        raise BadParam(name, "given more than once")
    return values


def _read(name: str, value: str) -> Any:
    if name in ("prompt", "since", "until", "kind"):
        return selection_value(name, value)
    if name == "tag":
        return parse_tag(value)
    if name == "verdict":
        return parse_verdict(value)
    if name == "label_verdict":
        return parse_label_verdict(value)
    if name == "labelled":
        if value.lower() not in _LABELLED:
            raise ValueError(f"{value!r}: use yes or no")
        return _LABELLED[value.lower()]
    return value


_FIELDS = {
    "model": "models",
    "scenario": "scenarios",
    "prompt": "prompt_hash",
    "variant": "variant",
    "served": "model_served",
    "commit": "agent_commit",
    "since": "since",
    "until": "until",
    "tag": "tags",
    "kind": "kinds",
    "judge": "judge",
    "verdict": "verdicts",
    "fired": "fired",
    "label_source": "label_source",
    "label_verdict": "label_verdicts",
    "labelled": "labelled",
}


def parse_runs_query(params: QueryParams) -> RunsQuery:
    """The runs page's parameters as a RunsQuery; BadParam naming the first bad one."""
    check_params(params, (*FILTER_PARAMS, "sort", "order", "page", "per_page"))
    values: dict[str, list[str]] = {}
    for name in FILTER_PARAMS:
        given = _values(params, name)
        if given:
            values[name] = given
    base = RunFilter()
    if "select" in values:
        try:
            base = parse_run_selection(values["select"][0], what="selection")
        except InputError as exc:
            raise BadParam("select", str(exc)) from None
    changes: dict[str, Any] = {}
    for name, given in values.items():
        if name == "select":
            continue
        try:
            read = [_read(name, value) for value in given]
        except ValueError as exc:
            raise BadParam(name, str(exc)) from None
        field = _FIELDS[name]
        if name in _REPEATABLE:
            earlier = getattr(base, field) if name == "tag" else ()
            changes[field] = (*earlier, *read)
        else:
            changes[field] = read[0]
    sort_text = one(params, "sort") or "started"
    if sort_text not in RUN_SORTS:
        raise BadParam("sort", f"{sort_text!r}: sort by one of {', '.join(RUN_SORTS)}")
    order = (one(params, "order") or "desc").lower()
    if order not in ("asc", "desc"):
        raise BadParam("order", f"{order!r}: use asc or desc")
    per_page_text = one(params, "per_page")
    per_page = PER_PAGE
    if per_page_text is not None:
        if not per_page_text.isdigit() or not 1 <= int(per_page_text) <= MAX_PER_PAGE:
            raise BadParam("per_page", f"{per_page_text!r}: a number from 1 to {MAX_PER_PAGE}")
        per_page = int(per_page_text)
    page = page_number(params, maximum=MAX_PAGE)
    run_filter = replace(base, **changes, limit=per_page, offset=(page - 1) * per_page)
    return RunsQuery(
        run_filter=run_filter,
        sort=sort_text,
        descending=order == "desc",
        page=page,
        per_page=per_page,
        values=values,
    )
