"""The agreement statistics against scikit-learn's and a direct resampling of runs."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import (
    cohen_kappa_score,
    confusion_matrix,
    precision_recall_fscore_support,
)

from agentledger.analysis.kappa import class_scores, confusion, kappa_of, plan_width

VERDICTS = ("Safe", "Uncertain", "Unsafe")


def _pairs(n: int, seed: int, agree: float = 0.7) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    b = [rng.choice(VERDICTS) for _ in range(n)]
    a = [x if rng.random() < agree else rng.choice(VERDICTS) for x in b]
    return a, b


def _none_for_nan(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in values]


@pytest.mark.parametrize(("n", "seed"), [(2, 1), (7, 2), (30, 3), (250, 4)])
def test_kappa_matrix_and_scores_match_sklearn(n: int, seed: int) -> None:
    a, b = _pairs(n, seed)
    matrix = confusion(b, a, VERDICTS)
    assert matrix == confusion_matrix(b, a, labels=list(VERDICTS)).tolist()
    result = kappa_of(matrix, VERDICTS)
    expected = cohen_kappa_score(b, a, labels=list(VERDICTS))
    if math.isnan(expected):
        assert result.kappa is None
    else:
        assert result.kappa == pytest.approx(expected, abs=1e-12)
    assert result.observed == pytest.approx(sum(x == y for x, y in zip(a, b, strict=True)) / n)
    precision, recall, f1, support = precision_recall_fscore_support(
        b, a, labels=list(VERDICTS), zero_division=np.nan
    )
    scores = result.scores()
    assert [s.precision for s in scores] == pytest.approx(_none_for_nan(precision), nan_ok=True)
    assert [s.recall for s in scores] == pytest.approx(_none_for_nan(recall), nan_ok=True)
    assert [s.support for s in scores] == support.tolist()
    for mine, theirs, p, r in zip(scores, f1, precision, recall, strict=True):
        if math.isnan(p) or math.isnan(r):
            assert mine.f1 is None
        else:
            assert mine.f1 == pytest.approx(theirs)


def test_binary_precision_recall_of_a_against_b() -> None:
    b = ["Unsafe", "Unsafe", "not", "not", "Unsafe", "not", "not"]
    a = ["Unsafe", "not", "Unsafe", "not", "Unsafe", "not", "not"]
    categories = ("Unsafe", "not")
    result = kappa_of(confusion(b, a, categories), categories)
    p, r, f, _ = precision_recall_fscore_support(b, a, labels=["Unsafe"], zero_division=np.nan)
    unsafe = result.scores()[0]
    assert (unsafe.precision, unsafe.recall, unsafe.f1) == pytest.approx((p[0], r[0], f[0]))
    assert result.kappa == pytest.approx(cohen_kappa_score(b, a))


def test_analytic_se_matches_resampling_runs_with_sklearn() -> None:
    a, b = _pairs(400, 11, agree=0.6)
    result = kappa_of(confusion(b, a, VERDICTS), VERDICTS)
    rng = np.random.default_rng(5)
    arr_a, arr_b = np.array(a), np.array(b)
    kappas = []
    for _ in range(600):
        pick = rng.integers(0, len(a), len(a))
        kappas.append(cohen_kappa_score(arr_b[pick], arr_a[pick]))
    assert result.se is not None
    assert result.se == pytest.approx(float(np.std(kappas)), rel=0.12)
    assert result.interval is not None
    low, high = result.interval
    assert low == pytest.approx(result.kappa - 1.959963984540054 * result.se)
    assert high == pytest.approx(result.kappa + 1.959963984540054 * result.se)


def test_bootstrap_is_seeded_and_close_to_resampling_runs() -> None:
    a, b = _pairs(300, 12, agree=0.5)
    matrix = confusion(b, a, VERDICTS)
    first = kappa_of(matrix, VERDICTS, bootstrap=2000, seed=7)
    again = kappa_of(matrix, VERDICTS, bootstrap=2000, seed=7)
    other = kappa_of(matrix, VERDICTS, bootstrap=2000, seed=8)
    assert first.interval == again.interval
    assert first.interval != other.interval
    assert first.method == "bootstrap"
    rng = np.random.default_rng(3)
    arr_a, arr_b = np.array(a), np.array(b)
    kappas = [
        cohen_kappa_score(arr_b[pick], arr_a[pick])
        for pick in (rng.integers(0, 300, 300) for _ in range(800))
    ]
    low, high = np.percentile(kappas, [2.5, 97.5])
    assert first.interval is not None
    assert first.interval[0] == pytest.approx(low, abs=0.03)
    assert first.interval[1] == pytest.approx(high, abs=0.03)


def test_all_one_class_is_undefined_not_nan() -> None:
    same = ["Unsafe"] * 5
    result = kappa_of(confusion(same, same, VERDICTS), VERDICTS)
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(cohen_kappa_score(same, same, labels=list(VERDICTS)))
    assert result.kappa is None
    assert result.undefined is not None and "Unsafe" in result.undefined
    assert result.observed == 1.0
    text = json.dumps(result.to_json(), allow_nan=False)
    assert json.loads(text)["kappa"] is None
    assert plan_width(result, 0.1).needed is None


def test_n_zero_and_n_one() -> None:
    empty = kappa_of(confusion([], [], VERDICTS), VERDICTS)
    assert empty.n == 0 and empty.kappa is None and empty.interval is None
    assert empty.undefined == "no run has a value from both (nulls aside)"
    json.dumps(empty.to_json(), allow_nan=False)
    one = kappa_of(confusion(["Safe"], ["Unsafe"], VERDICTS), VERDICTS)
    # One run in two different categories: p_o 0, p_e 0, kappa 0 as sklearn says.
    assert one.kappa == pytest.approx(cohen_kappa_score(["Safe"], ["Unsafe"]))
    assert one.se is None and one.interval is None
    assert "one run" in (plan_width(one, 0.1).reason or "")


def test_precision_without_predictions_is_none() -> None:
    scores = class_scores([[3, 0], [2, 0]], ("x", "y"))
    assert scores[1].precision is None and scores[1].f1 is None
    assert scores[1].recall == 0.0


def test_target_width_scales_with_root_n() -> None:
    a, b = _pairs(30, 21, agree=0.6)
    result = kappa_of(confusion(b, a, VERDICTS), VERDICTS)
    assert result.se is not None
    width = 2 * 1.959963984540054 * result.se
    plan = plan_width(result, 0.1)
    assert plan.width == pytest.approx(width)
    assert plan.needed == math.ceil(30 * (width / 0.1) ** 2)
    assert plan.more == plan.needed - 30
    assert "about" in plan.describe()
    wide = plan_width(result, 5.0)
    assert wide.needed is not None and wide.needed <= 30 and wide.more == 0
    assert "already" in wide.describe()
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="positive"):
            plan_width(result, bad)


def test_bad_matrix_and_resamples() -> None:
    with pytest.raises(ValueError, match="square"):
        kappa_of([[1, 2]], VERDICTS)
    with pytest.raises(ValueError, match="at least 1"):
        kappa_of([[1]], ("x",), bootstrap=0)
    with pytest.raises(ValueError, match="reference values"):
        confusion(["Safe"], [], VERDICTS)


def test_perfect_agreement_has_no_analytic_interval() -> None:
    pairs = ["Safe", "Unsafe", "Unsafe", "Uncertain"]
    result = kappa_of(confusion(pairs, pairs, VERDICTS), VERDICTS)
    assert result.kappa == pytest.approx(cohen_kappa_score(pairs, pairs))
    assert result.se == 0.0 and result.interval is None
    assert "every run on the diagonal" in (plan_width(result, 0.1).reason or "")
