"""CLI output compared whole, as a user reads it, through the docs' normaliser
(docs/checked.py): what varies from one run to the next (the time and random parts of run and
label ids, today's date, durations, the temporary directory) becomes the stable stand-ins the
docs show, so a test can hold a table or a summary to every character."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))
import checked  # noqa: E402

WORK = checked.WORK
"""What the temporary directory given to `normalised` reads as."""


def normalised(output: str, place: Path) -> str:
    """`output` as the docs would show it, `place` (a test's tmp_path) read as WORK."""
    return checked.Normaliser(place).text(output)
