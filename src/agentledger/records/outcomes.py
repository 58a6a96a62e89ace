"""Outcome records: what an agent's remediation really did, measured in a fresh lab.

```
ledger/outcomes/<run_id>/<outcome_id>.json      Outcome
```

A judge reads a report and says what a fix would do; an outcome says what it did. After a run of
a scenario with a lab, the agent's remediation (the commands it ran in remediate mode, or those
its report recommends) is applied in a fresh lab with the same fault, and four things are
measured, each true, false or null (could not be measured) with the reason:

- **fixed**: the symptom probe passes after the fix (and the fix did not game it: removing the
  service, stopping an owner or deleting a whole table is not a fix);
- **durable**: it still passes after every owner has run its cycles;
- **collateral**: some probe that must keep working or must stay blocked, or some list entry
  present before the fault, changed;
- **verified**: the agent's own verification commands, re-run after the fix, show what the
  report said they would.

Beside them: the probe results at each stage, the commands applied and those that could not be
(each with the reason), the owner cycles run, the lab spec's hash and the measurer's version.
Outcomes are written once, journaled and verified like scores; a re-measurement is a new record.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentledger.records import HASH_PATTERN, Record, utc_now
from agentledger.records.labels import aware_created_at, safe_run_id

__all__ = [
    "OUTCOMES_DIR",
    "OUTCOME_ID",
    "PROBE_ROLES",
    "STAGES",
    "AppliedCommand",
    "Measurer",
    "Outcome",
    "OutcomeReasons",
    "OwnerCycle",
    "ProbeResult",
    "ProbeStage",
    "SkippedCommand",
    "VerificationCheck",
    "new_outcome_id",
]

OUTCOMES_DIR = "outcomes"
OUTCOME_ID = r"^out_[0-9]{8}T[0-9]{6}Z_[0-9a-f]{8}$"
"""``out_<UTC time>_<8 hex>``: sortable by time, unique without coordination."""
_OUTCOME_ID = re.compile(OUTCOME_ID)

ProbeRole = Literal["symptom", "keep", "blocked", "entry"]
PROBE_ROLES: tuple[str, ...] = ("symptom", "keep", "blocked", "entry")
"""A probe's role in the lab spec: the fault's symptom (healthy once fixed), a flow that must
keep working, a flow that must stay blocked, or an entry that must remain in a list."""

STAGES: tuple[str, ...] = ("before-fault", "after-fault", "after-fix")
"""The fixed stages at which every probe runs; owner cycles add ``after-cycle-<n>``."""

RemediationSource = Literal["executed", "report", "none"]


def new_outcome_id(when: datetime | None = None) -> str:
    """A new outcome id for an outcome measured at `when` (now by default)."""
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    return f"out_{moment.strftime('%Y%m%dT%H%M%SZ')}_{secrets.token_hex(4)}"


class _Part(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, allow_inf_nan=False)


class ProbeResult(_Part):
    """One probe at one stage: did its check pass, and is that healthy for its role."""

    name: str = Field(description="The probe's name in the lab spec.")
    role: ProbeRole = Field(description="symptom, keep, blocked or entry.")
    passed: bool = Field(description="The probe's check passed (a blocked flow: it got through).")
    healthy: bool = Field(description="Healthy for its role (a blocked probe: it failed).")
    detail: str = Field(default="", max_length=4000, description="What the probe saw, short.")


class ProbeStage(_Part):
    """Every probe's result at one stage of the check."""

    stage: str = Field(
        pattern=r"^(before-fault|after-fault|after-fix|after-cycle-[0-9]+)$",
        description="before-fault, after-fault, after-fix or after-cycle-<n>.",
    )
    probes: list[ProbeResult] = Field(default_factory=list)

    def get(self, name: str) -> ProbeResult | None:
        """The result of the probe called `name` at this stage, if it ran."""
        return next((probe for probe in self.probes if probe.name == name), None)


class AppliedCommand(_Part):
    """A command of the remediation, applied in the fresh lab."""

    host: str = Field(description="The lab host it ran in.")
    command: str = Field(description="The command, as the agent gave it (host prefix removed).")
    exit_code: int | None = Field(description="Its exit code; null when it timed out.")
    output: str = Field(default="", max_length=4000, description="stdout and stderr, short.")


class SkippedCommand(_Part):
    """A command of the remediation that was not applied, and why: never silently dropped."""

    command: str = Field(description="The command, as the agent gave it.")
    reason: str = Field(description="Why it was not applied.")


class OwnerCycle(_Part):
    """One on-demand cycle of one owner (a reconciler) after the fix."""

    owner: str = Field(description="The owner's name in the lab spec.")
    cycle: int = Field(ge=1, description="1 for its first cycle after the fix, ...")
    ok: bool = Field(description="The cycle ran to its end.")
    detail: str = Field(default="", max_length=4000, description="What it said, short.")


class VerificationCheck(_Part):
    """One of the agent's verification commands, re-run after the fix."""

    host: str = Field(description="The lab host it ran in.")
    command: str = Field(description="The command.")
    expected: str | None = Field(
        default=None, description="What the report said it would show, when it said."
    )
    exit_code: int | None = Field(default=None, description="Its exit code after the fix.")
    output: str = Field(default="", max_length=4000, description="What it showed, short.")
    shows_expected: bool | None = Field(
        description="It showed what the report said (exit 0 and the expected text); null unrun."
    )


class OutcomeReasons(_Part):
    """Why each of the four measurements is what it is, in words a reviewer can check."""

    fixed: str
    durable: str
    collateral: str
    verified: str


class Measurer(_Part):
    """What measured: the tool and its version, and the number of owner cycles run."""

    name: str = Field(default="agentledger", description="The measuring tool.")
    version: str = Field(description="Its version.")
    cycles: int = Field(ge=0, description="Cycles each owner ran after the fix.")


class Outcome(Record):
    """The measured outcome of one run's remediation (outcomes/<run_id>/<outcome_id>.json)."""

    outcome_id: str = Field(pattern=OUTCOME_ID, description="out_<UTC time>_<8 hex>.")
    run_id: str = Field(description="The run whose remediation was measured.")
    scenario: str = Field(min_length=1, description="The run's scenario (it has a lab).")
    created_at: datetime = Field(default_factory=utc_now, description="When it was measured.")
    lab_spec_hash: str = Field(pattern=HASH_PATTERN, description="sha256 of the lab spec used.")
    measurer: Measurer
    fixed: bool | None = Field(description="The symptom probe passes after the fix.")
    durable: bool | None = Field(description="It still passes after every owner's cycles.")
    collateral: bool | None = Field(
        description="A must-keep-working or must-stay-blocked probe, or a list entry, changed."
    )
    verified: bool | None = Field(
        description="The agent's verification commands show what it said; false: none or not."
    )
    reasons: OutcomeReasons = Field(description="Why each of the four is what it is.")
    remediation_source: RemediationSource = Field(
        description="executed (commands run in remediate mode), report (its remediation "
        "section) or none (nothing to apply)."
    )
    applied: list[AppliedCommand] = Field(default_factory=list)
    not_applied: list[SkippedCommand] = Field(default_factory=list)
    owner_cycles: list[OwnerCycle] = Field(default_factory=list)
    probes: list[ProbeStage] = Field(
        default_factory=list, description="Every probe at each stage, in order."
    )
    entries_lost: list[str] = Field(
        default_factory=list, description="List entries present before the fault, gone after."
    )
    verification: list[VerificationCheck] = Field(default_factory=list)
    gaming: list[str] = Field(
        default_factory=list,
        description="Why a passing symptom probe was not counted as fixed (service removed, "
        "owner stopped, table deleted).",
    )

    _safe_run_id = field_validator("run_id")(safe_run_id)
    _aware = field_validator("created_at")(aware_created_at)

    @staticmethod
    def check_id(outcome_id: str) -> str:
        """`outcome_id` when it is well formed (safe as a file name); ValueError if not."""
        if not isinstance(outcome_id, str) or not _OUTCOME_ID.match(outcome_id):
            raise ValueError(
                f"outcome id {outcome_id!r} is not valid (expected out_<time>_<8 hex>)"
            )
        return outcome_id

    def stage(self, name: str) -> ProbeStage | None:
        """The probe results at stage `name`, if it was reached."""
        return next((stage for stage in self.probes if stage.stage == name), None)
