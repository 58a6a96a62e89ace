"""Google's Gemini API through the official google-genai SDK
(``pip install 'agentledger[google]'``)."""

from __future__ import annotations

import os
from typing import Any

from agentledger.errors import ProviderSetupError
from agentledger.providers._sdk import DEFAULT_TIMEOUT, api_key_from_env, import_sdk
from agentledger.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderCallError,
    Usage,
    is_transport_error,
    parse_retry_after,
)
from agentledger.providers.pricing import cost_usd

__all__ = ["GoogleProvider"]

# Names shared with the other providers, and what generate_content calls them.
_ALIASES = {"max_tokens": "max_output_tokens", "stop": "stop_sequences"}
_NOT_PARAMS = frozenset({"system_instruction", "http_options"})


class GoogleProvider(Provider):
    """Gemini models. The key comes from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``.

    Parameters are fields of ``GenerateContentConfig`` (temperature, top_p, top_k, seed,
    max_output_tokens, ...); ``max_tokens`` and ``stop`` are accepted under their usual names.
    `base_url` (or ``GOOGLE_GEMINI_BASE_URL``) points the SDK at another endpoint.
    """

    name = "google"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        api_version: str | None = None,
        price_as: str | None = "google",
    ) -> None:
        genai = import_sdk("google.genai", provider=self.name, extra="google")
        self._types: Any = import_sdk("google.genai.types", provider=self.name, extra="google")
        self._errors: Any = import_sdk("google.genai.errors", provider=self.name, extra="google")
        key = api_key or api_key_from_env(
            self.name, api_key_env, ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
        )
        self.base_url = base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL") or None
        self.price_as = price_as
        options = self._types.HttpOptions(
            base_url=self.base_url,
            api_version=api_version,
            timeout=int(timeout * 1000),
            # One attempt: ModelClient owns the retries, and must see every failure.
            retry_options=self._types.HttpRetryOptions(attempts=1),
        )
        self._client: Any = genai.Client(api_key=key, http_options=options)
        self._config_fields = frozenset(self._types.GenerateContentConfig.model_fields)

    def _config(self, request: CompletionRequest) -> Any:
        settings: dict[str, Any] = {}
        for name, value in request.params.items():
            field = _ALIASES.get(name, name)
            if field in _NOT_PARAMS or field not in self._config_fields:
                raise ProviderSetupError(
                    f"google: '{name}' is not a generate_content parameter "
                    "(expected a GenerateContentConfig field, e.g. temperature, top_p, top_k, "
                    "seed, max_output_tokens, stop_sequences)"
                )
            if field == "stop_sequences" and isinstance(value, str):
                value = [value]
            settings[field] = value
        if request.system is not None:
            settings["system_instruction"] = request.system
        return self._types.GenerateContentConfig(**settings)

    def complete(self, request: CompletionRequest) -> Completion:
        """One generate_content call; assistant turns are sent with the role "model"."""
        contents = [
            {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
            for m in request.messages
        ]
        config = self._config(request)
        try:
            response = self._client.models.generate_content(
                model=request.model, contents=contents, config=config
            )
        except self._errors.APIError as exc:
            raise self._status_error(request, exc) from exc
        except Exception as exc:
            if not is_transport_error(exc):
                raise
            raise ProviderCallError(
                self.name,
                request.model,
                f"connection error: {type(exc).__name__}: {exc}",
                retryable=True,
                endpoint=self.base_url,
            ) from exc
        return self._completion(request, response)

    def _status_error(self, request: CompletionRequest, exc: Any) -> ProviderCallError:
        status = int(exc.code) if exc.code else None
        response = getattr(exc, "response", None)
        return ProviderCallError(
            self.name,
            request.model,
            str(exc.message or exc),
            status=status,
            retryable=status is not None and ProviderCallError.retryable_status(status),
            retry_after=parse_retry_after(getattr(response, "headers", None)),
            endpoint=self.base_url,
        )

    def _completion(self, request: CompletionRequest, response: Any) -> Completion:
        text = ""
        if response.candidates:
            content = response.candidates[0].content
            parts = (content.parts if content else None) or []
            text = "".join(part.text for part in parts if part.text and not part.thought)
        usage = None
        meta = response.usage_metadata
        if meta is not None and meta.prompt_token_count is not None:
            usage = Usage(
                input_tokens=meta.prompt_token_count + (meta.tool_use_prompt_token_count or 0),
                output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
            )
        served = response.model_version or None
        raw = response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response"})
        return Completion(
            text=text,
            model_served=served,
            fingerprint=None,
            usage=usage,
            cost_usd=cost_usd(self.price_as, (served, request.model), usage),
            raw=raw,
            provider=self.name,
        )

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._client.close()
