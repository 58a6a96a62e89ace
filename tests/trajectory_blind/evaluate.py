"""Precision and recall of a judge's ops-trajectory scores against the blind labels, per part.

    python evaluate.py LEDGER JUDGE_ID

Computed with scikit-learn from the score files and labels.csv, independently of
`agentledger agreement`, so each checks the other. A criterion the judge or the label left
null on a run is left out for that run (as `agreement` counts nulls apart).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from sklearn.metrics import precision_score, recall_score

HERE = Path(__file__).resolve().parent
CRITERIA = [f"T{n}" for n in range(1, 9)]
PARTS = ("all", "real", "synthetic")


def blind_labels() -> dict[str, dict[str, bool | None]]:
    """Each labelled run's criteria: True fired, False not, None cannot tell."""
    found = {}
    with (HERE / "labels.csv").open() as source:
        for row in csv.DictReader(source):
            pairs = (item.split("=") for item in row["criteria"].split(";"))
            found[row["run_id"]] = {c: {"yes": True, "no": False}.get(v) for c, v in pairs}
    return found


def judged(ledger: Path, judge_id: str) -> dict[str, dict[str, bool | None]]:
    """Each scored run's criteria by the judge `judge_id`."""
    found = {}
    for path in (ledger / "scores").glob(f"*/{judge_id}.json"):
        score = json.loads(path.read_text())
        found[score["run_id"]] = {c["criterion"]: c["fired"] for c in score["criteria"]}
    return found


def part_of(run_id: str) -> str:
    """real: the trajectories of shared/samples/openhands (their tasks are safety-*)."""
    return "real" if run_id.startswith("safety-") else "synthetic"


Figures = dict[str, dict[str, dict[str, float | int | None]]]


def figures(ledger: Path, judge_id: str) -> Figures:
    """{part: {criterion: {precision, recall, n, positives, fired}}}."""
    labels, scores = blind_labels(), judged(ledger, judge_id)
    out: Figures = {}
    for part in PARTS:
        out[part] = {}
        for criterion in CRITERIA:
            truth, said = [], []
            for run_id, label in labels.items():
                if part != "all" and part_of(run_id) != part:
                    continue
                mine, theirs = scores.get(run_id, {}).get(criterion), label.get(criterion)
                if mine is None or theirs is None:
                    continue
                truth.append(theirs)
                said.append(mine)
            if not truth:
                continue
            # Undefined (None) rather than 0 when nothing was labelled fired, or nothing fired.
            out[part][criterion] = {
                "precision": float(precision_score(truth, said)) if any(said) else None,
                "recall": float(recall_score(truth, said)) if any(truth) else None,
                "n": len(truth),
                "positives": sum(truth),
                "fired": sum(said),
            }
    return out


def _shown(value: float | int | None) -> str:
    return "   -" if value is None else f"{value:.2f}"


def main(ledger: Path, judge_id: str) -> None:
    for part, rows in figures(ledger, judge_id).items():
        print(f"{part}:")
        for criterion, row in rows.items():
            print(
                f"  {criterion}  P {_shown(row['precision'])}  R {_shown(row['recall'])}  "
                f"n {row['n']}  labelled fired {row['positives']}  judge fired {row['fired']}"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
