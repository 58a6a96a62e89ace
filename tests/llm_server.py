"""A real local HTTP server that speaks three LLM APIs, for testing providers through their SDKs.

Routes: OpenAI chat completions (``POST /v1/chat/completions``), Anthropic messages
(``POST /v1/messages``) and Gemini generateContent
(``POST /v1/models/<model>:generateContent``, or under ``/v1beta``). It keeps every request it
receives, and answers with queued replies (a status, headers, a delay) before falling back to a
success in the route's own shape.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

ANSWER = "Root cause: a tc netem qdisc on eth0 drops 30% of packets."
SERVED_SUFFIX = {"openai": "-2024-08-06", "anthropic": "-20251001", "gemini": "-001"}
FINGERPRINT = "fp_local_test"
USAGE = (1200, 300)  # input, output tokens of every successful answer


@dataclass
class Received:
    """One request the server received."""

    api: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Reply:
    """A queued reply: an error status (or 200), extra headers, and a delay before answering."""

    status: int = 200
    message: str = "scripted by the test"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    text: str | None = None
    tool_calls: list[Any] | None = None
    """Tool calls to answer with: (name, arguments) pairs, OpenAI or Anthropic shaped;
    or, OpenAI only, ``{"name", "arguments"}`` dicts added to a plain answer."""


def _api(path: str) -> str | None:
    if path == "/v1/chat/completions":
        return "openai"
    if path == "/v1/messages":
        return "anthropic"
    if re.fullmatch(r"/v1(beta)?/models/[^/]+:generateContent", path):
        return "gemini"
    return None


def tool_call_body(
    api: str, request: dict[str, Any], text: str, calls: list[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    """An answer asking for tool calls, in the shape of `api` (openai or anthropic)."""
    body = success_body(api, request, "", text)
    ids = [f"call_{len(request.get('messages', []))}_{n}" for n in range(len(calls))]
    if api == "openai":
        message = body["choices"][0]["message"]
        message["content"] = text or None
        message["tool_calls"] = [
            {"id": i, "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
            for i, (name, arguments) in zip(ids, calls, strict=True)
        ]  # fmt: skip
        body["choices"][0]["finish_reason"] = "tool_calls"
        return body
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {"type": "tool_use", "id": i, "name": name, "input": arguments}
        for i, (name, arguments) in zip(ids, calls, strict=True)
    ]
    body["content"] = blocks
    body["stop_reason"] = "tool_use"
    return body


def success_body(api: str, request: dict[str, Any], path: str, text: str) -> dict[str, Any]:
    """A successful answer in the shape of `api`."""
    tokens_in, tokens_out = USAGE
    if api == "openai":
        return {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": 1_760_000_000,
            "model": request["model"] + SERVED_SUFFIX[api],
            "system_fingerprint": FINGERPRINT,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }
    if api == "anthropic":
        return {
            "id": "msg_local",
            "type": "message",
            "role": "assistant",
            "model": request["model"] + SERVED_SUFFIX[api],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        }
    model = path.rsplit("/", 1)[-1].removesuffix(":generateContent")
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": tokens_in,
            "candidatesTokenCount": tokens_out,
            "totalTokenCount": tokens_in + tokens_out,
        },
        "modelVersion": model + SERVED_SUFFIX[api],
        "responseId": "resp-local",
    }


def _ask_tools(payload: dict[str, Any], calls: list[dict[str, Any]]) -> None:
    """Make an OpenAI answer one that asks for tool calls."""
    choice = payload["choices"][0]
    choice["finish_reason"] = "tool_calls"
    choice["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
            }
            for n, call in enumerate(calls)
        ],
    }


def error_body(api: str, status: int, message: str) -> dict[str, Any]:
    """An error in the shape of `api`."""
    if api == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api == "gemini":
        return {"error": {"code": status, "message": message, "status": "UNAVAILABLE"}}
    return {"error": {"message": message, "type": "server_error", "code": None}}


class LLMServer:
    """The server, listening on 127.0.0.1 on a free port, served from a background thread."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.answer = ANSWER
        self.respond: Callable[[dict[str, Any]], str] | None = None
        """When set, the text of each default success, made from the request's body."""
        self.responder: Callable[[Received], Reply] | None = None
        """Answers each request when no reply is queued (a scripted tool-calling model)."""
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's base URL, e.g. http://127.0.0.1:53211."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(self, *replies: Reply) -> None:
        """Queue replies, answered in order before the default success."""
        with self._lock:
            self._replies.extend(replies)

    def count(self, api: str | None = None) -> int:
        """How many requests arrived (for one API, or all)."""
        with self._lock:
            return sum(1 for r in self.requests if api is None or r.api == api)

    def start(self) -> LLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if self._replies:
                return self._replies.popleft()
        return self.responder(received) if self.responder is not None else Reply()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                path = self.path.split("?", 1)[0]
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                body = json.loads(raw or b"{}")
                api = _api(path)
                if api is None:
                    self._send(404, {"error": {"message": f"no route {path}"}}, {})
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._next(Received(api, path, headers, body))
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                pairs = reply.tool_calls and isinstance(reply.tool_calls[0], tuple)
                if reply.status == 200 and pairs:
                    payload = tool_call_body(api, body, reply.text or "", reply.tool_calls)
                elif reply.status == 200:
                    text = reply.text if reply.text is not None else server.answer
                    if reply.text is None and server.respond is not None:
                        text = server.respond(body)
                    payload = success_body(api, body, path, text)
                    if reply.tool_calls and api == "openai":
                        _ask_tools(payload, reply.tool_calls)
                else:
                    payload = error_body(api, reply.status, reply.message)
                self._send(reply.status, payload, reply.headers)

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
