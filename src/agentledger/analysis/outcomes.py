"""Measured outcomes beside judged verdicts: fixed, durable, collateral and verified rates.

Each run of a lab scenario whose remediation was measured (`agentledger outcome`, or at the end
of `agentledger run`) has outcomes; the newest one stands for the run. Per model, prompt and
scenario this report gives, with 95% Wilson intervals:

- **fixed**: runs whose fix made the symptom probe pass, of those where it could be measured;
- **durable fix**: runs fixed *and* still fixed after every owner's cycles, of the same runs
  (the rate a variant must not lower: ``durable_fix_rate``);
- **collateral**: runs whose fix changed a probe that must keep working or stay blocked, or
  lost a list entry, of those measured;
- **verified**: runs whose own verification commands showed what the report said, of those
  measured;

beside the share the judge called Safe on the same runs, and, per criterion, where the judge
and the measurement (`agentledger.outcomes.labels`) disagree. Outcomes are read from their
files (they are not indexed), so this report reads every outcome of the ledger once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentledger.analysis.select import ReportHead, Selection, short_hash
from agentledger.analysis.stats import Rate
from agentledger.outcomes import criteria_of, latest_outcomes
from agentledger.records.outcomes import Outcome

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "OUTCOME_DIMENSIONS",
    "OutcomeRates",
    "OutcomesReport",
    "RateRow",
    "outcome_rates",
    "outcomes_report",
]

OUTCOME_DIMENSIONS = ("model", "prompt", "scenario")
SHOWN_RUNS = 20


@dataclass(frozen=True)
class OutcomeRates:
    """The four measured rates over some runs' outcomes."""

    fixed: Rate
    durable: Rate
    collateral: Rate
    verified: Rate

    def to_json(self) -> dict[str, Any]:
        return {
            "fixed": self.fixed.to_json(),
            "durable_fix": self.durable.to_json(),
            "collateral": self.collateral.to_json(),
            "verified": self.verified.to_json(),
        }


def outcome_rates(outcomes: Iterable[Outcome]) -> OutcomeRates:
    """The rates of `outcomes` (see the module docstring for what each counts)."""
    listed = list(outcomes)
    measured_fix = [o for o in listed if o.fixed is not None]
    return OutcomeRates(
        fixed=Rate(sum(1 for o in measured_fix if o.fixed), len(measured_fix)),
        durable=Rate(sum(1 for o in measured_fix if o.fixed and o.durable), len(measured_fix)),
        collateral=Rate(
            sum(1 for o in listed if o.collateral),
            sum(1 for o in listed if o.collateral is not None),
        ),
        verified=Rate(
            sum(1 for o in listed if o.verified), sum(1 for o in listed if o.verified is not None)
        ),
    )


@dataclass(frozen=True)
class RateRow:
    """One group (a model, prompt or scenario): its measured rates and the judged Safe share."""

    dimension: str
    group: str
    runs: int
    rates: OutcomeRates
    safe: Rate

    def to_json(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "group": self.group,
            "runs": self.runs,
            **self.rates.to_json(),
            "judged_safe": self.safe.to_json(),
        }


@dataclass(frozen=True)
class Mismatch:
    """A run where the judge and the measurement disagree on a criterion."""

    run_id: str
    criterion: str
    judged: bool
    measured: bool


@dataclass
class OutcomesReport:
    """Measured outcome rates per model / prompt / scenario, and the judge against them."""

    head: ReportHead
    rows: list[RateRow]
    overall: RateRow
    runs_measured: int
    agree: dict[str, tuple[int, int]] = field(default_factory=dict)
    """criterion -> (runs where judge and measurement agree, runs both settled)."""
    mismatches: list[Mismatch] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "runs_measured": self.runs_measured,
            "rows": [row.to_json() for row in self.rows],
            "overall": self.overall.to_json(),
            "judge_vs_measured": {
                criterion: {"agree": agree, "n": n} for criterion, (agree, n) in self.agree.items()
            },
            "disagreements": [
                {
                    "run_id": m.run_id,
                    "criterion": m.criterion,
                    "judged": m.judged,
                    "measured": m.measured,
                }
                for m in self.mismatches
            ],
        }


def _group_key(dimension: str, run: Any) -> str:
    if dimension == "model":
        return str(run.model)
    if dimension == "prompt":
        return short_hash(run.system_prompt_hash) if run.system_prompt_hash else "-"
    return str(run.scenario)


def _row(
    dimension: str,
    group: str,
    run_ids: Sequence[str],
    outcomes: Mapping[str, Outcome],
    verdicts: Mapping[str, str | None],
) -> RateRow:
    judged = [verdicts[r] for r in run_ids if verdicts.get(r) in ("Safe", "Uncertain", "Unsafe")]
    return RateRow(
        dimension,
        group,
        len(run_ids),
        outcome_rates(outcomes[r] for r in run_ids),
        Rate(sum(1 for v in judged if v == "Safe"), len(judged)),
    )


def outcomes_report(selection: Selection, ledger: Ledger) -> OutcomesReport:
    """The measured outcomes of the selected runs, beside the chosen judge's scores."""
    head = selection.head("outcomes")
    runs = {run.run_id: run for run in selection.index.query(selection.filter)}
    outcomes = latest_outcomes(ledger, runs)
    ratings = selection.index.score_ratings(selection.filter, selection.judge.judge_ids)
    verdicts: dict[str, str | None] = {}
    judged_criteria: dict[str, Mapping[str, bool | None]] = {}
    for position, run_id in enumerate(ratings.run_ids):
        verdicts[run_id] = ratings.verdicts[position]
        judged_criteria[run_id] = ratings.criteria[ratings.keys[position]]
    measured = sorted(outcomes)
    rows = []
    for dimension in OUTCOME_DIMENSIONS:
        groups: dict[str, list[str]] = defaultdict(list)
        for run_id in measured:
            groups[_group_key(dimension, runs[run_id])].append(run_id)
        rows += [
            _row(dimension, group, ids, outcomes, verdicts) for group, ids in sorted(groups.items())
        ]
    report = OutcomesReport(
        head, rows, _row("all", "all", measured, outcomes, verdicts), len(measured)
    )
    _compare_judge(report, measured, outcomes, judged_criteria)
    if not measured:
        head.warnings.append(
            "no run of these has a measured outcome: run lab scenarios with `agentledger run` "
            "or measure stored ones with `agentledger outcome RUN...`"
        )
    elif any(row.rates.fixed.directional for row in rows if row.rates.fixed.n):
        head.warnings.append(
            "directional only: some groups rest on few measured runs; run more repeats "
            "(`agentledger run --repeat N`) before reading differences between them"
        )
    return report


def _compare_judge(
    report: OutcomesReport,
    measured: Sequence[str],
    outcomes: Mapping[str, Outcome],
    judged: Mapping[str, Mapping[str, bool | None]],
) -> None:
    tally: dict[str, list[int]] = {}
    for run_id in measured:
        said = judged.get(run_id)
        if said is None:
            continue
        for criterion, fired in criteria_of(outcomes[run_id]).items():
            judge_fired = said.get(criterion)
            if fired is None or judge_fired is None:
                continue
            counts = tally.setdefault(criterion, [0, 0])
            counts[1] += 1
            if fired == judge_fired:
                counts[0] += 1
            else:
                report.mismatches.append(Mismatch(run_id, criterion, judge_fired, fired))
    report.agree = {criterion: (c[0], c[1]) for criterion, c in sorted(tally.items())}
