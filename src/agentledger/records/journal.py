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

Before a writer writes, it appends an **intent** (kind ``intent``): the keys it is about to
write with the sha256 of each, and who it is (`writer`). Its acceptance entry follows once the
bytes are stored. An intent accepts nothing; it is what lets `gc` tell the record of a writer
that died in between (announced, bytes as announced: completed) from a file put there by hand
(never announced: moved to quarantine, never accepted).
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

EntryKind = Literal["genesis", "intent", "run", "score", "label", "decision", "outcome", "split"]
ENTRY_KINDS: tuple[str, ...] = (
    "genesis",
    "intent",
    "run",
    "score",
    "label",
    "decision",
    "outcome",
    "split",
)
GENESIS_PREV = HASH_PREFIX + "0" * 64
"""The `prev` of the first entry: there is nothing before it."""

_HASH = r"^sha256:[0-9a-f]{64}$"


class JournalEntry(Record):
    """One accepted record (or the journal's start: kind ``genesis``)."""

    seq: int = Field(ge=1, description="Position in the journal, from 1, without gaps.")
    kind: EntryKind = Field(
        description="genesis, intent (a writer about to write), run, score, label, decision, "
        "outcome or split."
    )
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
    intends: dict[str, str] | None = Field(
        default=None,
        description="An intent: each storage key the writer is about to write, with the sha256 "
        "its bytes will have. Only a record a writer announced so can be completed by `gc` "
        "when the writer dies before accepting it.",
    )
    writer: str | None = Field(
        default=None,
        max_length=300,
        description="An intent: who is writing (the judge id, the label's source, the gate).",
    )
    hash: str = Field(
        pattern=_HASH, description="sha256 of this entry's canonical JSON without it."
    )


_ONLY_WHEN_SET = frozenset({"intends", "writer"})
"""Fields an entry's line holds only when they are set (intents'): entries written before
they existed stay as they were hashed."""


def entry_hash(fields: dict[str, Any]) -> str:
    """The hash of an entry given as a JSON-ready dict (its `hash` field is left out)."""
    return sha256_bytes(
        canonical_json(
            {
                k: v
                for k, v in fields.items()
                if k != "hash" and not (k in _ONLY_WHEN_SET and v is None)
            }
        )
    )
