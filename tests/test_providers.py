"""Providers without a network: scripted answers, the cache, record and replay, retries, limits."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from agentledger.errors import InputError, ProviderError, ProviderSetupError, RecordError
from agentledger.providers import (
    Completion,
    CompletionRequest,
    Message,
    ModelClient,
    Provider,
    ProviderCallError,
    RecordedResponse,
    ReplayProvider,
    ResponseCache,
    RetryPolicy,
    ScriptedProvider,
    Usage,
    cache_dir_of,
    make_provider,
    request_key,
)
from agentledger.providers.base import parse_retry_after
from agentledger.providers.pricing import cost_usd, default_prices
from agentledger.store import LocalStorage

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = "You are Ghost, a network forensics agent."


def ask(text: str = "Packets to 10.0.2.4 are dropped. Why?", **changes: Any) -> CompletionRequest:
    fields: dict[str, Any] = {
        "model": "claude-haiku-4-5",
        "system": SYSTEM,
        "messages": [Message(role="user", content=text)],
        "params": {"temperature": 0, "max_tokens": 512},
    }
    fields.update(changes)
    return CompletionRequest(**fields)


class Sleeps:
    """An injected sleep: remembers the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return cache_dir_of(tmp_path / "ledger")


def cached(cache_dir: Path) -> ResponseCache:
    """The response cache of the local ledger whose cache directory is `cache_dir`."""
    return ResponseCache(LocalStorage(cache_dir.parent))


# -- scripted ----------------------------------------------------------------------------------


def test_scripted_answers_in_order_then_a_clear_error() -> None:
    provider = ScriptedProvider(["first", {"text": "second", "model_served": "m-20250101"}])
    client = ModelClient(provider)
    assert client.complete(ask()).text == "first"
    second = client.complete(ask())
    assert (second.text, second.model_served, second.provider) == (
        "second",
        "m-20250101",
        "scripted",
    )
    assert provider.remaining == 0
    with pytest.raises(
        ProviderError, match=r"no scripted answer left for call 3 \(the script held 2\)"
    ):
        client.complete(ask())
    assert client.stats().retries == 0
    assert [r.messages[0].content for r in provider.requests] == [ask().messages[0].content] * 3


def test_scripted_answer_fields_and_responder() -> None:
    answer = {
        "text": "done",
        "fingerprint": "fp_1",
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "cost_usd": 0.25,
        "raw": {"id": "x"},
    }
    provider = ScriptedProvider([answer], responder=lambda request: f"echo {request.model}")
    client = ModelClient(provider)
    first = client.complete(ask())
    assert first.fingerprint == "fp_1"
    assert first.usage == Usage(input_tokens=10, output_tokens=5)
    assert (first.cost_usd, first.raw) == (0.25, {"id": "x"})
    assert client.complete(ask(model="m2")).text == "echo m2"
    stats = client.stats()
    assert (stats.calls, stats.input_tokens, stats.cost_usd, stats.unpriced_calls) == (
        2,
        10,
        0.25,
        1,
    )


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("answers.json", json.dumps(["one", {"text": "two"}])),
        ("answers.json", json.dumps({"answers": ["one", {"text": "two"}]})),
        ("answers.jsonl", '"one"\n\n{"text": "two"}\n'),
        ("answers.yaml", "- one\n- text: two\n"),
        ("answers.yml", "answers:\n  - one\n  - {text: two}\n"),
    ],
)
def test_scripted_answers_from_a_file(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    client = ModelClient(make_provider("scripted", responses=str(path)))
    assert [client.complete(ask()).text for _ in range(2)] == ["one", "two"]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("bad.jsonl", '"one"\n{"txt": "two"}\n', r"bad\.jsonl, line 2, field 'txt'"),
        ("bad.jsonl", '"one"\n{oops\n', r"bad\.jsonl, line 2: malformed JSON"),
        (
            "bad.yaml",
            "- one\n- {text: two, error: {status: 429}}\n",
            r"field 'answers\[1\]'.*not both",
        ),
        ("bad.json", '{"text": "one"}', r"bad\.json: expected a list of answers"),
        ("bad.json", "[1,", r"bad\.json: malformed JSON"),
    ],
)
def test_bad_script_files_name_the_file_and_place(
    tmp_path: Path, name: str, content: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(RecordError, match=expected):
        ScriptedProvider.from_file(path)


def test_missing_script_file() -> None:
    with pytest.raises(ProviderSetupError, match=r"answers file nowhere\.yaml does not exist"):
        make_provider("scripted", responses="nowhere.yaml")


# -- request keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"model": "claude-sonnet-4-5"},
        {"system": SYSTEM + " "},
        {"system": None},
        {"messages": [Message(role="user", content="Packets to 10.0.2.5 are dropped. Why?")]},
        {"messages": [Message(role="assistant", content="Packets to 10.0.2.4 are dropped. Why?")]},
        {
            "messages": [
                Message(role="user", content="Packets to 10.0.2.4 are dropped. Why?"),
                Message(role="assistant", content="Checking."),
            ]
        },
        {"params": {"temperature": 0.2, "max_tokens": 512}},
        {"params": {"temperature": 0, "max_tokens": 512, "seed": 1}},
        {"params": {"temperature": 0}},
        {"sample": 1},
    ],
)
def test_any_change_to_the_request_changes_the_key(change: dict[str, Any]) -> None:
    assert request_key("anthropic", None, ask(**change)) != request_key("anthropic", None, ask())


def test_key_covers_provider_and_endpoint_and_ignores_order() -> None:
    key = request_key("openai", "http://localhost:8000/v1", ask())
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", key)
    assert key == request_key("openai", "http://localhost:8000/v1/", ask())
    assert key == request_key(
        "openai", "http://localhost:8000/v1", ask(params={"max_tokens": 512, "temperature": 0})
    )
    assert key != request_key("openai", "http://localhost:8001/v1", ask())
    assert key != request_key("openai", None, ask())
    assert key != request_key("anthropic", "http://localhost:8000/v1", ask())


def test_requests_are_validated() -> None:
    with pytest.raises(ValueError, match="'stream' cannot be a parameter"):
        ask(params={"stream": True})
    with pytest.raises(ValueError, match="plain JSON values"):
        ask(params={"temperature": float("nan")})
    with pytest.raises(ValueError, match="at least 1 item"):
        ask(messages=[])
    request = CompletionRequest.from_prompt("m", "hi", system="s", params={"top_p": 1}, sample=2)
    assert (request.messages[0].role, request.system, request.params, request.sample) == (
        "user",
        "s",
        {"top_p": 1},
        2,
    )


# -- the cache ---------------------------------------------------------------------------------


def test_a_repeated_request_is_served_from_the_cache(cache_dir: Path) -> None:
    provider = ScriptedProvider(["fresh answer"], cacheable=True)
    client = ModelClient(provider, cache=cached(cache_dir))
    first = client.complete(ask())
    second = client.complete(ask())
    assert (first.text, first.cached) == ("fresh answer", False)
    assert (second.text, second.cached) == ("fresh answer", True)
    assert second.latency_ms == first.latency_ms
    assert len(provider.requests) == 1
    assert (client.stats().calls, client.stats().cached) == (1, 1)
    # Another client on the same ledger (a later `agentledger run`) gets it too.
    later = ModelClient(ScriptedProvider([], cacheable=True), cache=cached(cache_dir))
    assert later.complete(ask()).cached


def test_the_cache_entry_holds_the_request_and_the_completion(cache_dir: Path) -> None:
    client = ModelClient(ScriptedProvider(["answer"], cacheable=True), cache=cached(cache_dir))
    client.complete(ask())
    key = client.key(ask())
    digits = key.removeprefix("sha256:")
    path = cache_dir / digits[:2] / f"{digits}.json"
    assert sorted(p.relative_to(cache_dir).as_posix() for p in cache_dir.rglob("*")) == [
        digits[:2],
        f"{digits[:2]}/{digits}.json",
    ]
    entry = RecordedResponse.model_validate_json(path.read_bytes())
    assert (entry.key, entry.provider, entry.endpoint) == (key, "scripted", None)
    assert entry.request == ask()
    assert (entry.completion.text, entry.completion.cached) == ("answer", False)
    assert json.loads(path.read_text())["schema_version"] == 1


def test_no_cache_skips_reading_but_stores_the_fresh_answer(cache_dir: Path) -> None:
    ModelClient(ScriptedProvider(["old"], cacheable=True), cache=cached(cache_dir)).complete(ask())
    provider = ScriptedProvider(["new"], cacheable=True)
    fresh = ModelClient(provider, cache=cached(cache_dir), use_cache=False).complete(ask())
    assert (fresh.text, fresh.cached, len(provider.requests)) == ("new", False, 1)
    reused = ModelClient(ScriptedProvider([], cacheable=True), cache=cached(cache_dir)).complete(
        ask()
    )
    assert (reused.text, reused.cached) == ("new", True)


def test_scripted_answers_are_not_cached_by_default(cache_dir: Path) -> None:
    client = ModelClient(ScriptedProvider(["one", "two"]), cache=cached(cache_dir))
    assert [client.complete(ask()).text for _ in range(2)] == ["one", "two"]
    assert not cache_dir.exists()
    assert not client.caching


def test_samples_are_cached_separately(cache_dir: Path) -> None:
    provider = ScriptedProvider(["draw 0", "draw 1"], cacheable=True)
    client = ModelClient(provider, cache=cached(cache_dir))
    assert [client.complete(ask(sample=n)).text for n in (0, 1, 0, 1)] == [
        "draw 0",
        "draw 1",
        "draw 0",
        "draw 1",
    ]
    assert client.stats().cached == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],
        lambda text: "\x00\xff not json",
        lambda text: "",
        lambda text: text.replace('"schema_version": 1', '"schema_version": 99'),
        lambda text: text.replace("Why?", "How?"),
    ],
    ids=["truncated", "garbage", "empty", "newer-version", "other-request"],
)
def test_a_damaged_cache_entry_is_a_miss_and_is_replaced(cache_dir: Path, damage: Any) -> None:
    client = ModelClient(ScriptedProvider(["first"], cacheable=True), cache=cached(cache_dir))
    client.complete(ask())
    path = cache_dir.parent / client.cache.key_for(client.key(ask()))  # type: ignore[union-attr]
    path.write_text(damage(path.read_text()))
    again = ModelClient(ScriptedProvider(["second"], cacheable=True), cache=cached(cache_dir))
    answer = again.complete(ask())
    assert (answer.text, answer.cached) == ("second", False)
    assert again.stats().cache_errors == 1
    assert RecordedResponse.model_validate_json(path.read_bytes()).completion.text == "second"


def test_cache_writes_are_atomic(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = ModelClient(ScriptedProvider(["a", "b"], cacheable=True), cache=cached(cache_dir))
    client.complete(ask())
    path = cache_dir.parent / client.cache.key_for(client.key(ask()))  # type: ignore[union-attr]
    before = path.read_bytes()

    def crash(source: str, target: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    answer = client.complete(ask(sample=1))
    assert answer.text == "b"  # the answer is still returned; only the cache missed out
    assert client.stats().cache_errors == 1
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert not (cache_dir.parent / ResponseCache.key_for(client.key(ask(sample=1)))).exists()
    assert [p.name for p in cache_dir.rglob(".tmp-*")] == []


def test_one_request_from_many_threads_is_paid_once(cache_dir: Path) -> None:
    calls: list[float] = []

    def slow(request: CompletionRequest) -> str:
        calls.append(time.monotonic())
        time.sleep(0.05)
        return "answer"

    client = ModelClient(
        ScriptedProvider(responder=slow, cacheable=True), cache=cached(cache_dir), concurrency=4
    )
    results: list[Completion] = []
    threads = [
        threading.Thread(target=lambda: results.append(client.complete(ask()))) for _ in range(5)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert sorted(r.cached for r in results) == [False, True, True, True, True]


# -- record and replay -------------------------------------------------------------------------


def test_record_then_replay(tmp_path: Path) -> None:
    recordings = tmp_path / "recordings"
    answers = [{"text": "A", "model_served": "claude-haiku-4-5-20251001"}, "B"]
    recorder = ModelClient(ScriptedProvider(answers), record_dir=recordings)
    requests = [ask(), ask("And now?", params={"temperature": 1})]
    originals = [recorder.complete(request) for request in requests]
    files = sorted(p.name for p in recordings.iterdir())
    assert files == sorted(f"{recorder.key(r).removeprefix('sha256:')}.json" for r in requests)

    for replay in (
        make_provider("replay", recordings=str(recordings), provider="scripted"),
        ReplayProvider(recordings),  # any provider: matched on the request alone
    ):
        client = ModelClient(replay, cache=cached(tmp_path / "cache"))
        replayed = [client.complete(request) for request in reversed(requests)][::-1]
        assert [r.text for r in replayed] == ["A", "B"]
        assert replayed[0].model_served == "claude-haiku-4-5-20251001"
        assert all(r.cached and r.provider == "scripted" for r in replayed)
        assert replayed[0].raw == originals[0].raw
        assert (client.stats().replayed, client.stats().calls, client.stats().cost_usd) == (2, 0, 0)
    assert not (tmp_path / "cache").exists()


def test_a_ledger_cache_can_be_replayed(cache_dir: Path) -> None:
    ModelClient(ScriptedProvider(["cached"], cacheable=True), cache=cached(cache_dir)).complete(
        ask()
    )
    assert (
        ModelClient(ReplayProvider(cache_dir, provider="scripted")).complete(ask()).text == "cached"
    )


def test_a_missing_recording_is_a_clear_error(tmp_path: Path, sleeps: Sleeps) -> None:
    (tmp_path / "rec").mkdir()
    client = ModelClient(
        make_provider("replay", recordings=tmp_path / "rec", provider="anthropic"), sleep=sleeps
    )
    key = request_key("anthropic", None, ask())
    with pytest.raises(ProviderError) as caught:
        client.complete(ask())
    assert f"no recording for request {key} of provider anthropic" in str(caught.value)
    assert "re-record with --record" in str(caught.value)
    assert sleeps.delays == []
    with pytest.raises(ProviderSetupError, match="recordings directory nowhere does not exist"):
        make_provider("replay", recordings="nowhere")


def test_an_edited_recording_is_refused(tmp_path: Path) -> None:
    recorder = ModelClient(ScriptedProvider(["A"]), record_dir=tmp_path)
    recorder.complete(ask())
    path = next(tmp_path.glob("*.json"))
    path.write_text(path.read_text().replace("Why?", "How?"))
    with pytest.raises(RecordError, match="does not hash to the recording's key"):
        ReplayProvider(tmp_path, provider="scripted").complete(ask())


# -- retries -----------------------------------------------------------------------------------


def test_rate_limits_and_server_errors_are_retried(sleeps: Sleeps) -> None:
    script = [
        {"error": {"status": 429, "message": "slow down", "retry_after": 3}},
        {"error": {"status": 503, "message": "overloaded"}},
        {"error": {"message": "connection reset"}},
        "finally",
    ]
    client = ModelClient(
        ScriptedProvider(script), sleep=sleeps, retry=RetryPolicy(base_delay=2, max_delay=60)
    )
    assert client.complete(ask()).text == "finally"
    assert sleeps.delays[0] == 3.0  # Retry-After, as asked
    assert 2.0 <= sleeps.delays[1] < 4.0  # 2 * 2**1, jittered down by at most half
    assert 4.0 <= sleeps.delays[2] < 8.0
    assert (client.stats().retries, client.stats().failures, client.stats().calls) == (3, 0, 1)


def test_retries_give_up_with_a_provider_error(sleeps: Sleeps) -> None:
    script = [{"error": {"status": 500, "message": "boom"}}] * 3
    client = ModelClient(ScriptedProvider(script), sleep=sleeps, retry=RetryPolicy(max_retries=2))
    with pytest.raises(ProviderError) as caught:
        client.complete(ask())
    error = caught.value
    assert isinstance(error, ProviderCallError)
    assert str(error) == "scripted model 'claude-haiku-4-5': HTTP 500 after 3 attempts: boom"
    assert (error.status, error.attempts) == (500, 3)
    assert len(sleeps.delays) == 2
    assert client.stats().failures == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(sleeps: Sleeps, status: int) -> None:
    provider = ScriptedProvider([{"error": {"status": status, "message": "no"}}, "unused"])
    client = ModelClient(provider, sleep=sleeps)
    with pytest.raises(ProviderError, match=rf"HTTP {status} \(not retried\): no"):
        client.complete(ask())
    assert sleeps.delays == []
    assert provider.remaining == 1


def test_retry_after_is_capped(sleeps: Sleeps) -> None:
    script = [{"error": {"status": 429, "retry_after": 3600}}, "ok"]
    ModelClient(
        ScriptedProvider(script), sleep=sleeps, retry=RetryPolicy(max_retry_after=90)
    ).complete(ask())
    assert sleeps.delays == [90]


def test_backoff_doubles_up_to_its_ceiling() -> None:
    policy = RetryPolicy(base_delay=1, max_delay=10)
    error = ProviderCallError("p", "m", "x", status=500, retryable=True)
    rng = random.Random(7)
    delays = [policy.delay(n, error, rng) for n in range(1, 7)]
    for n, delay in enumerate(delays, start=1):
        ceiling = min(10.0, 2.0 ** (n - 1))
        assert ceiling / 2 <= delay < ceiling
    with pytest.raises(ValueError, match="must not be negative"):
        RetryPolicy(max_retries=-1)


def test_retry_after_headers() -> None:
    now = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": later}, now=now.timestamp()) == 30.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


# -- concurrency -------------------------------------------------------------------------------


class Counting(Provider):
    """A provider that measures how many calls run at once."""

    name = "counting"

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> Completion:
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.02)
        with self._lock:
            self.active -= 1
        return Completion(text=request.messages[0].content, provider=self.name)


def test_the_concurrency_limit_holds_across_threads(cache_dir: Path) -> None:
    provider = Counting()
    client = ModelClient(provider, cache=cached(cache_dir), concurrency=2)
    threads = [
        threading.Thread(target=client.complete, args=(ask(f"question {n}"),)) for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert provider.peak == 2
    assert client.stats().calls == 8
    with pytest.raises(ValueError, match="at least 1"):
        ModelClient(provider, concurrency=0)


# -- prices ------------------------------------------------------------------------------------


def test_costs_come_from_the_price_table() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000)
    assert cost_usd("anthropic", ("claude-haiku-4-5-20251001", None), usage) == 1.5
    assert (
        cost_usd("anthropic", "claude-sonnet-4-5", Usage(input_tokens=300_000, output_tokens=0))
        == 1.8
    )
    assert cost_usd("openai", "gpt-4o-2024-08-06", usage) == 3.5
    assert cost_usd("openai", "gpt-4o-2024-05-13", usage) == 6.5
    assert cost_usd("google", "models/gemini-2.5-flash-001", usage) == 0.55
    assert cost_usd("openai", ("unknown-served", "gpt-4o-mini"), usage) == 0.21


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "gpt-4o-audio-preview"),
        ("openai", "gpt-5.2"),
        ("openai", "gpt-5-chat-latest"),
        ("anthropic", "claude-opus-4-7"),
        ("anthropic", "claude-haiku-4-5-fast"),
        ("google", "gemini-2.5-flash-preview-05-20"),
        ("openai", "claude-haiku-4-5"),
        ("vllm", "llama-3.1-8b"),
    ],
)
def test_unknown_models_have_no_cost(provider: str, model: str) -> None:
    assert cost_usd(provider, model, Usage(input_tokens=1000, output_tokens=1000)) is None


def test_the_price_table_covers_every_paid_provider() -> None:
    table = default_prices()
    for provider in ("anthropic", "openai", "google"):
        prices = getattr(table, provider)
        assert prices and all(p.input > 0 and p.output >= p.input for p in prices.values())
    assert cost_usd("openai", "gpt-4o", None) is None
    assert cost_usd(None, "gpt-4o", Usage(input_tokens=1, output_tokens=1)) is None


# -- setting up providers ----------------------------------------------------------------------


def test_make_provider_refuses_unknown_names_and_options() -> None:
    with pytest.raises(
        ProviderSetupError,
        match="unknown model provider 'mistral'; known providers: anthropic, google, openai, "
        "replay, scripted",
    ):
        make_provider("mistral")
    with pytest.raises(ProviderSetupError, match="provider 'scripted' has no option 'temperature'"):
        make_provider("scripted", temperature=0)
    with pytest.raises(ProviderSetupError, match="missing a required argument: 'recordings'"):
        make_provider("replay")
    assert make_provider("scripted", api_key_env="IGNORED").name == "scripted"
    assert isinstance(ProviderSetupError("x"), InputError)


@pytest.mark.parametrize(
    ("name", "variables", "options"),
    [
        ("anthropic", "ANTHROPIC_API_KEY", {}),
        ("openai", "OPENAI_API_KEY", {}),
        ("google", r"GEMINI_API_KEY \(or GOOGLE_API_KEY\)", {}),
        ("openai", "MY_GATEWAY_KEY", {"api_key_env": "MY_GATEWAY_KEY", "base_url": "http://gw"}),
    ],
)
def test_a_missing_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, variables: str, options: dict[str, Any]
) -> None:
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ProviderSetupError, match=rf"needs an API key: set {variables} .*export"):
        make_provider(name, **options)


def test_an_openai_compatible_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = make_provider("openai", base_url="http://localhost:11434/v1")
    try:
        assert provider.base_url == "http://localhost:11434/v1"
    finally:
        provider.close()


@pytest.mark.parametrize(
    ("name", "module", "extra"),
    [
        ("anthropic", "anthropic", "anthropic"),
        ("openai", "openai", "openai"),
        ("google", "google.genai", "google"),
    ],
)
def test_a_missing_sdk_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, name: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what Python does for an absent package
    with pytest.raises(ProviderSetupError, match=re.escape(f"pip install 'agentledger[{extra}]'")):
        make_provider(name)


def test_importing_the_providers_loads_no_sdk() -> None:
    code = (
        "import sys, agentledger.providers as p\n"
        "p.ModelClient(p.make_provider('scripted', answers=['x'])).complete("
        "p.CompletionRequest.from_prompt('m', 'hi'))\n"
        "loaded = [m for m in ('anthropic', 'openai', 'google.genai') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- documentation -----------------------------------------------------------------------------


def test_the_documented_example_prints_what_the_docs_say(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "providers.md").read_text()
    match = re.search(r"```python\n(.*?)```\n\nIt prints:\n\n```\n(.*?)```", text, re.S)
    assert match, "docs/providers.md lost its example"
    code, expected = match.groups()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
