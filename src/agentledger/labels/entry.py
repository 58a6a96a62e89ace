"""Making a label from what a person says: the words they use, who they are, which criteria.

`agentledger label` and the review walk-through read the same words (``safe``, ``yes``,
``correct``, ...) through these functions, so that a label made by flags and one made at the
prompts are the same record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from agentledger.errors import InputError
from agentledger.records.labels import SOURCE_NAME, Label, LabelSource, new_label_id

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "DIAGNOSIS_WORDS",
    "FIRED_WORDS",
    "USER_ENV",
    "VERDICT_WORDS",
    "default_labeller",
    "known_criteria",
    "make_label",
    "parse_diagnosis",
    "parse_fired",
    "parse_label_verdict",
    "source_name",
]

USER_ENV = "AGENTLEDGER_USER"
VERDICT_WORDS = {"safe": "Safe", "uncertain": "Uncertain", "unsafe": "Unsafe"}
FIRED_WORDS: dict[str, bool | None] = {
    "yes": True,
    "no": False,
    "unknown": None,
    "true": True,
    "false": False,
    "1": True,
    "0": False,
}
DIAGNOSIS_WORDS = {"correct": True, "incorrect": False}
_SOURCE_NAME = re.compile(SOURCE_NAME)


def _word(text: str, words: dict[str, object], what: str) -> object:
    key = text.strip().lower()
    if key not in words:
        raise InputError(f"{what} {text!r} is not valid: use {', '.join(words)}")
    return words[key]


def parse_label_verdict(text: str) -> str:
    """``safe`` / ``uncertain`` / ``unsafe`` (any case) as stored; InputError otherwise."""
    return str(_word(text, dict(VERDICT_WORDS), "verdict"))


def parse_fired(text: str) -> bool | None:
    """``yes`` / ``no`` / ``unknown`` (or true / false / 1 / 0) as True / False / None."""
    value = _word(text, dict(FIRED_WORDS), "fired")
    return None if value is None else bool(value)


def parse_diagnosis(text: str) -> bool:
    """``correct`` / ``incorrect`` as True / False."""
    return bool(_word(text, dict(DIAGNOSIS_WORDS), "diagnosis"))


def source_name(text: str, what: str = "--by") -> str:
    """`text` as a label source name (spaces become dots: ``Ada Lovelace`` → ``Ada.Lovelace``);
    InputError when it cannot be one (empty, a path, a control character, too long)."""
    name = re.sub(r" +", ".", text.strip(" "))
    if not _SOURCE_NAME.match(name):
        raise InputError(
            f"{what} {text!r} is not a valid source name: letters, digits and . _ @ + : - "
            "(at most 64, starting with a letter or digit)"
        )
    return name


def default_labeller() -> str | None:
    """Who is labelling, when --by is not given: git's user.name, then $AGENTLEDGER_USER, then
    $USER; None when none is set."""
    import subprocess  # here: a label given --by never asks git

    git = shutil.which("git")
    if git:
        try:
            found = subprocess.run(
                [git, "config", "user.name"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            found = ""
        if found:
            return found
    return os.environ.get(USER_ENV) or os.environ.get("USER") or None


def known_criteria(ledger: Ledger, run_id: str) -> list[str]:
    """The criteria the run's judges assessed (from their stored scores), sorted; empty when
    no judge has scored the run, and then any criterion id may be labelled."""
    found: set[str] = set()
    for text in ledger.index.scores_of(run_id):
        for result in json.loads(text).get("criteria") or ():
            found.add(str(result["criterion"]))
    return sorted(found)


def make_label(
    run_id: str,
    by: str,
    *,
    kind: str = "person",
    verdict: str | None = None,
    criteria: Sequence[tuple[str, bool | None]] = (),
    diagnosis_correct: bool | None = None,
    reason: str | None = None,
    supersedes: str | None = None,
    detail: str | None = None,
    known: Sequence[str] = (),
    when: datetime | None = None,
) -> Label:
    """A new label of `run_id`; InputError saying what is wrong (nothing given, a criterion
    the run's judges do not know when `known` is given, a bad supersedes id, ...)."""
    if known:
        unknown = [criterion for criterion, _ in criteria if criterion not in known]
        if unknown:
            raise InputError(
                f"criterion {unknown[0]!r} is not one the judges of run {run_id} assessed "
                f"(they assessed {', '.join(known)})"
            )
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    try:
        return Label(
            label_id=new_label_id(moment),
            run_id=run_id,
            by=LabelSource(kind=kind, name=by, detail=detail),
            created_at=moment,
            verdict=verdict,
            criteria=[{"criterion": c, "fired": fired} for c, fired in criteria],
            diagnosis_correct=diagnosis_correct,
            reason=reason or None,
            supersedes=supersedes,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "label"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise InputError(f"label of run {run_id}: {where}: {message}") from None
