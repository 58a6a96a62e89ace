"""The index checked column by column against the records it was derived from.

The index is a cache, but one that reports read: a verdict edited in the index alone, or a
model renamed in one row, changes answers without touching a file. `verify` recomputes every
column of every run and score row from the records (`run_columns`, `score_row`) and names
each one that differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentledger.records import Manifest, RunMetadata, RunSummary
from agentledger.records.scores import SCORES_DIR, Score
from agentledger.store.index import IndexEntry, RunColumns, ScoreRow, run_columns, score_row

__all__ = ["check_run_row", "check_score_rows"]

_SKIPPED_RUN_COLUMNS = frozenset({"manifest_sha256"})  # reported as index-stale instead


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _differences(names: Iterable[str], indexed: Any, expected: Any) -> list[str]:
    return [
        f"index column {name} is {_show(getattr(indexed, name))}, the record says "
        f"{_show(getattr(expected, name))}"
        for name in names
        if getattr(indexed, name) != getattr(expected, name)
    ]


def check_run_row(
    metadata: RunMetadata,
    summary: RunSummary | None,
    manifest: Manifest,
    manifest_sha256: str,
    row: tuple[RunColumns, dict[str, str]],
) -> list[str]:
    """What differs between a run's index row (and tags) and what its records give."""
    expected = run_columns(IndexEntry(metadata, summary, manifest, manifest_sha256))
    columns, tags = row
    names = [name for name in RunColumns._fields if name not in _SKIPPED_RUN_COLUMNS]
    found = _differences(names, columns, expected)
    if tags != metadata.tags:
        found.append(f"index tags are {_show(tags)}, the record says {_show(metadata.tags)}")
    return found


_SCORE_COLUMNS = (
    "kind",
    "model",
    "pack",
    "verdict",
    "diagnosis",
    "skipped_reason",
    "created_at",
    "score_json",
)


def check_score_rows(
    intact: Mapping[str, bytes], held: set[str], rows: Iterable[ScoreRow]
) -> list[tuple[str, str]]:
    """(score key, what is wrong) for every indexed score that disagrees with its record.

    `intact`: the scores whose bytes match their journal entry; `held`: every score key
    present (the others are reported by the record checks and not compared here).
    """
    by_key = {f"{SCORES_DIR}/{row.run_id}/{row.judge_id}.json": row for row in rows}
    found: list[tuple[str, str]] = []
    for key, data in intact.items():
        row = by_key.get(key)
        if row is None:
            found.append((key, "missing from the index (`agentledger reindex` adds it)"))
            continue
        try:
            expected = score_row(Score.model_validate_json(data))
        except ValueError as exc:
            found.append((key, f"the record cannot be read: {str(exc).splitlines()[0]}"))
            continue
        found.extend((key, detail) for detail in _differences(_SCORE_COLUMNS, row, expected))
        if sorted(row.criteria, key=repr) != sorted(expected.criteria, key=repr):
            found.append(
                (
                    key,
                    f"index criteria are {_show(row.criteria)}, the record says "
                    f"{_show(expected.criteria)}",
                )
            )
    for key in sorted(set(by_key) - held):
        found.append((key, "indexed, but its record is gone"))
    return found
