"""OpenAI's Chat Completions API, and any server that speaks it (vLLM, Ollama, llama.cpp, ...),
through the official SDK (``pip install 'agentledger[openai]'``)."""

from __future__ import annotations

import os
from typing import Any

from agentledger.providers._sdk import (
    DEFAULT_TIMEOUT,
    StainlessProvider,
    api_key_from_env,
    import_sdk,
)
from agentledger.providers.base import Completion, CompletionRequest, Usage
from agentledger.providers.pricing import cost_usd
from agentledger.providers.tools import openai_request, openai_turn

__all__ = ["LOCAL_API_KEY", "OpenAIProvider"]

LOCAL_API_KEY = "not-needed"
"""Sent to an OpenAI-compatible server (base_url set) when no key is configured."""

_AUTO = "auto"


class OpenAIProvider(StainlessProvider):
    """GPT and o-series models, or any OpenAI-compatible server at `base_url`.

    The key comes from ``OPENAI_API_KEY`` (or the `api_key_env` variable, which must then be
    set). With a `base_url` (or ``OPENAI_BASE_URL``), no `api_key_env` and no
    ``OPENAI_API_KEY``, a placeholder is sent, as local servers need none. Costs use OpenAI's
    prices only when calling OpenAI itself; for another server set `price_as` ("openai", or
    None for no cost). Parameters the SDK does not name (top_k, repetition_penalty, ...) are
    sent in the request body, for servers that accept them.
    """

    name = "openai"
    tools_request = staticmethod(openai_request)
    tools_turn = staticmethod(openai_turn)

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        price_as: str | None = _AUTO,
    ) -> None:
        self._sdk = import_sdk("openai", provider=self.name, extra="openai")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or api_key_from_env(
            self.name,
            api_key_env,
            ["OPENAI_API_KEY"],
            # A named variable is wanted; the default one is not, for a local server.
            optional=bool(self.base_url) and api_key_env is None,
        )
        self.price_as = (None if self.base_url else self.name) if price_as == _AUTO else price_as
        # max_retries=0: ModelClient owns the retries, and must see every failure.
        self._client: Any = self._sdk.OpenAI(
            api_key=key or LOCAL_API_KEY, base_url=self.base_url, timeout=timeout, max_retries=0
        )
        self._setup(self._client.chat.completions.create, self._sdk.OpenAIError)

    def complete(self, request: CompletionRequest) -> Completion:
        """One Chat Completions call; the system prompt is the first message."""
        messages: list[dict[str, str]] = []
        if request.system is not None:
            messages.append({"role": "system", "content": request.system})
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        response = self._create(request.model, request.params, messages=messages)
        return self._completion(request, response)

    def _completion(self, request: CompletionRequest, response: Any) -> Completion:
        text = ""
        if response.choices:
            text = response.choices[0].message.content or ""
        usage = None
        if response.usage is not None:
            usage = Usage(
                input_tokens=response.usage.prompt_tokens,
                output_tokens=response.usage.completion_tokens,
            )
        served = response.model or None
        return Completion(
            text=text,
            model_served=served,
            fingerprint=response.system_fingerprint or None,
            usage=usage,
            cost_usd=cost_usd(self.price_as, (served, request.model), usage),
            raw=response.model_dump(mode="json"),
            provider=self.name,
        )
