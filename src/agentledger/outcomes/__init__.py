"""Outcomes measured, not judged: an agent's remediation applied in a fresh lab, and recorded.

`store` keeps the records (outcomes/<run_id>/<outcome_id>.json, journaled); `labels` turns each
into a label of source ``lab`` for C1 to C4; `record_outcome` does both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentledger.outcomes.labels import LAB_SOURCE, criteria_of, label_of, write_lab_label
from agentledger.outcomes.store import OutcomeStore, latest_outcomes
from agentledger.records.outcomes import Outcome

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "LAB_SOURCE",
    "OutcomeStore",
    "criteria_of",
    "label_of",
    "latest_outcomes",
    "record_outcome",
    "write_lab_label",
]


def record_outcome(ledger: Ledger, outcome: Outcome) -> str:
    """Write `outcome` and its ``lab`` label; where the outcome went."""
    where = OutcomeStore(ledger).write_one(outcome)
    write_lab_label(ledger, outcome)
    return where
