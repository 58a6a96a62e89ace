"""How far two sources agree on the same runs: a judge against labels, two judges, two label sets.

A **source** is a judge (``judge:ID`` or an unambiguous prefix of one; ``judge:rules`` and
``judge:llm``: the newest judge of that kind over the selected runs) or a label source
(``labels:NAME``; ``labels:human``: every person). Each says, of each run it rated, a verdict
and per criterion fired / not fired, or nothing: a judge that skipped the run, a criterion it
could not assess, a label that says "cannot tell". A null is counted apart, never as agreement
nor as disagreement.

On the runs both rated (agent runs only unless --kind says otherwise), `agreement_report`
compares the three-way verdict, a binary collapse (``--positive Unsafe``: Unsafe against the
rest) and every criterion both rate: n, observed agreement, Cohen's kappa with a 95% interval
(`agentledger.analysis.kappa`), precision / recall / F1 of A with B as the reference, the
confusion matrix, the same per model or scenario (``by``), and the runs where they disagree.

The held-out split and the leakage guard: with ``split="test"`` only the test part of the
label source's newest split counts; a judge that declares labels it was developed against
(`agentledger.labels.leakage`) is refused on them (LeakageError), or every such run is flagged
with ``allow_dev``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, overload

import numpy as np

from agentledger.analysis.kappa import KappaResult, WidthPlan, kappa_of, plan_width
from agentledger.analysis.select import DEFAULT_KINDS, describe_kinds
from agentledger.analysis.sources import Source, resolve_source
from agentledger.errors import InputError
from agentledger.labels.brief import label_results_for_agreement
from agentledger.labels.leakage import leaked_runs
from agentledger.labels.split import SplitStore
from agentledger.records.labels import LABEL_VERDICTS
from agentledger.records.splits import Split
from agentledger.store.index import RunFilter

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "BY",
    "AgreementReport",
    "Comparison",
    "Disagreements",
    "LeakageError",
    "Source",
    "agreement_report",
    "parse_positive",
    "resolve_source",
]

BY = ("model", "scenario")
SHOWN_DISAGREEMENTS = 20
"""Text, Markdown and HTML list this many disagreeing runs per comparison (JSON: all)."""


class LeakageError(InputError):
    """A judge would be graded on labels it was developed against (exit 2)."""


def parse_positive(text: str) -> str:
    """The verdict `--positive` names (any case); InputError otherwise."""
    for verdict in LABEL_VERDICTS:
        if text.strip().lower() == verdict.lower():
            return verdict
    raise InputError(f"--positive {text!r} is not a verdict: choose {', '.join(LABEL_VERDICTS)}")


class Disagreement(NamedTuple):
    """A run where the two sources said different things."""

    run_id: str
    a: str
    b: str
    development: str | None = None
    """Why the run's label is one the judge was developed against (with --allow-dev)."""

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "a": self.a, "b": self.b, "development": self.development}


class Disagreements(Sequence[Disagreement]):
    """The runs where two sources disagree on one comparison, made one `Disagreement` at a
    time as they are read: a report shows twenty, and over 100,000 runs there can be tens of
    thousands (only ``--json`` lists them all)."""

    def __init__(
        self,
        ids: Sequence[str],
        where: np.ndarray[Any, Any],
        codes: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
        categories: Sequence[str],
        development: Mapping[str, str],
    ) -> None:
        self._ids = ids
        self._where = where
        self._a, self._b = codes
        self._categories = tuple(categories)
        self._development = development

    def __len__(self) -> int:
        return len(self._where)

    def _item(self, position: int) -> Disagreement:
        i = int(self._where[position])
        run_id = self._ids[i]
        return Disagreement(
            run_id,
            self._categories[self._a[i]],
            self._categories[self._b[i]],
            self._development.get(run_id),
        )

    @overload
    def __getitem__(self, index: int) -> Disagreement: ...

    @overload
    def __getitem__(self, index: slice) -> list[Disagreement]: ...

    def __getitem__(self, index: int | slice) -> Disagreement | list[Disagreement]:
        if isinstance(index, slice):
            return [self._item(position) for position in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("disagreement index out of range")
        return self._item(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Disagreements({len(self)} runs)"


@dataclass(frozen=True)
class Comparison:
    """One thing compared (the verdict, its binary collapse, a criterion) on the common runs."""

    name: str
    what: Literal["verdict", "binary", "criterion"]
    result: KappaResult
    positive: str | None
    """The category whose precision / recall / F1 is the headline (None: per category)."""
    nulls: dict[str, int]
    disagreements: Sequence[Disagreement]
    groups: list[tuple[str, KappaResult]]
    plan: WidthPlan | None = None

    def headline(self) -> dict[str, Any] | None:
        if self.positive is None:
            return None
        for scores in self.result.scores():
            if scores.category == self.positive:
                return scores.to_json()
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "what": self.what,
            **self.result.to_json(),
            "positive": self.positive,
            "positive_scores": self.headline(),
            "nulls": self.nulls,
            "disagreements": [item.to_json() for item in self.disagreements],
            "groups": [{"group": group, **result.to_json()} for group, result in self.groups],
            "target": self.plan.to_json() if self.plan else None,
        }


@dataclass
class AgreementReport:
    """Agreement of A with B (B the reference) on the runs both rated."""

    a: Source
    b: Source
    runs_selected: int
    common: int
    only_a: int
    only_b: int
    kinds: tuple[str, ...]
    kinds_by_default: bool
    left_out: dict[str, int]
    comparisons: list[Comparison]
    by: str | None
    split: Split | None
    split_part: str | None
    outside_split: int
    development: dict[str, str]
    """Run id -> why, for runs whose label a judge here was developed against (--allow-dev)."""
    warnings: list[str] = field(default_factory=list)
    kind: str = "agreement"

    def describe_kinds(self) -> str:
        return describe_kinds(self.kinds, self.kinds_by_default, self.left_out)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "reference": "b",
            "runs_selected": self.runs_selected,
            "runs_in_common": self.common,
            "runs_only_a": self.only_a,
            "runs_only_b": self.only_b,
            "run_kinds": list(self.kinds),
            "run_kinds_by_default": self.kinds_by_default,
            "runs_left_out_by_kind": dict(sorted(self.left_out.items())),
            "split": (
                {
                    "split_id": self.split.split_id,
                    "source": self.split.source,
                    "part": self.split_part,
                    "runs_outside_part": self.outside_split,
                }
                if self.split
                else None
            ),
            "by": self.by,
            "development_runs": [
                {"run_id": run_id, "why": why} for run_id, why in sorted(self.development.items())
            ],
            "comparisons": [comparison.to_json() for comparison in self.comparisons],
            "warnings": list(self.warnings),
        }


_FIRED: dict[bool | None, int] = {True: 0, False: 1}
"""Codes of a criterion's result: 0 fired, 1 not fired; null (and absent) is -1."""


@dataclass(frozen=True)
class _Runs:
    """The runs compared, in run id order, and the group code of each (with --by)."""

    ids: list[str]
    groups: np.ndarray[Any, Any] | None
    group_names: list[str]


def _compare(
    name: str,
    what: Literal["verdict", "binary", "criterion"],
    categories: Sequence[str],
    codes_a: np.ndarray[Any, Any],
    codes_b: np.ndarray[Any, Any],
    runs: _Runs,
    *,
    positive: str | None,
    bootstrap: int | None,
    seed: int,
    target_width: float | None,
    development: Mapping[str, str],
) -> Comparison:
    """One comparison from the category codes (-1: null) of A and B over `runs`."""
    k = len(categories)
    null_a, null_b = codes_a < 0, codes_b < 0
    nulls = {
        "a_null": int((null_a & ~null_b).sum()),
        "b_null": int((null_b & ~null_a).sum()),
        "both_null": int((null_a & null_b).sum()),
    }
    both = ~(null_a | null_b)
    cells = codes_b.astype(np.int64) * k + codes_a

    def matrix(counts: np.ndarray[Any, Any]) -> list[list[int]]:
        return [[int(value) for value in row] for row in counts.reshape(k, k)]

    result = kappa_of(
        matrix(np.bincount(cells[both], minlength=k * k)),
        categories,
        bootstrap=bootstrap,
        seed=seed,
    )
    groups = []
    if runs.groups is not None:
        # Every group's cells in one pass: group code * k*k + cell.
        width = len(runs.group_names)
        by_group = np.bincount(
            runs.groups[both].astype(np.int64) * (k * k) + cells[both], minlength=width * k * k
        ).reshape(width, k * k)
        for group, counts in zip(runs.group_names, by_group, strict=True):
            if counts.any():
                groups.append(
                    (group, kappa_of(matrix(counts), categories, bootstrap=bootstrap, seed=seed))
                )
    where = np.flatnonzero(both & (codes_a != codes_b))
    disagreements = Disagreements(runs.ids, where, (codes_a, codes_b), categories, development)
    plan = plan_width(result, target_width) if target_width is not None else None
    return Comparison(name, what, result, positive, nulls, disagreements, groups, plan)


# Over 100,000 runs a Python step per run is what costs: a source's ratings are columns, the
# runs compared are picked from them by one numpy take, and every chain of map() runs in C.


class _Picked:
    """A source's ratings of the runs compared (`rows`: their rows in its ratings)."""

    def __init__(self, source: Source, ordered: list[str]) -> None:
        self.source = source
        self.rows = np.fromiter(
            map(source.position.__getitem__, ordered), dtype=np.intp, count=len(ordered)
        )
        self.keys = source.criteria_keys[self.rows]
        self.verdicts = source.verdict_codes[self.rows]

    def named(self) -> set[str]:
        """Every criterion rated on any of the runs."""
        criteria = self.source.ratings.criteria
        used = np.flatnonzero(np.bincount(self.keys, minlength=len(criteria)))
        return {criterion for key in used for criterion in criteria[key]}

    def codes(self, criteria: list[str]) -> dict[str, np.ndarray[Any, Any]]:
        """Per criterion, the code of each run (`_FIRED`; -1 null or absent)."""
        if not criteria:
            return {}
        distinct = self.source.ratings.criteria
        coded = np.array(
            [
                [_FIRED.get(results.get(criterion), -1) for criterion in criteria]
                for results in distinct
            ],
            dtype=np.int8,
        ).reshape(len(distinct), len(criteria))
        table = coded[self.keys]
        return {criterion: table[:, i] for i, criterion in enumerate(criteria)}


def _binary_codes(verdicts: np.ndarray[Any, Any], positive: str) -> np.ndarray[Any, Any]:
    """0 for `positive`, 1 for any other verdict, -1 for null."""
    code = LABEL_VERDICTS.index(positive)
    return np.where(verdicts < 0, -1, np.where(verdicts == code, 0, 1)).astype(np.int8)


def _runs(ids: list[str], groups: Mapping[str, str], by: str | None) -> _Runs:
    if by is None:
        return _Runs(ids, None, [])
    values = list(map(groups.__getitem__, ids))
    names = sorted(set(values))
    place = {name: i for i, name in enumerate(names)}
    codes = np.fromiter(map(place.__getitem__, values), dtype=np.int32, count=len(ids))
    return _Runs(ids, codes, names)


def _is_labels(spec: str | Source) -> bool:
    """Whether a source (a spec or one resolved) is a label source."""
    if isinstance(spec, Source):
        return spec.kind == "labels"
    return spec.strip().partition(":")[0] == "labels"


def agreement_report(
    ledger: Ledger,
    a_spec: str | Source,
    b_spec: str | Source,
    run_filter: RunFilter | None = None,
    *,
    positive: str = "Unsafe",
    by: str | None = None,
    bootstrap: int | None = None,
    seed: int = 0,
    split: str | None = None,
    allow_dev: bool = False,
    target_width: float | None = None,
) -> AgreementReport:
    """Agreement of source A with source B (the reference) on the runs both rated.

    A source is a spec (``judge:rules``, ``labels:human``, ...) or one already resolved."""
    positive = parse_positive(positive)
    _check_options(by, split, target_width, bootstrap)
    base = run_filter or RunFilter()
    kinds_by_default = not base.kinds
    kinds = base.kinds or DEFAULT_KINDS
    by_kind = {str(k): n for k, n in ledger.index.count_by(replace(base, kinds=()), "kind").items()}
    selected = replace(base, kinds=kinds)
    # Each run's model, scenario and kind are read only when they matter: a filter or a kind
    # left out narrows the runs, or --by groups them.
    narrows = replace(base, kinds=()) != RunFilter() or any(k not in kinds for k in by_kind)
    # A judge rates indexed runs only, but labels may name a run the index lacks (sealed by
    # another machine, not yet indexed here): two label sources are kept to indexed runs too.
    indexed_only = narrows or by is not None or (_is_labels(a_spec) and _is_labels(b_spec))
    facets: dict[str, str] = {}  # run id -> its model or scenario (with --by; else "")
    if indexed_only:
        found = ledger.index.run_facets(selected)
        if by is None:
            facets = dict.fromkeys(found.run_ids, "")
        else:
            groups = found.models if by == "model" else found.scenarios
            facets = dict(zip(found.run_ids, groups, strict=True))
        runs_selected = len(facets)
    else:
        runs_selected = sum(by_kind.values())
    # When the kinds narrow nothing, the queries go without them (the same runs, faster).
    queried = selected if narrows else replace(base, kinds=())
    a = a_spec if isinstance(a_spec, Source) else resolve_source(ledger, a_spec, queried)
    b = b_spec if isinstance(b_spec, Source) else resolve_source(ledger, b_spec, queried)
    warnings: list[str] = []
    in_a = a.position.keys() & facets.keys() if indexed_only else set(a.position)
    in_b = b.position.keys() & facets.keys() if indexed_only else set(b.position)
    common = in_a & in_b
    both_rated = len(common)
    chosen_split = _split_of(ledger, a, b) if split is not None else None
    outside = 0
    if chosen_split is not None and split is not None:
        part = chosen_split.runs(split)
        outside = len(common - part)
        common &= part
    if not common:
        raise InputError(
            f"{a.describe()} and {b.describe()} have no run in common among the selected "
            f"{' and '.join(kinds)} runs"
            + (f" in the {split} part of {chosen_split.split_id}" if chosen_split else "")
            + f" ({len(in_a)} rated by A, {len(in_b)} by B)"
        )
    development = _checked_development(ledger, a, b, common, allow_dev, warnings)
    warnings += _without_verdict(a, "A", common) + _without_verdict(b, "B", common)
    # A's run ids come in run id order, so sorting them is one pass (a set's order is none).
    ordered = sorted(filter(common.__contains__, a.ratings.run_ids))
    runs = _runs(ordered, facets, by)
    options: dict[str, Any] = {
        "bootstrap": bootstrap,
        "seed": seed,
        "target_width": target_width,
        "development": development,
    }
    comparisons = _comparisons(
        _Picked(a, ordered), _Picked(b, ordered), runs, positive, options, warnings
    )
    return AgreementReport(
        a=a,
        b=b,
        runs_selected=runs_selected,
        common=len(common),
        only_a=len(in_a) - both_rated,
        only_b=len(in_b) - both_rated,
        kinds=kinds,
        kinds_by_default=kinds_by_default,
        left_out={k: n for k, n in by_kind.items() if k not in kinds},
        comparisons=comparisons,
        by=by,
        split=chosen_split,
        split_part=split,
        outside_split=outside,
        development=development,
        warnings=warnings,
    )


def _split_of(ledger: Ledger, a: Source, b: Source) -> Split:
    """The newest split of the label source on one side (`--split`); InputError if none."""
    label_side = b if b.kind == "labels" else a if a.kind == "labels" else None
    if label_side is None:
        raise InputError("--split needs a label source on one side (labels:NAME)")
    chosen = SplitStore(ledger).newest(label_side.name)
    if chosen is None:
        raise InputError(
            f"{label_side.describe()} has no split: make one with "
            f"`agentledger labels split --source {label_side.name} --test-share 0.3 --seed S`"
        )
    return chosen


def _check_options(
    by: str | None, split: str | None, target_width: float | None, bootstrap: int | None
) -> None:
    """InputError naming the option when one of these is not one `agreement_report` takes."""
    if by is not None and by not in BY:
        raise InputError(f"--by {by!r}: choose {' or '.join(BY)}")
    if split is not None and split not in ("dev", "test"):
        raise InputError(f"--split {split!r}: choose dev or test")
    if target_width is not None:
        try:
            plan_width(kappa_of([[1, 0], [0, 1]], ("x", "y")), target_width)
        except ValueError:
            raise InputError(
                f"--target-width must be a positive number, e.g. 0.1 (got {target_width})"
            ) from None
    if bootstrap is not None and bootstrap < 1:
        raise InputError(f"--bootstrap must be at least 1 (got {bootstrap})")


def _checked_development(
    ledger: Ledger, a: Source, b: Source, common: set[str], allow_dev: bool, warnings: list[str]
) -> dict[str, str]:
    """The runs compared whose labels a judge here was developed against: refused
    (LeakageError) unless `allow_dev`, then each flagged and a warning said."""
    development = _development(ledger, a, b, common)
    if development and not allow_dev:
        sample = ", ".join(sorted(development)[:3])
        judge = a if a.developed_against else b
        raise LeakageError(
            f"refusing to grade {judge.describe()} on labels it was developed against: "
            f"{len(development)} of the {len(common)} runs compared ({sample}"
            f"{', ...' if len(development) > 3 else ''}) are "
            f"{next(iter(development.values()))}. Grade it on held-out labels "
            "(`agentledger labels split`, then --split test), or pass --allow-dev to report "
            "anyway with every such run flagged"
        )
    if development:
        warnings.append(
            f"DEVELOPMENT LABELS: {len(development)} of the {len(common)} runs compared carry "
            "labels a judge here was developed against; these figures are not a held-out "
            "evaluation (--allow-dev). Every such run is flagged."
        )
    return development


def _without_verdict(source: Source, side: str, common: set[str]) -> list[str]:
    """A warning when `source` gave no verdict at all (not applicable, skipped) on some of the
    runs compared: they are rated, but nothing of theirs can agree or disagree."""
    tally: dict[str, int] = {}
    for run_id, verdict in zip(source.ratings.run_ids, source.ratings.verdicts, strict=True):
        if verdict in ("not-applicable", "skipped") and run_id in common:
            tally[verdict] = tally.get(verdict, 0) + 1
    if not tally:
        return []
    why = []
    if "not-applicable" in tally:
        why.append(f"{tally['not-applicable']} not applicable: the judge's pack does not apply")
    if "skipped" in tally:
        why.append(f"{tally['skipped']} skipped")
    return [
        f"{side} ({source.describe()}) gave no verdict on {sum(tally.values())} of the "
        f"{len(common)} runs compared ({'; '.join(why)}; `agentledger show RUN` says why): "
        "they count as nulls, never as agreement or disagreement."
    ]


def _comparisons(
    of_a: _Picked,
    of_b: _Picked,
    runs: _Runs,
    positive: str,
    options: dict[str, Any],
    warnings: list[str],
) -> list[Comparison]:
    """The verdict, its binary collapse and every criterion both rate, compared; a warning
    for each criterion one side alone rates."""
    verdicts_a, verdicts_b = of_a.verdicts, of_b.verdicts
    comparisons = [
        _compare(
            "verdict", "verdict", LABEL_VERDICTS, verdicts_a, verdicts_b, runs,
            positive=None, **options,
        ),
        _compare(
            f"verdict: {positive} or not",
            "binary",
            (positive, f"not {positive}"),
            _binary_codes(verdicts_a, positive),
            _binary_codes(verdicts_b, positive),
            runs,
            positive=positive,
            **options,
        ),
    ]  # fmt: skip
    criteria_a, criteria_b = of_a.named(), of_b.named()
    compared = sorted(criteria_a & criteria_b)
    codes_a, codes_b = of_a.codes(compared), of_b.codes(compared)
    for criterion in compared:
        comparisons.append(
            _compare(
                f"criterion {criterion}",
                "criterion",
                ("fired", "not fired"),
                codes_a[criterion],
                codes_b[criterion],
                runs,
                positive="fired",
                **options,
            )
        )
    for criterion in sorted(criteria_a ^ criteria_b):
        side = "A" if criterion in criteria_a else "B"
        warnings.append(f"criterion {criterion} is rated by {side} only: not compared")
    return comparisons


def _development(ledger: Ledger, a: Source, b: Source, runs: set[str]) -> dict[str, str]:
    """Runs whose label (on one side) a judge (on the other) was developed against."""
    out: dict[str, str] = {}
    splits = SplitStore(ledger)
    for judge, labels in ((a, b), (b, a)):
        if judge.kind == "judge" and labels.kind == "labels" and judge.developed_against:
            # Who gave each label counts here: read in brief, only for this.
            given = label_results_for_agreement(ledger, labels.spec)
            out.update(leaked_runs(judge.developed_against, given, runs, splits))
    return out
