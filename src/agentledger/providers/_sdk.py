"""What the SDK-backed providers share: loading an SDK, finding a key, translating failures."""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from agentledger.errors import ProviderSetupError
from agentledger.providers.base import (
    Provider,
    ProviderCallError,
    is_transport_error,
    parse_retry_after,
)
from agentledger.providers.pricing import cost_usd
from agentledger.providers.tools import ToolSpec, ToolTurn, Turn

DEFAULT_TIMEOUT = 600.0
"""Seconds one attempt may take: long answers from large models take minutes."""


def import_sdk(module: str, *, provider: str, extra: str) -> ModuleType:
    """Import an optional SDK, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ProviderSetupError(
            f"the {provider} provider needs the {module} package ({exc}): "
            f"pip install 'agentledger[{extra}]'"
        ) from None


def api_key_from_env(
    provider: str,
    api_key_env: str | None,
    default_envs: Sequence[str],
    *,
    optional: bool = False,
) -> str | None:
    """The API key from `api_key_env` (or the first default variable that is set).

    Raises ProviderSetupError naming the variable when there is none, unless `optional`.
    """
    names = [api_key_env] if api_key_env else list(default_envs)
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    if optional:
        return None
    wanted = " (or ".join(names) + ")" * (len(names) - 1)
    raise ProviderSetupError(
        f"the {provider} provider needs an API key: set {wanted} in the environment "
        f"(export {names[0]}=...), or name the variable that holds it (api_key_env in an "
        "agent's [model] table, --api-key-env on the command line)"
    )


def named_parameters(method: Callable[..., Any]) -> frozenset[str]:
    """The keyword parameters an SDK method declares."""
    try:
        return frozenset(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        return frozenset()


def split_params(
    params: Mapping[str, Any], named: frozenset[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parameters the SDK method names, and the rest (sent as ``extra_body``)."""
    known = {k: v for k, v in params.items() if k in named and not k.startswith("extra_")}
    extra = {k: v for k, v in params.items() if k not in known}
    return known, extra


def _status_problem(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if body.get("message"):
            return str(body["message"])
    return str(getattr(exc, "message", None) or exc)


def stainless_error(
    exc: BaseException, sdk: ModuleType, *, provider: str, model: str, endpoint: str | None
) -> ProviderCallError:
    """Translate an exception of the Anthropic or OpenAI SDK (same shapes) into ours."""
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        return ProviderCallError(
            provider,
            model,
            _status_problem(exc),
            status=status,
            retryable=ProviderCallError.retryable_status(status),
            retry_after=parse_retry_after(exc.response.headers),
            endpoint=endpoint,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderCallError(provider, model, "timed out", retryable=True, endpoint=endpoint)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f"connection error: {cause or exc}"
        return ProviderCallError(provider, model, detail, retryable=True, endpoint=endpoint)
    return ProviderCallError(
        provider,
        model,
        f"{type(exc).__name__}: {exc}",
        retryable=is_transport_error(exc),
        endpoint=endpoint,
    )


class StainlessProvider(Provider):
    """What the Anthropic and OpenAI providers share (their SDKs have the same shapes): one
    SDK method called with the parameters it names and the others in the request body, its
    failures translated (`stainless_error`), and the tool-calling turn around it."""

    _sdk: Any
    _client: Any
    price_as: str | None
    tools_request: Callable[[str | None, list[Turn], list[ToolSpec]], dict[str, Any]]
    """The request body of a tool-calling turn, in the SDK's terms."""
    tools_turn: Callable[[dict[str, Any]], ToolTurn]
    """The turn an answer to it gives."""

    def _setup(self, method: Callable[..., Any], error: type[BaseException]) -> None:
        """The SDK method every call goes through, and the SDK's base exception."""
        self._method = method
        self._error = error
        self._named = named_parameters(method)

    def _create(self, model: str, params: Mapping[str, Any], **body: Any) -> Any:
        known, extra = split_params(params, self._named)
        try:
            return self._method(model=model, extra_body=extra or None, **body, **known)
        except self._error as exc:
            raise stainless_error(
                exc, self._sdk, provider=self.name, model=model, endpoint=self.base_url
            ) from exc

    def _tools_params(self, params: dict[str, Any]) -> dict[str, Any]:
        return params

    def complete_tools(
        self,
        model: str,
        system: str | None,
        turns: list[Turn],
        tools: list[ToolSpec],
        params: dict[str, Any],
    ) -> ToolTurn:
        """One call offering `tools`; the answer's text and tool calls."""
        response = self._create(
            model, self._tools_params(params), **self.tools_request(system, turns, tools)
        )
        turn = self.tools_turn(response.model_dump(mode="json"))
        turn.cost_usd = cost_usd(self.price_as, (turn.model_served, model), turn.usage)
        return turn

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._client.close()
