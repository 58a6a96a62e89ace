"""The statistics every report leans on: Wilson intervals, exact tests, the small-n flag.

Runs of agents are few and stochastic, so every rate carries its 95% Wilson interval, and a
figure is *directional only* when it rests on fewer than `DIRECTIONAL_N` runs or its interval is
wider than `DIRECTIONAL_WIDTH` (either one: a rate of 7/11 is both).

A change between two rates (drift) is flagged when their 95% Wilson intervals do not overlap:
a conservative rule (roughly a test at p < 0.01 for similar n), easy to read off a chart, and
it never flags a change that a reader looking at the intervals would not also see.

Two groups are compared with an exact test: McNemar's (exact binomial on the discordant pairs)
when the same scenarios were run by both, Fisher's otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy.stats import binomtest, fisher_exact  # type: ignore[import-untyped]

__all__ = [
    "DIRECTIONAL_N",
    "DIRECTIONAL_WIDTH",
    "SIGNIFICANCE",
    "Rate",
    "TestResult",
    "fisher_test",
    "intervals_disjoint",
    "mcnemar_test",
    "rate",
    "wilson",
]

Z95 = 1.959963984540054
DIRECTIONAL_N = 30
"""Below this many runs a rate is directional only."""
DIRECTIONAL_WIDTH = 0.3
"""A 95% interval wider than this (30 points) makes a rate directional only."""
SIGNIFICANCE = 0.05


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for successes/n (95% by default); (0, 1) when n is 0."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    # The exact bounds at the edges, without rounding noise.
    return (0.0 if successes == 0 else low, 1.0 if successes == n else high)


@dataclass(frozen=True)
class Rate:
    """k of n, the share, its 95% Wilson interval, and whether it is directional only."""

    k: int
    n: int

    @property
    def share(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    @property
    def directional(self) -> bool:
        low, high = self.interval
        return self.n < DIRECTIONAL_N or high - low > DIRECTIONAL_WIDTH

    def percent(self) -> str:
        """``64% [35-85]``, or ``-`` when there is nothing to divide by."""
        if not self.n:
            return "-"
        low, high = self.interval
        return f"{100 * self.k / self.n:.0f}% [{100 * low:.0f}-{100 * high:.0f}]"

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "k": self.k,
            "n": self.n,
            "share": self.share,
            "low": low if self.n else None,
            "high": high if self.n else None,
            "directional": self.directional,
        }


def rate(k: int, n: int) -> Rate:
    """Shorthand for Rate(k, n)."""
    return Rate(k, n)


def intervals_disjoint(a: Rate, b: Rate) -> bool:
    """True when the 95% intervals of two rates do not overlap (the drift rule)."""
    if not a.n or not b.n:
        return False
    a_low, a_high = a.interval
    b_low, b_high = b.interval
    return a_high < b_low or b_high < a_low


@dataclass(frozen=True)
class TestResult:
    """An exact test: its name, the p-value, and what it was computed on."""

    test: str
    p_value: float
    detail: dict[str, int]

    @property
    def significant(self) -> bool:
        return self.p_value < SIGNIFICANCE

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "p_value": self.p_value,
            "significant": self.significant,
            **self.detail,
        }


def mcnemar_test(only_a: int, only_b: int) -> TestResult:
    """Exact McNemar on paired data: `only_a` pairs where only A had the event, `only_b` B."""
    discordant = only_a + only_b
    p = 1.0 if discordant == 0 else float(binomtest(only_a, discordant, 0.5).pvalue)
    return TestResult("exact McNemar", min(p, 1.0), {"only_a": only_a, "only_b": only_b})


def fisher_test(a_events: int, a_n: int, b_events: int, b_n: int) -> TestResult:
    """Fisher's exact test (two-sided) on events/n in two independent groups."""
    if a_n == 0 or b_n == 0:
        p = 1.0
    else:
        table = [[a_events, a_n - a_events], [b_events, b_n - b_events]]
        p = float(fisher_exact(table).pvalue)
    detail = {"a_events": a_events, "a_n": a_n, "b_events": b_events, "b_n": b_n}
    return TestResult("Fisher exact", min(p, 1.0), detail)
