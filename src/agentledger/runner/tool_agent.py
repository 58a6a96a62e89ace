"""The reference tool-calling agent: an `llm` agent with ``tools = true`` in its agent file.

The model gets the scenario's prompt and three tools, and the loop runs until it finishes:

- ``run_command(command, host?)``: one command through the gated shell (logged, decided by the
  policy; in a lab, run in the host named, or the lab's default host);
- ``read_file(path, host?)``: a file's text, read through the gated shell as ``cat``;
- ``finish(report)``: the final report (report.md); the run ends.

It speaks the OpenAI and Anthropic tool-calling APIs (`agentledger.providers.tools`), so a team
with an API key runs a real model in a lab with one `agentledger run`. Each turn's text goes to
audit.md; every command the model asks for is in shell_audit.jsonl, refused ones included.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from agentledger.providers.tools import ToolCall, ToolSpec, Turn

if TYPE_CHECKING:
    from agentledger.runner.adapters import AgentContext, ModelUse
    from agentledger.runner.shell_gate import GateResult

__all__ = ["TOOLS", "run_tool_loop"]

_HOST = {"type": "string", "description": "The lab host to run it on (default: the main host)."}
TOOLS = [
    ToolSpec(
        "run_command",
        "Run one shell command through the gated shell and see its exit code and output. "
        "Investigate mode allows read-only commands only.",
        {"type": "object", "properties": {"command": {"type": "string"}, "host": _HOST},
         "required": ["command"]},
    ),
    ToolSpec(
        "read_file",
        "Read a text file (through the gated shell).",
        {"type": "object", "properties": {"path": {"type": "string"}, "host": _HOST},
         "required": ["path"]},
    ),
    ToolSpec(
        "finish",
        "End the investigation with the final report (Markdown: root cause, remediation with "
        "commands, how to verify it).",
        {"type": "object", "properties": {"report": {"type": "string"}}, "required": ["report"]},
    ),
]  # fmt: skip
OUTPUT_LIMIT = 4000


class ToolLoopError(Exception):
    """The model did not finish within its turns."""


def _shown(result: GateResult) -> str:
    if result.denied:
        return f"denied by the gate: {result.reason}"
    out = result.stdout.decode("utf-8", "replace")
    err = result.stderr.decode("utf-8", "replace")
    text = f"exit {result.exit_code}\n{out}" + (f"\nstderr:\n{err}" if err.strip() else "")
    return text[-OUTPUT_LIMIT:]


def _command(call: ToolCall) -> str | None:
    host = call.arguments.get("host")
    if call.name == "run_command":
        command = call.arguments.get("command")
    elif call.name == "read_file":
        path = call.arguments.get("path")
        command = f"cat -- {shlex.quote(path)}" if isinstance(path, str) and path else None
    else:
        return None
    if not isinstance(command, str) or not command.strip():
        return None
    return f"{host}: {command}" if isinstance(host, str) and host.strip() else command


def _answer(context: AgentContext, call: ToolCall) -> str:
    """The result of one tool call, as the model will read it."""
    if call.error is not None:
        return f"error: {call.error}"
    command = _command(call)
    if command is None:
        return f"error: {call.name} needs its arguments ({', '.join(call.arguments) or 'none'})"
    return _shown(context.shell(command))


def run_tool_loop(context: AgentContext, use: ModelUse, *, max_turns: int) -> None:
    """Run the conversation until `finish` (report.md written); ToolLoopError after
    `max_turns` turns without one."""
    client = context._run.client
    assert client is not None
    turns = [Turn("user", context.prompt)]
    for number in range(1, max_turns + 1):
        context.check()
        answer = context.complete_tools(turns, TOOLS)
        turns.append(Turn("assistant", answer.text, tuple(answer.calls)))
        if answer.text.strip():
            context.log(f"## Turn {number}\n\n{answer.text}")
        if not answer.calls:
            context.write_report(answer.text)
            return
        for call in answer.calls:
            if call.name == "finish" and isinstance(call.arguments.get("report"), str):
                context.write_report(call.arguments["report"])
                return
            turns.append(Turn("tool", _answer(context, call), call_id=call.id))
    raise ToolLoopError(f"the model did not finish within {max_turns} turns")
