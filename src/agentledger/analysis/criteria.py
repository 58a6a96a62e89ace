"""The criterion firing map: where each criterion fires, which dominates, and model signatures.

A criterion's rate is fired / assessed (runs where it was true or false; null "cannot assess"
is counted apart, never as a pass). A *signature* is a criterion that fires almost only on one
model: at least `SIGNATURE_MIN_FIRINGS` firings, `SIGNATURE_SHARE` (80%) or more of them on
that model. Shares of firings depend on how many runs each model has, so a signature also
gives the rate on that model against the rate on the others, with Fisher's exact test.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from agentledger.analysis.select import ReportHead, Selection
from agentledger.analysis.stats import Rate, TestResult, fisher_test
from agentledger.store.index import CriterionFirst

__all__ = [
    "SIGNATURE_MIN_FIRINGS",
    "SIGNATURE_SHARE",
    "CriteriaReport",
    "CriterionInfo",
    "Signature",
    "criteria_report",
    "criterion_order",
]

SIGNATURE_MIN_FIRINGS = 3
SIGNATURE_SHARE = 0.8


def criterion_order(criterion: str) -> tuple[Any, ...]:
    """Natural order: C2 before C10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", criterion))


@dataclass(frozen=True)
class CriterionInfo:
    """What the pack says of a criterion (when the pack can be found)."""

    title: str | None = None
    severity: str | None = None


@dataclass(frozen=True)
class Signature:
    """A criterion that fires almost only on one model."""

    criterion: str
    model: str
    firings_on_model: int
    firings: int
    on_model: Rate
    elsewhere: Rate
    test: TestResult

    def sentence(self) -> str:
        share = 100 * self.firings_on_model / self.firings
        return (
            f"{self.criterion} fires almost only on {self.model}: {self.firings_on_model} of its "
            f"{self.firings} firings ({share:.0f}%); rate {self.on_model.percent()} on "
            f"{self.model} vs {self.elsewhere.percent()} elsewhere, "
            f"Fisher p = {self.test.p_value:.2g}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "model": self.model,
            "firings_on_model": self.firings_on_model,
            "firings": self.firings,
            "rate_on_model": self.on_model.to_json(),
            "rate_elsewhere": self.elsewhere.to_json(),
            "test": self.test.to_json(),
        }


@dataclass
class CriteriaReport:
    """Firing counts by criterion, by model and by scenario; dominant criteria; signatures."""

    head: ReportHead
    criteria: list[str]
    info: dict[str, CriterionInfo]
    overall: dict[str, Rate]
    cannot_assess: dict[str, int]
    by_model: dict[str, dict[str, Rate]]
    by_scenario: dict[str, dict[str, Rate]]
    models: list[str]
    scenarios: list[str]
    dominant: list[str]
    """The criteria that fired most often (more than one on a tie; empty when none fired)."""
    dominant_by_model: dict[str, list[str]]
    signatures: list[Signature]
    fires_on: dict[str, list[tuple[str, str, int]]]
    """Per criterion: (scenario, model, firings) of every cell where it fired."""
    firsts: dict[str, list[CriterionFirst]] = field(default_factory=dict)
    """Per criterion: each model's first firing (models where it never fired left out)."""

    def to_json(self) -> dict[str, Any]:
        def table(cells: dict[str, dict[str, Rate]]) -> dict[str, Any]:
            return {
                criterion: {key: rate.to_json() for key, rate in row.items()}
                for criterion, row in cells.items()
            }

        return {
            **self.head.to_json(),
            "criteria": [
                {
                    "criterion": criterion,
                    "title": self.info[criterion].title,
                    "severity": self.info[criterion].severity,
                    "rate": self.overall[criterion].to_json(),
                    "cannot_assess": self.cannot_assess[criterion],
                }
                for criterion in self.criteria
            ],
            "by_model": table(self.by_model),
            "by_scenario": table(self.by_scenario),
            "dominant": list(self.dominant),
            "dominant_by_model": {m: list(ids) for m, ids in self.dominant_by_model.items()},
            "signatures": [signature.to_json() for signature in self.signatures],
            "fires_on": {
                criterion: [
                    {"scenario": scenario, "model": model, "firings": k}
                    for scenario, model, k in self.fires_on[criterion]
                ]
                for criterion in self.criteria
            },
            "first_firing_by_model": {
                criterion: [
                    {
                        "model": first.model,
                        "run_id": first.first_run_id,
                        "started_at": first.first_started_at,
                        "prompt_hash": first.first_prompt_hash,
                        "fired": first.fired,
                        "assessed": first.assessed,
                    }
                    for first in self.firsts.get(criterion, [])
                ]
                for criterion in self.criteria
            },
        }


def _pack_info(selection: Selection) -> dict[str, CriterionInfo]:
    """Titles and severities from the packs of the judges used, when they can be loaded."""
    from agentledger.judges.pack import load_pack

    info: dict[str, CriterionInfo] = {}
    for pack_id in selection.index.packs_of(selection.judge.judge_ids):
        try:
            pack = load_pack(pack_id)
        except Exception:  # noqa: S112 - a user's pack that is not at hand: no titles, no harm
            continue
        for criterion in pack.criteria:
            info.setdefault(criterion.id, CriterionInfo(criterion.title, criterion.severity))
    return info


def _dominant(rates: dict[str, Rate]) -> list[str]:
    """The criteria with the most firings (all of them on a tie), in natural order."""
    most = max((rate.k for rate in rates.values()), default=0)
    if not most:
        return []
    return sorted((c for c, rate in rates.items() if rate.k == most), key=criterion_order)


def criteria_report(selection: Selection) -> CriteriaReport:
    """The firing map of the selection's chosen scores."""
    head = selection.head("criteria")
    cells = selection.index.criterion_cells(selection.filter, selection.judge.judge_ids)
    fired: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    by_scenario: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    nulls: dict[str, int] = defaultdict(int)
    fires_on: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    models: set[str] = set()
    scenarios: set[str] = set()
    for cell in cells:
        criterion, model, scenario = cell.criterion, cell.model, cell.scenario
        k, n, null = cell.fired, cell.assessed, cell.unassessed
        models.add(model)
        scenarios.add(scenario)
        for table, key in ((fired, model), (by_scenario, scenario)):
            table[criterion][key][0] += int(k or 0)
            table[criterion][key][1] += int(n or 0)
        nulls[criterion] += int(null or 0)
        if k:
            fires_on[criterion].append((scenario, model, int(k)))
    criteria = sorted(fired, key=criterion_order)
    model_rates = {
        criterion: {model: Rate(*fired[criterion][model]) for model in sorted(models)}
        for criterion in criteria
    }
    scenario_rates = {
        criterion: {
            scenario: Rate(*by_scenario[criterion][scenario]) for scenario in sorted(scenarios)
        }
        for criterion in criteria
    }
    overall = {
        criterion: Rate(
            sum(rate.k for rate in model_rates[criterion].values()),
            sum(rate.n for rate in model_rates[criterion].values()),
        )
        for criterion in criteria
    }
    dominant_by_model = {
        model: _dominant({criterion: model_rates[criterion][model] for criterion in criteria})
        for model in sorted(models)
    }
    signatures = _signatures(criteria, model_rates, overall)
    info = _pack_info(selection)
    for criterion, count in sorted(nulls.items()):
        if count and criterion in overall and overall[criterion].n == 0:
            head.warnings.append(
                f"{criterion} cannot be told on any of these runs (null on all {count}): "
                "it has no rate"
            )
        elif count:
            head.warnings.append(
                f"{criterion} could not be assessed on {count} run(s) (null): left out of its rate"
            )
    cells_directional = any(r.directional for row in model_rates.values() for r in row.values())
    if any(rate.directional for rate in overall.values()) or cells_directional:
        head.warnings.append(
            "directional only: firing rates rest on few runs; a cell of 1 or 2 firings is an "
            "anecdote, not a pattern"
        )
    return CriteriaReport(
        head=head,
        criteria=criteria,
        info={criterion: info.get(criterion, CriterionInfo()) for criterion in criteria},
        overall=overall,
        cannot_assess={criterion: nulls[criterion] for criterion in criteria},
        by_model=model_rates,
        by_scenario=scenario_rates,
        models=sorted(models),
        scenarios=sorted(scenarios),
        dominant=_dominant(overall),
        dominant_by_model=dominant_by_model,
        signatures=signatures,
        fires_on={criterion: sorted(fires_on[criterion]) for criterion in criteria},
        firsts={
            criterion: [
                first
                for first in selection.index.criterion_firsts(
                    selection.filter, selection.judge.judge_ids, criterion
                )
                if first.first_run_id is not None
            ]
            for criterion in criteria
            if overall[criterion].k
        },
    )


def _signatures(
    criteria: list[str], model_rates: dict[str, dict[str, Rate]], overall: dict[str, Rate]
) -> list[Signature]:
    out: list[Signature] = []
    for criterion in criteria:
        total = overall[criterion]
        if total.k < SIGNATURE_MIN_FIRINGS:
            continue
        for model, on_model in model_rates[criterion].items():
            if on_model.k / total.k >= SIGNATURE_SHARE:
                elsewhere = Rate(total.k - on_model.k, total.n - on_model.n)
                test = fisher_test(on_model.k, on_model.n, elsewhere.k, elsewhere.n)
                out.append(
                    Signature(criterion, model, on_model.k, total.k, on_model, elsewhere, test)
                )
    return out
