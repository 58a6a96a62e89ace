"""A provider that answers from recordings written in record mode, without any network.

Recordings are `RecordedResponse` files named by request key (``<key hex>.json``, as record
mode writes them); a ledger's ``cache/`` directory, sharded by the first two hex digits, can be
replayed too. Every answer comes back with ``cached=True``: nothing was paid for it.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from agentledger.errors import ProviderSetupError, RecordError
from agentledger.identity import HASH_PREFIX, canonical_json
from agentledger.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderCallError,
    RecordedResponse,
    request_key,
)
from agentledger.records import parse_record

__all__ = ["ReplayProvider"]


def _content_key(request: CompletionRequest) -> str:
    return HASH_PREFIX + hashlib.sha256(canonical_json(request.model_dump(mode="json"))).hexdigest()


class ReplayProvider(Provider):
    """Answers each request with its recording in the `recordings` directory.

    With `provider` (and `base_url`, if the recording was made against one), a request is
    looked up by its exact key, as recorded. Without, any recording of the same request (same
    model, system prompt, messages, parameters and sample) answers, whichever provider made it.
    A request with no recording is an error (no call is made, and nothing is invented).
    """

    name = "replay"
    cacheable = False
    answers_stored = True

    def __init__(
        self,
        recordings: str | Path,
        *,
        provider: str | None = None,
        base_url: str | None = None,
    ) -> None:
        self.directory = Path(recordings)
        if not self.directory.is_dir():
            raise ProviderSetupError(
                f"replay: recordings directory {self.directory} does not exist "
                "(record one with --record)"
            )
        self.recorded_provider = provider
        self.base_url = base_url
        self._lock = threading.Lock()
        self._by_content: dict[str, Path] | None = None

    def complete(self, request: CompletionRequest) -> Completion:
        """The recorded answer to `request`."""
        if self.recorded_provider is not None:
            key = request_key(self.recorded_provider, self.base_url, request)
            path = self._path_of(key)
        else:
            key = _content_key(request)
            path = self._content_index().get(key)
        if path is None:
            of = f" of provider {self.recorded_provider}" if self.recorded_provider else ""
            raise ProviderCallError(
                self.name,
                request.model,
                f"no recording for request {key}{of} in {self.directory}; re-record with --record",
            )
        entry = self._load(path)
        return entry.completion.model_copy(update={"cached": True})

    def _path_of(self, key: str) -> Path | None:
        digits = key.removeprefix(HASH_PREFIX)
        for path in (
            self.directory / f"{digits}.json",
            self.directory / digits[:2] / f"{digits}.json",
        ):
            if path.is_file():
                return path
        return None

    def _load(self, path: Path) -> RecordedResponse:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise RecordError(path, f"cannot be read: {exc}") from None
        entry = parse_record(RecordedResponse, raw, str(path))
        if request_key(entry.provider, entry.endpoint, entry.request) != entry.key:
            raise RecordError(
                path,
                "the recorded request does not hash to the recording's key "
                "(was the request edited?); re-record with --record",
                field="request",
            )
        return entry

    def _content_index(self) -> dict[str, Path]:
        with self._lock:
            if self._by_content is None:
                index: dict[str, Path] = {}
                files = [*self.directory.glob("*.json"), *self.directory.glob("??/*.json")]
                for path in sorted(files):
                    if path.name.startswith("."):
                        continue
                    index.setdefault(_content_key(self._load(path).request), path)
                self._by_content = index
            return self._by_content
