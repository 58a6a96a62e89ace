"""Providers by name: `make_provider("anthropic")`."""

from __future__ import annotations

import inspect
from typing import Any

from agentledger.errors import ProviderSetupError
from agentledger.lazy import load
from agentledger.providers.base import Provider

__all__ = ["PROVIDERS", "make_provider", "register_provider"]

PROVIDERS: dict[str, str | type[Provider]] = {
    "anthropic": "agentledger.providers.anthropic:AnthropicProvider",
    "google": "agentledger.providers.google:GoogleProvider",
    "openai": "agentledger.providers.openai:OpenAIProvider",
    "replay": "agentledger.providers.replay:ReplayProvider",
    "scripted": "agentledger.providers.scripted:ScriptedProvider",
}
"""Provider classes by name, as "module:Class" until first used (the SDKs load lazily)."""


def register_provider(name: str, provider: str | type[Provider]) -> None:
    """Make `provider` (a class, or "module:Class") available to `make_provider` as `name`."""
    PROVIDERS[name] = provider


def _provider_class(name: str) -> type[Provider]:
    target = PROVIDERS.get(name)
    if target is None:
        raise ProviderSetupError(
            f"unknown model provider {name!r}; known providers: {', '.join(sorted(PROVIDERS))}"
        )
    if isinstance(target, str):
        loaded = load(target)
        if not (isinstance(loaded, type) and issubclass(loaded, Provider)):
            raise ProviderSetupError(f"provider {name!r}: {target} is not a Provider class")
        PROVIDERS[name] = target = loaded
    return target


def make_provider(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout: float | None = None,
    **options: Any,
) -> Provider:
    """The provider called `name`, set up with `options` (its constructor's keyword arguments).

    Raises ProviderSetupError for an unknown name or option, a missing SDK or a missing key.
    `api_key_env` is ignored by providers that need no key (scripted, replay), and `timeout`
    (seconds per request) by those that make no request.
    """
    cls = _provider_class(name)
    accepted = inspect.signature(cls).parameters
    arguments = dict(options)
    if base_url is not None:
        arguments["base_url"] = base_url
    if api_key_env is not None and "api_key_env" in accepted:
        arguments["api_key_env"] = api_key_env
    if timeout is not None and "timeout" in accepted:
        arguments["timeout"] = timeout
    unknown = sorted(set(arguments) - set(accepted))
    if unknown:
        known = ", ".join(sorted(p for p in accepted if p != "self")) or "none"
        raise ProviderSetupError(
            f"provider {name!r} has no option {unknown[0]!r} (its options: {known})"
        )
    try:
        inspect.signature(cls).bind(**arguments)
    except TypeError as exc:
        raise ProviderSetupError(f"provider {name!r}: {exc}") from None
    return cls(**arguments)
