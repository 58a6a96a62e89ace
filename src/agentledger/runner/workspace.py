"""The private working directory of one run while its agent works, and the contract with it.

```
<work>/
  input/PROMPT.txt           the scenario prompt            (AGENTLEDGER_PROMPT_FILE)
  input/system_prompt.txt    the effective system prompt    (AGENTLEDGER_SYSTEM_PROMPT_FILE)
  out/                       report.md, audit.md, result.json: the agent's (AGENTLEDGER_RUN_DIR)
  out/shell_audit.jsonl      appended by the gated shell, one line per command
  bin/gated-shell            the gated shell (AGENTLEDGER_SHELL)
  logs/                      agent stdout/stderr, environment log
```
The scenario directory itself is AGENTLEDGER_SCENARIO_DIR (nothing is copied). Everything in
`out/` and `logs/` becomes evidence when the run is sealed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ENV", "RunWorkspace", "gate_command"]

ENV = {
    "run_dir": "AGENTLEDGER_RUN_DIR",
    "prompt_file": "AGENTLEDGER_PROMPT_FILE",
    "system_prompt_file": "AGENTLEDGER_SYSTEM_PROMPT_FILE",
    "shell": "AGENTLEDGER_SHELL",
    "policy": "AGENTLEDGER_POLICY",
    "model": "AGENTLEDGER_MODEL",
    "provider": "AGENTLEDGER_PROVIDER",
    "params": "AGENTLEDGER_MODEL_PARAMS",
    "run_id": "AGENTLEDGER_RUN_ID",
    "scenario": "AGENTLEDGER_SCENARIO",
    "scenario_dir": "AGENTLEDGER_SCENARIO_DIR",
}
"""The environment variables a command agent receives (see docs/agents.md)."""


def gate_command() -> list[str]:
    """How to start `agentledger exec` with the same installation that is running now: its
    interpreter, isolated (``-I``): the agent sets the gated shell's environment, and a
    PYTHONPATH, PYTHONHOME or PYTHONSTARTUP of its choosing would run its code in the gate
    (a ``sitecustomize`` runs before any of the gate's own); nor is the user's site read."""
    return [sys.executable, "-I", "-m", "agentledger", "exec"]


@dataclass
class RunWorkspace:
    """Paths of one run's working directory; `create` makes it, `remove` deletes it."""

    root: Path

    @property
    def input_dir(self) -> Path:
        return self.root / "input"

    @property
    def out_dir(self) -> Path:
        return self.root / "out"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def prompt_file(self) -> Path:
        return self.input_dir / "PROMPT.txt"

    @property
    def system_prompt_file(self) -> Path:
        return self.input_dir / "system_prompt.txt"

    @property
    def shell(self) -> Path:
        return self.root / "bin" / "gated-shell"

    @property
    def audit_path(self) -> Path:
        return self.out_dir / "shell_audit.jsonl"

    @classmethod
    def create(cls, run_id: str, prompt: str, system_prompt: bytes) -> RunWorkspace:
        """A fresh private directory with the inputs written and the gated shell in place."""
        work = cls(Path(tempfile.mkdtemp(prefix=f"agentledger-{run_id[:40]}-")))
        for sub in (work.input_dir, work.out_dir, work.logs_dir, work.shell.parent):
            sub.mkdir()
        work.prompt_file.write_text(prompt, encoding="utf-8")
        work.system_prompt_file.write_bytes(system_prompt)
        launcher = " ".join(shlex.quote(part) for part in gate_command())
        work.shell.write_text(f'#!/bin/sh\nexec {launcher} -- "$@"\n', encoding="utf-8")
        work.shell.chmod(0o755)
        return work

    def environment(
        self,
        *,
        run_id: str,
        scenario: str,
        scenario_dir: Path,
        model: str,
        provider: str,
        params: dict[str, Any],
        policy: Path | None,
        extra: dict[str, str],
    ) -> dict[str, str]:
        """The environment of a command agent: the caller's, `extra`, then the contract."""
        env = {**os.environ, **extra}
        values = {
            "run_dir": str(self.out_dir),
            "prompt_file": str(self.prompt_file),
            "system_prompt_file": str(self.system_prompt_file),
            "shell": str(self.shell),
            "model": model,
            "provider": provider,
            "params": json.dumps(params, sort_keys=True),
            "run_id": run_id,
            "scenario": scenario,
            "scenario_dir": str(scenario_dir),
        }
        if policy is not None:
            values["policy"] = str(policy)
        env.pop(ENV["policy"], None)
        env.update({ENV[key]: value for key, value in values.items()})
        return env

    def remove(self) -> None:
        """Delete the working directory (after the run is sealed)."""
        shutil.rmtree(self.root, ignore_errors=True)
