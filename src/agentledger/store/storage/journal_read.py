"""Reading the journal: its segments parsed and checked line by line, the chain checked
across them, and its head as a `Checkpoint`. `journal.Journal` reads and writes through these;
`verify` and `seen_heads` read segments with them. (How the journal is kept: journal.py.)"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import TypeAdapter, ValidationError

from agentledger.errors import InputError, IntegrityError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.records.journal import GENESIS_PREV, JournalEntry

if TYPE_CHECKING:
    from agentledger.store.storage.base import BareStorage

__all__ = [
    "JOURNAL_AREA",
    "Checkpoint",
    "JournalRead",
    "check_segments",
    "entry_at",
    "parse_segment",
    "segment_key",
]

JOURNAL_AREA = "journal"
_SEGMENT = re.compile(r"^journal/([0-9]{12})\.jsonl$")
_PROBES = 64
"""How many positions before an entry `entry_at` tries for its segment before it
lists the journal (a segment holds one entry, or one batch's)."""
_CHECKPOINT = re.compile(r"^\s*([0-9]+):(sha256:[0-9a-f]{64})\s*$")


def segment_key(first: int) -> str:
    """The key of the segment whose first entry is number `first`."""
    return f"{JOURNAL_AREA}/{first:012d}.jsonl"


@dataclass(frozen=True)
class Checkpoint:
    """The head of the chain: how many entries, and the hash of the last one.

    Written as ``<count>:sha256:<hex>``, to paste into a CI log, a git tag or a ticket.
    """

    count: int
    hash: str

    def __str__(self) -> str:
        return f"{self.count}:{self.hash}"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """Read a checkpoint as `str` writes it; InputError otherwise."""
        match = _CHECKPOINT.match(text or "")
        if not match or int(match.group(1)) < 1:
            raise InputError(
                f"checkpoint {text!r} is not valid: expected <count>:sha256:<64 hex>, as "
                "`agentledger checkpoint` prints it"
            )
        return cls(int(match.group(1)), match.group(2))


@dataclass
class JournalRead:
    """The journal read afresh, every segment, with what is wrong with the chain."""

    entries: list[JournalEntry] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(segment key, what is wrong), in chain order."""

    @property
    def head(self) -> Checkpoint | None:
        return Checkpoint(self.entries[-1].seq, self.entries[-1].hash) if self.entries else None


@functools.cache
def _entries() -> TypeAdapter[list[JournalEntry]]:
    """The validator of a segment's entries, built when a segment is first read (a command
    that only appends, as `label` does, never builds it)."""
    return TypeAdapter(list[JournalEntry])


def _decode_line(key: str, number: int, line: bytes) -> dict[str, Any]:
    """A line's JSON object, checked to be as written: canonical JSON, which is what was hashed.

    orjson decodes and re-encodes at C speed; a line it does not give back byte for byte (or
    cannot read) is decided by the standard library's encoder, the one that wrote it.
    """
    try:
        raw = orjson.loads(line)
        if isinstance(raw, dict) and orjson.dumps(raw, option=orjson.OPT_SORT_KEYS) == line:
            return raw
    except (orjson.JSONDecodeError, TypeError):
        pass
    try:
        raw = json.loads(line)
        if not isinstance(raw, dict):
            raise ValueError(f"a JSON {type(raw).__name__}, not an object")
        written = canonical_json(raw)
    except ValueError as exc:
        detail = str(exc).splitlines()[0]
        raise IntegrityError(f"{key} line {number}: not a journal entry ({detail})") from None
    if written != line:
        raise IntegrityError(f"{key} line {number}: not as written (reformatted)")
    return raw


def parse_segment(key: str, data: bytes) -> list[JournalEntry]:
    """The entries of one segment; IntegrityError when a line is not an entry."""
    lines = data.split(b"\n")
    if lines[-1] != b"":
        raise IntegrityError(f"{key}: the last entry is cut short (no final newline)")
    del lines[-1]
    if not lines:
        raise IntegrityError(f"{key}: an empty journal segment")
    raws = [_decode_line(key, number, line) for number, line in enumerate(lines, start=1)]
    try:
        # One validator call for the whole segment; a failure is then found line by line.
        entries = _entries().validate_python(raws)
    except ValidationError:
        for number, raw in enumerate(raws, start=1):
            try:
                JournalEntry.model_validate(raw)
            except ValidationError as exc:
                detail = str(exc).splitlines()[0]
                raise IntegrityError(
                    f"{key} line {number}: not a journal entry ({detail})"
                ) from None
        raise  # (every line validates alone: cannot happen)
    for number, (line, entry) in enumerate(zip(lines, entries, strict=True), start=1):
        # The line is canonical, so without its `hash` member (never first: "at" sorts
        # before it) it is the canonical JSON the hash was computed over.
        unhashed = line.replace(b',"hash":"' + entry.hash.encode() + b'"', b"", 1)
        if sha256_bytes(unhashed) != entry.hash:
            raise IntegrityError(
                f"{key} line {number}: entry {entry.seq} does not match its hash (edited)"
            )
    return entries


def check_segments(stored: Sequence[tuple[str, bytes]]) -> JournalRead:
    """The entries of the journal's segments (`Journal.segments`), the chain checked,
    reporting rather than raising."""
    read = JournalRead()
    segments: list[tuple[int, str, bytes]] = []
    for key, data in stored:
        match = _SEGMENT.match(key)
        if match is None:
            read.problems.append((key, "not a journal segment (added by hand?)"))
        else:
            segments.append((int(match.group(1)), key, data))
    expected_seq, expected_prev = 1, GENESIS_PREV
    for first, key, data in sorted(segments):
        try:
            found = parse_segment(key, data)
        except IntegrityError as exc:
            read.problems.append((key, str(exc).removeprefix(f"{key}: ")))
            continue
        if first != found[0].seq:
            read.problems.append((key, f"named for entry {first}, starts at {found[0].seq}"))
        for entry in found:
            if entry.seq != expected_seq:
                what = "missing (truncated or removed)" if entry.seq > expected_seq else "again"
                read.problems.append(
                    (key, f"entry {expected_seq} expected, found {entry.seq}: entries {what}")
                )
            elif entry.prev != expected_prev:
                read.problems.append(
                    (
                        key,
                        f"entry {entry.seq} does not link to entry {entry.seq - 1}: "
                        "the chain is broken (reordered or rewritten)",
                    )
                )
            if (entry.kind == "genesis") != (entry.seq == 1):
                read.problems.append((key, f"entry {entry.seq}: genesis only comes first"))
            expected_seq, expected_prev = entry.seq + 1, entry.hash
            read.entries.append(entry)
    return read


def entry_at(storage: BareStorage, seq: int) -> JournalEntry | None:
    """Entry `seq` of the journal in `storage`, from the segment that holds it: the nearest
    segment at or before it (a segment is named for its first entry), looked for a few
    positions back, then in the journal's listing; None when no segment holds it."""
    first = next(
        (at for at in range(seq, max(0, seq - _PROBES), -1) if storage.exists(segment_key(at))),
        None,
    )
    if first is None:
        named = [
            int(key[len(JOURNAL_AREA) + 1 : -len(".jsonl")])
            for key in storage.keys(JOURNAL_AREA)
            if _SEGMENT.match(key)
        ]
        first = max((at for at in named if at <= seq), default=None)
        if first is None:
            return None
    found = parse_segment(segment_key(first), storage.get(segment_key(first)))
    return next((entry for entry in found if entry.seq == seq), None)
