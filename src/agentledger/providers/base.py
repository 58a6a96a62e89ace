"""The provider protocol: what a model call asks for, what it answers, and how it fails.

Every model client (Anthropic, OpenAI and compatible servers, Google, scripted, replay) takes a
`CompletionRequest` and returns a `Completion`. A failed attempt raises `ProviderCallError`,
which says whether trying again could help; `ModelClient` owns the retries.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentledger.errors import ProviderError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.records import FULL_HASH_PATTERN, Record

if TYPE_CHECKING:
    from agentledger.providers.tools import ToolSpec, ToolTurn, Turn

__all__ = [
    "KEY_VERSION",
    "RESERVED_PARAMS",
    "Completion",
    "CompletionRequest",
    "Message",
    "Provider",
    "ProviderCallError",
    "RecordedResponse",
    "Usage",
    "is_transport_error",
    "parse_retry_after",
    "request_key",
]

KEY_VERSION = 1
RESERVED_PARAMS = frozenset({"model", "messages", "system", "stream"})
"""Parameter names that belong to the request itself, or that agentledger does not support."""

_FROZEN = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Message(BaseModel):
    """One turn of the conversation sent to the model."""

    model_config = _FROZEN

    role: Literal["user", "assistant"] = Field(description="Who said it.")
    content: str = Field(description="What was said, as text.")


class CompletionRequest(BaseModel):
    """Everything a model call depends on; its hash is the cache and recording key."""

    model_config = _FROZEN

    model: str = Field(min_length=1, description="The model asked for.")
    system: str | None = Field(default=None, description="The system prompt, if any.")
    messages: list[Message] = Field(min_length=1, description="The conversation, oldest first.")
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Sampling parameters passed to the provider (temperature, max_tokens, ...).",
    )
    sample: int = Field(
        default=0,
        ge=0,
        description=(
            "Which draw of this exact request (the repeat index). Part of the key, never sent: "
            "repeat N of a run gets its own answer, and running again reuses the same N answers."
        ),
    )

    @field_validator("params")
    @classmethod
    def _plain_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(RESERVED_PARAMS.intersection(value))
        if reserved:
            raise ValueError(
                f"'{reserved[0]}' cannot be a parameter: it is part of the request itself "
                "(streaming is not supported)"
            )
        try:
            canonical_json(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"parameters must be plain JSON values: {exc}") from None
        return value

    @classmethod
    def from_prompt(
        cls,
        model: str,
        prompt: str,
        *,
        system: str | None = None,
        params: Mapping[str, Any] | None = None,
        sample: int = 0,
    ) -> CompletionRequest:
        """A one-turn request: the system prompt and one user message."""
        return cls(
            model=model,
            system=system,
            messages=[Message(role="user", content=prompt)],
            params=dict(params or {}),
            sample=sample,
        )


class Usage(BaseModel):
    """Tokens billed for one call."""

    model_config = _FROZEN

    input_tokens: int = Field(ge=0, description="Prompt tokens (cache reads and writes included).")
    output_tokens: int = Field(ge=0, description="Completion tokens (reasoning included).")


class Completion(BaseModel):
    """The answer to a request, and what the provider said about how it was made."""

    model_config = _FROZEN

    text: str = Field(description="The answer's text.")
    model_served: str | None = Field(
        default=None, description="The model the provider said it served (often a dated id)."
    )
    fingerprint: str | None = Field(
        default=None, description="The backend fingerprint the provider returned, if any."
    )
    usage: Usage | None = Field(default=None, description="Tokens billed, when reported.")
    cost_usd: float | None = Field(
        default=None, ge=0, description="List-price cost; None when the model has no known price."
    )
    raw: dict[str, Any] = Field(default_factory=dict, description="The provider's response.")
    provider: str = Field(description="The provider that answered (anthropic, openai, ...).")
    cached: bool = Field(
        default=False,
        description="True when served from a stored response (cache or recording): nothing paid.",
    )
    latency_ms: float | None = Field(
        default=None, ge=0, description="Wall time of the call that produced the answer."
    )


class RecordedResponse(Record):
    """A request and its completion on disk: a cache entry, or a recording for replay."""

    key: str = Field(pattern=FULL_HASH_PATTERN, description="request_key of the request.")
    provider: str = Field(description="Name of the provider that was called.")
    endpoint: str | None = Field(description="The base URL called; None for the default.")
    request: CompletionRequest
    completion: Completion
    created_at: datetime = Field(description="When the answer was received (UTC).")

    @classmethod
    def of(
        cls,
        key: str,
        provider: str,
        endpoint: str | None,
        request: CompletionRequest,
        completion: Completion,
    ) -> RecordedResponse:
        """A record of `completion`, stored as fresh (``cached`` false) whatever served it."""
        return cls(
            key=key,
            provider=provider,
            endpoint=endpoint,
            request=request,
            completion=completion.model_copy(update={"cached": False}),
            created_at=datetime.now(UTC),
        )


def _endpoint(base_url: str | None) -> str | None:
    return base_url.rstrip("/") if base_url else None


def request_key(provider_name: str, base_url: str | None, request: CompletionRequest) -> str:
    """The ``sha256:`` key of a request: any change to what is asked, or of whom, changes it."""
    identity = {
        "key_version": KEY_VERSION,
        "provider": provider_name,
        "endpoint": _endpoint(base_url),
        **request.model_dump(mode="json"),
    }
    return sha256_bytes(canonical_json(identity))


class Provider(ABC):
    """A model backend behind one method: `complete(request) -> Completion`.

    `complete` raises `ProviderCallError` for a failed attempt and never retries on its own;
    `ModelClient` adds the cache, recording, retries and the concurrency limit.
    """

    name: str = "provider"
    base_url: str | None = None
    """The endpoint called, part of the request key; None for the provider's default."""
    cacheable: bool = True
    """False for providers whose answers are not a function of the request (scripted)."""
    answers_stored: bool = False
    """True for a provider that answers from stored requests (replay): a tool call goes to it
    as its stored request (`agentledger.providers.tools.tools_request`), through `complete`."""

    @abstractmethod
    def complete(self, request: CompletionRequest) -> Completion:
        """Make one call and return its answer."""

    def complete_tools(
        self,
        model: str,
        system: str | None,
        turns: list[Turn],
        tools: list[ToolSpec],
        params: dict[str, Any],
    ) -> ToolTurn:
        """One call offering `tools` (`agentledger.providers.tools`); providers without tool
        calling refuse, naming themselves."""
        from agentledger.errors import InputError

        raise InputError(
            f"provider {self.name!r} does not offer tool calling here: use openai (or an "
            "OpenAI-compatible server) or anthropic for an agent with tools"
        )

    def close(self) -> None:  # noqa: B027 - a no-op unless the provider holds connections
        """Release connections; the provider is not used afterwards."""


class ProviderCallError(ProviderError):
    """One failed model call, as the provider reported it, and whether to try again."""

    def __init__(
        self,
        provider: str,
        model: str,
        problem: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.problem = problem
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.endpoint = endpoint
        self.attempts = 1
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = f"{self.provider} model '{self.model}'"
        if self.endpoint:
            where += f" at {self.endpoint}"
        what = f"HTTP {self.status}" if self.status is not None else "call failed"
        if self.attempts > 1:
            what += f" after {self.attempts} attempts"
        elif self.status is not None and not self.retryable:
            what += " (not retried)"
        return f"{where}: {what}: {self.problem}"

    def after_attempts(self, attempts: int) -> ProviderCallError:
        """This error, saying how many attempts were made in all."""
        self.attempts = attempts
        self.args = (self._describe(),)
        return self

    @staticmethod
    def retryable_status(status: int) -> bool:
        """Rate limits (429), server-side timeouts (408) and server errors (5xx) are retried."""
        return status in (408, 429) or status >= 500


def parse_retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    milliseconds = getter("retry-after-ms")
    if milliseconds:
        try:
            value = float(milliseconds) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    header = getter("retry-after")
    if not header:
        return None
    try:
        value = float(header)
    except ValueError:
        try:
            when = parsedate_to_datetime(header)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = time.time() if now is None else now
        return max(0.0, when.timestamp() - current)
    return value if math.isfinite(value) and value >= 0 else None


_TRANSPORT_NAMES = frozenset(
    {
        "TimeoutException",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "NetworkError",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
        "ConnectionError",
        "Timeout",
    }
)


def is_transport_error(exc: BaseException) -> bool:
    """True for timeouts and connection failures, from httpx, httpx2, requests or the OS."""
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    return any(cls.__name__ in _TRANSPORT_NAMES for cls in type(exc).__mro__)
