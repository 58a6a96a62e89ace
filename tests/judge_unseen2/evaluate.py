"""Measure the rules judge against the hand-written labels of the unseen2 blind set.

Run from the repository root:

    .venv/bin/python tests/judge_unseen2/evaluate.py [--verbose]

Each case directory holds report.md, labels.json and optionally shell_audit.jsonl, a snapshot
(snapshot.txt/.json/.yaml) and expected.json. The judge only sees neutral scenario names
(unseen2_01, ...), never the directory names.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agentledger.judges.base import ExpectedDiagnosis, JudgeInput, JudgeOutcome
from agentledger.judges.pack import load_pack
from agentledger.judges.rules import RulesJudge
from agentledger.records import RunMetadata, parse_shell_audit

HERE = Path(__file__).resolve().parent
CRITERIA = ("C1", "C2", "C3", "C4")
SNAPSHOT_NAMES = ("snapshot.txt", "snapshot.json", "snapshot.yaml")


@dataclass
class Tally:
    """Confusion counts for one criterion (labels true/false; nulls counted apart)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    null_agree: int = 0
    null_total: int = 0
    judge_null: int = 0
    disagreements: list[str] = field(default_factory=list)

    def precision(self) -> str:
        total = self.tp + self.fp
        return f"{self.tp / total:.2f}" if total else "n/a"

    def recall(self) -> str:
        total = self.tp + self.fn
        return f"{self.tp / total:.2f}" if total else "n/a"


def case_dirs() -> list[Path]:
    return sorted(p for p in HERE.iterdir() if p.is_dir() and (p / "labels.json").exists())


def load_run(index: int, case: Path) -> JudgeInput:
    scenario = f"unseen2_{index:02d}"
    run_id = f"{scenario}_m_20260101T000000Z_000000"
    metadata = RunMetadata(run_id=run_id, scenario=scenario, model="m", backfilled=True)
    report = (case / "report.md").read_text(encoding="utf-8")
    events = None
    audit_path = case / "shell_audit.jsonl"
    if audit_path.exists():
        events = parse_shell_audit(audit_path.read_bytes(), "shell_audit.jsonl")
    snapshot = None
    for name in SNAPSHOT_NAMES:
        path = case / name
        if path.exists():
            snapshot = (name, path.read_text(encoding="utf-8"))
            break
    expected = None
    expected_path = case / "expected.json"
    if expected_path.exists():
        data = json.loads(expected_path.read_text(encoding="utf-8"))
        expected = ExpectedDiagnosis(
            root_cause=data["root_cause"], patterns=data.get("patterns", [])
        )
    return JudgeInput(
        run_id=run_id,
        metadata=metadata,
        report=report,
        audit=None,
        events=events,
        snapshot=snapshot,
        expected=expected,
    )


def fmt(value: bool | None) -> str:
    return {True: "fires", False: "quiet", None: "null"}[value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list agreements too")
    args = parser.parse_args(argv)

    judge = RulesJudge(load_pack(), diagnosis=True)
    print(f"judge: {judge.id}")
    tallies = {criterion: Tally() for criterion in CRITERIA}
    diag_agree = diag_total = 0
    diag_lines: list[str] = []

    for index, case in enumerate(case_dirs(), start=1):
        labels = json.loads((case / "labels.json").read_text(encoding="utf-8"))
        outcome: JudgeOutcome = judge.judge(load_run(index, case))
        results = {result.criterion: result for result in outcome.criteria}
        for criterion in CRITERIA:
            tally = tallies[criterion]
            label = labels.get(criterion)
            result = results[criterion]
            got = result.fired
            if got is None:
                tally.judge_null += 1
            if label is None:
                tally.null_total += 1
                tally.null_agree += got is None
            elif label and got:
                tally.tp += 1
            elif label:
                tally.fn += 1
            elif got:
                tally.fp += 1
            else:
                tally.tn += 1
            agree = label == got
            if not agree or args.verbose:
                mark = "ok " if agree else "XX "
                line = (
                    f"{mark}{case.name} {criterion}: label={fmt(label)} judge={fmt(got)}"
                    f" -- {result.reason}"
                )
                if result.evidence:
                    ev = result.evidence[0]
                    where = f"{ev.file}:{ev.line}" if ev.line else ev.file
                    line += f" [{where}: {ev.quote[:90]!r}]"
                tally.disagreements.append(line)
        if "diagnosis" in labels:
            diag_total += 1
            got = outcome.diagnosis.correct if outcome.diagnosis else None
            agree = got == labels["diagnosis"]
            diag_agree += agree
            if not agree or args.verbose:
                reason = outcome.diagnosis.reason if outcome.diagnosis else "no diagnosis result"
                mark = "ok " if agree else "XX "
                diag_lines.append(
                    f"{mark}{case.name} diagnosis: label={labels['diagnosis']} judge={got}"
                    f" -- {reason}"
                )

    print(f"cases: {len(case_dirs())}")
    header = f"{'crit':<5}{'tp':>4}{'fp':>4}{'fn':>4}{'tn':>4}{'prec':>7}{'recall':>8}"
    header += f"{'null agree':>12}{'judge null':>12}"
    print(header)
    for criterion in CRITERIA:
        t = tallies[criterion]
        null = f"{t.null_agree}/{t.null_total}"
        print(
            f"{criterion:<5}{t.tp:>4}{t.fp:>4}{t.fn:>4}{t.tn:>4}{t.precision():>7}"
            f"{t.recall():>8}{null:>12}{t.judge_null:>12}"
        )
    print(f"diagnosis agreement: {diag_agree}/{diag_total}")
    print()
    for criterion in CRITERIA:
        for line in tallies[criterion].disagreements:
            print(line)
    for line in diag_lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
