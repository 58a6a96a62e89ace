"""Two corpora that measure how much the gate lets investigators do (issue 33).

- `readonly_commands.txt`: plainly read-only commands of the kind investigators type, written
  from common usage, not from the classifier's knowledge. Goal: at least 60% run in
  investigate mode. First run, before any rule of issue 33 changed: FIRST_RUN_ALLOWED.
- `investigator_commands.jsonl`: the read-only commands real investigators ran, from the
  repository's own data (the sample runs' shell audits, the trajectory blind set, and the
  OpenHands sample trajectories' commands the gate allowed before issue 33). Goal: at most 2%
  refused.
"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).parent / "data"
FIRST_RUN_ALLOWED = 367 / 371
"""The share of `readonly_commands.txt` allowed in investigate mode before issue 33's rules."""


def readonly_commands() -> list[str]:
    """The plainly read-only command lines."""
    lines = (DATA / "readonly_commands.txt").read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def investigator_commands() -> list[tuple[str, str]]:
    """(source, command line) of the real investigator commands."""
    rows = (DATA / "investigator_commands.jsonl").read_text().splitlines()
    return [(row["source"], row["command"]) for row in map(json.loads, rows)]


def allowed_share(commands: list[str]) -> tuple[float, list[tuple[str, str]]]:
    """The share of `commands` the packaged investigate policy lets run, and the refused ones
    with the reason."""
    from agentledger.runner.shell_gate import Gate, load_policy

    gate = Gate(load_policy(None), None, ci=True)
    refused = []
    for command in commands:
        decision = gate.decide(command)
        if decision.decision != "allowed":
            refused.append((command, decision.reason))
    return 1 - len(refused) / len(commands), refused


def tldr_commands() -> list[tuple[str, str]]:
    """(tldr page, command line) of the tldr examples `make_tldr_corpus.py` marked plainly
    read-only (tldr_examples.json: CC BY 4.0, the tldr-pages contributors)."""
    document = json.loads((DATA / "tldr_examples.json").read_text(encoding="utf-8"))
    return [(row["page"], row["command"]) for row in document["examples"] if row["read_only"]]
