"""Few-shot examples for the LLM judge: labelled runs from the dev part of a split, never test.

``agentledger judge --judge llm:P/M --examples-from labels:NAME --split dev`` shows the judge a
few runs people labelled, each with its label, before the run under review. The examples shape
the judge's output, so they are part of its identity (its id changes with them), and the judge
declares the dev part they came from as labels it was developed against: `agreement` grades it
on the test part only. Taking examples from the test part is refused: that is the leakage the
split exists to prevent.

Which runs: the dev runs of the source's newest split whose label gives a verdict, ordered by
sha256(split id, run id) so that the choice is fixed for a split and spread over its strata.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentledger.errors import InputError, RunNotFoundError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.labels import labels_for_agreement, parse_source_spec
from agentledger.labels.split import SplitStore
from agentledger.records.splits import DevelopedAgainst
from agentledger.store.evidence import read_sealed

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["EXAMPLE_REPORT_CHARS", "FewShotExample", "FewShots", "load_examples"]

EXAMPLE_REPORT_CHARS = 2000
"""Each example shows at most this much of its run's report."""


@dataclass(frozen=True)
class FewShotExample:
    """One labelled run shown to the judge: its report and what a person said of it."""

    run_id: str
    label_id: str
    verdict: str
    criteria: tuple[tuple[str, bool | None], ...]
    report: str
    """The run's report.md (untrusted; neutralised and delimited when rendered)."""

    def label_words(self) -> str:
        """What the label says, in the words the prompt shows (written by agentledger)."""
        said = {True: "fired", False: "did not fire", None: "could not be told"}
        parts = [f"{criterion} {said[fired]}" for criterion, fired in self.criteria]
        return f"labelled {self.verdict}" + (f" ({'; '.join(parts)})" if parts else "")

    def digest(self) -> str:
        return sha256_bytes(
            canonical_json(
                {"label": self.label_id, "words": self.label_words(), "report": self.report}
            )
        )


@dataclass(frozen=True)
class FewShots:
    """The examples a judge is given, and the labels that makes it developed against."""

    examples: tuple[FewShotExample, ...]
    developed_against: DevelopedAgainst

    def identity(self) -> list[dict[str, Any]]:
        """What of the examples goes into the judge's id."""
        return [
            {"run_id": example.run_id, "label_id": example.label_id, "sha256": example.digest()}
            for example in self.examples
        ]


def load_examples(ledger: Ledger, source_spec: str, part: str | None, limit: int) -> FewShots:
    """Up to `limit` labelled runs of the dev part of `source_spec`'s newest split.

    InputError (exit 2) for the test part, a missing --split, a source without a split, or no
    dev run with a verdict."""
    name = parse_source_spec(source_spec)
    if part is None:
        raise InputError(
            f"--examples-from {source_spec} needs --split dev: examples come from the dev part "
            "of a split, so that the test part stays held out"
        )
    if part != "dev":
        raise InputError(
            f"--split {part}: few-shot examples are taken from the dev part only; the {part} "
            "part is held out for grading the judge (`agreement --split test`)"
        )
    if limit < 1:
        raise InputError(f"--examples must be at least 1 (got {limit})")
    split = SplitStore(ledger).newest(name)
    if split is None:
        raise InputError(
            f"labels:{name} has no split: make one with "
            f"`agentledger labels split --source {name} --test-share 0.3 --seed S`"
        )
    labels = labels_for_agreement(ledger, source_spec)

    def order(run_id: str) -> str:
        return hashlib.sha256(f"{split.split_id}\x00{run_id}".encode()).hexdigest()

    chosen: list[FewShotExample] = []
    for run_id in sorted(split.dev, key=order):
        label = labels.get(run_id)
        if label is None or label.verdict is None:
            continue
        try:
            report = read_sealed(ledger, run_id, "report.md").decode("utf-8", errors="replace")
        except RunNotFoundError:
            continue
        chosen.append(
            FewShotExample(
                run_id=run_id,
                label_id=label.label_id,
                verdict=label.verdict,
                criteria=tuple((item.criterion, item.fired) for item in label.criteria),
                report=report[:EXAMPLE_REPORT_CHARS],
            )
        )
        if len(chosen) == limit:
            break
    if not chosen:
        raise InputError(
            f"the dev part of {split.split_id} holds no run labelled with a verdict by "
            f"labels:{name} that has a report"
        )
    return FewShots(tuple(chosen), DevelopedAgainst(labels=name, split=split.split_id, part="dev"))
