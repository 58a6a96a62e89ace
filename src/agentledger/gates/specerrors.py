"""Errors in a gate's spec that pydantic cannot place: cross-field checks, criteria parsed later.

`load_yaml_record` names the field and line of a problem in one field; a check across fields (a
duplicated id, `at_least.of` against the number of models) is raised here instead, with the
field it is about and that field's line in the YAML file.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ValidationInfo, model_validator

from agentledger.errors import RecordError
from agentledger.records.specfiles import yaml_line

if TYPE_CHECKING:
    from agentledger.store import Ledger

__all__ = ["DEFER", "CrossChecked", "spec_error", "unknown_names"]

DEFER = {"defer_cross_checks": True}
"""Validation context: skip the model-level cross-field checks; the loader runs them itself so
that it can name the field and line."""


class CrossChecked(BaseModel):
    """A spec with checks across its fields, run after the fields unless DEFER says not to."""

    def cross_check(self) -> tuple[tuple[str | int, ...], str] | None:
        """The first problem across fields, with the field it is about; None when consistent."""
        return None

    @model_validator(mode="after")
    def _cross_checked(self, info: ValidationInfo) -> CrossChecked:
        if not (info.context or {}).get("defer_cross_checks"):
            problem = self.cross_check()
            if problem is not None:
                raise ValueError(problem[1])
        return self


def spec_error(path: Path, text: str, loc: tuple[str | int, ...], problem: str) -> RecordError:
    """A RecordError naming `path`, the dotted field `loc` and its line in `text`."""
    try:
        line = yaml_line(yaml.compose(text, Loader=yaml.SafeLoader), loc)
    except yaml.YAMLError:
        line = None
    field = ".".join(str(part) for part in loc) or None
    return RecordError(path, problem, field=field, line=line)


def unknown_names(
    ledger: Ledger, kind: Literal["model", "scenario"], names: list[str]
) -> list[str]:
    """A note for each of `names` that no stored run has as its `kind` (a typo, or nothing run
    yet): the gate still decides (REVIEW for what is missing), the note says why."""
    known = ledger.index.distinct(kind)
    notes = []
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            notes.append(f"no stored run has the {kind} {name!r} (a typo, or not run yet){hint}")
    return notes
