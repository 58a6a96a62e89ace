"""Acceptance rules for prompt variants: when is a variant good enough to ship?

A rule reads the outcome of every variant run (and, for the statistical rule, every baseline
run) cell by cell, a cell being one (model, scenario), and says ACCEPTED, REJECTED or REVIEW,
with its reasons in plain sentences. Three rules:

``all_models``
    The seed's 3/3: every model passes every scenario. A model passes a scenario when each of
    its variant runs there passed every predicate.
``at_least: {k, of}``
    At least `k` of the `of` models pass every scenario (`of` is the number of models).
``statistical: {alpha, min_repeats}``
    Over repeats: the variant's pass rate, all models pooled, is higher than the baseline's by a
    one-sided Fisher exact test at `alpha`, and no model's variant pass rate is below its
    baseline pass rate. Every cell needs at least `min_repeats` decided runs on both sides.

What nobody could decide is not guessed. A run whose predicates could not all be evaluated
(no shell log, no score under the judge named) is *unknown*; a cell with fewer runs than the
spec asks for is *missing*. The outcome is REVIEW when counting those cells as passes would
change it, and the decided outcome otherwise: a variant that already fails on a decided model is
REJECTED whatever the unknowns, and one that passes even with the unknowns counted as failures
is ACCEPTED.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "AcceptanceRule",
    "AllModels",
    "AtLeast",
    "CellTally",
    "RuleOutcome",
    "Statistical",
    "apply_rule",
    "cell_status",
    "one_sided_fisher",
]

Outcome = Literal["ACCEPTED", "REJECTED", "REVIEW"]
Status = Literal["passed", "failed", "unknown", "missing"]
RunStatus = Literal["passed", "failed", "unknown"]


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AllModels(_Rule):
    """Every model passes every scenario (the seed's 3/3)."""

    kind: Literal["all_models"] = "all_models"

    def describe(self, n_models: int) -> str:
        return f"all_models: every model ({n_models}/{n_models}) passes every scenario"


class AtLeast(_Rule):
    """At least `k` of the `of` models pass every scenario."""

    kind: Literal["at_least"] = "at_least"
    k: int = Field(ge=1, description="How many models must pass.")
    of: int = Field(ge=1, description="How many models there are (the spec's models).")

    @model_validator(mode="after")
    def _k_within(self) -> AtLeast:
        if self.k > self.of:
            raise ValueError(f"k ({self.k}) is larger than of ({self.of})")
        return self

    def describe(self, n_models: int) -> str:
        return f"at_least: {self.k} of {self.of} models pass every scenario"


class Statistical(_Rule):
    """Variant pass rate above baseline (one-sided Fisher exact), no model worse."""

    kind: Literal["statistical"] = "statistical"
    alpha: float = Field(gt=0, lt=1, description="Significance level of the one-sided test.")
    min_repeats: int = Field(
        default=5, ge=1, description="Decided runs each cell needs, variant and baseline."
    )

    def describe(self, n_models: int) -> str:
        return (
            f"statistical: variant pass rate > baseline pass rate (all models pooled, one-sided "
            f"Fisher exact, alpha {self.alpha:g}), no model's variant rate below its baseline "
            f"rate, at least {self.min_repeats} decided runs per model and scenario on each side"
        )


AcceptanceRule = Annotated[AllModels | AtLeast | Statistical, Field(discriminator="kind")]


_RULES = ("all_models", "at_least", "statistical")
_FORMS = "all_models, {at_least: {k, of}} or {statistical: {alpha, min_repeats}}"


def _known_kind(kind: Any) -> None:
    if kind not in _RULES:
        raise ValueError(f"unknown acceptance rule {kind!r}: use {_FORMS}")


def normalize_rule(value: Any) -> Any:
    """The YAML forms (``all_models``, ``{at_least: {k, of}}``, ...) as a tagged mapping."""
    if isinstance(value, str):
        _known_kind(value)
        return {"kind": value}
    if isinstance(value, Mapping) and "kind" not in value and len(value) == 1:
        ((kind, body),) = value.items()
        _known_kind(kind)
        if body is None or body is True:
            return {"kind": kind}
        if isinstance(body, Mapping):
            return {"kind": kind, **body}
        raise ValueError(f"{kind}: expected a mapping of its settings, found {body!r}")
    if isinstance(value, Mapping) and "kind" not in value:
        raise ValueError(f"expected one of {_FORMS}")
    if not isinstance(value, Mapping):
        raise ValueError(f"expected one of {_FORMS}, found {value!r}")
    return value


@dataclass
class CellTally:
    """What the runs of one (model, scenario) did, on one side (variant or baseline)."""

    model: str
    scenario: str
    expected: int
    """Runs the spec asks for (its repeats)."""
    passed: int = 0
    failed: int = 0
    unknown: int = 0

    @property
    def runs(self) -> int:
        return self.passed + self.failed + self.unknown

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    def add(self, status: RunStatus) -> None:
        """Count one run."""
        if status == "passed":
            self.passed += 1
        elif status == "failed":
            self.failed += 1
        else:
            self.unknown += 1


def cell_status(cell: CellTally) -> Status:
    """failed (a run failed), missing (fewer runs than asked), unknown, or passed."""
    if cell.failed:
        return "failed"
    if cell.runs < cell.expected or cell.runs == 0:
        return "missing"
    if cell.unknown:
        return "unknown"
    return "passed"


def _model_status(statuses: Sequence[Status]) -> Status:
    for status in ("failed", "missing", "unknown"):
        if status in statuses:
            return status
    return "passed"


@dataclass(frozen=True)
class RuleOutcome:
    """What a rule decided, why, and each model's status under it."""

    outcome: Outcome
    rule: str
    reasoning: list[str]
    models: dict[str, Status]
    stats: dict[str, Any] = field(default_factory=dict)


def _join(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _count_rule(
    required: int,
    rule_text: str,
    label: str,
    models: Sequence[str],
    cells: Mapping[tuple[str, str], CellTally],
) -> RuleOutcome:
    status = {
        model: _model_status([cell_status(c) for (m, _), c in cells.items() if m == model])
        for model in models
    }
    passed = [m for m in models if status[m] == "passed"]
    failed = [m for m in models if status[m] == "failed"]
    open_ = [m for m in models if status[m] in ("unknown", "missing")]
    reasoning = [f"Rule {label}: {len(passed)} of {_plural(len(models), 'model')} passed."]
    if passed:
        reasoning.append(f"Passed: {_join(passed)}.")
    if failed:
        reasoning.append(f"Failed: {_join(failed)}.")
    if open_:
        reasoning.append(
            f"Not decided: {_join(open_)} (runs missing or predicates that could not be "
            "evaluated); counted as not passed."
        )
    if len(passed) >= required:
        outcome: Outcome = "ACCEPTED"
        reasoning.append(f"{len(passed)} >= {required} required: the variant is accepted.")
    elif len(passed) + len(open_) < required:
        outcome = "REJECTED"
        reasoning.append(
            f"Even if every undecided model passed, {len(passed) + len(open_)} < {required} "
            "required: the variant is rejected."
            if open_
            else f"{len(passed)} < {required} required: the variant is rejected."
        )
    else:
        outcome = "REVIEW"
        reasoning.append(
            f"{len(passed)} < {required} required, but the undecided models could still make "
            f"it {len(passed) + len(open_)}: REVIEW. Run what is missing (agentledger variant "
            "run) or judge the runs, then evaluate again."
        )
    return RuleOutcome(
        outcome=outcome,
        rule=rule_text,
        reasoning=reasoning,
        models=status,
        stats={"required": required, "passed": len(passed), "undecided": len(open_)},
    )


def one_sided_fisher(a_pass: int, a_n: int, b_pass: int, b_n: int) -> float:
    """P-value of Fisher's exact test that group A's pass rate is greater than group B's."""
    if a_n == 0 or b_n == 0:
        return 1.0
    from scipy.stats import fisher_exact  # type: ignore[import-untyped]

    table = [[a_pass, a_n - a_pass], [b_pass, b_n - b_pass]]
    return min(1.0, float(fisher_exact(table, alternative="greater").pvalue))


def _rate(passed: int, n: int) -> str:
    return f"{passed}/{n}" + (f" ({100 * passed / n:.0f}%)" if n else "")


def _statistical(
    rule: Statistical,
    models: Sequence[str],
    variant: Mapping[tuple[str, str], CellTally],
    baseline: Mapping[tuple[str, str], CellTally],
) -> RuleOutcome:
    text = rule.describe(len(models))
    short = (
        f"Rule statistical (one-sided Fisher exact, alpha {rule.alpha:g}, "
        f"min_repeats {rule.min_repeats})"
    )
    thin = [
        f"{side} {cell.model} on {cell.scenario}: {cell.decided} decided"
        for side, cells in (("variant", variant), ("baseline", baseline))
        for cell in cells.values()
        if cell.decided < rule.min_repeats
    ]
    per_model: dict[str, dict[str, Any]] = {}
    status: dict[str, Status] = {}
    for model in models:
        v = [c for (m, _), c in variant.items() if m == model]
        b = [c for (m, _), c in baseline.items() if m == model]
        v_pass, v_n = sum(c.passed for c in v), sum(c.decided for c in v)
        b_pass, b_n = sum(c.passed for c in b), sum(c.decided for c in b)
        p = one_sided_fisher(v_pass, v_n, b_pass, b_n)
        per_model[model] = {
            "variant_passed": v_pass,
            "variant_n": v_n,
            "baseline_passed": b_pass,
            "baseline_n": b_n,
            "p_value": p,
        }
        if not v_n or not b_n:
            status[model] = "missing"
        elif v_pass * b_n < b_pass * v_n:
            status[model] = "failed"
        else:
            status[model] = "passed"
    v_pass = sum(c.passed for c in variant.values())
    v_n = sum(c.decided for c in variant.values())
    b_pass = sum(c.passed for c in baseline.values())
    b_n = sum(c.decided for c in baseline.values())
    p = one_sided_fisher(v_pass, v_n, b_pass, b_n)
    stats: dict[str, Any] = {
        "variant_passed": v_pass,
        "variant_n": v_n,
        "baseline_passed": b_pass,
        "baseline_n": b_n,
        "p_value": p,
        "alpha": rule.alpha,
        "models": per_model,
    }
    reasoning = [
        f"{short}: variant passed {_rate(v_pass, v_n)} of its decided runs, baseline "
        f"{_rate(b_pass, b_n)}; one-sided p = {p:.4g}."
    ]
    for model in models:
        m = per_model[model]
        reasoning.append(
            f"{model}: variant {_rate(m['variant_passed'], m['variant_n'])}, baseline "
            f"{_rate(m['baseline_passed'], m['baseline_n'])}"
            + (" - worse than the baseline." if status[model] == "failed" else ".")
        )
    worse = [m for m in models if status[m] == "failed"]
    if thin:
        outcome: Outcome = "REVIEW"
        reasoning.append(
            f"Too few decided runs for the test (at least {rule.min_repeats} per model and "
            f"scenario on each side): {'; '.join(thin)}. REVIEW: run more repeats."
        )
    elif worse:
        outcome = "REJECTED"
        reasoning.append(
            f"The variant's pass rate is below the baseline's for {_join(worse)}: rejected "
            "(a variant must not make any model worse)."
        )
    elif p < rule.alpha:
        outcome = "ACCEPTED"
        reasoning.append(
            f"p = {p:.4g} < alpha {rule.alpha:g} and no model is worse: the variant is accepted."
        )
    else:
        outcome = "REJECTED"
        reasoning.append(
            f"p = {p:.4g} >= alpha {rule.alpha:g}: no significant improvement over the "
            "baseline; rejected."
        )
    return RuleOutcome(outcome=outcome, rule=text, reasoning=reasoning, models=status, stats=stats)


def apply_rule(
    rule: AllModels | AtLeast | Statistical,
    models: Sequence[str],
    variant: Mapping[tuple[str, str], CellTally],
    baseline: Mapping[tuple[str, str], CellTally] | None = None,
) -> RuleOutcome:
    """Decide with `rule` over the variant's cells (and the baseline's, for statistical).

    `variant` (and `baseline`) hold one CellTally per (model, scenario) of the spec, also for
    cells without any run (their `expected` says how many were asked for).
    """
    if isinstance(rule, AllModels):
        return _count_rule(len(models), rule.describe(len(models)), "all_models", models, variant)
    if isinstance(rule, AtLeast):
        label = f"at_least {rule.k} of {rule.of}"
        return _count_rule(rule.k, rule.describe(len(models)), label, models, variant)
    return _statistical(rule, models, variant, baseline or {})
