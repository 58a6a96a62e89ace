"""The three attribute dialects of LLM spans, read as one: the GenAI semantic conventions.

Real spans come in three dialects while the GenAI conventions are still "development":

- **GenAI semconv**, current names (``gen_ai.provider.name``, ``gen_ai.input.messages``,
  ``gen_ai.usage.input_tokens``) and older ones (``gen_ai.system``, ``gen_ai.prompt``,
  ``gen_ai.usage.prompt_tokens``); Pydantic AI, Strands, the OpenHands SDK;
- **OpenInference** (Arize Phoenix's instrumentations, and the OpenAI Agents SDK's bridge):
  ``openinference.span.kind``,
  ``llm.model_name``, ``llm.input_messages.N.message.*``, ``llm.token_count.*``, ``tool.name``,
  ``input.value`` / ``output.value``;
- **OpenLLMetry** (Traceloop's instrumentations): ``traceloop.span.kind``,
  ``traceloop.entity.*``, ``llm.request.type``, ``gen_ai.prompt.N.role`` / ``.content``,
  ``gen_ai.completion.N.*``, ``llm.usage.*``.

`canonical_attributes` fills in the current GenAI names from whichever dialect a span speaks
(a name the span states itself is never overwritten), so that the OTLP importer maps one
vocabulary to steps. The system prompt given as a ``system`` message becomes
``gen_ai.system_instructions``; a model's cost (``llm.cost.total``, Pydantic AI's
``operation.cost``) becomes ``gen_ai.usage.cost``, in US dollars.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from agentledger.importers.openhands_events import command_class
from agentledger.records.trace import step_text_fields

__all__ = ["canonical_attributes", "message_call_steps", "message_tool_calls", "tool_answers"]

_INDEXED = re.compile(
    r"^(llm\.(?:input|output)_messages|gen_ai\.(?:prompt|completion))\.(\d+)\.(.+)$"
)
_OPENINFERENCE_OPERATIONS = {"LLM": "chat", "TOOL": "execute_tool", "AGENT": "invoke_agent"}
_TRACELOOP_OPERATIONS = {
    "tool": "execute_tool",
    "agent": "invoke_agent",
    "workflow": "invoke_agent",
}
_REQUEST_TYPES = {"chat": "chat", "completion": "text_completion"}
_RENAMED = {
    "gen_ai.system": "gen_ai.provider.name",
    "llm.provider": "gen_ai.provider.name",
    "llm.system": "gen_ai.provider.name",
    "gen_ai.usage.prompt_tokens": "gen_ai.usage.input_tokens",
    "gen_ai.usage.completion_tokens": "gen_ai.usage.output_tokens",
    "llm.usage.prompt_tokens": "gen_ai.usage.input_tokens",
    "llm.usage.completion_tokens": "gen_ai.usage.output_tokens",
    "llm.token_count.prompt": "gen_ai.usage.input_tokens",
    "llm.token_count.completion": "gen_ai.usage.output_tokens",
    "llm.cost.total": "gen_ai.usage.cost",
    "operation.cost": "gen_ai.usage.cost",
    "gen_ai.prompt": "gen_ai.input.messages",
    "gen_ai.completion": "gen_ai.output.messages",
    "gen_ai.openai.response.system_fingerprint": "gen_ai.response.system_fingerprint",
    "gen_ai.openai.system_fingerprint": "gen_ai.response.system_fingerprint",
    "tool.name": "gen_ai.tool.name",
    "tool_call.id": "gen_ai.tool.call.id",
}


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _indexed_messages(attrs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Messages flattened into attributes (``llm.input_messages.0.message.role``,
    ``gen_ai.prompt.0.content``), rebuilt as GenAI messages by their prefix."""
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attrs.items():
        match = _INDEXED.match(key)
        if match is None:
            continue
        prefix, number, rest = match[1], int(match[2]), match[3].removeprefix("message.")
        found.setdefault(prefix, {}).setdefault(number, {})[rest] = value
    out: dict[str, list[dict[str, Any]]] = {}
    for prefix, numbered in found.items():
        out[prefix] = [_message(numbered[n]) for n in sorted(numbered)]
    return out


def _message(fields: dict[str, Any]) -> dict[str, Any]:
    """One flattened message as a GenAI message: role, text parts and tool-call parts."""
    parts: list[dict[str, Any]] = []
    if isinstance(fields.get("content"), str):
        parts.append({"type": "text", "content": fields["content"]})
    texts: dict[int, str] = {}
    calls: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        content = re.match(r"^contents\.(\d+)\.message_content\.text$", key)
        if content and isinstance(value, str):
            texts[int(content[1])] = value
        found = re.match(
            r"^tool_calls\.(\d+)\.(?:tool_call\.)?(function\.name|function\.arguments|name|arguments|id)$",
            key,
        )
        if found:
            name = found[2].removeprefix("function.")
            calls.setdefault(int(found[1]), {})[name] = value
    parts += [{"type": "text", "content": texts[n]} for n in sorted(texts)]
    for n in sorted(calls):
        call = calls[n]
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "arguments": _json(call.get("arguments")),
            }
        )
    message: dict[str, Any] = {"role": fields.get("role"), "parts": parts}
    if isinstance(fields.get("tool_call_id"), str):
        message["parts"] = [
            {
                "type": "tool_call_response",
                "id": fields["tool_call_id"],
                "response": fields.get("content"),
            }
        ]
    return message


def _system_text(messages: Any) -> str | None:
    """The text of the system messages among GenAI messages (a list or its JSON)."""
    messages = _json(messages)
    if not isinstance(messages, list):
        return None
    texts: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("system", "developer"):
            continue
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
        for part in message.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("content"), str):
                texts.append(part["content"])
    return "\n".join(texts) if texts else None


def _operation(attrs: dict[str, Any], name: str, root: bool) -> str | None:
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str):
        if kind.upper() == "CHAIN" and root:
            return "invoke_agent"
        return _OPENINFERENCE_OPERATIONS.get(kind.upper())
    kind = attrs.get("traceloop.span.kind")
    if isinstance(kind, str) and kind in _TRACELOOP_OPERATIONS:
        operation = _TRACELOOP_OPERATIONS[kind]
        return operation if operation != "invoke_agent" or root else None
    request = attrs.get("llm.request.type")
    if isinstance(request, str):
        return _REQUEST_TYPES.get(request)
    return None


def canonical_attributes(attrs: dict[str, Any], name: str, root: bool) -> dict[str, Any]:
    """`attrs` of the span `name` (`root`: it has no parent) with the current GenAI names
    filled in from the dialect it speaks; the span's own current names are kept."""
    out = dict(attrs)

    def fill(key: str, value: Any) -> None:
        if value is not None and out.get(key) is None:
            out[key] = value

    if out.get("gen_ai.operation.name") is None:
        fill("gen_ai.operation.name", _operation(attrs, name, root))
    for old, new in _RENAMED.items():
        fill(new, attrs.get(old))
    for prefix, messages in _indexed_messages(attrs).items():
        key = (
            "gen_ai.input.messages"
            if prefix.endswith(("input_messages", "prompt"))
            else ("gen_ai.output.messages")
        )
        fill(key, messages)
    # OpenInference: llm.model_name is the model the answer names (served) when the request's
    # parameters name the one asked for; without them (the OpenAI Agents SDK's bridge) it is
    # the model configured, and what was served is not known.
    if "llm.model_name" in attrs:
        parameters = _json(attrs.get("llm.invocation_parameters"))
        asked = parameters.get("model") if isinstance(parameters, dict) else None
        if isinstance(asked, str):
            fill("gen_ai.request.model", asked)
            fill("gen_ai.response.model", attrs["llm.model_name"])
        else:
            fill("gen_ai.request.model", attrs["llm.model_name"])
    operation = out.get("gen_ai.operation.name")
    if operation == "execute_tool":
        fill("gen_ai.tool.name", attrs.get("traceloop.entity.name"))
        arguments = attrs.get("input.value", attrs.get("traceloop.entity.input"))
        parsed = _json(arguments)
        if isinstance(parsed, dict) and isinstance(parsed.get("kwargs"), dict):
            parsed = parsed["kwargs"]  # OpenLLMetry's {"args": [...], "kwargs": {...}}
        fill("gen_ai.tool.call.arguments", parsed if isinstance(parsed, dict) else arguments)
        fill(
            "gen_ai.tool.call.result",
            attrs.get("output.value", attrs.get("traceloop.entity.output")),
        )
    if operation == "invoke_agent":
        fill("gen_ai.agent.name", attrs.get("traceloop.entity.name") or attrs.get("agent.name"))
    fill("gen_ai.system_instructions", _system_text(out.get("gen_ai.input.messages")))
    return out


def message_tool_calls(messages: Any) -> list[dict[str, Any]]:
    """The tool calls a model's output messages ask for: ``{"id", "name", "arguments"}`` each
    (GenAI ``tool_call`` parts, or OpenAI's ``tool_calls``)."""
    messages = _json(messages)
    calls: list[dict[str, Any]] = []
    if not isinstance(messages, list):
        return calls
    for message in messages:
        if not isinstance(message, dict):
            continue
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                calls.append(
                    {
                        "id": part.get("id"),
                        "name": part.get("name"),
                        "arguments": _json(part.get("arguments")),
                    }
                )
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                calls.append(
                    {
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": _json(function.get("arguments")),
                    }
                )
    return calls


def tool_answers(messages: Any) -> dict[str, str]:
    """The answers to tool calls among a model's input messages, by call id."""
    messages = _json(messages)
    answers: dict[str, str] = {}
    if not isinstance(messages, list):
        return answers
    for message in messages:
        if not isinstance(message, dict):
            continue
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call_response":
                response = part.get("response", part.get("result"))
                if isinstance(part.get("id"), str):
                    answers[part["id"]] = (
                        response if isinstance(response, str) else json.dumps(response)
                    )
        if message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
            content = message.get("content")
            answers[message["tool_call_id"]] = (
                content if isinstance(content, str) else json.dumps(content)
            )
    return answers


def message_call_steps(
    base: dict[str, Any],
    first: int,
    output: Any,
    answers: dict[str, str],
    moment: datetime | None,
) -> list[dict[str, Any]]:
    """The tool calls a model's answer asks for, as step fields from index `first` (a
    ``command`` argument makes a shell command, classified), each followed by its answer when
    a later request holds it (`tool_answers`)."""
    steps: list[dict[str, Any]] = []
    for call in message_tool_calls(output):
        arguments = call["arguments"] if isinstance(call["arguments"], dict) else None
        command = (arguments or {}).get("command")
        is_command = isinstance(command, str)
        call_id = call["id"] if isinstance(call["id"], str) else None
        tool = call["name"] if isinstance(call["name"], str) else None
        index = first + len(steps)
        steps.append(
            {
                **base,
                "index": index,
                "time": moment,
                "actor": "agent",
                "kind": "command" if is_command else "tool_call",
                "tool": tool,
                "call_id": call_id,
                "arguments": arguments,
                "command": command if is_command else None,
                "command_class": command_class(command) if is_command else None,
                "content": None,
            }
        )
        answer = answers.get(call_id) if call_id else None
        if answer is not None:
            steps.append(
                {
                    **base,
                    "index": index + 1,
                    "time": moment,
                    "actor": "tool",
                    "kind": "command_output" if is_command else "tool_result",
                    "tool": tool,
                    "call_id": call_id,
                    "cause": index,
                    "content": step_text_fields(answer),
                }
            )
    return steps
