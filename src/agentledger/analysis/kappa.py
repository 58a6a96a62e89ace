"""Agreement between two raters on the same runs: Cohen's kappa, its interval, precision / recall.

Two sources (a judge, a label source) say one category each of the same runs. Everything here
works from their confusion matrix, rows the reference B, columns A (the layout of
`sklearn.metrics.confusion_matrix(y_true=B, y_pred=A)`):

- observed agreement p_o, chance agreement p_e from the marginals, and
  kappa = (p_o - p_e) / (1 - p_e). When p_e is 1 (both sources put every run in the same one
  category) kappa is undefined, and said to be, never NaN.
- A 95% interval: **analytic** by default, kappa +- 1.96 SE with the large-sample standard error
  of Fleiss, Cohen & Everitt (1969), clipped to [-1, 1]; or a **seeded percentile bootstrap**
  (`bootstrap=N`): N resamples of the runs with replacement, drawn as one multinomial over the
  matrix's cells (the same distribution as resampling runs, at a cost independent of n).
- Precision, recall and F1 of A against B (B the reference) per category; a ratio with nothing
  to divide by is None.
- How many runs would bring the analytic interval under a width: the SE scales with 1/sqrt(n),
  so n_needed = n * (width / target)^2, a rough figure that assumes the same matrix shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Z95",
    "ClassScores",
    "KappaResult",
    "WidthPlan",
    "class_scores",
    "confusion",
    "kappa_of",
    "plan_width",
]

Z95 = 1.959963984540054


def confusion(
    reference: Sequence[str], rated: Sequence[str], categories: Sequence[str]
) -> list[list[int]]:
    """The confusion matrix of `rated` (A) against `reference` (B): rows B, columns A."""
    if len(reference) != len(rated):
        raise ValueError(f"{len(reference)} reference values for {len(rated)} rated ones")
    place = {category: i for i, category in enumerate(categories)}
    k = len(categories)
    if not reference:
        return [[0] * k for _ in range(k)]
    codes = np.fromiter(
        (place[b] * k + place[a] for b, a in zip(reference, rated, strict=True)),
        dtype=np.int64,
        count=len(reference),
    )
    counts = np.bincount(codes, minlength=k * k).reshape(k, k)
    return [[int(value) for value in row] for row in counts]


def _kappa_parts(table: np.ndarray[Any, Any]) -> tuple[float, float, float | None]:
    """(p_o, p_e, kappa or None) of a matrix of counts with n > 0."""
    n = float(table.sum())
    probs = table / n
    observed = float(np.trace(probs))
    expected = float(probs.sum(axis=1) @ probs.sum(axis=0))
    if math.isclose(expected, 1.0, rel_tol=0.0, abs_tol=1e-12):
        return observed, expected, None
    return observed, expected, (observed - expected) / (1.0 - expected)


def _fleiss_se(table: np.ndarray[Any, Any], kappa: float, expected: float) -> float:
    """The large-sample standard error of kappa (Fleiss, Cohen & Everitt 1969)."""
    n = float(table.sum())
    probs = table / n
    rows, cols = probs.sum(axis=1), probs.sum(axis=0)
    diagonal = np.diag(probs)
    term_a = float((diagonal * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2).sum())
    # Off the diagonal, cell (i, j) weighs (p_.i + p_j.)^2: column i's and row j's shares.
    weights = probs * (cols[:, None] + rows[None, :]) ** 2
    term_b = (1.0 - kappa) ** 2 * float(weights.sum() - np.trace(weights))
    term_c = (kappa - expected * (1.0 - kappa)) ** 2
    variance = (term_a + term_b - term_c) / (n * (1.0 - expected) ** 2)
    return math.sqrt(max(variance, 0.0))


def _bootstrap(
    table: np.ndarray[Any, Any], resamples: int, seed: int
) -> tuple[tuple[float, float] | None, int]:
    """The 95% percentile interval of kappa over `resamples` multinomial resamples, and how many
    resamples had kappa undefined (left out of the percentiles)."""
    n = int(table.sum())
    k = table.shape[0]
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, (table / n).ravel(), size=resamples).reshape(resamples, k, k)
    probs = draws / n
    observed = np.trace(probs, axis1=1, axis2=2)
    expected = np.einsum("bi,bi->b", probs.sum(axis=2), probs.sum(axis=1))
    defined = ~np.isclose(expected, 1.0, rtol=0.0, atol=1e-12)
    kappas = (observed[defined] - expected[defined]) / (1.0 - expected[defined])
    undefined = int(resamples - defined.sum())
    if kappas.size == 0:
        return None, undefined
    low, high = np.percentile(kappas, [2.5, 97.5])
    return (float(low), float(high)), undefined


@dataclass(frozen=True)
class ClassScores:
    """Precision, recall and F1 of A for one category, B the reference; None when 0/0."""

    category: str
    precision: float | None
    recall: float | None
    f1: float | None
    support: int
    """How many runs B puts in the category."""

    def to_json(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
        }


def class_scores(matrix: Sequence[Sequence[int]], categories: Sequence[str]) -> list[ClassScores]:
    """Per category, precision / recall / F1 of the columns (A) against the rows (B)."""
    out = []
    for i, category in enumerate(categories):
        hit = matrix[i][i]
        said = sum(row[i] for row in matrix)
        truth = sum(matrix[i])
        precision = hit / said if said else None
        recall = hit / truth if truth else None
        if precision is None or recall is None:
            f1 = None
        else:
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out.append(ClassScores(category, precision, recall, f1, truth))
    return out


@dataclass(frozen=True)
class KappaResult:
    """Agreement of two sources over the runs both rated (see the module docstring)."""

    categories: tuple[str, ...]
    matrix: tuple[tuple[int, ...], ...]
    """Rows B (the reference), columns A, in the order of `categories`."""
    n: int
    observed: float | None
    expected: float | None
    kappa: float | None
    undefined: str | None
    """Why kappa is undefined (None when it is defined)."""
    se: float | None
    """The analytic standard error (None when kappa is undefined or n < 2)."""
    interval: tuple[float, float] | None
    method: str
    """``analytic`` or ``bootstrap``."""
    resamples: int | None = None
    seed: int | None = None
    undefined_resamples: int = 0

    @property
    def width(self) -> float | None:
        """The width of the 95% interval (None without one)."""
        return None if self.interval is None else self.interval[1] - self.interval[0]

    def scores(self) -> list[ClassScores]:
        """Precision / recall / F1 of A against B for each category."""
        return class_scores(self.matrix, self.categories)

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "observed_agreement": self.observed,
            "chance_agreement": self.expected,
            "kappa": self.kappa,
            "kappa_undefined": self.undefined,
            "se": self.se,
            "interval": list(self.interval) if self.interval else None,
            "interval_method": self.method,
            "bootstrap_resamples": self.resamples,
            "bootstrap_seed": self.seed,
            "bootstrap_undefined_resamples": self.undefined_resamples if self.resamples else None,
            "categories": list(self.categories),
            "confusion": {
                "rows": "b",
                "columns": "a",
                "matrix": [list(row) for row in self.matrix],
            },
            "by_category": [scores.to_json() for scores in self.scores()],
        }


def kappa_of(
    matrix: Sequence[Sequence[int]],
    categories: Sequence[str],
    *,
    bootstrap: int | None = None,
    seed: int = 0,
) -> KappaResult:
    """Kappa, its 95% interval (analytic, or a seeded bootstrap of `bootstrap` resamples) and
    the agreement figures of a confusion matrix (rows B, columns A)."""
    if len(matrix) != len(categories) or any(len(row) != len(categories) for row in matrix):
        raise ValueError(f"a confusion matrix of {len(categories)} categories must be square")
    if bootstrap is not None and bootstrap < 1:
        raise ValueError(f"bootstrap resamples must be at least 1 (got {bootstrap})")
    frozen = tuple(tuple(int(value) for value in row) for row in matrix)
    table = np.array(frozen, dtype=np.float64).reshape(len(categories), len(categories))
    n = int(table.sum())
    method = "bootstrap" if bootstrap else "analytic"
    common: dict[str, Any] = {
        "categories": tuple(categories),
        "matrix": frozen,
        "n": n,
        "method": method,
        "resamples": bootstrap,
        "seed": seed if bootstrap else None,
    }
    if n == 0:
        return KappaResult(
            observed=None,
            expected=None,
            kappa=None,
            undefined="no run has a value from both (nulls aside)",
            se=None,
            interval=None,
            **common,
        )
    observed, expected, kappa = _kappa_parts(table)
    if kappa is None:
        only = [
            categories[i] for i in range(len(categories)) if table[i].sum() or table[:, i].sum()
        ]
        return KappaResult(
            observed=observed,
            expected=expected,
            kappa=None,
            undefined=(
                f"both sources put every run in one category ({', '.join(only)}): chance "
                "agreement is 1, so kappa is undefined"
            ),
            se=None,
            interval=None,
            **common,
        )
    se = _fleiss_se(table, kappa, expected) if n >= 2 else None
    interval: tuple[float, float] | None = None
    undefined_resamples = 0
    if bootstrap:
        interval, undefined_resamples = _bootstrap(table, bootstrap, seed)
    elif se:
        # An SE of 0 (every run on the diagonal) would give the interval [1, 1] at any n:
        # no interval is the honest answer.
        interval = (max(-1.0, kappa - Z95 * se), min(1.0, kappa + Z95 * se))
    return KappaResult(
        observed=observed,
        expected=expected,
        kappa=kappa,
        undefined=None,
        se=se,
        interval=interval,
        undefined_resamples=undefined_resamples,
        **common,
    )


@dataclass(frozen=True)
class WidthPlan:
    """The analytic interval's width now, a target, and roughly how many runs would reach it."""

    target: float
    n: int
    width: float | None
    needed: int | None
    """Runs rated by both that would bring the width under `target` (None: cannot say)."""
    reason: str | None = None

    @property
    def more(self) -> int | None:
        """How many more runs than now (0 when the target is met)."""
        return None if self.needed is None else max(0, self.needed - self.n)

    def describe(self) -> str:
        if self.needed is None:
            return f"cannot estimate the runs needed for a width of {self.target:g}: {self.reason}"
        assert self.width is not None
        if self.needed <= self.n:
            return (
                f"the interval is {self.width:.3f} wide on {self.n} run(s): under the target "
                f"{self.target:g} already"
            )
        return (
            f"the interval is {self.width:.3f} wide on {self.n} run(s); about {self.needed} "
            f"run(s) rated by both ({self.more} more) would bring it under {self.target:g}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "target_width": self.target,
            "n": self.n,
            "width": self.width,
            "runs_needed": self.needed,
            "more_runs_needed": self.more,
            "reason": self.reason,
            "how": "analytic SE scaled by 1/sqrt(n), assuming the same confusion shares",
        }


def plan_width(result: KappaResult, target: float) -> WidthPlan:
    """How many runs would bring the analytic 95% interval of `result` under `target` wide."""
    if not math.isfinite(target) or target <= 0:
        raise ValueError(f"a target width must be a positive number (got {target})")
    if result.kappa is None:
        return WidthPlan(target, result.n, None, None, result.undefined)
    if result.se is None:
        return WidthPlan(target, result.n, None, None, "one run gives no standard error")
    width = 2 * Z95 * result.se
    if width == 0:
        return WidthPlan(
            target, result.n, 0.0, None, "the standard error is 0 (every run on the diagonal)"
        )
    needed = math.ceil(result.n * (width / target) ** 2)
    return WidthPlan(target, result.n, width, needed)
