"""The agent the promptfoo provider runs in the tests: asks the model (an OpenAI-compatible
server at $OPENAI_BASE_URL), records its answer and the commands it proposes."""

from __future__ import annotations

import json
import os
from typing import Any

import openai

SYSTEM = "You are an ops agent. Answer with JSON: root_cause and commands."


def investigate(run: Any, prompt: str, variables: dict[str, Any]) -> str:
    client = openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="local")
    run.message("user", prompt)
    answer = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
    )
    text = answer.choices[0].message.content or ""
    usage = answer.usage
    run.message(
        "assistant",
        text,
        model=answer.model,
        tokens_in=usage.prompt_tokens if usage else None,
        tokens_out=usage.completion_tokens if usage else None,
    )
    for command in json.loads(text).get("commands", []):
        run.command(command)  # proposed, not run
    client.close()
    return text
