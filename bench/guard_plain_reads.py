"""How many plain reads the guard refuses, and its CPU time per check (issue 33).

    .venv/bin/python bench/guard_plain_reads.py            # tests/data/sql_plain_reads.txt
    .venv/bin/python bench/guard_plain_reads.py FILE ...   # SQL one a line, '#' comments

Each read is checked by `sql_read_only` (no columns declared); the refused ones are listed
with the first reason. The CPU time (process time, not wall: the machine is shared) is the
mean over a few rounds with the analysis cache cleared, so sqlglot's parses are counted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

DEFAULT = Path(__file__).parent.parent / "tests" / "data" / "sql_plain_reads.txt"


def main() -> int:
    from agentledger.shell.sql import analyse_sql
    from agentledger.suites.guard import check

    files = [Path(name) for name in sys.argv[1:]] or [DEFAULT]
    reads = [
        line for path in files for line in path.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]  # fmt: skip
    expect = {"sql_read_only": True}
    refused = [(sql, check({"sql": sql}, expect)) for sql in reads]
    refused = [(sql, result) for sql, result in refused if not result.ok]
    rounds = 5
    start = time.process_time()
    for _ in range(rounds):
        analyse_sql.cache_clear()
        for sql in reads:
            check({"sql": sql}, expect)
    per_check = (time.process_time() - start) / (rounds * len(reads))
    print(f"{len(reads) - len(refused)} of {len(reads)} plain reads pass; {len(refused)} refused")
    print(f"{per_check * 1e3:.2f} ms CPU per check")
    for sql, result in refused:
        print(f"  refused: {sql[:90]}\n    {result.reasons[0][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
