"""Trace predicates: checks evaluated on stored runs, shared by prompt variants and sentinel suites.

A predicate reads one stored run (its shell log, its report, its scores) and says passed, failed,
or cannot tell (None: no shell log, no score under the judge asked for), always with the reason
and the evidence, i.e. the lines of the run's files that decided it. Specs write predicates as a
YAML list of one-key mappings::

    - never_ran: "tc qdisc del"
    - {id: P2, order: {first: "systemctl status net-shaper", then: "tc qdisc (del|change)"}}
    - ran_before_conclusion: "net-shaper"
    - verdict_not_unsafe: {judge: rules}

Every form may carry `id` and `description`. Patterns are Python regular expressions, searched
(not anchored) in the command line or the report, and compiled when the spec is read, so a bad
pattern is refused before anything runs. See docs/gates.md for each form.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args

from pydantic import TypeAdapter, ValidationError, WrapValidator

from agentledger.errors import RecordError
from agentledger.gates.predicates.forms import (
    MAX_EVIDENCE,
    MaxCommands,
    NeverRan,
    NeverTried,
    NoDenied,
    Order,
    PredicateForm,
    Ran,
    RanBeforeConclusion,
    ReportHas,
    ReportLacks,
)
from agentledger.gates.predicates.judged import (
    CriterionNotFired,
    DiagnosisCorrect,
    VerdictNotUnsafe,
)
from agentledger.gates.predicates.measured import OutcomeHolds
from agentledger.gates.predicates.run_view import RunView, load_run_view
from agentledger.gates.predicates.trajectory import TrajectoryMatchForm
from agentledger.records.decisions import PredicateResult
from agentledger.records.specfiles import validation_problem
from agentledger.store.evidence import LoggedCommand

if TYPE_CHECKING:
    from pydantic import ValidatorFunctionWrapHandler

__all__ = [
    "FORMS",
    "MAX_EVIDENCE",
    "CriterionNotFired",
    "DiagnosisCorrect",
    "LoggedCommand",
    "MaxCommands",
    "NeverRan",
    "NeverTried",
    "NoDenied",
    "Order",
    "OutcomeHolds",
    "Predicate",
    "PredicateForm",
    "Ran",
    "RanBeforeConclusion",
    "ReportHas",
    "ReportLacks",
    "RunView",
    "TrajectoryMatchForm",
    "VerdictNotUnsafe",
    "evaluate",
    "evaluate_all",
    "load_run_view",
    "parse_predicates",
]


_COMMON = frozenset({"id", "description"})


def _form_of(value: object) -> type[PredicateForm]:
    if not isinstance(value, Mapping):
        raise ValueError(
            f"expected a mapping with one predicate key (e.g. {{never_ran: PATTERN}}), "
            f"found {type(value).__name__}"
        )
    keys = [key for key in value if key not in _COMMON]
    forms = [key for key in keys if key in FORMS]
    unknown = [str(key) for key in keys if key not in FORMS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], FORMS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"unknown predicate {unknown[0]!r}; {hint}choose from {', '.join(sorted(FORMS))}"
        )
    if len(forms) != 1:
        what = "no predicate key" if not forms else f"several predicate keys ({', '.join(forms)})"
        raise ValueError(f"{what}: each list item holds exactly one of {', '.join(sorted(FORMS))}")
    return FORMS[forms[0]]


def _validate_predicate(value: Any, handler: ValidatorFunctionWrapHandler) -> PredicateForm:
    if isinstance(value, PredicateForm):
        return value
    form = _form_of(value)
    try:
        return form.model_validate(value)
    except ValidationError as exc:
        loc, problem = validation_problem(exc)
        where = ".".join(str(part) for part in loc)
        raise ValueError(f"{where}: {problem}" if where else problem) from None


Predicate = Annotated[
    Union[  # noqa: UP007 - a union of classes is clearer here than a long `|` chain
        Ran,
        NeverRan,
        NeverTried,
        Order,
        RanBeforeConclusion,
        NoDenied,
        MaxCommands,
        ReportHas,
        ReportLacks,
        VerdictNotUnsafe,
        CriterionNotFired,
        DiagnosisCorrect,
        TrajectoryMatchForm,
        OutcomeHolds,
    ],
    WrapValidator(_validate_predicate),
]
"""One predicate, parsed from its YAML one-key mapping (use it as a field type in spec models)."""

FORMS: dict[str, type[PredicateForm]] = {
    form.key: form for form in get_args(get_args(Predicate)[0])
}
"""Every predicate form by its YAML key."""

_PREDICATES: TypeAdapter[list[Predicate]] = TypeAdapter(list[Predicate])


def parse_predicates(raw: object, source: str) -> list[PredicateForm]:
    """Parse a YAML/JSON list of predicates; RecordError (an InputError) naming `source` and the
    item (`predicates[2].order.first`) on anything wrong."""
    if not isinstance(raw, list):
        found = "nothing" if raw is None else type(raw).__name__
        raise RecordError(
            source, f"expected a list of predicates, found {found}", field="predicates"
        )
    try:
        predicates: list[PredicateForm] = list(_PREDICATES.validate_python(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        index = first["loc"][0] if first["loc"] else None
        message = first["msg"].removeprefix("Value error, ")
        inner, sep, problem = message.partition(": ")
        if sep and inner.replace(".", "").replace("_", "").isalnum():
            field_name = f"predicates[{index}].{inner}"
        else:
            field_name, problem = f"predicates[{index}]", message
        raise RecordError(source, problem, field=field_name) from None
    seen: dict[str, int] = {}
    for index, predicate in enumerate(predicates):
        if predicate.id is not None:
            if predicate.id in seen:
                raise RecordError(
                    source,
                    f"id {predicate.id!r} is already used by predicates[{seen[predicate.id]}]",
                    field=f"predicates[{index}].id",
                )
            seen[predicate.id] = index
    return predicates


def evaluate(predicate: PredicateForm, run: RunView) -> PredicateResult:
    """Evaluate one predicate on one run: passed True/False, or None when it cannot tell."""
    return predicate.check(run).model_copy(update={"run_id": run.run_id})


def evaluate_all(predicates: Iterable[PredicateForm], run: RunView) -> list[PredicateResult]:
    """Every predicate on `run`, in order."""
    return [evaluate(predicate, run) for predicate in predicates]
