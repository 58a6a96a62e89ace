"""ModelClient: every model call goes through it, for the cache, recordings, retries and limits.

- **Cache**: a request already answered is served from the ledger (``cached=True``) and the
  provider is not called; a repeated call is never paid twice.
- **Record mode**: every answer is also written to ``record_dir`` for `ReplayProvider`.
- **Retries**: rate limits, server errors, timeouts and connection errors are retried with
  exponential backoff and jitter, honouring ``Retry-After``; other errors are raised at once.
- **Concurrency**: at most ``concurrency`` provider calls at a time, across threads.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from agentledger.errors import ProviderError
from agentledger.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderCallError,
    RecordedResponse,
    request_key,
)
from agentledger.providers.cache import CorruptEntry, ResponseCache, write_recording
from agentledger.providers.tools import ToolSpec, Turn, tools_completion, tools_request

__all__ = ["CallLimit", "CallStopped", "ClientStats", "ModelClient", "RetryPolicy"]

logger = logging.getLogger("agentledger.providers")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before trying a failed call again.

    The n-th retry waits ``min(max_delay, base_delay * 2**(n-1))`` scaled by a random factor
    in [0.5, 1), or what the server asked for in ``Retry-After`` (at most ``max_retry_after``).
    """

    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("retry counts and delays must not be negative")

    def delay(self, retry: int, error: ProviderCallError, rng: random.Random) -> float:
        """Seconds to wait before the `retry`-th retry (1-based) after `error`."""
        if error.retry_after is not None:
            return min(error.retry_after, self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        return ceiling * (0.5 + rng.random() / 2)


@dataclass(frozen=True)
class CallLimit:
    """What ends a model call early, whatever the provider is doing: a deadline (a
    `time.monotonic()` value) and a cancel switch. A run's timeout and Ctrl-C reach a hanging
    call through it."""

    deadline: float | None = None
    cancel: threading.Event | None = None

    def reason(self) -> str | None:
        """Why the call must stop now ("cancelled", "timeout"), or None."""
        if self.cancel is not None and self.cancel.is_set():
            return "cancelled"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "timeout"
        return None

    def remaining(self) -> float | None:
        """Seconds to the deadline (None: no deadline)."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


class CallStopped(ProviderError):
    """A model call given up because its `CallLimit` said so (not the provider's failure)."""

    def __init__(self, reason: str, model: str) -> None:
        what = "the run was interrupted" if reason == "cancelled" else "the run's time ran out"
        super().__init__(f"model call to {model} stopped: {what}")
        self.reason = reason


# How often a bounded call looks at its limit while the provider works.
_LIMIT_POLL_S = 0.05


@dataclass(frozen=True)
class ClientStats:
    """Running totals of a client, for a run's end summary."""

    calls: int = 0
    """Answers the provider produced (paid calls)."""
    cached: int = 0
    """Answers served from the ledger cache (nothing paid)."""
    replayed: int = 0
    """Answers the provider served from a recording (replay)."""
    retries: int = 0
    """Failed attempts that were tried again."""
    failures: int = 0
    """Calls that ended in a ProviderError."""
    input_tokens: int = 0
    """Input tokens of paid calls."""
    output_tokens: int = 0
    """Output tokens of paid calls."""
    cost_usd: float = 0.0
    """Cost of paid calls with a known price."""
    unpriced_calls: int = 0
    """Paid calls with no known price: when non-zero, cost_usd is a lower bound."""
    saved_cost_usd: float = 0.0
    """What the cached answers cost when they were first paid for."""
    cache_errors: int = 0
    """Cache entries that were damaged or could not be written (each treated as a miss)."""


@dataclass
class _KeySlot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class ModelClient:
    """A provider wrapped with the response cache, record mode, retries and a concurrency limit.

    Thread-safe: one client serves all the runner's threads. ``cache`` is normally the
    ledger's response cache (in its storage backend); None disables the cache. Providers that
    are not `cacheable` (scripted) are never cached. ``use_cache=False`` (the CLI's ``--no-cache``)
    skips reading the cache but still writes the fresh answer to it, so the newest answer is the
    one a later run reuses. ``sleep`` and ``rng`` are injectable so tests need not wait.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        cache: ResponseCache | None = None,
        use_cache: bool = True,
        record_dir: str | Path | None = None,
        retry: RetryPolicy | None = None,
        concurrency: int = 8,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.provider = provider
        self.cache = cache
        self.use_cache = use_cache
        self.record_dir = Path(record_dir) if record_dir is not None else None
        self.retry = retry or RetryPolicy()
        self.concurrency = concurrency
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not secrecy
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._key_locks: dict[str, _KeySlot] = {}
        self._stats = ClientStats()

    # -- public ----------------------------------------------------------------------------

    @property
    def caching(self) -> bool:
        """True when answers of this client's provider go through the cache."""
        return self.cache is not None and self.provider.cacheable

    def stats(self) -> ClientStats:
        """A snapshot of the running totals."""
        with self._lock:
            return self._stats

    def key(self, request: CompletionRequest) -> str:
        """The cache and recording key of `request` for this client's provider."""
        return request_key(self.provider.name, self.provider.base_url, request)

    def complete(self, request: CompletionRequest, *, limit: CallLimit | None = None) -> Completion:
        """Answer `request`: from the cache if it holds it, else from the provider.

        Raises ProviderError (a `ProviderCallError`) naming the provider, model and status when
        the call fails for good, and `CallStopped` as soon as `limit` ends it: its deadline
        passed or it was cancelled, during an attempt or a wait between attempts. (A provider
        call already under way is then abandoned to its own timeout in a daemon thread.)
        """
        return self._answer(request, limit, lambda: self.provider.complete(request))

    def _answer(
        self,
        request: CompletionRequest,
        limit: CallLimit | None,
        call: Callable[[], Completion],
    ) -> Completion:
        key = self.key(request)
        if self.cache is None or not self.provider.cacheable:
            completion = self._call(request, limit, call)
        else:
            with self._only_caller(key):
                completion = self._cached_or_called(self.cache, key, request, limit, call)
        if self.record_dir is not None:
            entry = RecordedResponse.of(
                key, self.provider.name, self.provider.base_url, request, completion
            )
            write_recording(self.record_dir, entry)
        return completion

    def complete_tools(
        self,
        model: str,
        system: str | None,
        turns: list[Turn],
        tools: list[ToolSpec],
        params: dict[str, Any],
        *,
        sample: int = 0,
        limit: CallLimit | None = None,
    ) -> Completion:
        """One turn of a tool-calling conversation, through the same cache, recordings,
        retries and limits as `complete`: the request is the conversation so far and the
        tools (`tools_request`), so a run asked again is answered turn by turn from the
        ledger without a call, and a replay answers it offline. The answer is a Completion
        (usage, cost, ``cached``); `ToolTurn.from_completion` reads the turn from it."""
        request = tools_request(model, system, turns, tools, params, sample)
        provider = self.provider

        def call() -> Completion:
            if provider.answers_stored:
                return provider.complete(request)
            return tools_completion(
                provider.complete_tools(model, system, turns, tools, params), provider.name
            )

        return self._answer(request, limit, call)

    def close(self) -> None:
        """Close the provider's connections."""
        self.provider.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- cache -----------------------------------------------------------------------------

    @contextmanager
    def _only_caller(self, key: str) -> Iterator[None]:
        # Threads asking the same question wait for the first one's answer instead of paying
        # for it again.
        with self._lock:
            slot = self._key_locks.setdefault(key, _KeySlot())
            slot.users += 1
        try:
            with slot.lock:
                yield
        finally:
            with self._lock:
                slot.users -= 1
                if not slot.users:
                    del self._key_locks[key]

    def _cached_or_called(
        self,
        cache: ResponseCache,
        key: str,
        request: CompletionRequest,
        limit: CallLimit | None,
        call: Callable[[], Completion],
    ) -> Completion:
        if self.use_cache:
            try:
                entry = cache.get(key)
            except CorruptEntry:
                entry = None
                self._count(cache_errors=1)
            if entry is not None:
                self._count(cached=1, saved_cost_usd=entry.completion.cost_usd or 0.0)
                return entry.completion.model_copy(update={"cached": True})
        completion = self._call(request, limit, call)
        if not completion.cached:
            record = RecordedResponse.of(
                key, self.provider.name, self.provider.base_url, request, completion
            )
            try:
                cache.put(record)
            except OSError as exc:
                logger.warning("could not write cache entry for %s: %s", key, exc)
                self._count(cache_errors=1)
        return completion

    # -- calls -----------------------------------------------------------------------------

    def _call(
        self,
        request: CompletionRequest,
        limit: CallLimit | None = None,
        call: Callable[[], Completion] | None = None,
    ) -> Completion:
        attempt = 0
        while True:
            attempt += 1
            self._check(limit, request)
            try:
                with self._slots:
                    started = time.perf_counter()
                    completion = self._attempt(
                        request, limit, call or (lambda: self.provider.complete(request))
                    )
                    elapsed_ms = (time.perf_counter() - started) * 1000
            except ProviderCallError as error:
                if not error.retryable or attempt > self.retry.max_retries:
                    self._count(failures=1)
                    raise error.after_attempts(attempt) from error.__cause__
                self._count(retries=1)
                self._wait(self.retry.delay(attempt, error, self._rng), limit, request)
                continue
            if completion.cached:
                self._count(replayed=1)
                return completion
            self._count_paid(completion)
            return completion.model_copy(update={"latency_ms": round(elapsed_ms, 3)})

    def _check(self, limit: CallLimit | None, request: CompletionRequest) -> None:
        reason = limit.reason() if limit is not None else None
        if reason is not None:
            self._count(failures=1)
            raise CallStopped(reason, request.model)

    def _wait(self, seconds: float, limit: CallLimit | None, request: CompletionRequest) -> None:
        """Sleep `seconds` before a retry, in steps short enough to notice `limit`."""
        if limit is None:
            self._sleep(seconds)
            return
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self._check(limit, request)
            remaining = limit.remaining()
            step = min(left, _LIMIT_POLL_S * 4, remaining if remaining is not None else left)
            self._sleep(max(step, 0.001))
        self._check(limit, request)

    def _attempt(
        self, request: CompletionRequest, limit: CallLimit | None, call: Callable[[], Completion]
    ) -> Completion:
        """One provider call; under a limit it runs in a daemon thread watched from here."""
        if limit is None or (limit.deadline is None and limit.cancel is None):
            return call()
        outcome: list[Completion | BaseException] = []
        finished = threading.Event()

        def watched() -> None:
            try:
                outcome.append(call())
            except BaseException as exc:  # handed to the caller's thread below
                outcome.append(exc)
            finally:
                finished.set()

        threading.Thread(target=watched, name="agentledger-model-call", daemon=True).start()
        while not finished.wait(_LIMIT_POLL_S):
            self._check(limit, request)
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def _count_paid(self, completion: Completion) -> None:
        usage = completion.usage
        self._count(
            calls=1,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            cost_usd=completion.cost_usd or 0.0,
            unpriced_calls=1 if completion.cost_usd is None else 0,
        )

    def _count(self, **amounts: float) -> None:
        with self._lock:
            current = self._stats
            changes = {
                item.name: getattr(current, item.name) + amounts[item.name]
                for item in fields(current)
                if item.name in amounts
            }
            self._stats = replace(current, **changes)
