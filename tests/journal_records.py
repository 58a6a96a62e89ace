"""Records of every journaled kind, for the journal and verify tests (and their writer
processes): a score, a label, a decision, each written through the ledger's ordinary stores."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from agentledger.gates.decisions import DecisionStore
from agentledger.judges.scores import ScoreStore
from agentledger.records.decisions import Decision
from agentledger.records.labels import CriterionLabel, Label, LabelSource, new_label_id
from agentledger.records.scores import CriterionResult, Evidence, JudgeInfo, Score
from agentledger.store import Ledger
from agentledger.store.record_store import LabelRecords
from agentledger.store.writer import record_bytes

T0 = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)


def make_score(run_id: str, verdict: str = "Unsafe", judge: str = "rules-0123456789ab") -> Score:
    return Score(
        run_id=run_id,
        judge_id=judge,
        judge=JudgeInfo(kind="rules", pack="remediation-safety", pack_version="1", pack_digest="x"),
        identity={"kind": "rules"},
        verdict=verdict,  # type: ignore[arg-type]
        criteria=[
            CriterionResult(
                criterion="C2",
                fired=verdict == "Unsafe",
                reason="direct qdisc change",
                evidence=[Evidence(quote="tc qdisc del dev eth0 root", file="report.md", line=2)],
            ),
            CriterionResult(criterion="C1", fired=None, reason="no snapshot"),
        ],
    )


def write_score(ledger: Ledger, run_id: str, verdict: str = "Unsafe", **kw: str) -> str:
    """Write and index a score; its storage key."""
    score = make_score(run_id, verdict, **kw)
    ScoreStore(ledger).write([score])
    return ScoreStore.key(run_id, score.judge_id)


def write_label(ledger: Ledger, run_id: str, verdict: str = "Safe") -> str:
    """Write and index a label through the storage backend; its storage key."""
    label = Label(
        label_id=new_label_id(),
        run_id=run_id,
        by=LabelSource(kind="person", name="ana"),
        verdict=verdict,  # type: ignore[arg-type]
        criteria=[CriterionLabel(criterion="C2", fired=verdict == "Unsafe")],
        reason="checked by hand",
    )
    key = f"labels/{run_id}/{label.label_id}.json"
    ledger.storage.create(key, record_bytes(label))
    LabelRecords(ledger).index([label])  # with its journal position, as every writer indexes
    return key


def make_decision(subject: str, outcome: str = "REJECTED", minutes: int = 0) -> Decision:
    from test_decisions import make_decision as full_decision

    return full_decision(subject, outcome=outcome, minutes=minutes)


def write_decision(ledger: Ledger, subject: str = "variant-a", outcome: str = "REJECTED") -> str:
    """Write a decision; its id."""
    decision = make_decision(subject, outcome)
    DecisionStore(ledger).write([decision])
    return decision.decision_id


def _main() -> None:
    """A writer process: `--count` scores, labels and decisions, interleaved."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--worker", type=int, required=True)
    parser.add_argument("--count", type=int, default=10)
    args = parser.parse_args()
    with Ledger.open(args.ledger) as ledger:
        for number in range(args.count):
            run_id = f"run-w{args.worker}-{number:03d}"
            write_score(ledger, run_id, "Safe" if number % 2 else "Unsafe")
            write_label(ledger, run_id)
            write_decision(ledger, f"w{args.worker}-{number}")
    sys.stdout.write("DONE\n")


if __name__ == "__main__":
    _main()
