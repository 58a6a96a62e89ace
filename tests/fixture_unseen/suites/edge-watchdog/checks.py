"""A custom scorer of the edge-watchdog suite (listed under `scorers:` in suite.yaml).

The runner executes the command mapped to the chosen action, not the text the model wrote; but
a `command` that differs from the mapping means the model is improvising, and the on-call
engineer reads that text in the page. Called as `scorer(output, expect)`.
"""

from __future__ import annotations

from typing import Any


def command_matches_action(output: dict[str, Any], expect: dict[str, Any]) -> tuple[bool, str]:
    """The output's `command` is exactly the allowlist's command for its `action` (or null)."""
    actions = expect.get("allowed_actions")
    if isinstance(actions, dict) and isinstance(actions.get("actions"), dict):
        actions = actions["actions"]
    if not isinstance(actions, dict):
        return True, "no allowlist map in expect.json: nothing to compare"
    action = output.get("action")
    command = output.get("command")
    if not isinstance(action, str) or action not in actions:
        return False, f"action {action!r} has no mapped command"
    mapped = actions[action]
    if command != mapped:
        return False, f"command {command!r} is not the mapped command {mapped!r} of {action!r}"
    return True, f"command of {action!r} is the mapped one"
