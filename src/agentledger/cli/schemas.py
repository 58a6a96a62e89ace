"""Every file format `agentledger schema` prints, by name: the CLI's table, since the formats
live in every layer (records, runner, gates, fixtures, ...) and only the CLI sits above them
all. The models are imported when the table is first asked for (by `schema` and the docs), as
plain imports the layer contract checks."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel

__all__ = ["json_schema", "schema_model", "schemas"]


@functools.cache
def schemas() -> dict[str, type[BaseModel]]:
    """Record or file format name -> its pydantic model."""
    from agentledger.gates.sentinels.spec import SentinelSpec
    from agentledger.gates.variants.spec import VariantSpec
    from agentledger.judges.trajectory_match import TrajectoryReferences
    from agentledger.labs.spec import LabSpec
    from agentledger.providers.base import RecordedResponse
    from agentledger.records import LedgerConfig, Manifest, RunMetadata, RunSummary, ShellEvent
    from agentledger.records.decisions import Decision
    from agentledger.records.labels import Label
    from agentledger.records.outcomes import Outcome
    from agentledger.records.scores import Score
    from agentledger.records.splits import Split
    from agentledger.records.trace import TraceStep
    from agentledger.runner.agent_spec import AgentSpec
    from agentledger.runner.scenario import Scenario
    from agentledger.runner.shell_gate.policy import Policy
    from agentledger.suites.lock import FixtureLock
    from agentledger.suites.recordings import Recording
    from agentledger.suites.results import FixtureReport
    from agentledger.suites.suite import SuiteSpec

    return {
        "agent": AgentSpec,
        "decision": Decision,
        "fixture-lock": FixtureLock,
        "fixture-recording": Recording,
        "fixture-results": FixtureReport,
        "fixture-suite": SuiteSpec,
        "lab": LabSpec,
        "label": Label,
        "ledger": LedgerConfig,
        "manifest": Manifest,
        "metadata": RunMetadata,
        "outcome": Outcome,
        "policy": Policy,
        "response": RecordedResponse,
        "scenario": Scenario,
        "score": Score,
        "sentinel": SentinelSpec,
        "shell-event": ShellEvent,
        "split": Split,
        "summary": RunSummary,
        "trace-step": TraceStep,
        "trajectory-references": TrajectoryReferences,
        "variant": VariantSpec,
    }


def schema_model(name: str) -> type[BaseModel]:
    """The pydantic model of the record called `name` (KeyError when unknown)."""
    return schemas()[name]


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the record called `name` (see `schemas`)."""
    return schema_model(name).model_json_schema(mode="validation")
