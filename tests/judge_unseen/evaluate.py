"""Blind evaluation of the rules judge on hand-labelled, unseen reports.

Usage: .venv/bin/python tests/judge_unseen/evaluate.py [--verbose]

Each case directory holds report.md, optional shell_audit.jsonl, optional snapshot.txt /
snapshot.json, optional expected.json, and labels.json (the human labels). This script is
not a test: it only prints the agreement between the judge and the labels.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentledger.judges.base import ExpectedDiagnosis, JudgeInput
from agentledger.judges.pack import load_pack
from agentledger.judges.rules import RulesJudge
from agentledger.records import RunMetadata, parse_shell_audit

HERE = Path(__file__).resolve().parent
CRITERIA = ("C1", "C2", "C3", "C4")


def load_case(index: int, case: Path) -> tuple[JudgeInput, dict]:
    report_path = case / "report.md"
    report = report_path.read_text() if report_path.exists() else None
    audit_path = case / "shell_audit.jsonl"
    audit = events = None
    if audit_path.exists():
        raw = audit_path.read_bytes()
        audit = raw.decode()
        events = parse_shell_audit(raw, str(audit_path))
    snapshot = None
    for name in ("snapshot.txt", "snapshot.json"):
        if (case / name).exists():
            snapshot = (name, (case / name).read_text())
            break
    expected = None
    if (case / "expected.json").exists():
        data = json.loads((case / "expected.json").read_text())
        expected = ExpectedDiagnosis(
            root_cause=data["root_cause"], patterns=data.get("patterns", [])
        )
    # A neutral scenario name, so the case directory's name (which hints at the label)
    # never reaches the judge.
    scenario = f"unseen_{index:02d}"
    run_id = f"{scenario}_m_20260101T000000Z_{index:06d}"
    metadata = RunMetadata(run_id=run_id, scenario=scenario, model="m", backfilled=True)
    run = JudgeInput(
        run_id=run_id,
        metadata=metadata,
        report=report,
        audit=audit,
        events=events,
        snapshot=snapshot,
        expected=expected,
        prompt=None,
    )
    labels = json.loads((case / "labels.json").read_text())
    return run, labels


def _evidence(result: object) -> list[tuple[str, str, int | None]]:
    return [(e.quote, e.file, e.line) for e in getattr(result, "evidence", [])]


def main() -> int:
    verbose = "--verbose" in sys.argv
    judge = RulesJudge(load_pack(), diagnosis=True)
    cases = sorted(p for p in HERE.iterdir() if p.is_dir() and (p / "labels.json").exists())
    table = {c: dict(tp=0, fp=0, fn=0, tn=0, null_agree=0, null_disagree=0) for c in CRITERIA}
    diag = dict(agree=0, disagree=0, null_agree=0, null_disagree=0)
    disagreements: list[str] = []

    for index, case in enumerate(cases):
        run, labels = load_case(index, case)
        outcome = judge.judge(run)
        results = {r.criterion: r for r in outcome.criteria}
        for crit in CRITERIA:
            label = labels.get(crit)
            result = results.get(crit)
            got = result.fired if result else None
            cell = table[crit]
            if label is None or got is None:
                if label is None and got is None:
                    cell["null_agree"] += 1
                else:
                    cell["null_disagree"] += 1
            elif label and got:
                cell["tp"] += 1
            elif not label and got:
                cell["fp"] += 1
            elif label and not got:
                cell["fn"] += 1
            else:
                cell["tn"] += 1
            if label != got:
                disagreements.append(
                    f"{case.name} {crit}: label={label} judge={got}\n"
                    f"    judge reason: {result.reason if result else '(no result)'}\n"
                    f"    evidence: {_evidence(result)}\n"
                    f"    label why: {labels.get('why', {}).get(crit, '')}"
                )
            elif verbose:
                print(f"  ok {case.name} {crit}={got}: {result.reason if result else ''}")
        if "diagnosis" in labels and run.expected is not None:
            label = labels["diagnosis"]
            got = outcome.diagnosis.correct if outcome.diagnosis else None
            if label is None or got is None:
                diag["null_agree" if label is got else "null_disagree"] += 1
            else:
                diag["agree" if label == got else "disagree"] += 1
            if label != got:
                disagreements.append(
                    f"{case.name} diagnosis: label={label} judge={got}\n"
                    f"    judge reason: {outcome.diagnosis.reason if outcome.diagnosis else ''}\n"
                    f"    label why: {labels.get('why', {}).get('diagnosis', '')}"
                )

    print(f"{len(cases)} cases, judge {judge.id}\n")
    print(
        f"{'crit':4}  {'tp':>3} {'fp':>3} {'fn':>3} {'tn':>3}  {'prec':>5} {'rec':>5}  "
        "nulls(agree/disagree)"
    )
    for crit in CRITERIA:
        c = table[crit]
        prec = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else float("nan")
        rec = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else float("nan")
        print(
            f"{crit:4}  {c['tp']:>3} {c['fp']:>3} {c['fn']:>3} {c['tn']:>3}  {prec:5.2f} {rec:5.2f}"
            f"  {c['null_agree']}/{c['null_disagree']}"
        )
    total = diag["agree"] + diag["disagree"]
    print(
        f"\ndiagnosis: {diag['agree']}/{total} agree"
        f" (nulls agree {diag['null_agree']}, disagree {diag['null_disagree']})"
    )
    print(f"\n{len(disagreements)} disagreement(s):")
    for line in disagreements:
        print(" - " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
