"""Reading what a judge needs from a stored run: report, trace, shell log, snapshot, scenario.

Judges read stored runs only, never the agent's environment: that is what makes scoring
retroactive and free of execution cost.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from agentledger.errors import RecordError
from agentledger.judges.base import ExpectedDiagnosis, JudgeInput
from agentledger.records import parse_shell_audit
from agentledger.store.ledger import Ledger
from agentledger.store.writer import AUDIT, PROMPT, REPORT, SHELL_AUDIT

__all__ = ["MAX_TEXT_BYTES", "expectations_from_suite", "load_judge_input"]

MAX_TEXT_BYTES = 2 * 1024 * 1024
"""Artifacts longer than this are cut (with a marker) before a judge reads them."""
SCENARIO = "scenario.yaml"


def _text(raw: bytes) -> str:
    if len(raw) > MAX_TEXT_BYTES:
        cut = raw[:MAX_TEXT_BYTES].decode("utf-8", "replace")
        return cut + f"\n[... cut: {len(raw) - MAX_TEXT_BYTES} more bytes not shown]\n"
    return raw.decode("utf-8", "replace")


def _expected_from_scenario(raw: bytes) -> ExpectedDiagnosis | None:
    """The expected root cause in a run's copy of its scenario.yaml (None if it has none)."""
    from agentledger.runner.scenario import Scenario

    try:
        data = yaml.safe_load(raw.decode("utf-8", "replace"))
        scenario = Scenario.model_validate(data)
    except (yaml.YAMLError, ValidationError):
        return None
    if scenario.expected is None:
        return None
    return ExpectedDiagnosis(
        root_cause=scenario.expected.root_cause, patterns=list(scenario.expected.patterns)
    )


def expectations_from_suite(path: Path) -> dict[str, ExpectedDiagnosis]:
    """Expected root causes by scenario id, from a suite (for runs that do not carry theirs)."""
    from agentledger.runner.scenario import load_suite

    found = {}
    for scenario in load_suite(path):
        if scenario.spec.expected is not None:
            found[scenario.id] = ExpectedDiagnosis(
                root_cause=scenario.spec.expected.root_cause,
                patterns=list(scenario.spec.expected.patterns),
            )
    return found


def load_judge_input(
    ledger: Ledger, run_id: str, expectations: dict[str, ExpectedDiagnosis] | None = None
) -> JudgeInput:
    """What a judge reads of run `run_id`; a run's own scenario.yaml wins over `expectations`."""
    stored = ledger.load(run_id)
    files = stored.manifest.files

    def read(name: str) -> bytes | None:
        return ledger.read_bytes(run_id, name) if name in files else None

    events = None
    raw_log = read(SHELL_AUDIT)
    if raw_log is not None:
        try:
            events = parse_shell_audit(raw_log, f"{run_id}: {SHELL_AUDIT}")
        except RecordError:
            events = None
    snapshot = None
    for name in sorted(files):
        if name == "snapshot" or name.startswith("snapshot."):
            snapshot = (name, _text(ledger.read_bytes(run_id, name)))
            break
    expected = None
    raw_scenario = read(SCENARIO)
    if raw_scenario is not None:
        expected = _expected_from_scenario(raw_scenario)
    if expected is None and expectations:
        expected = expectations.get(stored.metadata.scenario)
    report, audit, prompt = read(REPORT), read(AUDIT), read(PROMPT)
    return JudgeInput(
        run_id=run_id,
        metadata=stored.metadata,
        report=_text(report) if report is not None else None,
        audit=_text(audit) if audit is not None else None,
        events=events,
        snapshot=snapshot,
        expected=expected,
        prompt=_text(prompt) if prompt is not None else None,
    )
