"""The index checked column by column against the records it was derived from.

The index is a cache, but one that reports read: a verdict edited in the index alone, or a
model renamed in one row, changes answers without touching a file. `verify` recomputes every
column of every run, score and label row from the records (`run_columns`, `score_row`,
`label_row`, each one's packed criteria, and which label is each source's current one) and
names each one that differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentledger.records import Manifest, RunMetadata, RunSummary
from agentledger.records.labels import LABELS_DIR, Label
from agentledger.records.scores import SCORES_DIR, Score
from agentledger.store.index import (
    IndexEntry,
    LabelRow,
    RunColumns,
    ScoreRow,
    label_row,
    packed_criteria,
    run_columns,
    score_row,
)
from agentledger.store.index.queries import LABEL_FIELDS, SCORE_FIELDS

__all__ = ["check_label_rows", "check_run_row", "check_score_rows", "current_label_ids"]

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
    if columns == expected._replace(manifest_sha256=columns.manifest_sha256) and (
        tags == metadata.tags
    ):
        return []  # every column at once; column by column only to name what differs
    names = [name for name in RunColumns._fields if name not in _SKIPPED_RUN_COLUMNS]
    found = _differences(names, columns, expected)
    if tags != metadata.tags:
        found.append(f"index tags are {_show(tags)}, the record says {_show(metadata.tags)}")
    return found


def _criteria_differences(row: ScoreRow | LabelRow, expected: ScoreRow | LabelRow) -> list[str]:
    """What differs between the criteria a score's or label's index rows hold (its rows of
    the criteria table, and the text packed on its own row) and what its record gives."""
    found = []
    if sorted(row.criteria, key=repr) != sorted(expected.criteria, key=repr):
        found.append(
            f"index criteria are {_show(row.criteria)}, the record says {_show(expected.criteria)}"
        )
    packed = packed_criteria(expected.criteria)
    if row.criteria_packed != packed:
        found.append(
            f"index column criteria_packed is {_show(row.criteria_packed)}, the record says "
            f"{_show(packed)}"
        )
    return found


_SCORE_COLUMNS = SCORE_FIELDS[2:10]
"""A score row's columns but its key (the record's place), criteria_packed and accepted_seq,
which are compared apart."""


def check_score_rows(
    intact: Mapping[str, bytes],
    held: set[str],
    rows: Iterable[ScoreRow],
    accepted_at: Mapping[str, int] | None = None,
) -> list[tuple[str, str]]:
    """(score key, what is wrong) for every indexed score that disagrees with its record (or,
    with `accepted_at`, with its journal position).

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
            seq = (accepted_at or {}).get(key)
            expected = score_row(Score.model_validate_json(data), seq)
        except ValueError as exc:
            found.append((key, f"the record cannot be read: {str(exc).splitlines()[0]}"))
            continue
        found.extend((key, detail) for detail in _differences(_SCORE_COLUMNS, row, expected))
        found.extend((key, detail) for detail in _criteria_differences(row, expected))
    for key in sorted(set(by_key) - held):
        found.append((key, "indexed, but its record is gone"))
    return found


_LABEL_COLUMNS = LABEL_FIELDS[1:9]
"""A label row's columns but its id (the record's place), criteria_packed and accepted_seq."""


def _label_order(row: LabelRow) -> tuple[int, str, str]:
    return (row.accepted_seq or 0, row.created_at, row.label_id)


def current_label_ids(rows: Iterable[LabelRow]) -> set[str]:
    """The labels each (run, source) stands by: its newest (by the journal's order, then time,
    then id), unless a label of the run supersedes it (the rule the index keeps its `current`
    flag by)."""
    newest: dict[tuple[str, str, str], LabelRow] = {}
    superseded: set[tuple[str, str]] = set()
    for row in rows:
        source = (row.run_id, row.source_kind, row.source_name)
        held = newest.get(source)
        if held is None or _label_order(row) > _label_order(held):
            newest[source] = row
        if row.supersedes is not None:
            superseded.add((row.run_id, row.supersedes))
    return {row.label_id for row in newest.values() if (row.run_id, row.label_id) not in superseded}


def check_label_rows(
    intact: Mapping[str, bytes],
    held: set[str],
    rows: Iterable[LabelRow],
    accepted_at: Mapping[str, int] | None = None,
) -> list[tuple[str, str]]:
    """(label key, what is wrong) for every indexed label that disagrees with its record,
    its `current` flag included.

    `intact`: the labels whose bytes match their journal entry; `held`: every label key
    present. Which label is current depends on every label of the run, so the flags are
    compared only when every label held is intact (a changed one is reported by the record
    checks, and would make the others' flags look wrong).
    """
    by_key = {f"{LABELS_DIR}/{row.run_id}/{row.label_id}.json": row for row in rows}
    found: list[tuple[str, str]] = []
    expected_rows: dict[str, LabelRow] = {}
    for key, data in intact.items():
        try:
            seq = (accepted_at or {}).get(key)
            expected_rows[key] = label_row(Label.model_validate_json(data), seq)
        except ValueError as exc:
            found.append((key, f"the record cannot be read: {str(exc).splitlines()[0]}"))
    current = current_label_ids(expected_rows.values()) if len(expected_rows) == len(held) else None
    for key, expected in expected_rows.items():
        row = by_key.get(key)
        if row is None:
            found.append((key, "missing from the index (`agentledger gc` adds it)"))
            continue
        found.extend((key, detail) for detail in _differences(_LABEL_COLUMNS, row, expected))
        found.extend((key, detail) for detail in _criteria_differences(row, expected))
        if current is not None and row.current != (expected.label_id in current):
            found.append(
                (
                    key,
                    f"index column current is {_show(row.current)}, the records say "
                    f"{_show(expected.label_id in current)}",
                )
            )
    for key in sorted(set(by_key) - held):
        found.append((key, "indexed, but its record is gone"))
    return found
