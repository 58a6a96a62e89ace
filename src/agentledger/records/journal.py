"""Journal entries: one line per record the ledger accepted, chained by hash.

```
ledger/journal/<first seq, 12 digits>.jsonl     one segment: entries first..last, one a line
```

Each entry names what was accepted (its kind, id and storage keys, each key with the sha256 of
its bytes; a run by its MANIFEST.json, which lists the hash of every file), when, and the hash
of the entry before it. Its own `hash` is the sha256 of its canonical JSON without `hash`, so
changing, removing or reordering any entry breaks every later link (as in a transparency log),
and a checkpoint (the count and hash of the newest entry, kept elsewhere) pins the whole
history before it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from agentledger.identity import HASH_PREFIX, canonical_json, sha256_bytes
from agentledger.records import Record

__all__ = [
    "ENTRY_KINDS",
    "GENESIS_PREV",
    "EntryKind",
    "JournalEntry",
    "entry_hash",
]

EntryKind = Literal["genesis", "run", "score", "label", "decision", "outcome"]
ENTRY_KINDS: tuple[str, ...] = ("genesis", "run", "score", "label", "decision", "outcome")
GENESIS_PREV = HASH_PREFIX + "0" * 64
"""The `prev` of the first entry: there is nothing before it."""

_HASH = r"^sha256:[0-9a-f]{64}$"


class JournalEntry(Record):
    """One accepted record (or the journal's start: kind ``genesis``)."""

    seq: int = Field(ge=1, description="Position in the journal, from 1, without gaps.")
    kind: EntryKind = Field(description="genesis, run, score, label, decision or outcome.")
    id: str = Field(
        max_length=1024,
        description="The run id, the score's or label's key, the decision id; 'genesis'.",
    )
    keys: dict[str, str] = Field(
        default_factory=dict,
        description="Each storage key of the record with the sha256 of its bytes (a run: "
        "runs/<run_id>/MANIFEST.json).",
    )
    sha256: str | None = Field(
        default=None,
        pattern=_HASH,
        description="The sha256 of the record's canonical bytes (a run: of its MANIFEST.json; "
        "a decision: of decision.json); null for the genesis entry.",
    )
    supersedes: str | None = Field(
        default=None, max_length=200, description="The label or decision this one supersedes."
    )
    at: datetime = Field(description="When the entry was appended (UTC).")
    prev: str = Field(pattern=_HASH, description="The hash of the entry before (zeros at first).")
    note: str | None = Field(
        default=None, max_length=2000, description="The genesis entry: how the journal began."
    )
    predating: int | None = Field(
        default=None,
        ge=0,
        description="The genesis entry of a ledger older than its journal: how many records "
        "were already there (anchored from this entry on, not before).",
    )
    hash: str = Field(
        pattern=_HASH, description="sha256 of this entry's canonical JSON without it."
    )


def entry_hash(fields: dict[str, Any]) -> str:
    """The hash of an entry given as a JSON-ready dict (its `hash` field is left out)."""
    return sha256_bytes(canonical_json({k: v for k, v in fields.items() if k != "hash"}))
