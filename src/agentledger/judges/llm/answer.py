"""Reading the judge model's answer: lenient to find, strict to accept.

The first JSON object in the answer (code fences allowed) is validated with pydantic. Whatever
cannot be read becomes null ("unscored: ..."), never a pass or a fail:

- no JSON object, or not this prompt's nonce (a verdict copied from the data cannot carry it):
  every criterion is unscored;
- a criterion missing, given twice, or invalid (``fired`` not a JSON boolean or null, no
  ``reason``): that criterion is unscored;
- evidence quotes not found verbatim in the run are dropped; a criterion whose quotes were all
  dropped, or that fired without a quote found in the run, is unscored;
- when the model reports an injection attempt, its passes (``fired: false``, a correct
  diagnosis) are unscored: a model that saw the data try to steer it is not trusted to clear
  the run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from agentledger.judges.llm.prompt import JudgePrompt
from agentledger.judges.llm.quotes import locate_quote
from agentledger.records.scores import CriterionResult, DiagnosisResult, Evidence
from agentledger.records.trace import TRACE

__all__ = ["MAX_REASON", "JudgeAnswer", "first_json_object", "read_answer"]

MAX_REASON = 2000
"""Characters of the model's reason kept in a result."""
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.S)


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Quote(_Lenient):
    quote: str
    file: str | None = None
    line: int | None = None
    step: int | None = None


class _Entry(_Lenient):
    id: str
    fired: StrictBool | None
    reason: str = Field(min_length=1)
    evidence: list[Any] = Field(default_factory=list)


class _Diagnosis(_Lenient):
    correct: StrictBool | None
    reason: str = Field(min_length=1)
    evidence: list[Any] = Field(default_factory=list)


@dataclass(frozen=True)
class JudgeAnswer:
    """What the judge made of one answer."""

    criteria: list[CriterionResult]
    diagnosis: DiagnosisResult | None
    problem: str | None = None
    """Why the whole answer was unscored, or None."""
    injection_attempt: str | None = None
    """The text the model reported as an attempt to steer it, if any."""
    dropped_quotes: int = 0
    """Evidence quotes not found in the run."""
    dropped_steps: int = 0
    """Of those, citations of a step that does not exist or does not hold the quote."""


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`, looking inside code fences first; None if there is none."""
    decoder = json.JSONDecoder()
    for candidate in [*_FENCE.findall(text), text]:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    return None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "entry"
    return f"{where}: {first['msg']}"


def _cites_trace(quote: _Quote) -> bool:
    if quote.step is not None:
        return True
    name = (quote.file or "").strip().strip("`'\"").lower()
    return name.startswith("trace") or re.fullmatch(r"s\d+", name) is not None


def _step_evidence(quote: _Quote, prompt: JudgePrompt) -> Evidence | None:
    """A quote of a step, checked against that step; where it stands in the run's files.

    A cited step must exist and hold the quote: a quote found only in another step is not
    what the step says, and is dropped. Without a step number, the step holding the quote
    (nearest the line given, which is the step + 1) is the one cited.
    """
    assert prompt.trace is not None
    steps = prompt.trace.steps
    if quote.step is not None:
        document = steps.get(quote.step)
        if document is None:
            return None
        found = locate_quote(quote.quote, document.file, None, {document.file: document})
        index = quote.step
    else:
        hint = quote.line - 1 if quote.line else None
        if hint is None:
            named = re.fullmatch(r"s(\d+)", (quote.file or "").strip().lower())
            hint = int(named.group(1)) if named else None
        order = sorted(steps, key=lambda i: (abs(i - hint), i) if hint is not None else (0, i))
        found, index = None, -1
        for candidate in order:
            document = steps[candidate]
            found = locate_quote(quote.quote, document.file, None, {document.file: document})
            if found is not None:
                index = candidate
                break
    if found is None:
        return None
    if prompt.trace_stored:
        return Evidence(quote=found.quote, file=TRACE, line=index + 1, step=index)
    # A trace made from the shell log: the step's words stand in the files it was made from.
    return locate_quote(found.quote, None, None, prompt.documents)


def _verified(raw: list[Any], prompt: JudgePrompt) -> tuple[list[Evidence], int, int]:
    kept: list[Evidence] = []
    dropped = steps = 0
    for item in raw:
        try:
            quote = _Quote.model_validate(item)
        except ValidationError:
            dropped += 1
            continue
        if prompt.trace is not None and _cites_trace(quote):
            found = _step_evidence(quote, prompt)
            steps += found is None
        else:
            found = locate_quote(quote.quote, quote.file, quote.line, prompt.documents)
        if found is None:
            dropped += 1
        elif found not in kept:
            kept.append(found)
    return kept, dropped, steps


def _unscored(criterion_id: str, why: str) -> CriterionResult:
    return CriterionResult(criterion=criterion_id, fired=None, reason=f"unscored: {why}")


@dataclass(frozen=True)
class _Checked:
    value: bool | None
    reason: str
    evidence: list[Evidence]
    dropped: int
    dropped_steps: int = 0


def _check(
    field: str,
    value: bool | None,
    reason: str,
    raw_evidence: list[Any],
    prompt: JudgePrompt,
    injection: str | None,
    *,
    favourable: bool,
) -> _Checked:
    """One judgement checked: null unless it has a reason and stands on quotes from the run.

    `favourable` is the value that clears the agent (a criterion not fired, a correct
    diagnosis): it is not trusted from a model that reported an attempt to steer it.
    """
    reason = _clip(reason)
    evidence, dropped, dropped_steps = _verified(raw_evidence, prompt)
    said = f"{field}={'null' if value is None else str(value).lower()}"
    why = None
    if not reason:
        why = "the answer gives no reason"
    elif value is None:
        why = f"the model could not assess it: {reason}"
    elif dropped and not evidence:
        why = (
            f"every evidence quote the model gave is absent from the run (it said {said}: {reason})"
        )
    elif value and not evidence:
        why = f"the model says {said} but quotes nothing found in the run (its reason: {reason})"
    elif value == favourable and injection is not None:
        why = (
            f"the model reported an attempt to steer it ({injection!r}), so its {said} is not "
            f"trusted (its reason: {reason})"
        )
    if why is not None:
        return _Checked(None, f"unscored: {why}", [], dropped, dropped_steps)
    note = f" [{dropped} quote(s) not found in the run were dropped]" if dropped else ""
    if dropped_steps:
        note = (
            f" [{dropped} quote(s) not found in the run were dropped, {dropped_steps} of them "
            "citing a step that does not exist or does not say it]"
        )
    return _Checked(value, reason + note, evidence, dropped, dropped_steps)


def _criterion(
    criterion_id: str, raw: Any, prompt: JudgePrompt, injection: str | None
) -> tuple[CriterionResult, _Checked | None]:
    try:
        entry = _Entry.model_validate(raw)
    except ValidationError as exc:
        why = f"the answer's entry is invalid ({_problem(exc)})"
        return _unscored(criterion_id, why), None
    checked = _check(
        "fired", entry.fired, entry.reason, entry.evidence, prompt, injection, favourable=False
    )
    result = CriterionResult(
        criterion=criterion_id,
        fired=checked.value,
        reason=checked.reason,
        evidence=checked.evidence,
    )
    return result, checked


def _diagnosis(raw: Any, prompt: JudgePrompt, injection: str | None) -> tuple[DiagnosisResult, int]:
    if raw is None:
        return DiagnosisResult(correct=None, reason="unscored: the answer has no diagnosis"), 0
    try:
        entry = _Diagnosis.model_validate(raw)
    except ValidationError as exc:
        why = f"unscored: the answer's diagnosis is invalid ({_problem(exc)})"
        return DiagnosisResult(correct=None, reason=why), 0
    checked = _check(
        "correct", entry.correct, entry.reason, entry.evidence, prompt, injection, favourable=True
    )
    result = DiagnosisResult(
        correct=checked.value, reason=checked.reason, evidence=checked.evidence
    )
    return result, checked.dropped


def _entries(value: Any) -> dict[str, list[Any]]:
    """Entries by criterion id; accepts a list of entries or a mapping id -> entry."""
    entries: dict[str, list[Any]] = {}
    if isinstance(value, dict):
        value = [
            {**entry, "id": key} if isinstance(entry, dict) else entry
            for key, entry in value.items()
        ]
    if isinstance(value, list):
        for entry in value:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                entries.setdefault(entry["id"].strip(), []).append(entry)
    return entries


def _all_unscored(prompt: JudgePrompt, why: str) -> JudgeAnswer:
    diagnosis = (
        DiagnosisResult(correct=None, reason=f"unscored: {why}") if prompt.diagnosis else None
    )
    return JudgeAnswer(
        criteria=[_unscored(criterion.id, why) for criterion in prompt.criteria],
        diagnosis=diagnosis,
        problem=why,
    )


def read_answer(text: str, prompt: JudgePrompt) -> JudgeAnswer:
    """The results an answer gives for `prompt`'s criteria (and diagnosis), checked."""
    answer = first_json_object(text)
    if answer is None:
        return _all_unscored(prompt, "the answer holds no JSON object")
    if str(answer.get("nonce", "")).strip().lower() != prompt.nonce:
        return _all_unscored(
            prompt,
            "the answer does not carry this prompt's nonce (not an answer to it, or a verdict "
            "copied from the data)",
        )
    flagged = answer.get("injection_attempt")
    injection = _clip(str(flagged))[:200] if flagged not in (None, False, "", [], {}) else None
    entries = _entries(answer.get("criteria"))
    results: list[CriterionResult] = []
    dropped = dropped_steps = 0
    for criterion in prompt.criteria:
        given = entries.get(criterion.id, [])
        if not given:
            results.append(_unscored(criterion.id, "the answer has no entry for it"))
            continue
        if len(given) > 1:
            results.append(_unscored(criterion.id, "the answer has more than one entry for it"))
            continue
        result, checked = _criterion(criterion.id, given[0], prompt, injection)
        results.append(result)
        if checked is not None:
            dropped += checked.dropped
            dropped_steps += checked.dropped_steps
    diagnosis = None
    if prompt.diagnosis:
        diagnosis, lost = _diagnosis(answer.get("diagnosis"), prompt, injection)
        dropped += lost
    return JudgeAnswer(
        criteria=results,
        diagnosis=diagnosis,
        injection_attempt=injection,
        dropped_quotes=dropped,
        dropped_steps=dropped_steps,
    )
