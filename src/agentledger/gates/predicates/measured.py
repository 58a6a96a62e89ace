"""The predicate form that reads a run's measured outcome (lab scenarios): `outcome: WHAT`.

`outcome: durable` passes when the run's newest outcome says its fix was fixed and durable;
`fixed`, `no_collateral` and `verified` read the other measurements. A run without an outcome,
or whose outcome could not measure it, cannot tell (None). In a variant spec, the share of
runs passing is the rate compared with the baseline's: `outcome: durable` means "the
durable-fix rate must not fall".
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from agentledger.gates.predicates.forms import PredicateForm
from agentledger.gates.predicates.run_view import RunView
from agentledger.records.decisions import PredicateResult, Undecided
from agentledger.records.outcomes import OUTCOMES_DIR, Outcome
from agentledger.records.scores import Evidence

__all__ = ["OutcomeHolds"]

Measured = Literal["fixed", "durable", "no_collateral", "verified"]


def _value(outcome: Outcome, what: Measured) -> tuple[bool | None, str]:
    reasons = outcome.reasons
    if what == "fixed":
        return outcome.fixed, reasons.fixed
    if what == "durable":
        if outcome.fixed is False:
            return False, f"not fixed: {reasons.fixed}"
        return (None if outcome.durable is None else bool(outcome.fixed and outcome.durable)), (
            reasons.durable
        )
    if what == "no_collateral":
        return (None if outcome.collateral is None else not outcome.collateral), reasons.collateral
    return outcome.verified, reasons.verified


class OutcomeHolds(PredicateForm):
    """`outcome: fixed|durable|no_collateral|verified`: the run's measured outcome says so."""

    key: ClassVar[str] = "outcome"
    outcome: Measured = Field(
        description="fixed, durable (fixed and still fixed after the owners' cycles), "
        "no_collateral or verified."
    )

    def check(self, run: RunView) -> PredicateResult:
        outcome = run.outcome
        if outcome is None:
            return self.result(
                None,
                "cannot evaluate: the run has no measured outcome (`agentledger outcome RUN`)",
                undecided=Undecided.NO_OUTCOME,
            )
        value, reason = _value(outcome, self.outcome)
        where = Evidence(
            quote=f"{self.outcome}: {value}",
            file=f"{OUTCOMES_DIR}/{outcome.run_id}/{outcome.outcome_id}.json",
        )
        if value is None:
            return self.result(
                None,
                f"cannot evaluate: outcome {outcome.outcome_id} could not measure it: {reason}",
                [where],
                undecided=Undecided.NO_OUTCOME,
            )
        words = "holds" if value else "does not hold"
        return self.result(
            value,
            f"{self.outcome} {words} (outcome {outcome.outcome_id}): {reason}",
            [where],
            outcome_id=outcome.outcome_id,
        )
