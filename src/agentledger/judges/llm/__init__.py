"""The LLM judge: a versioned prompt template, delimited untrusted data, checked answers.

    judge = LLMJudge(load_pack(), ModelClient(make_provider("anthropic")),
                     model="claude-sonnet-4-5", provider="anthropic", diagnosis=True)
    if judge.self_judging(run.metadata) is None:
        outcome = judge.judge(run)

See docs/llm-judge.md for the template, the answer schema and what the judge guarantees.
"""

from __future__ import annotations

from agentledger.judges.llm.answer import JudgeAnswer, first_json_object, read_answer
from agentledger.judges.llm.judge import READER_VERSION, LLMJudge
from agentledger.judges.llm.prompt import (
    DEFAULT_TEMPLATE,
    LIMITS,
    RESERVED_TAGS,
    Artifact,
    JudgePrompt,
    JudgeTemplate,
    Limits,
    neutralise,
    render_prompt,
    render_shell_log,
    shipped_templates,
)
from agentledger.judges.llm.quotes import Document, locate_quote

__all__ = [
    "DEFAULT_TEMPLATE",
    "LIMITS",
    "READER_VERSION",
    "RESERVED_TAGS",
    "Artifact",
    "Document",
    "JudgeAnswer",
    "JudgePrompt",
    "JudgeTemplate",
    "LLMJudge",
    "Limits",
    "first_json_object",
    "locate_quote",
    "neutralise",
    "read_answer",
    "render_prompt",
    "render_shell_log",
    "shipped_templates",
]
