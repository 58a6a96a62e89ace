"""What the fields of an OpenHands event mean for its step: the kinds of its actions and
observations, who acted, the class of a command, and the texts a step keeps (a command's
output without its echo, with the runtime's notices). `openhands._Reader` builds the steps."""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

from agentledger.errors import RecordError
from agentledger.identity import HASH_PREFIX
from agentledger.records.trace import MAX_STEP_TEXT
from agentledger.shell.classifier import classify

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentledger.importers.trace_runs import TraceFacts

__all__ = [
    "ACTIONS",
    "ACTORS",
    "OBSERVATIONS",
    "QUIET_OBSERVATIONS",
    "action_type",
    "command_class",
    "count_or_none",
    "events_of",
    "note_action",
    "observation_type",
    "runtime_notices",
    "state_changed",
    "step_content",
    "str_or_none",
    "without_echo",
]

ACTIONS = {
    "run": "command",
    "run_ipython": "code",
    "read": "file_read",
    "edit": "file_write",
    "write": "file_write",
    "browse": "browse",
    "browse_interactive": "browse",
    "think": "reasoning",
    "message": "message",
    "system": "message",
    "finish": "finish",
    "chat": "tool_call",
    "delegate": "tool_call",
    "call_tool_mcp": "tool_call",
    "mcp": "tool_call",
}
OBSERVATIONS = {"run": "command_output", "error": "error"}
QUIET_OBSERVATIONS = {"agent_state_changed", "null", "user_rejected"}
ACTORS = {"agent": "agent", "user": "user", "environment": "environment"}


@functools.lru_cache(maxsize=4096)
def command_class(command: str) -> str:
    """The class of a command line by agentledger.shell; 'unknown' when it cannot be read."""
    try:
        return classify(command).kind
    except (ValueError, RecursionError):
        return "unknown"


def events_of(data: Any, origin: str) -> tuple[list[Any], dict[str, Any]]:
    """A trajectory's events and its metadata: a JSON list of events, or an object whose
    ``history`` is that list (RecordError naming `origin` otherwise). A trajectory without an
    event is refused, as an empty trace of any other format is: it holds no run."""
    found: tuple[list[Any], dict[str, Any]] | None = None
    if isinstance(data, list):
        found = data, {}
    elif isinstance(data, dict) and isinstance(data.get("history"), list):
        meta = data.get("metadata")
        found = data["history"], meta if isinstance(meta, dict) else {}
    if found is not None:
        if not found[0]:
            raise RecordError(
                origin, "no events: the trajectory's list is empty, so it holds no run"
            )
        return found
    raise RecordError(
        origin,
        f"expected a JSON list of events (or an object with a 'history' list), found "
        f"{type(data).__name__}",
    )


def without_echo(output: str, command: Any) -> str | None:
    """A command's output without the terminal's echo of a command of several lines, which
    OpenHands' shell records first (each line without its trailing spaces)."""
    if not isinstance(command, str) or "\n" not in command:
        return output
    echo = "\n".join(line.rstrip() for line in command.split("\n"))
    if not output.startswith(echo):
        return output
    rest = output[len(echo) :]
    if not rest:
        return None
    return rest[1:] or None if rest[0] == "\n" else output


def str_or_none(value: Any) -> str | None:
    """`value` when it is a string with something in it."""
    return value if isinstance(value, str) and value != "" else None


def count_or_none(value: Any) -> int | None:
    """`value` when it is a whole number, not negative (and not a bool)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@functools.lru_cache(maxsize=1024)
def action_type(action: str) -> str:
    """The raw_type of an action step."""
    return f"action:{action}"


@functools.lru_cache(maxsize=1024)
def observation_type(observation: str) -> str:
    """The raw_type of an observation step."""
    return f"observation:{observation}"


def step_content(text: str) -> dict[str, Any]:
    """A step's content: its text (cut at MAX_STEP_TEXT), with the whole text's size and hash."""
    data = text.encode("utf-8", "surrogatepass")
    return {
        "text": text[:MAX_STEP_TEXT] if len(text) > MAX_STEP_TEXT else text,
        "bytes": len(data),
        "sha256": HASH_PREFIX + hashlib.sha256(data).hexdigest(),
        "truncated": len(text) > MAX_STEP_TEXT,
    }


# The runtime's plain notice after a command, which the exit code says already.
_COMPLETED = re.compile(r"\s*\[The command completed with exit code -?\d+\.\]\s*")


def runtime_notices(detail: dict[str, Any], output: str | None) -> str | None:
    """A command's output with the notices OpenHands' runtime put around it, as the agent
    saw them (``[Below is the output of the previous command.]``, ``[The command has no
    new output after 30 seconds. ...]``), but for the plain ``[The command completed with
    exit code N.]``, which the exit code says. So a command the runtime did not run says so
    where its output would be (``[Your command "..." is NOT executed. ...]``)."""
    prefix = str_or_none(detail.get("prefix"))
    suffix = str_or_none(detail.get("suffix"))
    if suffix is not None and _COMPLETED.fullmatch(suffix):
        suffix = None
    if prefix is None and suffix is None:
        return output
    text = (prefix or "") + (output or "") + (suffix or "")
    return text if text.strip() else None


def state_changed(facts: TraceFacts, extras: dict[str, Any]) -> str | None:
    """The text of an agent state change (``agent state: error: <reason>``); a change to
    the error state is how the run ended, unless a later one says otherwise."""
    state = str_or_none(extras.get("agent_state"))
    if state is None:
        return None
    reason = str_or_none(extras.get("reason"))
    if state == "error":
        facts.error = f"the agent ended in error: {reason or 'no reason given'}"
    elif state in ("finished", "running", "awaiting_user_input"):
        facts.error = None
    return f"agent state: {state}" + (f": {reason}" if reason else "")


def note_action(
    facts: TraceFacts, action: str, args: dict[str, Any], text: str | None, actor: str
) -> None:
    """What a system, message or finish action says of the run: its system prompt and agent,
    its prompt (the user's first message), its report."""
    if action == "system" and facts.system_prompt is None:
        facts.system_prompt = str_or_none(args.get("content"))
        agent = str_or_none(args.get("agent_class"))
        if agent:
            facts.agent_name = agent
    elif action == "message" and actor == "user" and facts.prompt is None:
        facts.prompt = text
    elif action == "finish":
        outputs = args.get("outputs")
        report = str_or_none(args.get("final_thought"))
        if report is None and isinstance(outputs, dict):
            report = str_or_none(outputs.get("content"))
        facts.report = report or text or ""
