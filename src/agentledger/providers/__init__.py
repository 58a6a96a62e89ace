"""Model providers behind one protocol, and the client every model call goes through.

Importing this package never imports a provider SDK: each SDK loads when its provider is made.

    provider = make_provider("anthropic")                  # or openai, google, scripted, replay
    client = ModelClient(provider, cache=ResponseCache(ledger.storage))
    answer = client.complete(CompletionRequest.from_prompt("claude-haiku-4-5", "Why?"))
"""

from __future__ import annotations

from agentledger.providers.base import (
    Completion,
    CompletionRequest,
    Message,
    Provider,
    ProviderCallError,
    RecordedResponse,
    Usage,
    request_key,
)
from agentledger.providers.cache import CACHE_DIR_NAME, ResponseCache, cache_dir_of
from agentledger.providers.client import ClientStats, ModelClient, RetryPolicy
from agentledger.providers.registry import (
    PROVIDERS,
    make_provider,
    register_provider,
)
from agentledger.providers.replay import ReplayProvider
from agentledger.providers.scripted import ScriptedProvider

__all__ = [
    "CACHE_DIR_NAME",
    "PROVIDERS",
    "ClientStats",
    "Completion",
    "CompletionRequest",
    "Message",
    "ModelClient",
    "Provider",
    "ProviderCallError",
    "RecordedResponse",
    "ReplayProvider",
    "ResponseCache",
    "RetryPolicy",
    "ScriptedProvider",
    "Usage",
    "cache_dir_of",
    "make_provider",
    "register_provider",
    "request_key",
]
