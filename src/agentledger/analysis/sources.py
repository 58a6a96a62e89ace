"""The two sides of an agreement: a judge or a label source (`Source`), and the runs it rated.

A spec names one (`resolve_source`): ``judge:ID`` or an unambiguous prefix of one, ``judge:rules``
and ``judge:llm`` (the newest judge of that kind over the selected runs), ``labels:NAME`` and
``labels:human``. `agentledger.analysis.agreement` compares two.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from agentledger.errors import InputError
from agentledger.labels.brief import label_ratings_for_agreement
from agentledger.labels.leakage import declared_development
from agentledger.records.labels import LABEL_VERDICTS
from agentledger.records.splits import DevelopedAgainst
from agentledger.store.index import JudgeTally, Ratings, RunFilter

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["SOURCE_FORMS", "Source", "resolve_source"]

SOURCE_FORMS = "judge:ID (or a prefix), judge:rules, judge:llm, labels:NAME or labels:human"
# Over 100,000 runs a Python step per run is what costs: a source's ratings are columns, the
# runs compared are picked from them by one numpy take, and every chain of map() runs in C.
_VERDICT_CODE: dict[str | None, int] = {verdict: i for i, verdict in enumerate(LABEL_VERDICTS)}


@dataclass
class Source:
    """One side of an agreement: who it is and what it said of each run, column by column
    (over 100,000 runs, no object per run)."""

    spec: str
    kind: Literal["judge", "labels"]
    name: str
    """The judge id, or the label source's name."""
    ratings: Ratings
    """One row per run it rated: the judge's chosen score (a skipped one with its criteria left
    out), or the label source's newest current label. A verdict other than Safe, Uncertain or
    Unsafe (skipped, unscored, a label's "cannot tell") is a null."""
    developed_against: list[DevelopedAgainst] = field(default_factory=list)

    @cached_property
    def position(self) -> dict[str, int]:
        """run_id -> its row in `ratings`."""
        return dict(zip(self.ratings.run_ids, range(len(self.ratings.run_ids)), strict=True))

    @cached_property
    def verdict_codes(self) -> np.ndarray[Any, Any]:
        """The code of each row's verdict: its place in LABEL_VERDICTS, -1 for any other."""
        verdicts = self.ratings.verdicts
        return np.fromiter(
            map(_VERDICT_CODE.get, verdicts, itertools.repeat(-1)),
            dtype=np.int8,
            count=len(verdicts),
        )

    @cached_property
    def criteria_keys(self) -> np.ndarray[Any, Any]:
        """Each row's key into ``ratings.criteria``."""
        return np.array(self.ratings.keys, dtype=np.intp)

    def describe(self) -> str:
        if self.kind == "judge":
            return f"judge {self.name}" + (
                "" if self.spec == f"judge:{self.name}" else f" ({self.spec})"
            )
        return f"labels:{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "kind": self.kind,
            "name": self.name,
            "runs_rated": len(self.position),
            "developed_against": [
                entry.model_dump(mode="json") for entry in self.developed_against
            ],
        }


def _judge_source(ledger: Ledger, spec: str, asked: str, run_filter: RunFilter) -> Source:
    if asked in ("rules", "llm"):
        newest = ledger.index.newest_judge(run_filter, asked)
        if newest is None:
            known = _known_judges(ledger.index.judges_of(run_filter))
            raise InputError(f"{spec}: no {asked} judge scored the selected runs (judges: {known})")
        judge_id = newest
    else:
        tallies = ledger.index.judges_of(run_filter)  # newest first
        matched = [t for t in tallies if t.judge_id == asked] or [
            t for t in tallies if t.judge_id.startswith(asked)
        ]
        if not matched:
            raise InputError(
                f"{spec}: no judge {asked!r} scored the selected runs "
                f"(judges: {_known_judges(tallies)})"
            )
        if len(matched) > 1:
            ids = ", ".join(sorted(t.judge_id for t in matched))
            raise InputError(f"{spec}: {asked!r} is ambiguous, it matches judges {ids}")
        judge_id = matched[0].judge_id
    ratings = _without_skipped(ledger.index.score_ratings(run_filter, [judge_id]))
    return Source(
        spec,
        "judge",
        judge_id,
        ratings,
        developed_against=_development_of(ledger, judge_id, ratings.run_ids[:1]),
    )


def _known_judges(tallies: Sequence[JudgeTally]) -> str:
    """The judges of `tallies`, for an error that names what there is."""
    return ", ".join(sorted({t.judge_id for t in tallies})) or "none: run `agentledger judge`"


def _without_skipped(ratings: Ratings) -> Ratings:
    """`ratings` with the criteria of each skipped score left out (a skipped run is null)."""
    skipped = [
        at
        for at, verdict in enumerate(ratings.verdicts)
        if verdict in ("skipped", "not-applicable")
    ]
    if not skipped:
        return ratings
    criteria = list(ratings.criteria)
    empty = next((key for key, results in enumerate(criteria) if not results), None)
    if empty is None:
        empty = len(criteria)
        criteria.append({})
    keys = list(ratings.keys)
    for row in skipped:
        keys[row] = empty
    return ratings._replace(keys=keys, criteria=criteria)


def _development_of(ledger: Ledger, judge_id: str, run_ids: list[str]) -> list[DevelopedAgainst]:
    """What the judge declares it was developed against, from the identity in one score
    (every score of a judge carries the same identity): its score of the first of `run_ids`."""
    for run_id in run_ids:
        for text in ledger.index.scores_of(run_id):
            score = json.loads(text)
            if score.get("judge_id") == judge_id:
                return declared_development(score.get("identity") or {}, f"judge {judge_id}")
        break
    return []


def _labels_source(ledger: Ledger, spec: str) -> Source:
    ratings = label_ratings_for_agreement(ledger, spec)
    return Source(spec, "labels", spec.partition(":")[2], ratings)


def resolve_source(ledger: Ledger, spec: str, run_filter: RunFilter) -> Source:
    """The source `spec` names, with its ratings of the runs `run_filter` selects."""
    kind, sep, rest = spec.strip().partition(":")
    if sep and rest and kind == "judge":
        return _judge_source(ledger, spec, rest, run_filter)
    if sep and rest and kind == "labels":
        return _labels_source(ledger, spec)
    raise InputError(f"unknown source {spec!r}: use {SOURCE_FORMS}")
