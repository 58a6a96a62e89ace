"""Score records: one judge's verdict on one run, with each criterion's result and evidence.

```
ledger/scores/<run_id>/<judge_id>.json      Score
```

The judges (judges/) make them and store them through `judges.scores.ScoreStore`; gates,
reports and the viewer read them. A judge id changes whenever anything that shapes the judge's
output changes (kind, model, template, pack content, verdict policy), so a new judge's scores sit
beside the old ones.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from agentledger.records import Record, utc_now

__all__ = [
    "JUDGE_ID",
    "NOT_APPLICABLE",
    "SCORES_DIR",
    "UNSCORED",
    "VERDICTS",
    "CriterionResult",
    "DiagnosisResult",
    "Evidence",
    "JudgeInfo",
    "Score",
    "Verdict",
    "shown_verdict",
    "unscored_reason",
]


class _Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


Verdict = Literal["Safe", "Uncertain", "Unsafe", "skipped", "not-applicable"]
"""`skipped`: the judge may not judge the run (self-judging refused; a person reviews it).
`not-applicable`: the judge's pack is not about such runs (what the run lacks is in
`skipped_reason`); counted apart, never Safe or Uncertain."""

NOT_APPLICABLE = "not-applicable"

VERDICTS: tuple[str, ...] = ("Safe", "Uncertain", "Unsafe", "skipped", NOT_APPLICABLE)


class Evidence(_Strict):
    """A quote from the run and where it stands."""

    quote: str = Field(description="The words or command, as they appear (may be shortened).")
    file: str = Field(description="report.md, shell_audit.jsonl, snapshot.*, ...")
    line: int | None = Field(default=None, ge=1, description="1-based line in that file.")
    step: int | None = Field(
        default=None, ge=0, description="The trace step it stands at (trace.jsonl), when it is one."
    )
    source: str | None = Field(
        default=None,
        description="Where that step comes from in the original trace (file and line or event).",
    )

    @model_serializer(mode="wrap")
    def _without_unset_step(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Evidence that is not a step is written as before these fields existed, so the
        # records (and the hashes and ids made of them) of every other judge stay the same.
        data: dict[str, Any] = handler(self)
        if self.step is None:
            data.pop("step", None)
        if self.source is None:
            data.pop("source", None)
        return data


class CriterionResult(_Strict):
    """Whether one criterion fired on one run: true, false, or null (cannot assess)."""

    criterion: str = Field(description="Criterion id.")
    fired: bool | None = Field(description="True fired, false did not, null cannot assess.")
    reason: str = Field(description="Why, in words a reviewer can check.")
    evidence: list[Evidence] = Field(default_factory=list, description="Quotes that support it.")


class DiagnosisResult(_Strict):
    """Did the report name the scenario's expected root cause: correct, incorrect, or null."""

    correct: bool | None = Field(description="Null when there is nothing to compare against.")
    reason: str = Field(description="Why.")
    evidence: list[Evidence] = Field(default_factory=list)


SCORES_DIR = "scores"


JUDGE_ID = r"^[a-z0-9-]{1,40}-[0-9a-f]{12}$"


class JudgeInfo(BaseModel):
    """Which judge made a score: everything its id was computed from, in readable form."""

    model_config = ConfigDict(defer_build=True, extra="allow", frozen=True)

    kind: str = Field(description="rules, llm or human.")
    model: str | None = Field(default=None, description="The judge's model, for LLM judges.")
    provider: str | None = Field(default=None, description="The judge model's provider.")
    pack: str = Field(description="Criteria pack id.")
    pack_version: str = Field(description="Criteria pack version.")
    pack_digest: str = Field(description="sha256 of the pack's content.")


class Score(Record):
    """One judge's score of one run (scores/<run_id>/<judge_id>.json)."""

    run_id: str = Field(description="The run scored.")
    judge_id: str = Field(pattern=JUDGE_ID, description="<kind>-<12 hex> of the judge identity.")
    judge: JudgeInfo = Field(description="The judge, readable.")
    identity: dict[str, Any] = Field(description="Everything the judge id is a hash of.")
    created_at: datetime = Field(default_factory=utc_now, description="When it was scored.")
    verdict: Verdict = Field(description="Safe, Uncertain, Unsafe, skipped or not-applicable.")
    skipped_reason: str | None = Field(
        default=None,
        description="Why the run was not judged (self-judging refused, the pack does not "
        "apply to it, ...).",
    )
    criteria: list[CriterionResult] = Field(
        default_factory=list, description="Per criterion: fired true/false/null with evidence."
    )
    diagnosis: DiagnosisResult | None = Field(
        default=None, description="Root cause against the scenario's expected one, if asked."
    )
    usage: dict[str, Any] | None = Field(
        default=None, description="Model calls, tokens and cost of an LLM judge."
    )

    def fired(self) -> list[str]:
        """Ids of the criteria that fired."""
        return [result.criterion for result in self.criteria if result.fired]

    def unscored_reason(self) -> str | None:
        """Why this score is unscored, or None: an Uncertain verdict that rests on criteria the
        judge's answer did not settle (reason ``unscored: ...``, e.g. an answer holding no
        JSON) with none fired. Such a score says the judge broke, not that the run is
        uncertain, so it is counted and shown as unscored, apart from Uncertain."""
        return unscored_reason(self.verdict, [r.model_dump() for r in self.criteria])


UNSCORED = "unscored"
"""How a score whose judge could not be read is counted and shown (see Score.unscored_reason)."""


def unscored_reason(verdict: str, criteria: list[dict[str, Any]]) -> str | None:
    """`Score.unscored_reason` over a score's verdict and its criteria as JSON objects."""
    if verdict != "Uncertain" or any(c.get("fired") for c in criteria):
        return None
    for criterion in criteria:
        reason = criterion.get("reason") or ""
        if criterion.get("fired") is None and reason.startswith("unscored:"):
            return f"{criterion.get('criterion')}: {reason}"
    return None


def shown_verdict(verdict: str, criteria: list[dict[str, Any]]) -> str:
    """The verdict as counted and shown: ``unscored`` for an unscored score."""
    return UNSCORED if unscored_reason(verdict, criteria) else verdict
