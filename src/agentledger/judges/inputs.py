"""Reading what a judge needs from a stored run: report, trace, shell log, snapshot, scenario.

Judges read stored runs only, never the agent's environment: that is what makes scoring
retroactive and free of execution cost. The files are read through `agentledger.store.evidence`,
as the trace predicates read them, so a shell log means the same to both.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from pydantic import ValidationError

from agentledger.errors import RecordError
from agentledger.judges.base import ExpectedDiagnosis, JudgeInput
from agentledger.records.trace import TRACE, TraceStep, parse_trace
from agentledger.store.evidence import RunEvidence, load_run_evidence
from agentledger.store.ledger import Ledger
from agentledger.store.writer import AUDIT, PROMPT, REPORT

if TYPE_CHECKING:
    from agentledger.runner.scenario import Scenario

__all__ = [
    "MAX_TEXT_BYTES",
    "expectations_from_suite",
    "judge_input_of",
    "load_judge_input",
]

MAX_TEXT_BYTES = 2 * 1024 * 1024
"""Artifacts longer than this are cut (with a marker) before a judge reads them."""
SCENARIO = "scenario.yaml"


def _text(raw: bytes) -> str:
    if len(raw) > MAX_TEXT_BYTES:
        cut = raw[:MAX_TEXT_BYTES].decode("utf-8", "replace")
        return cut + f"\n[... cut: {len(raw) - MAX_TEXT_BYTES} more bytes not shown]\n"
    return raw.decode("utf-8", "replace")


def _scenario(raw: bytes) -> Scenario | None:
    """A run's copy of its scenario.yaml (None when it does not read as one)."""
    from agentledger.runner.scenario import Scenario

    try:
        data = yaml.safe_load(raw.decode("utf-8", "replace"))
        return Scenario.model_validate(data)
    except (yaml.YAMLError, ValidationError):
        return None


def _expected_from_scenario(scenario: Scenario | None) -> ExpectedDiagnosis | None:
    """The expected root cause in a run's copy of its scenario.yaml (None if it has none)."""
    if scenario is None or scenario.expected is None:
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
    ledger: Ledger,
    run_id: str,
    expectations: dict[str, ExpectedDiagnosis] | None = None,
    *,
    with_trace: bool = True,
) -> JudgeInput:
    """What a judge reads of run `run_id`; a run's own scenario.yaml wins over `expectations`.

    `with_trace=False` leaves the trace out (None) for judges whose criteria never read it:
    parsing a long trace costs more than judging a report."""
    return judge_input_of(load_run_evidence(ledger, run_id), expectations, with_trace=with_trace)


def judge_input_of(
    evidence: RunEvidence,
    expectations: dict[str, ExpectedDiagnosis] | None = None,
    *,
    with_trace: bool = True,
) -> JudgeInput:
    """What a judge reads of the run of `evidence` (see `load_judge_input`)."""
    run_id = evidence.run_id
    snapshot = None
    if evidence.snapshot_name is not None:
        raw_snapshot = evidence.read(evidence.snapshot_name)
        if raw_snapshot is not None:
            snapshot = (evidence.snapshot_name, _text(raw_snapshot))
    raw_scenario = evidence.read(SCENARIO)
    scenario = _scenario(raw_scenario) if raw_scenario is not None else None
    expected = _expected_from_scenario(scenario)
    if expected is None and expectations:
        expected = expectations.get(evidence.metadata.scenario)
    report, audit, prompt = (evidence.read(name) for name in (REPORT, AUDIT, PROMPT))
    return JudgeInput(
        run_id=run_id,
        metadata=evidence.metadata,
        report=_text(report) if report is not None else None,
        audit=_text(audit) if audit is not None else None,
        events=evidence.shell_log.events,
        snapshot=snapshot,
        expected=expected,
        prompt=_text(prompt) if prompt is not None else None,
        trace=_trace(evidence.read(TRACE)) if with_trace else None,
        scenario=scenario,
        summary=evidence.summary,
    )


def _trace(raw: bytes | None) -> tuple[TraceStep, ...] | None:
    """The run's steps; a trace that does not read (it was sealed, so it did once) is left out
    rather than guessed at, and the criteria that need it say so."""
    if raw is None:
        return None
    try:
        return tuple(parse_trace(raw, TRACE))
    except RecordError:
        return None
