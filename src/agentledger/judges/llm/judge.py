"""The LLM judge: one model call per run, through the `ModelClient` (cache, retries, limits)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentledger.errors import InputError
from agentledger.identity import sha256_bytes
from agentledger.judges.base import (
    CriteriaPack,
    Judge,
    JudgeInput,
    JudgeOutcome,
    missing_requirement,
)
from agentledger.judges.families import FamilyMap, default_families
from agentledger.judges.llm.answer import read_answer
from agentledger.judges.llm.examples import FewShots
from agentledger.judges.llm.prompt import (
    DEFAULT_TEMPLATE,
    LIMITS,
    JudgePrompt,
    JudgeTemplate,
    render_prompt,
)
from agentledger.judges.llm.steps import TRACE_LIMITS
from agentledger.judges.trajectory_criteria import judge_trajectory_criterion
from agentledger.providers import CompletionRequest, ModelClient
from agentledger.providers.client import CallLimit
from agentledger.records import RunMetadata
from agentledger.records.scores import CriterionResult, DiagnosisResult
from agentledger.records.splits import DevelopedAgainst

__all__ = ["READER_VERSION", "LLMJudge"]

READER_VERSION = 1
"""Version of how prompts are built and answers checked; part of the judge's id."""


class LLMJudge(Judge):
    """Scores a run by asking a model, with the pack's criteria rendered into a template.

    `provider` names the provider as in ``llm:PROVIDER/MODEL``; calls go through `client`.
    Sampling `params` default to temperature 0. The judge does not refuse self-judging by
    itself: callers ask `self_judging(run.metadata)` first.
    """

    kind = "llm"

    def __init__(
        self,
        pack: CriteriaPack,
        client: ModelClient,
        *,
        model: str,
        provider: str,
        template: str | Path = DEFAULT_TEMPLATE,
        diagnosis: bool = False,
        params: dict[str, Any] | None = None,
        families: FamilyMap | None = None,
        examples: FewShots | None = None,
    ) -> None:
        """`examples`: labelled runs shown before each run (see `judges.llm.examples`); they
        join the judge's identity and its declared development labels."""
        super().__init__(pack)
        if not model.strip() or not provider.strip():
            raise InputError("an LLM judge needs a provider and a model (llm:PROVIDER/MODEL)")
        self.client = client
        self.provider = provider
        self._model = model
        self.template = JudgeTemplate.load(template)
        self.diagnosis = diagnosis
        self.params: dict[str, Any] = {"temperature": 0, **(params or {})}
        self.families = families or default_families()
        self.examples = examples
        try:
            CompletionRequest.from_prompt(model, "-", params=self.params)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise InputError(f"judge model parameters: {problem}") from None

    @property
    def model(self) -> str:
        """The judge model asked for."""
        return self._model

    def identity(self) -> dict[str, Any]:
        """Kind, provider, endpoint, model, params, template and its hash, pack, diagnosis."""
        endpoint = self.client.provider.base_url
        return {
            "kind": self.kind,
            "provider": self.provider,
            "endpoint": endpoint.rstrip("/") if endpoint else None,
            "model": self._model,
            "params": self.params,
            "template": {"name": self.template.name, "sha256": self.template.sha256},
            "pack": self.pack.digest(),
            "diagnosis": self.diagnosis,
            "reader": READER_VERSION,
            "limits": asdict(LIMITS),
            **({"trace_limits": asdict(TRACE_LIMITS)} if self.template.shows_trace else {}),
            **({"examples": self.examples.identity()} if self.examples else {}),
            **self.development_identity(),
        }

    def reads_trace(self) -> bool:
        """True when the template shows the trace, or the pack's criteria need it."""
        return self.template.shows_trace or super().reads_trace()

    def development(self) -> list[DevelopedAgainst]:
        """The pack's declared development labels, and the split part the examples came from."""
        declared = super().development()
        if self.examples is not None and self.examples.developed_against not in declared:
            declared.append(self.examples.developed_against)
        return declared

    def self_judging(self, metadata: RunMetadata) -> str | None:
        """Why this judge must not score a run with `metadata`, or None when it may."""
        if not self.families.same_family(metadata.model, metadata.model_served, self._model):
            return None
        family = self.families.family_of(self._model) or self._model
        return (
            f"self-judging refused: the run was made by {metadata.model} and the judge model "
            f"{self._model} is of the same family ({family})"
        )

    def prompt(self, run: JudgeInput) -> JudgePrompt | None:
        """The prompt `judge` would send for `run`; None when there is nothing to ask."""
        asked = [
            c
            for c in self.pack.criteria
            if missing_requirement(c, run) is None and c.trajectory_match is None
        ]
        diagnosis = self.diagnosis and self._diagnosis_unasked(run) is None
        if not asked and not diagnosis:
            return None
        return render_prompt(
            self.pack,
            asked,
            run,
            self.template,
            diagnosis=diagnosis,
            examples=self.examples.examples if self.examples else (),
        )

    def request(self, prompt: JudgePrompt) -> CompletionRequest:
        """The model request for `prompt`."""
        return CompletionRequest.from_prompt(
            self._model, prompt.user, system=prompt.system, params=self.params
        )

    def judge(self, run: JudgeInput) -> JudgeOutcome:
        """Score `run`: one call for every criterion it can be assessed on (and the diagnosis).

        A failed call raises ProviderError (nothing is scored, so it can be tried again later);
        an answer that cannot be read makes its criteria null.
        """
        results: dict[str, CriterionResult] = {}
        for criterion in self.pack.criteria:
            lacking = missing_requirement(criterion, run)
            if lacking is not None:
                results[criterion.id] = lacking
            elif criterion.trajectory_match is not None:  # decided by matching, not asked
                results[criterion.id] = judge_trajectory_criterion(criterion, run)
        diagnosis = self._diagnosis_unasked(run)
        usage: dict[str, Any] = {
            "calls": 0,
            "cached": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": 0.0,
            "model_served": None,
            "request_key": None,
            "response_sha256": None,
            "problem": None,
            "injection_attempt": None,
            "dropped_quotes": 0,
        }
        prompt = self.prompt(run)
        if prompt is not None:
            request = self.request(prompt)
            completion = self.client.complete(request, limit=CallLimit(cancel=self.cancel))
            answer = read_answer(completion.text, prompt)
            results.update({result.criterion: result for result in answer.criteria})
            if prompt.diagnosis:
                diagnosis = answer.diagnosis
            paid = not completion.cached
            usage.update(
                calls=1,
                cached=0 if paid else 1,
                input_tokens=completion.usage.input_tokens if paid and completion.usage else 0,
                output_tokens=completion.usage.output_tokens if paid and completion.usage else 0,
                cost_usd=completion.cost_usd if paid else 0.0,
                model_served=completion.model_served,
                request_key=self.client.key(request),
                # The answer this verdict was read from, kept with the score (journaled): a
                # cache entry changed afterwards no longer matches it (providers.cache).
                response_sha256=sha256_bytes(completion.text.encode("utf-8", "surrogatepass")),
                problem=answer.problem,
                injection_attempt=answer.injection_attempt,
                dropped_quotes=answer.dropped_quotes,
            )
            if prompt.trace is not None:
                usage["dropped_step_citations"] = answer.dropped_steps
                usage["trace_windowed"] = prompt.trace.windowed
        return JudgeOutcome(
            criteria=[results[criterion.id] for criterion in self.pack.criteria],
            diagnosis=diagnosis,
            usage=usage,
        )

    def _diagnosis_unasked(self, run: JudgeInput) -> DiagnosisResult | None:
        """The diagnosis result when it is not asked of the model (None when it is asked)."""
        if not self.diagnosis:
            return None
        if run.expected is None:
            return DiagnosisResult(
                correct=None, reason="cannot assess: the scenario has no expected root cause"
            )
        if not run.has("report"):
            return DiagnosisResult(correct=None, reason="cannot assess: the run has no report.md")
        return None
