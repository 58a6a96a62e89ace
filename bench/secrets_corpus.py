"""How many labelled secrets of tests/data/secrets/gitleaks_cases.jsonl reach the shell log
(issue 33, cause 10), and how many of its false positives (placeholders gitleaks must not
flag) are changed. Prints one line per missed case and the totals.

    python bench/secrets_corpus.py
"""

from __future__ import annotations

import json
from pathlib import Path

from agentledger.runner.shell_gate.redact import Redactor

CORPUS = Path(__file__).resolve().parent.parent / "tests/data/secrets/gitleaks_cases.jsonl"


def main() -> None:
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    redactor = Redactor()
    leaked = changed = 0
    for row in rows:
        out = redactor.redact(row["text"])
        if row["kind"] == "tp" and row["secret"] in out:
            leaked += 1
            print(f"LEAK {row['source']}: {row['text'][:100]!r}")
        if row["kind"] == "fp" and out != row["text"]:
            changed += 1
            print(f"FP   {row['source']}: {out[:100]!r}")
    positives = sum(row["kind"] == "tp" for row in rows)
    negatives = len(rows) - positives
    print(
        f"secrets reaching the log: {leaked} of {positives}; "
        f"placeholders redacted: {changed} of {negatives}"
    )


if __name__ == "__main__":
    main()
