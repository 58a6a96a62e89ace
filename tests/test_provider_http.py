"""The SDK-backed providers against a real local HTTP server speaking each API.

Nothing is patched: the official SDKs send real HTTP requests to `LLMServer` on 127.0.0.1.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentledger.errors import ProviderError, ProviderSetupError
from agentledger.providers import (
    CompletionRequest,
    Message,
    ModelClient,
    Provider,
    ProviderCallError,
    ResponseCache,
    RetryPolicy,
    Usage,
    make_provider,
)
from agentledger.store import LocalStorage
from llm_server import ANSWER, FINGERPRINT, USAGE, LLMServer, Reply

SYSTEM = "You are Ghost, a network forensics agent."
APIS = ["anthropic", "openai", "google"]
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o", "google": "gemini-2.5-flash"}
SERVED = {
    "anthropic": "claude-haiku-4-5-20251001",
    "openai": "gpt-4o-2024-08-06",
    "google": "gemini-2.5-flash-001",
}
ROUTE = {"anthropic": "anthropic", "openai": "openai", "google": "gemini"}
# USAGE tokens (1200 in, 300 out) at each model's list price.
COST = {
    "anthropic": (1200 * 1.00 + 300 * 5.00) / 1e6,
    "openai": (1200 * 2.50 + 300 * 10.00) / 1e6,
    "google": (1200 * 0.30 + 300 * 2.50) / 1e6,
}
KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-local",
    "OPENAI_API_KEY": "sk-local",
    "GEMINI_API_KEY": "g-local",
}


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    for name in (
        "GOOGLE_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


MakeProvider = Callable[..., Provider]


@pytest.fixture
def provider_for(server: LLMServer) -> Iterator[MakeProvider]:
    """Make a provider of an API pointed at the server; closed after the test."""
    made: list[Provider] = []

    def make(api: str, **options: Any) -> Provider:
        if api == "openai":
            options.setdefault("price_as", "openai")
            base_url = server.url + "/v1"
        else:
            base_url = server.url
        provider = make_provider(api, base_url=base_url, **options)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


def ask(api: str, **params: Any) -> CompletionRequest:
    return CompletionRequest(
        model=MODELS[api],
        system=SYSTEM,
        messages=[
            Message(role="user", content="Packets to 10.0.2.4 are dropped. Why?"),
            Message(role="assistant", content="I will check the qdiscs."),
            Message(role="user", content="Go on."),
        ],
        params=params or {"temperature": 0, "max_tokens": 256},
    )


@pytest.mark.parametrize("api", APIS)
def test_the_answer_and_what_was_served(api: str, provider_for: MakeProvider) -> None:
    client = ModelClient(provider_for(api))
    answer = client.complete(ask(api))
    assert answer.text == ANSWER
    assert answer.provider == api
    assert answer.model_served == SERVED[api]
    assert answer.fingerprint == (FINGERPRINT if api == "openai" else None)
    assert answer.usage == Usage(input_tokens=USAGE[0], output_tokens=USAGE[1])
    assert answer.cost_usd == pytest.approx(COST[api])
    assert answer.cached is False
    assert answer.latency_ms is not None and answer.latency_ms > 0
    assert answer.raw  # the provider's whole response, as JSON
    stats = client.stats()
    assert (stats.calls, stats.input_tokens, stats.output_tokens) == (1, *USAGE)
    assert stats.cost_usd == pytest.approx(COST[api])


def test_anthropic_receives_what_we_sent(server: LLMServer, provider_for: MakeProvider) -> None:
    request = ask("anthropic", temperature=0.2, max_tokens=300, top_k=5, stop="END", seed=7)
    ModelClient(provider_for("anthropic")).complete(request)
    [received] = server.requests
    assert received.path == "/v1/messages"
    # The SDK sends the key as x-api-key, or (newer versions) as a bearer token.
    headers = received.headers
    sent = headers.get("x-api-key") or headers["authorization"].removeprefix("Bearer ")
    assert sent == "sk-ant-local"
    assert received.body == {
        "model": "claude-haiku-4-5",
        "system": SYSTEM,
        "messages": [
            {"role": "user", "content": "Packets to 10.0.2.4 are dropped. Why?"},
            {"role": "assistant", "content": "I will check the qdiscs."},
            {"role": "user", "content": "Go on."},
        ],
        "max_tokens": 300,
        "temperature": 0.2,
        "top_k": 5,
        "stop_sequences": ["END"],
    }  # seed is not an Anthropic parameter: dropped


def test_anthropic_gets_a_default_max_tokens(server: LLMServer, provider_for: MakeProvider) -> None:
    request = CompletionRequest.from_prompt("claude-haiku-4-5", "hi")
    ModelClient(provider_for("anthropic")).complete(request)
    assert server.requests[0].body == {
        "model": "claude-haiku-4-5",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4096,
    }


def test_openai_receives_what_we_sent(server: LLMServer, provider_for: MakeProvider) -> None:
    request = ask(
        "openai", temperature=0.2, max_tokens=300, top_p=0.9, seed=7, stop=["END"], top_k=5
    )
    ModelClient(provider_for("openai")).complete(request)
    [received] = server.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-local"
    assert received.body == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Packets to 10.0.2.4 are dropped. Why?"},
            {"role": "assistant", "content": "I will check the qdiscs."},
            {"role": "user", "content": "Go on."},
        ],
        "temperature": 0.2,
        "max_tokens": 300,
        "top_p": 0.9,
        "seed": 7,
        "stop": ["END"],
        "top_k": 5,  # not an OpenAI parameter; vLLM and llama.cpp accept it
    }


def test_google_receives_what_we_sent(server: LLMServer, provider_for: MakeProvider) -> None:
    request = ask("google", temperature=0.2, max_tokens=300, top_k=5, seed=7, stop="END")
    ModelClient(provider_for("google")).complete(request)
    [received] = server.requests
    assert received.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert received.headers["x-goog-api-key"] == "g-local"
    body = received.body
    assert body["systemInstruction"]["parts"] == [{"text": SYSTEM}]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Packets to 10.0.2.4 are dropped. Why?"}]},
        {"role": "model", "parts": [{"text": "I will check the qdiscs."}]},
        {"role": "user", "parts": [{"text": "Go on."}]},
    ]
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 300,
        "topK": 5,
        "seed": 7,
        "stopSequences": ["END"],
    }


def test_google_refuses_a_parameter_it_does_not_have(
    server: LLMServer, provider_for: MakeProvider
) -> None:
    client = ModelClient(provider_for("google"))
    with pytest.raises(ProviderSetupError, match="'repetition_penalty' is not a generate_content"):
        client.complete(ask("google", repetition_penalty=1.1))
    assert server.count() == 0


@pytest.mark.parametrize("api", APIS)
def test_a_rate_limit_is_retried_after_the_time_asked(
    api: str, server: LLMServer, provider_for: MakeProvider
) -> None:
    server.reply(Reply(429, "rate limited", headers={"retry-after": "7"}))
    sleeps = Sleeps()
    answer = ModelClient(provider_for(api), sleep=sleeps).complete(ask(api))
    assert answer.text == ANSWER
    assert sleeps.delays == [7.0]
    assert server.count(ROUTE[api]) == 2  # the SDK did not retry on its own


@pytest.mark.parametrize("api", APIS)
def test_server_errors_are_retried_then_reported(
    api: str, server: LLMServer, provider_for: MakeProvider
) -> None:
    server.reply(*[Reply(500, "the backend fell over")] * 3)
    sleeps = Sleeps()
    client = ModelClient(provider_for(api), sleep=sleeps, retry=RetryPolicy(max_retries=2))
    with pytest.raises(ProviderError) as caught:
        client.complete(ask(api))
    message = str(caught.value)
    assert message.startswith(f"{api} model '{MODELS[api]}' at {server.url}")
    assert message.endswith("HTTP 500 after 3 attempts: the backend fell over")
    assert server.count() == 3
    assert len(sleeps.delays) == 2
    assert client.stats().failures == 1


@pytest.mark.parametrize("api", APIS)
def test_a_bad_request_is_not_retried(
    api: str, server: LLMServer, provider_for: MakeProvider
) -> None:
    server.reply(Reply(400, "max_tokens: must be positive"))
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as caught:
        ModelClient(provider_for(api), sleep=sleeps).complete(ask(api))
    assert "HTTP 400 (not retried): max_tokens: must be positive" in str(caught.value)
    assert isinstance(caught.value, ProviderCallError) and caught.value.status == 400
    assert server.count() == 1
    assert sleeps.delays == []


@pytest.mark.parametrize("api", APIS)
def test_the_cache_saves_the_second_http_call(
    api: str, server: LLMServer, provider_for: MakeProvider, tmp_path: Path
) -> None:
    client = ModelClient(provider_for(api), cache=ResponseCache(LocalStorage(tmp_path / "ledger")))
    first = client.complete(ask(api))
    second = client.complete(ask(api))
    assert server.count() == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.model_dump(exclude={"cached"}) == first.model_dump(exclude={"cached"})
    assert client.stats().saved_cost_usd == pytest.approx(COST[api])
    client.complete(ask(api, temperature=1))
    assert server.count() == 2  # a different request is a different call


def test_record_over_http_then_replay_offline(
    server: LLMServer, provider_for: MakeProvider, tmp_path: Path
) -> None:
    recorder = ModelClient(provider_for("openai"), record_dir=tmp_path / "recordings")
    original = recorder.complete(ask("openai"))
    replay = make_provider(
        "replay",
        recordings=tmp_path / "recordings",
        provider="openai",
        base_url=server.url + "/v1",
    )
    replayed = ModelClient(replay).complete(ask("openai"))
    assert server.count() == 1
    assert replayed.cached
    assert replayed.model_dump(exclude={"cached"}) == original.model_dump(exclude={"cached"})


def test_a_local_server_needs_no_key(
    server: LLMServer, provider_for: MakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    answer = ModelClient(provider_for("openai", price_as=None)).complete(ask("openai"))
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"
    assert answer.cost_usd is None  # a local model costs what its server costs, not OpenAI's price


def test_connection_errors_are_retried_then_reported() -> None:
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = make_provider("openai", base_url=f"http://127.0.0.1:{port}/v1")
    sleeps = Sleeps()
    try:
        client = ModelClient(provider, sleep=sleeps, retry=RetryPolicy(max_retries=2))
        with pytest.raises(ProviderError, match=r"call failed after 3 attempts: connection error"):
            client.complete(ask("openai"))
    finally:
        provider.close()
    assert len(sleeps.delays) == 2


def test_timeouts_are_retried(server: LLMServer, provider_for: MakeProvider) -> None:
    server.reply(Reply(delay=5), Reply(delay=5))
    sleeps = Sleeps()
    client = ModelClient(
        provider_for("anthropic", timeout=0.2), sleep=sleeps, retry=RetryPolicy(max_retries=2)
    )
    assert client.complete(ask("anthropic")).text == ANSWER
    assert server.count() == 3
    assert len(sleeps.delays) == 2
