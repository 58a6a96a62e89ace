"""Making a judge from its command-line name: `rules`, or `llm:PROVIDER/MODEL`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.judges.base import CriteriaPack, Judge, JudgeInput
from agentledger.judges.scoring import SelfJudgingCheck

if TYPE_CHECKING:
    from agentledger.judges.llm.examples import FewShots

__all__ = ["JudgeSpec", "make_judge", "parse_judge_spec"]


@dataclass(frozen=True)
class JudgeSpec:
    """A judge named on the command line."""

    kind: str
    provider: str | None = None
    model: str | None = None


def parse_judge_spec(text: str) -> JudgeSpec:
    """`rules` or `llm:PROVIDER/MODEL` (the model may itself contain '/')."""
    if text == "rules":
        return JudgeSpec("rules")
    kind, sep, rest = text.partition(":")
    if kind == "llm" and sep:
        provider, slash, model = rest.partition("/")
        if provider and slash and model:
            return JudgeSpec("llm", provider, model)
    raise InputError(
        f"unknown judge {text!r}: use 'rules' or 'llm:PROVIDER/MODEL' "
        "(e.g. llm:anthropic/claude-sonnet-4-5)"
    )


def make_judge(
    spec: JudgeSpec,
    pack: CriteriaPack,
    *,
    ledger_root: Path,
    diagnosis: bool = False,
    use_cache: bool = True,
    concurrency: int = 4,
    base_url: str | None = None,
    families_file: Path | None = None,
    knowledge_dirs: tuple[Path, ...] = (),
    request_timeout: float | None = None,
    retries: int | None = None,
    examples: FewShots | None = None,
    template: str | Path | None = None,
) -> tuple[Judge, SelfJudgingCheck | None]:
    """The judge, and the self-judging check to apply before sending it a run.

    Everything that can fail (unknown provider, SDK or key missing) fails here, before any run
    is scored.
    """
    if spec.kind == "rules":
        from agentledger.judges.rules import RulesJudge

        if template is not None:
            raise InputError(
                "a prompt template (--template) is for the LLM judge (llm:PROVIDER/MODEL), "
                "not the rules judge"
            )
        if examples is not None:
            raise InputError(
                "few-shot examples (--examples-from) are for the LLM judge (llm:PROVIDER/MODEL), "
                "not the rules judge"
            )

        return RulesJudge(pack, diagnosis=diagnosis, knowledge_dirs=knowledge_dirs), None
    from agentledger.judges.families import FamilyMap
    from agentledger.judges.llm import DEFAULT_TEMPLATE, JudgeTemplate, LLMJudge
    from agentledger.providers import ModelClient, ResponseCache, make_provider
    from agentledger.store import open_storage

    assert spec.provider is not None and spec.model is not None
    JudgeTemplate.load(template or DEFAULT_TEMPLATE)  # a bad template fails before the provider
    from agentledger.providers.client import RetryPolicy

    provider = make_provider(spec.provider, base_url=base_url, timeout=request_timeout)
    client = ModelClient(
        provider,
        cache=ResponseCache(lambda: open_storage(ledger_root)),
        use_cache=use_cache,
        retry=RetryPolicy(max_retries=retries) if retries is not None else None,
        concurrency=concurrency,
    )
    families = FamilyMap.load(families_file)
    judge = LLMJudge(
        pack,
        client,
        model=spec.model,
        provider=spec.provider,
        diagnosis=diagnosis,
        families=families,
        examples=examples,
        template=template or DEFAULT_TEMPLATE,
    )

    def refuse_own_family(run: JudgeInput, _judge: Judge) -> str | None:
        return judge.self_judging(run.metadata)

    return judge, refuse_own_family
