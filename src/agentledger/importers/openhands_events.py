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

__all__ = [
    "ACTIONS",
    "ACTORS",
    "OBSERVATIONS",
    "QUIET_OBSERVATIONS",
    "action_type",
    "command_class",
    "count_or_none",
    "events_of",
    "observation_type",
    "runtime_notices",
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
