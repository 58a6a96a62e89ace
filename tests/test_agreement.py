"""`agentledger agreement`: two sources on the same runs, every figure against scikit-learn."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

from agentledger.cli import main
from agentledger.judges.scores import ScoreStore
from agentledger.labels import LabelStore
from agentledger.records.labels import CriterionLabel, Label, LabelSource, new_label_id
from agentledger.records.scores import CriterionResult, JudgeInfo, Score
from agentledger.store import Ledger
from conftest import WriteRun
from exact_output import normalised

VERDICTS = ["Safe", "Uncertain", "Unsafe"]
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
RULES = "rules-aaaa11111111"
RULES_OLD = "rules-aaaa22222222"
LLM = "llm-bbbb33333333"


def add_score(
    ledger: Ledger,
    run_id: str,
    judge_id: str,
    verdict: str,
    criteria: dict[str, bool | None] | None = None,
    *,
    minutes: int = 0,
    identity: dict[str, Any] | None = None,
) -> None:
    kind = judge_id.split("-")[0]
    score = Score(
        run_id=run_id,
        judge_id=judge_id,
        judge=JudgeInfo(kind=kind, pack="remediation", pack_version="1", pack_digest="sha256:00"),
        identity=identity or {"kind": kind},
        created_at=T0 + timedelta(minutes=minutes),
        verdict=verdict,  # type: ignore[arg-type]
        skipped_reason="self-judging refused" if verdict == "skipped" else None,
        criteria=[
            CriterionResult(criterion=c, fired=fired, reason="r")
            for c, fired in (criteria or {}).items()
        ],
    )
    ScoreStore(ledger).write([score])


def make_label(
    run_id: str,
    by: str,
    verdict: str | None,
    criteria: dict[str, bool | None] | None = None,
    *,
    kind: str = "external",
    minutes: int = 0,
) -> Label:
    when = T0 + timedelta(minutes=minutes)
    return Label(
        label_id=new_label_id(when),
        run_id=run_id,
        by=LabelSource(kind=kind, name=by),  # type: ignore[arg-type]
        created_at=when,
        verdict=verdict,  # type: ignore[arg-type]
        criteria=[CriterionLabel(criterion=c, fired=f) for c, f in (criteria or {}).items()],
    )


def agreement(ledger: Ledger, *args: str) -> Result:
    return CliRunner().invoke(main, ["agreement", "--ledger", str(ledger.root), *args])


def flat(result: Result) -> str:
    """The output with line wrapping undone."""
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def as_json(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    value: dict[str, Any] = json.loads(result.output)
    return value


def comparison(report: dict[str, Any], name: str) -> dict[str, Any]:
    for item in report["comparisons"]:
        if item["name"] == name:
            return item
    raise AssertionError(f"no comparison {name!r}: {[c['name'] for c in report['comparisons']]}")


def _nan_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def check_against_sklearn(item: dict[str, Any], a: list[str], b: list[str]) -> None:
    """The comparison's figures are what scikit-learn computes from the same pairs."""
    labels = item["categories"]
    assert item["n"] == len(a)
    assert item["confusion"]["matrix"] == confusion_matrix(b, a, labels=labels).tolist()
    assert item["kappa"] == pytest.approx(cohen_kappa_score(b, a, labels=labels))
    assert item["observed_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
    precision, recall, f1, support = precision_recall_fscore_support(
        b, a, labels=labels, zero_division=np.nan
    )
    for mine, p, r, f, s in zip(item["by_category"], precision, recall, f1, support, strict=True):
        assert mine["precision"] == pytest.approx(_nan_none(p))
        assert mine["recall"] == pytest.approx(_nan_none(r))
        if mine["precision"] is not None and mine["recall"] is not None:
            assert mine["f1"] == pytest.approx(f)
        assert mine["support"] == s


@pytest.fixture
def rated(ledger: Ledger, write_run: WriteRun) -> dict[str, Any]:
    """40 runs of two models: two judges, two external label sets and a person, with nulls."""
    rng = random.Random(7)
    runs = [
        write_run(scenario=f"use_case_{'abcd'[i % 4]}", model=("gemini-2.5-flash", "gpt-4o")[i % 2])
        for i in range(40)
    ]
    truth = {run_id: rng.choice(VERDICTS) for run_id in runs}
    judge: dict[str, str] = {}
    data_a: dict[str, str] = {}
    data_b: dict[str, str] = {}
    labels = []
    for i, run_id in enumerate(runs):
        verdict = truth[run_id] if rng.random() < 0.7 else rng.choice(VERDICTS)
        fired = {"C1": rng.random() < 0.4, "C2": None if i % 9 == 0 else rng.random() < 0.5}
        if i == 3:
            add_score(ledger, run_id, RULES, "skipped", minutes=i)
        else:
            judge[run_id] = verdict
            add_score(ledger, run_id, RULES, verdict, fired, minutes=i)
        add_score(ledger, run_id, RULES_OLD, "Safe", minutes=i)
        if i < 36:
            data_a[run_id] = truth[run_id]
            labels.append(
                make_label(run_id, "dataset-a", truth[run_id], {"C1": i % 3 == 0}, minutes=i)
            )
        if i >= 4:
            other = truth[run_id] if rng.random() < 0.6 else rng.choice(VERDICTS)
            data_b[run_id] = other
            labels.append(make_label(run_id, "dataset-b", other, minutes=i))
    LabelStore(ledger).write(labels)
    return {"runs": runs, "judge": judge, "a": data_a, "b": data_b}


def test_two_external_label_sets_agree_as_sklearn_computes(
    ledger: Ledger, rated: dict[str, Any]
) -> None:
    report = as_json(
        agreement(ledger, "--a", "labels:dataset-a", "--b", "labels:dataset-b", "--json")
    )
    common = sorted(set(rated["a"]) & set(rated["b"]))
    a = [rated["a"][r] for r in common]
    b = [rated["b"][r] for r in common]
    assert report["runs_in_common"] == len(common) == 32
    assert report["runs_only_a"] == 4 and report["runs_only_b"] == 4
    check_against_sklearn(comparison(report, "verdict"), a, b)
    binary = comparison(report, "verdict: Unsafe or not")
    collapse = lambda xs: ["Unsafe" if x == "Unsafe" else "not Unsafe" for x in xs]  # noqa: E731
    check_against_sklearn(binary, collapse(a), collapse(b))
    p, r, f, _ = precision_recall_fscore_support(
        collapse(b), collapse(a), labels=["Unsafe"], zero_division=np.nan
    )
    assert binary["positive_scores"]["precision"] == pytest.approx(p[0])
    assert binary["positive_scores"]["recall"] == pytest.approx(r[0])
    assert binary["positive_scores"]["f1"] == pytest.approx(f[0])
    disagreeing = [x for x in common if rated["a"][x] != rated["b"][x]]
    assert [d["run_id"] for d in comparison(report, "verdict")["disagreements"]] == disagreeing
    # dataset-b gives no criteria: C1 is rated by A only, and said so.
    assert "criterion C1 is rated by A only: not compared" in report["warnings"]


def test_judge_against_labels_per_criterion_with_nulls_apart(
    ledger: Ledger, rated: dict[str, Any]
) -> None:
    report = as_json(
        agreement(ledger, "--a", f"judge:{RULES}", "--b", "labels:dataset-a", "--json")
    )
    assert report["a"]["name"] == RULES
    verdict = comparison(report, "verdict")
    # Run 3 was skipped by the judge: counted apart as a null of A, not compared.
    assert verdict["nulls"] == {"a_null": 1, "b_null": 0, "both_null": 0}
    common = [r for r in rated["runs"][:36] if r in rated["judge"]]
    check_against_sklearn(
        verdict, [rated["judge"][r] for r in common], [rated["a"][r] for r in common]
    )
    c1 = comparison(report, "criterion C1")
    assert c1["positive"] == "fired"
    assert c1["nulls"]["a_null"] == 1  # the skipped run has no criteria
    assert report["warnings"] == [
        "A (judge rules-aaaa11111111) gave no verdict on 1 of the 36 runs compared (1 skipped; "
        "`agentledger show RUN` says why): they count as nulls, never as agreement or "
        "disagreement.",
        "criterion C2 is rated by A only: not compared",
    ]


def test_judge_by_kind_prefix_and_ambiguity(ledger: Ledger, rated: dict[str, Any]) -> None:
    newest = as_json(agreement(ledger, "--a", "judge:rules", "--b", "labels:dataset-a", "--json"))
    assert newest["a"]["name"] in (RULES, RULES_OLD)
    by_prefix = as_json(
        agreement(ledger, "--a", "judge:rules-aaaa1", "--b", "labels:dataset-a", "--json")
    )
    assert by_prefix["a"]["name"] == RULES
    ambiguous = agreement(ledger, "--a", "judge:rules-aaaa", "--b", "labels:dataset-a")
    assert ambiguous.exit_code == 2
    assert "ambiguous" in ambiguous.output and RULES in ambiguous.output
    assert RULES_OLD in ambiguous.output
    no_llm = agreement(ledger, "--a", "judge:llm", "--b", "labels:dataset-a")
    assert no_llm.exit_code == 2 and "no llm judge" in no_llm.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--a", "judge:nope", "--b", "labels:dataset-a"], "no judge 'nope'"),
        (["--a", "human:x", "--b", "labels:dataset-a"], "unknown source 'human:x'"),
        (["--a", "labels:nobody", "--b", "labels:dataset-a"], "no labels from this source"),
        (["--a", "labels:dataset-a", "--b", "labels:dataset-b", "--positive", "bad"], "--positive"),
        (["--a", "labels:dataset-a", "--b", "labels:dataset-b", "--target-width", "0"], "positive"),
        (
            ["--a", "labels:dataset-a", "--b", "labels:dataset-b", "--target-width", "nan"],
            "positive",
        ),
        (["--a", "labels:dataset-a", "--b", "labels:dataset-b", "--bootstrap", "0"], "at least 1"),
        (
            ["--a", "labels:dataset-a", "--b", "labels:dataset-b", "--model", "o3-mini"],
            "no run in common",
        ),
    ],
)
def test_bad_input_exits_2_and_says_why(
    ledger: Ledger, rated: dict[str, Any], args: list[str], words: str
) -> None:
    result = agreement(ledger, *args)
    assert result.exit_code == 2, result.output
    assert words in result.output


def test_by_model_groups_match_sklearn(ledger: Ledger, rated: dict[str, Any]) -> None:
    report = as_json(
        agreement(
            ledger, "--a", "labels:dataset-a", "--b", "labels:dataset-b", "--by", "model", "--json"
        )
    )
    groups = {g["group"]: g for g in comparison(report, "verdict")["groups"]}
    assert sorted(groups) == ["gemini-2.5-flash", "gpt-4o"]
    for i, model in enumerate(("gemini-2.5-flash", "gpt-4o")):
        runs = [r for j, r in enumerate(rated["runs"]) if j % 2 == i and 4 <= j < 36]
        a = [rated["a"][r] for r in runs]
        b = [rated["b"][r] for r in runs]
        assert groups[model]["n"] == len(runs)
        assert groups[model]["kappa"] == pytest.approx(cohen_kappa_score(b, a, labels=VERDICTS))


def test_bootstrap_interval_is_seeded_and_said(ledger: Ledger, rated: dict[str, Any]) -> None:
    args = ["--a", "labels:dataset-a", "--b", "labels:dataset-b", "--bootstrap", "500"]
    first = comparison(as_json(agreement(ledger, *args, "--seed", "3", "--json")), "verdict")
    again = comparison(as_json(agreement(ledger, *args, "--seed", "3", "--json")), "verdict")
    assert first["interval_method"] == "bootstrap" and first["bootstrap_seed"] == 3
    assert first["interval"] == again["interval"]
    text = agreement(ledger, *args, "--seed", "3")
    assert "seeded percentile bootstrap (500 resamples, seed 3)" in flat(text)


def test_target_width_says_how_many_runs(ledger: Ledger, rated: dict[str, Any]) -> None:
    result = agreement(
        ledger,
        "--a",
        "labels:dataset-a",
        "--b",
        "labels:dataset-b",
        "--target-width",
        "0.1",
        "--json",
    )
    verdict = comparison(as_json(result), "verdict")
    width = 2 * 1.959963984540054 * verdict["se"]
    assert verdict["target"]["width"] == pytest.approx(width)
    assert verdict["target"]["runs_needed"] == math.ceil(32 * (width / 0.1) ** 2)
    text = agreement(
        ledger, "--a", "labels:dataset-a", "--b", "labels:dataset-b", "--target-width", "0.1"
    )
    assert f"about {verdict['target']['runs_needed']} run(s)" in flat(text)


ONE_CLASS = """\
Agreement: labels:x against labels:y
A = labels:x, B = labels:y (the reference). 3 run(s) rated by both of 3 selected (0 rated by A \
only, 0 by B only); agent runs only (the default; choose with
--kind).

verdict: kappa undefined on 3 run(s), observed agreement 100% (both sources put every run in \
one category (Unsafe): chance agreement is 1, so kappa is
undefined).
verdict: Unsafe or not: kappa undefined on 3 run(s), observed agreement 100% (both sources put \
every run in one category (Unsafe): chance agreement is 1, so
kappa is undefined).

Agreement of A with B (B the reference)
compared                n  observed  kappa [95%]  positive     P     R    F1  nulls A/B/both
verdict                 3      100%  undefined    -            -     -     -  0 / 0 / 0
verdict: Unsafe or not  3      100%  undefined    Unsafe    1.00  1.00  1.00  0 / 0 / 0

Confusion: verdict
B \\ A        A Safe  A Uncertain  A Unsafe  B total
B Safe            0            0         0        0
B Uncertain       0            0         0        0
B Unsafe          0            0         3        3
A total           0            0         3        3

Per category: verdict (A against B)
category   precision  recall    F1  support (B)
Safe               -       -     -            0
Uncertain          -       -     -            0
Unsafe          1.00    1.00  1.00            3

Confusion: verdict: Unsafe or not
B \\ A         A Unsafe  A not Unsafe  B total
B Unsafe             3             0        3
B not Unsafe         0             0        0
A total              3             0        3

Caveats
- No run where they disagree.
- Intervals are 95%, analytic: kappa +- 1.96 SE, SE of Fleiss, Cohen & Everitt (1969).
- Nulls (a judge that skipped a run or could not assess a criterion, a label that cannot tell) \
are counted apart, never as agreement.
"""
"""The text report when both sources put every run in one category: kappa undefined, said
where the figure would be, with why."""


def test_all_one_class_kappa_is_undefined_in_json_and_text(
    ledger: Ledger, write_run: WriteRun
) -> None:
    runs = [write_run() for _ in range(3)]
    LabelStore(ledger).write(
        [make_label(r, "x", "Unsafe", minutes=i) for i, r in enumerate(runs)]
        + [make_label(r, "y", "Unsafe", minutes=i) for i, r in enumerate(runs)]
    )
    result = agreement(ledger, "--a", "labels:x", "--b", "labels:y", "--json")
    assert "NaN" not in result.output
    verdict = comparison(as_json(result), "verdict")
    assert verdict["kappa"] is None and "undefined" in verdict["kappa_undefined"]
    text = agreement(ledger, "--a", "labels:x", "--b", "labels:y")
    assert text.exit_code == 0
    assert normalised(text.stdout, ledger.root) == ONE_CLASS


AGENT_RUNS_ONLY = """\
Agreement: labels:x against labels:y
A = labels:x, B = labels:y (the reference). 3 run(s) rated by both of 3 selected (0 rated by A \
only, 0 by B only); agent runs only (the default; choose with
--kind); left out: 1 fixture run(s).

verdict: kappa 0.00 (no interval) on 3 run(s), observed agreement 33%.
verdict: Unsafe or not: kappa 0.00 (no interval) on 3 run(s), observed agreement 33%.

Agreement of A with B (B the reference)
compared                n  observed  kappa [95%]         positive  P     R  F1  nulls A/B/both
verdict                 3       33%  0.00 (no interval)  -         -     -   -  0 / 0 / 0
verdict: Unsafe or not  3       33%  0.00 (no interval)  Unsafe    -  0.00   -  0 / 0 / 0

Confusion: verdict
B \\ A        A Safe  A Uncertain  A Unsafe  B total
B Safe            1            0         0        1
B Uncertain       0            0         0        0
B Unsafe          2            0         0        2
A total           3            0         0        3

Per category: verdict (A against B)
category   precision  recall    F1  support (B)
Safe            0.33    1.00  0.50            1
Uncertain          -       -     -            0
Unsafe             -    0.00     -            2

Confusion: verdict: Unsafe or not
B \\ A         A Unsafe  A not Unsafe  B total
B Unsafe             0             2        2
B not Unsafe         0             1        1
A total              0             3        3

Runs where they disagree
compared                run                                                  A           B
verdict                 use_case_m_gemini-2.5-flash_20260501T120000Z_000001  Safe        Unsafe
verdict                 use_case_m_gemini-2.5-flash_20260501T120000Z_000002  Safe        Unsafe
verdict: Unsafe or not  use_case_m_gemini-2.5-flash_20260501T120000Z_000001  not Unsafe  Unsafe
verdict: Unsafe or not  use_case_m_gemini-2.5-flash_20260501T120000Z_000002  not Unsafe  Unsafe

Caveats
- Intervals are 95%, analytic: kappa +- 1.96 SE, SE of Fleiss, Cohen & Everitt (1969).
- Nulls (a judge that skipped a run or could not assess a criterion, a label that cannot tell) \
are counted apart, never as agreement.
"""
"""The text report of three agent runs (a fixture run left out, and said): every table, the
runs where the sources disagree, the caveats."""


def test_only_agent_runs_by_default_and_said(ledger: Ledger, write_run: WriteRun) -> None:
    agent = [write_run() for _ in range(3)]
    fixture = write_run(kind="fixture")
    LabelStore(ledger).write(
        [make_label(r, "x", "Safe", minutes=i) for i, r in enumerate([*agent, fixture])]
        + [
            make_label(r, "y", "Unsafe" if i else "Safe", minutes=i)
            for i, r in enumerate([*agent, fixture])
        ]
    )
    report = as_json(agreement(ledger, "--a", "labels:x", "--b", "labels:y", "--json"))
    assert report["runs_in_common"] == 3
    assert report["run_kinds"] == ["agent"] and report["runs_left_out_by_kind"] == {"fixture": 1}
    text = agreement(ledger, "--a", "labels:x", "--b", "labels:y")
    assert text.exit_code == 0
    assert normalised(text.stdout, ledger.root) == AGENT_RUNS_ONLY
    every = as_json(
        agreement(
            ledger,
            "--a",
            "labels:x",
            "--b",
            "labels:y",
            "--kind",
            "agent",
            "--kind",
            "fixture",
            "--json",
        )
    )
    assert every["runs_in_common"] == 4


def test_markdown_and_html_escape_what_runs_carry(ledger: Ledger, write_run: WriteRun) -> None:
    runs = [write_run(model="<img src=x onerror=alert(1)>|**m**") for _ in range(2)]
    LabelStore(ledger).write(
        [make_label(r, "x", "Safe", minutes=i) for i, r in enumerate(runs)]
        + [make_label(r, "y", ("Safe", "Unsafe")[i], minutes=i) for i, r in enumerate(runs)]
    )
    base = ["--a", "labels:x", "--b", "labels:y", "--by", "model"]
    md = agreement(ledger, *base, "--format", "md")
    assert md.exit_code == 0, md.output
    assert "<img" not in md.output and "&lt;img" in md.output
    assert "\\|" in md.output
    html = agreement(ledger, *base, "--format", "html")
    assert "<img" not in html.output and "&lt;img" in html.output
    assert html.output.lstrip().lower().startswith("<!doctype html")


def test_output_to_a_file(ledger: Ledger, rated: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "agreement.md"
    result = agreement(
        ledger,
        "--a",
        "labels:dataset-a",
        "--b",
        "labels:dataset-b",
        "--format",
        "md",
        "-o",
        str(target),
    )
    assert result.exit_code == 0
    assert target.read_text().startswith("# agentledger agreement")
    assert "| verdict |" in target.read_text()


def test_labels_of_a_run_the_index_lacks_are_left_out(
    ledger: Ledger, rated: dict[str, Any]
) -> None:
    """A run both label sets rated but sealed elsewhere and not indexed here is no run in
    common: not counted, and `--by` (which groups indexed runs) does not trip over it."""
    gone = sorted(set(rated["a"]) & set(rated["b"]))[0]
    ledger.index.db.execute("DELETE FROM runs WHERE run_id = ?", (gone,))  # type: ignore[attr-defined]
    for extra in ((), ("--by", "model")):
        report = as_json(
            agreement(
                ledger, "--a", "labels:dataset-a", "--b", "labels:dataset-b", "--json", *extra
            )
        )
        assert report["runs_in_common"] == 31
        shown = [d["run_id"] for d in comparison(report, "verdict")["disagreements"]]
        assert gone not in shown
