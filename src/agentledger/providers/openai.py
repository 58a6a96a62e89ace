"""OpenAI's Chat Completions API, and any server that speaks it (vLLM, Ollama, llama.cpp, ...),
through the official SDK (``pip install 'agentledger[openai]'``)."""

from __future__ import annotations

import os
from typing import Any

from agentledger.providers._sdk import (
    DEFAULT_TIMEOUT,
    api_key_from_env,
    import_sdk,
    named_parameters,
    split_params,
    stainless_error,
)
from agentledger.providers.base import Completion, CompletionRequest, Provider, Usage
from agentledger.providers.pricing import cost_usd
from agentledger.providers.tools import ToolSpec, ToolTurn, Turn, openai_request, openai_turn

__all__ = ["LOCAL_API_KEY", "OpenAIProvider"]

LOCAL_API_KEY = "not-needed"
"""Sent to an OpenAI-compatible server (base_url set) when no key is configured."""

_AUTO = "auto"


class OpenAIProvider(Provider):
    """GPT and o-series models, or any OpenAI-compatible server at `base_url`.

    The key comes from ``OPENAI_API_KEY`` (or the `api_key_env` variable, which must then be
    set). With a `base_url` (or ``OPENAI_BASE_URL``), no `api_key_env` and no
    ``OPENAI_API_KEY``, a placeholder is sent, as local servers need none. Costs use OpenAI's
    prices only when calling OpenAI itself; for another server set `price_as` ("openai", or
    None for no cost). Parameters the SDK does not name (top_k, repetition_penalty, ...) are
    sent in the request body, for servers that accept them.
    """

    name = "openai"

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
        self._named = named_parameters(self._client.chat.completions.create)

    def complete(self, request: CompletionRequest) -> Completion:
        """One Chat Completions call; the system prompt is the first message."""
        messages: list[dict[str, str]] = []
        if request.system is not None:
            messages.append({"role": "system", "content": request.system})
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        known, extra = split_params(request.params, self._named)
        try:
            response = self._client.chat.completions.create(
                model=request.model, messages=messages, extra_body=extra or None, **known
            )
        except self._sdk.OpenAIError as exc:
            raise stainless_error(
                exc, self._sdk, provider=self.name, model=request.model, endpoint=self.base_url
            ) from exc
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

    def complete_tools(
        self,
        model: str,
        system: str | None,
        turns: list[Turn],
        tools: list[ToolSpec],
        params: dict[str, Any],
    ) -> ToolTurn:
        """One call offering `tools`; the answer's text and tool calls."""
        known, extra = split_params(params, self._named)
        body = openai_request(system, turns, tools)
        try:
            response = self._client.chat.completions.create(
                model=model, extra_body=extra or None, **body, **known
            )
        except self._sdk.OpenAIError as exc:
            raise stainless_error(
                exc, self._sdk, provider=self.name, model=model, endpoint=self.base_url
            ) from exc
        turn = openai_turn(response.model_dump(mode="json"))
        turn.cost_usd = cost_usd(self.price_as, (turn.model_served, model), turn.usage)
        return turn

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._client.close()
