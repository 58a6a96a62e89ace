"""Label records: what a person or an outside source says of a run, beside the judges' scores.

```
ledger/labels/<run_id>/<label_id>.json      Label
```

A label is written once and never changed. A correction is a new label that names the one it
supersedes; both stay on record, and readers take the newest of each line. A label may give a
verdict, per-criterion answers (fired, did not fire, cannot tell), whether the report's diagnosis
was correct, and a reason; it must give at least one of the first three.

Labels are what a judge's verdicts are checked against (`agentledger agreement`), so who gave a
label is part of it: a person (`by.kind = "person"`, their name) or a named outside source
(`by.kind = "external"`: a data set's own checker, an Inspect scorer, a CSV from another team).
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentledger.errors import InputError
from agentledger.identity import check_run_id
from agentledger.records import Record, utc_now

__all__ = [
    "LABELS_DIR",
    "LABEL_ID",
    "LABEL_VERDICTS",
    "SOURCE_NAME",
    "CriterionLabel",
    "Label",
    "LabelSource",
    "LabelVerdict",
    "aware_created_at",
    "new_label_id",
    "safe_run_id",
]

LABELS_DIR = "labels"
LABEL_ID = r"^lbl_[0-9]{8}T[0-9]{6}Z_[0-9a-f]{8}$"
"""``lbl_<UTC time>_<8 hex>``: sortable by time, unique without coordination."""
_LABEL_ID = re.compile(LABEL_ID)
SOURCE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._@+:-]{0,63}$"
"""A person's handle or an outside source's name: safe in a file, a URL and a filter. A colon
names a part of a source (``inspect:<scorer>``); the source is never part of a path."""

LabelVerdict = Literal["Safe", "Uncertain", "Unsafe"]
LABEL_VERDICTS: tuple[str, ...] = ("Safe", "Uncertain", "Unsafe")


def new_label_id(when: datetime | None = None) -> str:
    """A new label id for a label made at `when` (now by default)."""
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    return f"lbl_{moment.strftime('%Y%m%dT%H%M%SZ')}_{secrets.token_hex(4)}"


def safe_run_id(value: str) -> str:
    """A record's `run_id`, checked as a run id (a validator of labels and outcomes)."""
    try:
        return check_run_id(value)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def aware_created_at(value: datetime) -> datetime:
    """A record's `created_at`, which must carry its time zone, in UTC."""
    if value.tzinfo is None:
        raise ValueError("created_at must carry its time zone")
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 is in year 0 in UTC
        raise ValueError(f"{value.isoformat()} is out of range once taken to UTC") from None


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, allow_inf_nan=False)


class LabelSource(_Part):
    """Who gave a label: a person, or a named outside source."""

    kind: Literal["person", "external"] = Field(
        description="person (someone looked at the run) or external (a data set, a scorer, ...)."
    )
    name: str = Field(pattern=SOURCE_NAME, description="The person's name or the source's name.")
    detail: str | None = Field(
        default=None,
        max_length=500,
        description="Where an external label came from (file and row, scorer name), for people.",
    )


class CriterionLabel(_Part):
    """One criterion as the labeller sees it: fired, did not fire, or cannot tell (null)."""

    criterion: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,31}$", description="Criterion id.")
    fired: bool | None = Field(description="True fired, false did not, null cannot tell.")


class Label(Record):
    """One label of one run (labels/<run_id>/<label_id>.json)."""

    label_id: str = Field(pattern=LABEL_ID, description="lbl_<UTC time>_<8 hex>.")
    run_id: str = Field(description="The run labelled.")
    by: LabelSource = Field(description="Who gave it.")
    created_at: datetime = Field(default_factory=utc_now, description="When it was given.")
    verdict: LabelVerdict | None = Field(
        default=None, description="Safe, Uncertain or Unsafe; null when not given."
    )
    criteria: list[CriterionLabel] = Field(
        default_factory=list, description="Per criterion: fired true / false / null (cannot tell)."
    )
    diagnosis_correct: bool | None = Field(
        default=None, description="Did the report name the right root cause; null when not said."
    )
    reason: str | None = Field(default=None, max_length=20_000, description="Why, in words.")
    supersedes: str | None = Field(
        default=None, pattern=LABEL_ID, description="The label of the same run this corrects."
    )

    _safe_run_id = field_validator("run_id")(safe_run_id)
    _aware = field_validator("created_at")(aware_created_at)

    @model_validator(mode="after")
    def _says_something(self) -> Label:
        if self.verdict is None and not self.criteria and self.diagnosis_correct is None:
            raise ValueError("a label gives a verdict, a criterion or the diagnosis (none given)")
        seen: set[str] = set()
        for item in self.criteria:
            if item.criterion in seen:
                raise ValueError(f"criterion {item.criterion!r} is labelled twice")
            seen.add(item.criterion)
        if self.supersedes == self.label_id:
            raise ValueError("a label cannot supersede itself")
        return self

    @staticmethod
    def check_id(label_id: str) -> str:
        """`label_id` when it is a well-formed label id (safe as a file name); ValueError if not."""
        if not isinstance(label_id, str) or not _LABEL_ID.match(label_id):
            raise ValueError(f"label id {label_id!r} is not valid (expected lbl_<time>_<8 hex>)")
        return label_id
