"""A provider that answers from a script: queued answers for tests and offline demos.

Answers are strings, or mappings with ``text`` and optionally ``model_served``,
``fingerprint``, ``usage`` ({input_tokens, output_tokens}), ``cost_usd`` and ``raw``. A mapping
with ``error`` ({status, message, retry_after}) makes that call fail instead, to exercise
retries. A script can be a list in Python, or a JSON, JSONL or YAML file.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentledger.errors import ProviderSetupError, RecordError
from agentledger.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderCallError,
    Usage,
)

__all__ = ["ScriptedAnswer", "ScriptedError", "ScriptedProvider", "load_script"]

Responder = Callable[[CompletionRequest], str | Mapping[str, Any] | Completion]
"""Answers a request once the queue is empty: a text, an answer mapping, or a Completion."""


class ScriptedError(BaseModel):
    """A scripted failure: an HTTP status (None for a connection error) and a message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: int | None = Field(default=None, description="HTTP status; None: connection error.")
    message: str = Field(default="scripted failure")
    retry_after: float | None = Field(default=None, ge=0, description="Retry-After, seconds.")


class ScriptedAnswer(BaseModel):
    """One queued answer (or failure)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str | None = None
    model_served: str | None = None
    fingerprint: str | None = None
    usage: Usage | None = None
    cost_usd: float | None = Field(default=None, ge=0)
    raw: dict[str, Any] | None = None
    error: ScriptedError | None = None

    @model_validator(mode="after")
    def _text_or_error(self) -> ScriptedAnswer:
        if (self.text is None) == (self.error is None):
            raise ValueError("an answer needs either 'text' or 'error' (and not both)")
        return self


def _answer(value: Any) -> ScriptedAnswer:
    if isinstance(value, ScriptedAnswer):
        return value
    if isinstance(value, str):
        return ScriptedAnswer(text=value)
    return ScriptedAnswer.model_validate(value)


def _problem(exc: ValidationError) -> tuple[str, str]:
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]), first["msg"].removeprefix("Value error, ")


def load_script(path: str | Path) -> list[ScriptedAnswer]:
    """Read answers from a JSON list, a JSONL file (one answer a line) or a YAML list.

    JSON and YAML files may also hold a mapping with the list under ``answers``.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProviderSetupError(f"scripted: answers file {source} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(source, f"cannot be read: {exc}") from None
    if source.suffix.lower() == ".jsonl":
        answers: list[ScriptedAnswer] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                answers.append(_answer(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise RecordError(source, f"malformed JSON: {exc.msg}", line=number) from None
            except ValidationError as exc:
                field, problem = _problem(exc)
                raise RecordError(source, problem, field=field or None, line=number) from None
        return answers
    try:
        data = json.loads(text) if source.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise RecordError(source, f"malformed {source.suffix.lstrip('.').upper()}: {exc}") from None
    if isinstance(data, Mapping):
        data = data.get("answers")
    if not isinstance(data, list):
        raise RecordError(source, "expected a list of answers (or a mapping with 'answers')")
    result = []
    for index, item in enumerate(data):
        try:
            result.append(_answer(item))
        except ValidationError as exc:
            field, problem = _problem(exc)
            where = f"answers[{index}]" + (f".{field}" if field else "")
            raise RecordError(source, problem, field=where) from None
    return result


class ScriptedProvider(Provider):
    """Answers from a queue, in order; then from `responder`, if given; then a clear error.

    Not cached by default (``cacheable=False``): queued answers are meant to be consumed in
    order, and a cache would hand the first answer back for every repeat of a request. Every
    request received is kept in `requests`, for tests to inspect.
    """

    name = "scripted"

    def __init__(
        self,
        answers: Iterable[str | Mapping[str, Any] | ScriptedAnswer] = (),
        *,
        responses: str | Path | None = None,
        responder: Responder | None = None,
        cacheable: bool = False,
        name: str = "scripted",
        base_url: str | None = None,
    ) -> None:
        queued = [_answer(a) for a in answers]
        if responses is not None:
            queued += load_script(responses)
        self.name = name
        self.base_url = base_url
        self.cacheable = cacheable
        self.responder = responder
        self.scripted = len(queued)
        self.requests: list[CompletionRequest] = []
        self._queue: deque[ScriptedAnswer] = deque(queued)
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> ScriptedProvider:
        """A provider answering from the script at `path` (JSON, JSONL or YAML)."""
        return cls(responses=path, **options)

    @property
    def remaining(self) -> int:
        """Answers left in the queue."""
        with self._lock:
            return len(self._queue)

    def complete(self, request: CompletionRequest) -> Completion:
        """The next queued answer, or the responder's."""
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            answer = self._queue.popleft() if self._queue else None
        if answer is None:
            if self.responder is None:
                raise ProviderCallError(
                    self.name,
                    request.model,
                    f"no scripted answer left for call {number} (the script held "
                    f"{self.scripted}); add answers or a responder",
                )
            reply = self.responder(request)
            if isinstance(reply, Completion):
                return reply
            answer = _answer(reply)
        return self._completion(request, answer, number)

    def _completion(
        self, request: CompletionRequest, answer: ScriptedAnswer, number: int
    ) -> Completion:
        if answer.error is not None:
            status = answer.error.status
            raise ProviderCallError(
                self.name,
                request.model,
                answer.error.message,
                status=status,
                retryable=status is None or ProviderCallError.retryable_status(status),
                retry_after=answer.error.retry_after,
            )
        return Completion(
            text=answer.text or "",
            model_served=answer.model_served,
            fingerprint=answer.fingerprint,
            usage=answer.usage,
            cost_usd=answer.cost_usd,
            raw=answer.raw if answer.raw is not None else {"scripted_call": number},
            provider=self.name,
        )
