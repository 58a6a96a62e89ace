"""The leakage guard: a judge is never graded on the labels it was developed against.

A judge declares what it was developed against (`DevelopedAgainst`: a label source, and
optionally a split's part or the runs it took as examples); the declaration is part of its
identity, so it travels with every score. `leaked_runs` says which of the runs an agreement
compares carry such a label, and why: `agreement` refuses to report on them, or flags each one
with ``--allow-dev``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agentledger.errors import InputError
from agentledger.labels.split import SplitStore
from agentledger.labels.store import HUMAN
from agentledger.records.splits import DevelopedAgainst, Split
from agentledger.store.index import LabelResult

__all__ = ["declared_development", "leaked_runs"]

_DECLARED: TypeAdapter[list[DevelopedAgainst]] = TypeAdapter(list[DevelopedAgainst])


def declared_development(identity: Mapping[str, Any], where: str) -> list[DevelopedAgainst]:
    """The labels a judge's identity (a score's ``identity``) says it was developed against."""
    raw = identity.get("developed_against")
    if raw is None:
        return []
    try:
        return _DECLARED.validate_python(raw)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise InputError(
            f"{where}: developed_against: {problem['msg']} at "
            f"{'.'.join(str(part) for part in problem['loc']) or 'the list'}"
        ) from None


def _same_source(declared: DevelopedAgainst, label: LabelResult) -> bool:
    if declared.labels == label.source_name:
        return True
    return declared.labels == HUMAN and label.source_kind == "person"


def leaked_runs(
    declared: Iterable[DevelopedAgainst],
    labels: Mapping[str, LabelResult],
    runs: Iterable[str],
    splits: SplitStore,
) -> dict[str, str]:
    """run_id -> why, for each of `runs` whose label (in `labels`) is one the judge was
    developed against. A split the declaration names but the ledger lacks counts every label
    of its source (the guard cannot tell which runs were held out)."""
    entries = list(declared)
    if not entries:
        return {}
    found: dict[str, Split | None] = {}
    for entry in entries:
        if entry.split is not None and entry.split not in found:
            try:
                found[entry.split] = splits.get(entry.split)
            except InputError:
                found[entry.split] = None
    out: dict[str, str] = {}
    for run_id in runs:
        label = labels.get(run_id)
        if label is None:
            continue
        for entry in entries:
            if not _same_source(entry, label):
                continue
            if entry.runs:
                if run_id not in entry.runs:
                    continue
                why = f"an example the judge was given ({entry.describe()})"
            elif entry.split is not None:
                split = found[entry.split]
                if split is not None:
                    part = split.part_of(run_id)
                    if part is None or (entry.part != "all" and part != entry.part):
                        continue
                    why = f"in the {part} part of {split.split_id} the judge was developed on"
                else:
                    why = f"labels:{entry.labels} (split {entry.split} is not on record)"
            else:
                why = f"labels:{entry.labels}, which the judge was developed against"
            out[run_id] = why
            break
    return out
