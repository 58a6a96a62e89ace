"""How many labelled secrets of a corpus reach the shell log (issue 33, cause 10), and how
many of its false positives (placeholders, ordinary output) are changed. Prints one line per
missed case and the totals. The default corpus is tests/data/secrets/gitleaks_cases.jsonl;
tests/data/secrets/blind_cases.jsonl holds kinds the rules were not written from;
tests/data/secrets/cmdline_cases.jsonl, cmdline_after_cases.jsonl,
cmdline_kinds_cases.jsonl, cmdline_decode_cases.jsonl (secrets encoded, split or written
to credential and key files), cmdline_general_cases.jsonl, cmdline_blind4_cases.jsonl
(all blind) and cmdline_blind5_cases.jsonl (blind, a third held out) hold command lines
(`"field": "command"`: redacted as the gate logs a command, `Redactor.redact_command`; the
rest, output, as `Redactor.redact`). A
case leaks when its secret (or any of its `pieces`, for secrets that reach the output
encoded or split) is still in the redacted text. A corpus with a blind part also gets its
figures on that part alone.

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
    missed: list[dict[str, object]] = []
    for row in rows:
        command = row.get("field") == "command"
        out = redactor.redact_command(row["text"]) if command else redactor.redact(row["text"])
        if row["kind"] == "tp" and any(p in out for p in row.get("pieces") or [row["secret"]]):
            missed.append(row)
            print(f"LEAK {row['source']}: {row['text'][:100]!r}")
        if row["kind"] == "fp" and out != row["text"]:
            missed.append(row)
            print(f"FP   {row['source']}: {out[:100]!r}")
    parts = [("", rows)]
    if any(row.get("blind") for row in rows):
        parts.append(("blind part: ", [row for row in rows if row.get("blind")]))
    for label, part in parts:
        positives = sum(row["kind"] == "tp" for row in part)
        leaked = sum(row["kind"] == "tp" and row in part for row in missed)
        changed = sum(row["kind"] == "fp" and row in part for row in missed)
        print(
            f"{label}secrets reaching the log: {leaked} of {positives}; "
            f"placeholders redacted: {changed} of {len(part) - positives}"
        )


if __name__ == "__main__":
    main()
