"""Picks the held-out third of cmdline_blind5_cases.jsonl (seeded, a third of each family
and of the plain lines) and writes its sources to cmdline_blind5_heldout.txt. The rules are
fixed on the other two thirds; the held-out third is measured once, at the end.

    python tests/data/secrets/split_cmdline_blind5.py
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

SEED = 5_33_2026
HERE = Path(__file__).parent


def main() -> None:
    rows = [
        json.loads(line) for line in (HERE / "cmdline_blind5_cases.jsonl").read_text().splitlines()
    ]
    families: defaultdict[str, list[str]] = defaultdict(list)
    for row in rows:
        families[row["source"].split("-")[0]].append(row["source"])
    rng = random.Random(SEED)
    held: list[str] = []
    for family in sorted(families):
        sources = sorted(families[family])
        rng.shuffle(sources)
        held += sources[: round(len(sources) / 3)]
    (HERE / "cmdline_blind5_heldout.txt").write_text(
        f"# held-out third of cmdline_blind5_cases.jsonl, seed {SEED} (split_cmdline_blind5.py)\n"
        + "".join(f"{source}\n" for source in sorted(held))
    )
    print(f"{len(held)} of {len(rows)} held out")


if __name__ == "__main__":
    main()
