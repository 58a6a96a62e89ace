"""Tool calling: one conversation shape, and how the OpenAI and Anthropic APIs spell it.

A tool-calling agent keeps its conversation as `Turn`s (the user's task, the assistant's text
and tool calls, each call's result) and its tools as `ToolSpec`s. `openai_request` and
`anthropic_request` turn them into each API's body; `openai_turn` and `anthropic_turn` read an
answer back into a `ToolTurn` (its text, its calls, the tokens billed, the model served). The
providers make the call (`OpenAIProvider.complete_tools`, `AnthropicProvider.complete_tools`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from agentledger.providers.base import Completion, CompletionRequest, Message, Usage

__all__ = [
    "TOOL_TURN_KEY",
    "ToolCall",
    "ToolSpec",
    "ToolTurn",
    "Turn",
    "anthropic_request",
    "anthropic_turn",
    "openai_request",
    "openai_turn",
    "tools_completion",
    "tools_request",
]


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, its JSON Schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for; `arguments` as decoded (a problem: `error`)."""

    id: str
    name: str
    arguments: dict[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class Turn:
    """One step of the conversation: the user's text, the assistant's text and calls, or the
    result of one call."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None


@dataclass
class ToolTurn:
    """The model's answer: text, the calls it asks for, and what the provider said."""

    text: str
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    model_served: str | None = None
    fingerprint: str | None = None
    cost_usd: float | None = None
    """List-price cost of the call (the price table), None when the model has no price."""

    def to_json(self) -> dict[str, Any]:
        """The turn as plain JSON (how the response cache and recordings keep it)."""
        return {
            "text": self.text,
            "calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments, "error": c.error}
                for c in self.calls
            ],
        }

    @classmethod
    def from_completion(cls, completion: Completion) -> ToolTurn:
        """The turn a stored `Completion` of a tool call holds (see `tools_completion`)."""
        kept = completion.raw.get(TOOL_TURN_KEY) or {}
        calls = [
            ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}), c.get("error"))
            for c in kept.get("calls") or []
        ]
        return cls(
            text=str(kept.get("text", completion.text)),
            calls=calls,
            usage=completion.usage,
            model_served=completion.model_served,
            fingerprint=completion.fingerprint,
            cost_usd=completion.cost_usd,
        )


TOOL_TURN_KEY = "agentledger_tool_turn"
"""Where a stored Completion of a tool call keeps the turn (text and calls)."""


def tools_request(
    model: str,
    system: str | None,
    turns: list[Turn],
    tools: list[ToolSpec],
    params: dict[str, Any],
    sample: int = 0,
) -> CompletionRequest:
    """A tool call as a `CompletionRequest`, for the response cache and recordings: the
    conversation and the tools, as canonical JSON, are its one message. Never sent as such."""
    conversation = {
        "tool_conversation": [
            {"role": t.role, "text": t.text, "call_id": t.call_id,
             "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in t.calls]}
            for t in turns
        ],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools
        ],
    }  # fmt: skip
    return CompletionRequest(
        model=model,
        system=system,
        messages=[Message(role="user", content=json.dumps(conversation, sort_keys=True))],
        params=dict(params),
        sample=sample,
    )


def tools_completion(turn: ToolTurn, provider: str) -> Completion:
    """A tool call's answer as a `Completion` (its text, usage and cost; the turn in `raw`)."""
    return Completion(
        text=turn.text,
        model_served=turn.model_served,
        fingerprint=turn.fingerprint,
        usage=turn.usage,
        cost_usd=turn.cost_usd,
        raw={TOOL_TURN_KEY: turn.to_json()},
        provider=provider,
    )


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError) as exc:
        return {}, f"the arguments are not JSON: {exc}"
    if not isinstance(value, dict):
        return {}, "the arguments are not a JSON object"
    return value, None


def openai_request(system: str | None, turns: list[Turn], tools: list[ToolSpec]) -> dict[str, Any]:
    """messages and tools of a Chat Completions request."""
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    for turn in turns:
        if turn.role == "tool":
            messages.append({"role": "tool", "tool_call_id": turn.call_id, "content": turn.text})
        elif turn.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if turn.calls:
                message["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in turn.calls
                ]  # fmt: skip
            messages.append(message)
        else:
            messages.append({"role": "user", "content": turn.text})
    return {
        "messages": messages,
        "tools": [
            {"type": "function",
             "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in tools
        ],
    }  # fmt: skip


def openai_turn(body: dict[str, Any]) -> ToolTurn:
    """A Chat Completions answer as a ToolTurn."""
    choices = body.get("choices") or [{}]
    message = choices[0].get("message") or {}
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments, error = _arguments(function.get("arguments"))
        calls.append(ToolCall(str(call.get("id")), str(function.get("name")), arguments, error))
    usage = body.get("usage")
    return ToolTurn(
        text=message.get("content") or "",
        calls=calls,
        usage=(
            Usage(input_tokens=usage["prompt_tokens"], output_tokens=usage["completion_tokens"])
            if usage
            else None
        ),
        model_served=body.get("model"),
        fingerprint=body.get("system_fingerprint"),
    )


def anthropic_request(
    system: str | None, turns: list[Turn], tools: list[ToolSpec]
) -> dict[str, Any]:
    """system, messages and tools of a Messages API request (tool results go back as a user
    message of tool_result blocks, one message for consecutive results)."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if turn.role == "tool":
            block = {"type": "tool_result", "tool_use_id": turn.call_id, "content": turn.text}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        elif turn.role == "assistant":
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": turn.text}] if turn.text else []
            )
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in turn.calls
            ]
            messages.append({"role": "assistant", "content": blocks})
        else:
            messages.append({"role": "user", "content": turn.text})
    request: dict[str, Any] = {
        "messages": messages,
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ],
    }
    if system is not None:
        request["system"] = system
    return request


def anthropic_turn(body: dict[str, Any]) -> ToolTurn:
    """A Messages API answer as a ToolTurn."""
    text = []
    calls = []
    for block in body.get("content") or []:
        if block.get("type") == "text":
            text.append(block.get("text") or "")
        elif block.get("type") == "tool_use":
            arguments, error = _arguments(block.get("input"))
            calls.append(ToolCall(str(block.get("id")), str(block.get("name")), arguments, error))
    usage = body.get("usage")
    return ToolTurn(
        text="".join(text),
        calls=calls,
        usage=(
            Usage(input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"])
            if usage
            else None
        ),
        model_served=body.get("model"),
    )
