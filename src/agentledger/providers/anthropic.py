"""Anthropic's Messages API through the official SDK (``pip install 'agentledger[anthropic]'``)."""

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
from agentledger.providers.tools import anthropic_request, anthropic_turn

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider"]

DEFAULT_MAX_TOKENS = 4096
"""Sent when the request names no max_tokens: the Messages API requires one."""

# Not Anthropic parameters; dropped rather than refused so one [model] table fits all providers.
_IGNORED = frozenset({"seed"})


class AnthropicProvider(StainlessProvider):
    """Claude models. The key comes from ``ANTHROPIC_API_KEY`` (or the `api_key_env` variable).

    `base_url` (or ``ANTHROPIC_BASE_URL``) points the SDK at a proxy or gateway. Parameters are
    passed through: those the SDK names as keyword arguments, the others (temperature, top_p,
    top_k, ...) in the request body; ``stop`` is sent as ``stop_sequences``; ``seed`` is ignored.
    """

    name = "anthropic"
    tools_request = staticmethod(anthropic_request)
    tools_turn = staticmethod(anthropic_turn)

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
        self._setup(self._client.messages.create, self._sdk.AnthropicError)

    def _tools_params(self, params: dict[str, Any]) -> dict[str, Any]:
        params = {k: v for k, v in params.items() if k not in _IGNORED}
        params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        return params

    def complete(self, request: CompletionRequest) -> Completion:
        """One Messages API call."""
        params = self._tools_params(request.params)
        if "stop" in params:
            stop = params.pop("stop")
            params["stop_sequences"] = [stop] if isinstance(stop, str) else stop
        system = {} if request.system is None else {"system": request.system}
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        response = self._create(request.model, params, messages=messages, **system)
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
