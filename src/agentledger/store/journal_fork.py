"""Repairing a forked journal (`agentledger gc --checkpoint HEAD`): keep the chain a
checkpoint names, set the other branch aside.

A journal forks when two writers each append after the same entry and both segments are kept:
a store that stopped honouring conditional writes (S3 without If-None-Match), or a copy of the
ledger written to and then merged back over it. `verify` then reports the chain broken, and
nothing can say on its own which branch is the ledger. A checkpoint kept elsewhere can: the
head `agentledger checkpoint` printed names one chain, entry by entry back to the genesis.

`repair_fork` keeps that chain (and what extends it without a further fork), moves every
segment holding an entry off it to ``quarantine/`` (where `verify` names it, as it names every
record set aside), and appends again, after the kept head, each entry of the other branch that
still holds: an intent as it was, and a record's acceptance when the record's bytes are those
its entry and an intent on either branch give. An acceptance whose record is not here (written
in the other copy) or whose intent was lost with the overwritten segment is dropped, and `gc`
then quarantines that record as one no writer announced: a lost intent is never forged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import InputError, IntegrityError, RecordNotFoundError
from agentledger.identity import sha256_bytes
from agentledger.store.storage.journal import (
    Checkpoint,
    PendingEntry,
    PendingIntent,
    check_segments,
    parse_segment,
)

if TYPE_CHECKING:
    from agentledger.records.journal import JournalEntry
    from agentledger.store.ledger import Ledger
    from agentledger.store.storage import StorageBackend

__all__ = ["ForkRepair", "repair_fork", "repair_ledger_fork"]


@dataclass
class ForkRepair:
    """What `repair_fork` did."""

    kept: Checkpoint
    """The head of the chain kept (the checkpoint, or what extends it)."""
    set_aside: list[tuple[str, str]] = field(default_factory=list)
    """(segment, where it went) of every segment holding an entry off the kept chain."""
    replayed: list[str] = field(default_factory=list)
    """The ids of the other branch's entries appended again after the kept head."""
    dropped: list[tuple[str, str]] = field(default_factory=list)
    """(entry id, why) of the other branch's entries not appended again."""


def _read(storage: StorageBackend) -> list[tuple[str, list[JournalEntry]]]:
    segments = []
    for key, data in storage.journal.segments():
        try:
            segments.append((key, parse_segment(key, data)))
        except IntegrityError as exc:
            raise IntegrityError(f"cannot repair the journal: {exc}") from None
    return segments


def _chain(segments: list[tuple[str, list[JournalEntry]]], head: Checkpoint) -> list[str]:
    """The hashes of the chain from the genesis to `head`, then on while one entry alone
    follows; IntegrityError when `head` is not in the journal or its chain is incomplete."""
    by_hash = {entry.hash: entry for _key, entries in segments for entry in entries}
    named = by_hash.get(head.hash)
    if named is None or named.seq != head.count:
        raise InputError(f"the journal holds no entry {head}: this checkpoint is of another chain")
    chain = [named.hash]
    entry = named
    while entry.seq > 1:
        before = by_hash.get(entry.prev)
        if before is None or before.seq != entry.seq - 1:
            raise IntegrityError(
                f"the chain of checkpoint {head} is incomplete: entry {entry.seq - 1} it links "
                "to is not in the journal (overwritten); choose another checkpoint"
            )
        chain.append(before.hash)
        entry = before
    chain.reverse()
    following: dict[str, list[JournalEntry]] = {}
    for entry in by_hash.values():
        following.setdefault(entry.prev, []).append(entry)
    while len(following.get(chain[-1], [])) == 1:
        chain.append(following[chain[-1]][0].hash)
    return chain


def repair_fork(storage: StorageBackend, head: Checkpoint) -> ForkRepair:
    """Keep the chain `head` names, set the rest aside, append the other branch's entries
    that still hold (see the module); under the journal lock."""
    journal = storage.journal
    journal.check_writable()
    with journal.lock():
        segments = _read(storage)
        chain = _chain(segments, head)
        on_chain = set(chain)
        kept = [(key, entries) for key, entries in segments if entries[0].hash in on_chain]
        aside = [(key, entries) for key, entries in segments if entries[0].hash not in on_chain]
        if any(e.hash not in on_chain for _key, entries in kept for e in entries):
            raise IntegrityError("a segment holds entries of both branches: cannot repair")
        by_key = dict(journal.segments())
        if check_segments([(key, by_key[key]) for key, _entries in kept]).problems:
            raise IntegrityError(f"the chain of checkpoint {head} is not whole: cannot repair")
        last = [e for _key, entries in kept for e in entries][-1]
        report = ForkRepair(Checkpoint(last.seq, last.hash))
        if not aside:
            return report
        for key, _entries in aside:
            report.set_aside.append((key, storage.quarantine(key)))
        journal.reload()
        pending = _replayable(storage, [e for _key, entries in aside for e in entries], report)
        if pending:
            made = journal.append(pending)
            report.kept = Checkpoint(made[-1].seq, made[-1].hash)
    return report


def _replayable(
    storage: StorageBackend, entries: list[JournalEntry], report: ForkRepair
) -> list[PendingEntry]:
    """The other branch's entries to append again: its intents, and each acceptance whose
    record is here, with the bytes its entry gives and an intent announced them."""
    accepted = storage.journal.accepted()
    intended = {
        (key, digest)
        for entry in [*storage.journal.entries(), *entries]
        if entry.kind == "intent"
        for key, digest in (entry.intends or {}).items()
    }
    pending: list[PendingEntry] = []
    for entry in sorted(entries, key=lambda e: e.seq):
        if entry.kind == "intent":
            pending.append(
                PendingIntent(
                    "intent",
                    entry.id,
                    {},
                    None,
                    intends=dict(entry.intends or {}),
                    writer=entry.writer or "",
                )
            )
            report.replayed.append(entry.id)
            continue
        why = _why_not(storage, entry, accepted, intended)
        if why:
            report.dropped.append((entry.id, why))
            continue
        pending.append(
            PendingEntry(entry.kind, entry.id, entry.keys, entry.sha256, entry.supersedes)
        )
        report.replayed.append(entry.id)
    return pending


def _why_not(
    storage: StorageBackend,
    entry: JournalEntry,
    accepted: Mapping[str, str],
    intended: set[tuple[str, str]],
) -> str:
    """Why the acceptance `entry` of the other branch is not appended again ('' if it is)."""
    if entry.kind == "genesis":
        return "a second genesis"
    for key, digest in entry.keys.items():
        if key in accepted:
            return f"{key} is accepted on the kept chain already"
        try:
            data = storage.get(key)
        except (RecordNotFoundError, OSError):
            return f"{key} is not in this ledger (written in the other copy)"
        if sha256_bytes(data) != digest:
            return f"{key} holds other bytes than its entry says"
        if (key, digest) not in intended:
            return f"no intent announced {key} (lost with the overwritten segment)"
    return ""


def repair_ledger_fork(ledger: Ledger, checkpoint: Checkpoint) -> ForkRepair:
    """`repair_fork` on `ledger`, whose head it leaves is then taken as the one this machine
    saw: the checkpoint is the user's word for which chain is the ledger, whichever branch
    this machine saw last (a ledger refused as rolled back is repaired all the same)."""
    journal = ledger.storage.journal
    refusal = journal.refusal
    journal.refuse_writes(None)
    try:
        repair = repair_fork(ledger.storage, checkpoint)
    except BaseException:
        journal.refuse_writes(refusal)
        raise
    ledger.accept_current_head()
    return repair
