"""Split records: which labelled runs are for developing a judge and which are held out.

```
ledger/splits/<split_id>.json      Split
```

A judge is developed (few-shot examples chosen, rules tuned, a template reworded) against the
`dev` part of a label source, and graded (`agentledger agreement --split test`) on the `test`
part it never saw. A split is made once (`agentledger labels split`) and never changed: its id
is a hash of what it holds, so the same labels, share and seed give the same split again.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from agentledger.records import Record, utc_now
from agentledger.records.labels import SOURCE_NAME

__all__ = ["SPLITS_DIR", "SPLIT_ID", "SPLIT_PARTS", "DevelopedAgainst", "Split", "SplitPart"]

SPLITS_DIR = "splits"
SPLIT_ID = r"^split_[0-9a-f]{12}$"
SplitPart = Literal["dev", "test"]
SPLIT_PARTS: tuple[str, ...] = ("dev", "test")


class Split(Record):
    """A label source's labelled runs, each in `dev` or `test` (splits/<split_id>.json)."""

    split_id: str = Field(pattern=SPLIT_ID, description="split_<12 hex of its content>.")
    source: str = Field(
        pattern=SOURCE_NAME, description="The label source split (``human``: every person)."
    )
    test_share: float = Field(gt=0, lt=1, description="The share of runs asked for in test.")
    seed: str = Field(min_length=1, max_length=200, description="Orders runs within strata.")
    stratified_by: list[str] = Field(
        default_factory=lambda: ["model", "verdict"],
        description="What each stratum shares: the run's model and the label's verdict.",
    )
    created_at: datetime = Field(default_factory=utc_now, description="When it was made.")
    dev: list[str] = Field(description="Run ids for developing judges, sorted.")
    test: list[str] = Field(description="Run ids held out for grading judges, sorted.")
    _part_of: dict[str, SplitPart] = PrivateAttr(default_factory=dict)

    @field_validator("test_share")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("test_share must be a number between 0 and 1")
        return value

    @model_validator(mode="after")
    def _disjoint(self) -> Split:
        both = set(self.dev) & set(self.test)
        if both:
            raise ValueError(f"run {sorted(both)[0]} is in both dev and test")
        if self.dev != sorted(self.dev) or self.test != sorted(self.test):
            raise ValueError("dev and test list their run ids sorted")
        return self

    def part_of(self, run_id: str) -> SplitPart | None:
        """Which part `run_id` is in (None when the split does not hold it)."""
        if not self._part_of and (self.dev or self.test):
            self._part_of.update({run_id: "dev" for run_id in self.dev})
            self._part_of.update({run_id: "test" for run_id in self.test})
        return self._part_of.get(run_id)

    def runs(self, part: str) -> frozenset[str]:
        """The run ids of `part` (dev or test)."""
        if part not in SPLIT_PARTS:
            raise ValueError(f"unknown split part {part!r}: choose dev or test")
        return frozenset(self.dev if part == "dev" else self.test)


class DevelopedAgainst(BaseModel):
    """Labels a judge was developed against (tuned on, or given as examples): it is never
    graded on them. In a criteria pack's ``developed_against:`` list, or added by the LLM
    judge for the labelled runs it takes as few-shot examples."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    labels: str = Field(
        pattern=SOURCE_NAME,
        description="The label source (``human``: every person's labels).",
    )
    split: str | None = Field(
        default=None, pattern=SPLIT_ID, description="With `part`: which split's part."
    )
    part: Literal["dev", "test", "all"] = Field(
        default="all",
        description="dev or test of `split`; all: every label of the source.",
    )
    runs: list[str] = Field(
        default_factory=list,
        description="Only these runs' labels (the few-shot examples); empty: every run.",
    )

    @model_validator(mode="after")
    def _part_needs_split(self) -> DevelopedAgainst:
        if self.part != "all" and self.split is None:
            raise ValueError(f"part {self.part!r} needs the split it is a part of (split:)")
        return self

    def describe(self) -> str:
        where = f"labels:{self.labels}"
        if self.split is not None:
            where += f", {self.part} part of {self.split}"
        if self.runs:
            where += f", {len(self.runs)} example run(s)"
        return where
