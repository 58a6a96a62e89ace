"""What the secrets corpus tests share: which pieces of a secret reach the log, and rows as
parameters with the known failures marked."""

from __future__ import annotations

import pytest


def leaks(text: str, pieces: list[str]) -> list[str]:
    """The pieces of a secret still in `text` (what the log would hold)."""
    return [piece for piece in pieces if piece in text]


def marked(
    rows: list[dict[str, object]], failed: set[str], reason: str, *, strict: bool = True
) -> list[object]:
    """The rows as parameters, those in `failed` expected to fail (`strict`: an unexpected
    pass fails the test, so a fixed case must leave the list)."""
    return [
        pytest.param(
            row,
            id=str(row["source"]),
            marks=[pytest.mark.xfail(strict=strict, reason=reason)]
            if row["source"] in failed
            else [],
        )
        for row in rows
    ]
