"""How a run ended, once the gated shell's own failures are counted.

An agent whose commands could not start (the gate's sandbox is missing: bubblewrap is not
installed, or the kernel refuses its user namespace) may go on and write a report as if it had
looked. The gate notes each command it could not start in `gate_errors.jsonl` beside the shell
log; a run in which no command ran but some were tried is `failed`, with the gate's reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentledger.runner.nothing_started import NOTHING_STARTED
from agentledger.runner.process import ProcessOutcome
from agentledger.runner.shell_gate.gate import GATE_ERRORS_FILE

__all__ = ["gate_outcome"]


def gate_outcome(
    outcome: ProcessOutcome, out_dir: Path, events: list[Any] | None, notes: list[str]
) -> ProcessOutcome:
    """`outcome`, or `failed` when the gated shell could not start any command the agent tried.

    An agent that goes on after its commands failed to start (no sandbox here) would otherwise
    leave an `ok` run in which nothing ran: a judge would score it as if it had.
    """
    path = out_dir / GATE_ERRORS_FILE
    if not path.is_file():
        return outcome
    tried, errors = _gate_errors(path)
    if not errors:
        return outcome
    ran = sum(1 for event in events or () if event.exit_code is not None)
    if ran:
        notes.append(f"the gated shell could not start {tried} command(s): {errors[0]}")
        return outcome
    if outcome.status != "ok":
        notes.append(f"the gated shell could not start any command: {errors[0]}")
        return outcome
    error = f"{NOTHING_STARTED}{tried} command(s) the agent tried: {errors[0]}"
    return ProcessOutcome("failed", outcome.exit_code, outcome.duration_s, error)


def _gate_errors(path: Path) -> tuple[int, list[str]]:
    """How many commands a gate_errors.jsonl names, and its distinct reasons in order (a line
    that does not parse is kept as it is)."""
    tried = 0
    reasons: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        tried += 1
        try:
            reason = str(json.loads(line).get("error", line))
        except (ValueError, AttributeError):
            reason = line
        if reason not in reasons:
            reasons.append(reason)
    return tried, reasons
