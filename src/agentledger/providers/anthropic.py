"""Anthropic's Messages API through the official SDK (``pip install 'agentledger[anthropic]'``)."""

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
from agentledger.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    Usage,
)
from agentledger.providers.pricing import cost_usd
from agentledger.providers.tools import ToolSpec, ToolTurn, Turn, anthropic_request, anthropic_turn

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider"]

DEFAULT_MAX_TOKENS = 4096
"""Sent when the request names no max_tokens: the Messages API requires one."""

# Not Anthropic parameters; dropped rather than refused so one [model] table fits all providers.
_IGNORED = frozenset({"seed"})


class AnthropicProvider(Provider):
    """Claude models. The key comes from ``ANTHROPIC_API_KEY`` (or the `api_key_env` variable).

    `base_url` (or ``ANTHROPIC_BASE_URL``) points the SDK at a proxy or gateway. Parameters are
    passed through: those the SDK names as keyword arguments, the others (temperature, top_p,
    top_k, ...) in the request body; ``stop`` is sent as ``stop_sequences``; ``seed`` is ignored.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        price_as: str | None = "anthropic",
    ) -> None:
        self._sdk = import_sdk("anthropic", provider=self.name, extra="anthropic")
        key = api_key or api_key_from_env(self.name, api_key_env, ["ANTHROPIC_API_KEY"])
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.price_as = price_as
        # max_retries=0: ModelClient owns the retries, and must see every failure.
        self._client: Any = self._sdk.Anthropic(
            api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
        )
        self._named = named_parameters(self._client.messages.create)

    def complete(self, request: CompletionRequest) -> Completion:
        """One Messages API call."""
        params = {k: v for k, v in request.params.items() if k not in _IGNORED}
        if "stop" in params:
            stop = params.pop("stop")
            params["stop_sequences"] = [stop] if isinstance(stop, str) else stop
        params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        known, extra = split_params(params, self._named)
        if request.system is not None:
            known["system"] = request.system
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        try:
            response = self._client.messages.create(
                model=request.model, messages=messages, extra_body=extra or None, **known
            )
        except self._sdk.AnthropicError as exc:
            raise stainless_error(
                exc, self._sdk, provider=self.name, model=request.model, endpoint=self.base_url
            ) from exc
        return self._completion(request, response)

    def _completion(self, request: CompletionRequest, response: Any) -> Completion:
        text = "".join(
            block.text for block in response.content if getattr(block, "type", None) == "text"
        )
        usage = None
        if response.usage is not None:
            u = response.usage
            usage = Usage(
                input_tokens=u.input_tokens
                + (u.cache_creation_input_tokens or 0)
                + (u.cache_read_input_tokens or 0),
                output_tokens=u.output_tokens,
            )
        served = response.model or None
        return Completion(
            text=text,
            model_served=served,
            fingerprint=None,
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
        params = {k: v for k, v in params.items() if k not in _IGNORED}
        params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        known, extra = split_params(params, self._named)
        body = anthropic_request(system, turns, tools)
        try:
            response = self._client.messages.create(
                model=model, extra_body=extra or None, **body, **known
            )
        except self._sdk.AnthropicError as exc:
            raise stainless_error(
                exc, self._sdk, provider=self.name, model=model, endpoint=self.base_url
            ) from exc
        turn = anthropic_turn(response.model_dump(mode="json"))
        turn.cost_usd = cost_usd(self.price_as, (turn.model_served, model), turn.usage)
        return turn

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._client.close()
