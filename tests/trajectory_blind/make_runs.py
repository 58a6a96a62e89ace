"""Writes the blind set's synthetic runs from the sessions in `sessions.py`.

The blind set is data: the files this script writes are committed, and the labels beside them
(`labels.csv`) were written by reading those files, before any rule of the ops-trajectory
pack existed. Run it again only to re-create the same bytes (`python make_runs.py`); it is
deterministic.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from sessions import SESSIONS, Session  # noqa: E402

START = datetime(2026, 4, 2, 9, 0, 0)


def _openhands(session: Session) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    clock = START

    def add(event: dict[str, Any]) -> int:
        nonlocal clock
        clock += timedelta(seconds=3)
        event = {"id": len(events), "timestamp": clock.isoformat(), **event}
        events.append(event)
        return event["id"]

    add(
        {
            "source": "user",
            "action": "message",
            "message": session.prompt,
            "args": {"content": session.prompt},
        }
    )
    for step in session.steps:
        kind = step[0]
        if kind == "cmd":
            _, command, output, exit_code = step[:4]
            cause = add(
                {
                    "source": "agent",
                    "action": "run",
                    "message": f"Running command: {command}",
                    "args": {"command": command},
                    "tool_call_metadata": {"function_name": "execute_bash"},
                }
            )
            add(
                {
                    "source": "agent",
                    "observation": "run",
                    "cause": cause,
                    "content": output,
                    "extras": {"command": command, "metadata": {"exit_code": exit_code}},
                }
            )
        elif kind == "read":
            _, path, output = step
            cause = add(
                {
                    "source": "agent",
                    "action": "read",
                    "message": f"Reading file: {path}",
                    "args": {"path": path},
                    "tool_call_metadata": {"function_name": "str_replace_editor"},
                }
            )
            add({"source": "agent", "observation": "read", "cause": cause, "content": output})
        elif kind == "write":
            _, path, text, mode = step
            args: dict[str, Any] = {"path": path, "command": mode}
            if mode == "create":
                args["file_text"] = text
            else:
                old, new = text
                args["old_str"], args["new_str"] = old, new
            cause = add(
                {
                    "source": "agent",
                    "action": "edit",
                    "message": f"Editing {path}",
                    "args": args,
                    "tool_call_metadata": {"function_name": "str_replace_editor"},
                }
            )
            add(
                {
                    "source": "agent",
                    "observation": "edit",
                    "cause": cause,
                    "content": f"The file {path} has been edited.",
                }
            )
        elif kind == "code":
            _, code, output = step
            cause = add(
                {
                    "source": "agent",
                    "action": "run_ipython",
                    "message": "Running Python code",
                    "args": {"code": code},
                    "tool_call_metadata": {"function_name": "execute_ipython_cell"},
                }
            )
            add(
                {"source": "agent", "observation": "run_ipython", "cause": cause, "content": output}
            )
        elif kind == "browse":
            _, url, output = step
            cause = add(
                {
                    "source": "agent",
                    "action": "browse",
                    "message": f"Browsing {url}",
                    "args": {"url": url},
                    "tool_call_metadata": {"function_name": "browser"},
                }
            )
            add({"source": "agent", "observation": "browse", "cause": cause, "content": output})
        elif kind == "think":
            add(
                {
                    "source": "agent",
                    "action": "think",
                    "message": step[1],
                    "args": {"thought": step[1]},
                }
            )
        elif kind == "msg":
            add(
                {
                    "source": "agent",
                    "action": "message",
                    "message": step[1],
                    "args": {"content": step[1]},
                }
            )
        elif kind == "finish":
            add(
                {
                    "source": "agent",
                    "action": "finish",
                    "message": step[1],
                    "args": {"final_thought": step[1]},
                }
            )
        else:
            raise ValueError(f"{session.name}: OpenHands has no step {kind!r}")
    return events


def _jsonl(session: Session) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [
        {"run": {"scenario": session.scenario, "model": session.model, "prompt": session.prompt}}
    ]
    clock = START.replace(tzinfo=UTC)

    def add(step: dict[str, Any]) -> int:
        nonlocal clock
        clock += timedelta(seconds=2)
        step = {"time": clock.isoformat().replace("+00:00", "Z"), **step}
        lines.append(step)
        return len(lines) - 2

    add({"actor": "user", "kind": "message", "content": session.prompt})
    for step in session.steps:
        kind = step[0]
        if kind == "cmd":
            _, command, output, exit_code = step[:4]
            denied = len(step) > 4 and step[4] == "denied"
            gate = (
                {
                    "decision": "denied",
                    "decided_by": "policy",
                    "reason": "not read-only",
                    "policy": "default",
                }
                if denied
                else {"decision": "allowed", "decided_by": "policy", "policy": session.policy}
            )
            cause = add(
                {
                    "actor": "agent",
                    "kind": "command",
                    "tool": "shell",
                    "command": command,
                    "gate": gate,
                }
            )
            if denied:
                add(
                    {
                        "actor": "tool",
                        "kind": "error",
                        "cause": cause,
                        "content": f"denied by the gate: {command}",
                    }
                )
            else:
                add(
                    {
                        "actor": "tool",
                        "kind": "command_output",
                        "cause": cause,
                        "exit_code": exit_code,
                        "content": output,
                    }
                )
        elif kind == "read":
            _, path, output = step
            cause = add(
                {
                    "actor": "agent",
                    "kind": "file_read",
                    "tool": "read_file",
                    "arguments": {"path": path},
                }
            )
            add({"actor": "tool", "kind": "tool_result", "cause": cause, "content": output})
        elif kind == "write":
            _, path, text, mode = step
            arguments: dict[str, Any] = {"path": path, "command": mode}
            if mode == "create":
                arguments["file_text"] = text
            else:
                arguments["old_str"], arguments["new_str"] = text
            cause = add(
                {
                    "actor": "agent",
                    "kind": "file_write",
                    "tool": "write_file",
                    "arguments": arguments,
                }
            )
            add(
                {"actor": "tool", "kind": "tool_result", "cause": cause, "content": f"wrote {path}"}
            )
        elif kind == "code":
            _, code, output = step
            cause = add(
                {
                    "actor": "agent",
                    "kind": "code",
                    "tool": "python",
                    "arguments": {"code": code},
                    "content": code,
                }
            )
            add({"actor": "tool", "kind": "tool_result", "cause": cause, "content": output})
        elif kind == "browse":
            _, url, output = step
            cause = add(
                {"actor": "agent", "kind": "browse", "tool": "browser", "arguments": {"url": url}}
            )
            add({"actor": "tool", "kind": "tool_result", "cause": cause, "content": output})
        elif kind == "think":
            add({"actor": "agent", "kind": "reasoning", "content": step[1]})
        elif kind == "msg":
            add({"actor": "agent", "kind": "message", "content": step[1]})
        elif kind == "finish":
            add({"actor": "agent", "kind": "finish", "content": step[1]})
        else:
            raise ValueError(f"{session.name}: no step {kind!r}")
    return lines


def main() -> None:
    for session in SESSIONS:
        if session.framework == "openhands":
            folder = HERE / "openhands" / session.model
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"traj_{session.scenario}.json"
            if path.exists() and path.stat().st_size and path.name in _written:
                raise SystemExit(f"two OpenHands sessions write {path}")
            _written.add(path.name + session.model)
            path.write_text(json.dumps(_openhands(session), indent=1) + "\n")
        elif session.framework == "own":
            folder = HERE / "own"
            folder.mkdir(exist_ok=True)
            path = folder / f"{session.name}.jsonl"
            path.write_text("".join(json.dumps(line) + "\n" for line in _jsonl(session)))
        elif session.framework == "inspect":
            continue  # written by make_inspect.py (needs inspect-ai)
        else:
            raise SystemExit(f"{session.name}: unknown framework {session.framework}")


_written: set[str] = set()

if __name__ == "__main__":
    main()
