"""How many labelled secrets of a corpus reach the shell log (issue 33, cause 10), and how
many of its false positives (placeholders, ordinary output) are changed. Prints one line per
missed case and the totals. The default corpus is tests/data/secrets/gitleaks_cases.jsonl;
tests/data/secrets/blind_cases.jsonl holds kinds the rules were not written from. A case
leaks when its secret (or any of its `pieces`, for secrets that reach the output encoded or
split) is still in the redacted text.

    python bench/secrets_corpus.py [CORPUS.jsonl]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentledger.runner.shell_gate.redact import Redactor

CORPUS = Path(__file__).resolve().parent.parent / "tests/data/secrets/gitleaks_cases.jsonl"


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    redactor = Redactor()
    leaked = changed = 0
    for row in rows:
        out = redactor.redact(row["text"])
        if row["kind"] == "tp" and any(p in out for p in row.get("pieces") or [row["secret"]]):
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
