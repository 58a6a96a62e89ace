"""Many small runs in the seed's layout, for tests that need an import or a judge to last."""

from __future__ import annotations

import json
from pathlib import Path

REPORT = (
    "# Report\n\n## Root cause\nA netem qdisc on eth0 adds 200 ms.\n\n## Remediation\n"
    "Run `tc qdisc del dev eth0 root`, then `tc qdisc show dev eth0` to confirm.\n"
)


def write_runs(root: Path, count: int) -> None:
    """`count` small runs with distinct ids under `root`."""
    audit = json.dumps({"timestamp": "2026-03-12T10:15:02Z", "command": "tc qdisc show"}) + "\n"
    for number in range(count):
        name = f"use_case_{number:05d}_haiku_20260312"
        directory = root / name
        directory.mkdir(parents=True)
        (directory / "PROMPT.txt").write_text(f"Symptom number {number}.\n")
        (directory / "ghost_report_20260312.md").write_text(REPORT)
        (directory / "ghost_audit_20260312.md").write_text("# Trace\nChecked tc.\n")
        (directory / "shell_audit_20260312.jsonl").write_text(audit)
        metadata = {"run_id": name, "model": "claude-haiku-4-5", "system_prompt_hash": "a3f9c2d1"}
        (directory / "metadata.json").write_text(json.dumps(metadata))
