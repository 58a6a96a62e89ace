"""The head each ledger last showed on this machine, kept outside the ledger: rollback noticed.

A ledger's journal pins everything before its head, but only a head kept elsewhere can tell
that the ledger went back: an older copy restored over it, the journal's last segments
deleted, or another chain put in its place all verify clean on their own. So every time a
ledger is opened and closed, the head its journal shows is noted in a small state file per
ledger on this machine (``$AGENTLEDGER_STATE_DIR``, else ``$XDG_STATE_HOME/agentledger``, else
``~/.local/state/agentledger``; ``heads/<sha256 of the ledger's location>.json``). When the
journal is found **behind** a head seen (fewer entries) or **beside** it (the entry at the
seen position has another hash: a different chain), `check_seen_head` says so: commands warn
on stderr and `verify` reports it and exits 3. A head seen is replaced only by one that
extends it, so the warning stays until the ledger is made whole again or the user accepts
the head it has now (`forget_seen_head`, ``agentledger checkpoint --accept-current``).

Reading the head is cheap: the segment holding the head seen and those written after it (one
listing of ``journal/`` and at most two segments when no head was seen, or it is not found).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.errors import AgentLedgerError, IntegrityError
from agentledger.records import utc_now
from agentledger.store.storage.journal import (
    JOURNAL_AREA,
    Checkpoint,
    entry_at,
    parse_segment,
    segment_key,
)

if TYPE_CHECKING:
    from agentledger.records.journal import JournalEntry
    from agentledger.store.storage import StorageBackend

__all__ = [
    "STATE_ENV",
    "HeadProblem",
    "SeenHead",
    "check_seen_head",
    "compare_with_seen",
    "forget_seen_head",
    "note_head",
    "read_seen_head",
    "refuse_missing_journal",
    "state_dir",
]

STATE_ENV = "AGENTLEDGER_STATE_DIR"
_SEGMENT = re.compile(r"^journal/([0-9]{12})\.jsonl$")


def state_dir() -> Path:
    """Where this machine keeps what it saw of ledgers."""
    explicit = os.environ.get(STATE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "agentledger"


@dataclass(frozen=True)
class SeenHead:
    """The head a ledger showed, when, and where the ledger was."""

    ledger: str
    head: Checkpoint
    seen_at: str


@dataclass(frozen=True)
class HeadProblem:
    """The journal is behind (`kind` "behind") or beside ("beside") a head seen before."""

    kind: str
    seen: SeenHead
    now: Checkpoint | None
    shown: str = ""  # the ledger as the user named it

    def __str__(self) -> str:
        now = str(self.now) if self.now else "no journal entries"
        if self.kind == "behind":
            what = (
                f"its journal ends at {now}, behind the head {self.seen.head} this machine saw "
                f"at {self.seen.seen_at}: the ledger was rolled back (an older copy restored) "
                "or its journal's tail was deleted"
            )
        else:
            what = (
                f"its journal holds another chain ({now}) than the head {self.seen.head} this "
                f"machine saw at {self.seen.seen_at}: the journal was replaced"
            )
        return (
            f"{self.shown or self.seen.ledger}: {what}. Restore the ledger, or if the change "
            "was meant, accept the head it has now with `agentledger checkpoint "
            "--accept-current`"
        )


def _locations(root: Path, storage: StorageBackend) -> list[str]:
    """Where this machine notes the ledger's head: its storage URI, or for a local ledger its
    real path and the path as given (when a symlink is on it): a ledger path that is a link
    switched to an older copy (``/srv/ledger -> ledger-v1``) is that ledger gone back, not
    a ledger never seen."""
    uri = getattr(storage, "uri", "") or ""
    if uri and not uri.startswith(("local", "file:")):
        return [uri]
    return list(dict.fromkeys([os.path.realpath(root), os.path.abspath(root)]))


def _state_file(location: str) -> Path:
    digest = hashlib.sha256(location.encode("utf-8", "surrogatepass")).hexdigest()
    return state_dir() / "heads" / f"{digest}.json"


def read_seen_head(root: Path, storage: StorageBackend) -> SeenHead | None:
    """The head this machine last saw the ledger show, if any (an unreadable state file is
    taken for none: it is this machine's memory, not evidence)."""
    seen = _seen_at_each(root, storage)
    return seen[0] if seen else None


def _seen_at_each(root: Path, storage: StorageBackend) -> list[SeenHead]:
    """The head noted at each of the ledger's locations that has one."""
    found = []
    for location in _locations(root, storage):
        try:
            value = json.loads(_state_file(location).read_bytes())
            head = Checkpoint.parse(value["head"])
            found.append(SeenHead(location, head, str(value["seen_at"])))
        except (OSError, ValueError, KeyError, TypeError, AgentLedgerError):
            continue
    return found


def _write(location: str, head: Checkpoint) -> None:
    path = _state_file(location)
    document = {"ledger": location, "head": str(head), "seen_at": utc_now().isoformat()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".head-")
        with os.fdopen(fd, "w") as handle:
            json.dump(document, handle)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def _segments(storage: StorageBackend) -> list[tuple[int, str]]:
    found = []
    for key in storage.keys(JOURNAL_AREA):
        match = _SEGMENT.match(key)
        if match:
            found.append((int(match.group(1)), key))
    return sorted(found)


def _entry_at(storage: StorageBackend, segments: list[tuple[int, str]], seq: int) -> JournalEntry:
    _first, key = max((s for s in segments if s[0] <= seq), default=segments[0])
    entries = parse_segment(key, storage.get(key))
    return next((entry for entry in entries if entry.seq == seq), entries[-1])


def _head_and_entry(
    storage: StorageBackend, seq: int | None
) -> tuple[Checkpoint | None, str | None]:
    """The journal's head, and the hash of its entry `seq` (None if it has none).

    With `seq` (a head seen before) found as the entry at that position, the head is read
    forward from it, segment after segment, rather than from a listing of the whole
    journal: what a ledger of many runs is opened with."""
    if seq is not None:
        entry = entry_at(storage, seq)
        if entry is not None:
            last = entry
            while True:
                key = segment_key(last.seq + 1)
                if not storage.exists(key):
                    return Checkpoint(last.seq, last.hash), entry.hash
                last = parse_segment(key, storage.get(key))[-1]
    segments = _segments(storage)
    if not segments:
        return None, None
    last = parse_segment(segments[-1][1], storage.get(segments[-1][1]))[-1]
    head = Checkpoint(last.seq, last.hash)
    if seq is None or seq > last.seq:
        return head, None
    entry = _entry_at(storage, segments, seq)
    return head, entry.hash if entry.seq == seq else None


def compare_with_seen(
    seen: SeenHead, head: Checkpoint | None, at_seen: str | None
) -> HeadProblem | None:
    """Whether the journal (head `head`, its entry at the seen position hashing to `at_seen`)
    is behind or beside the head seen."""
    if head is None or head.count < seen.head.count:
        return HeadProblem("behind", seen, head)
    if at_seen != seen.head.hash:
        return HeadProblem("beside", seen, head)
    return None


def check_seen_head(root: Path, storage: StorageBackend) -> HeadProblem | None:
    """Compare the ledger's journal with the head this machine saw, and note its head when it
    extends that one. A journal that cannot be read here is left to `verify` to report. A
    storage that lives only as long as its process (memory) has no past to go back to."""
    if not storage.shared_between_processes:
        return None
    all_seen = _seen_at_each(root, storage)
    noted = {seen.ledger for seen in all_seen}
    problem = None
    head = None
    each: list[SeenHead | None] = list(all_seen) or [None]
    for seen in each:
        try:
            head, at_seen = _head_and_entry(storage, seen.head.count if seen else None)
        except (IntegrityError, OSError, AgentLedgerError):
            return None
        if seen is None:
            break
        problem = problem or compare_with_seen(seen, head, at_seen)
    if problem is not None:
        return replace(problem, shown=str(root))
    if head is not None:
        for location in _locations(root, storage):
            if location not in noted or any(
                seen.ledger == location and seen.head != head for seen in all_seen
            ):
                _write(location, head)
    return None


def note_head(root: Path, storage: StorageBackend) -> None:
    """Note the ledger's head now (a command is done), if it extends the head seen."""
    check_seen_head(root, storage)


def forget_seen_head(root: Path, storage: StorageBackend) -> Checkpoint | None:
    """Take the ledger's head now as the one seen (a rollback that was meant); gives it."""
    head, _ = _head_and_entry(storage, None)
    for location in _locations(root, storage):
        if head is None:
            _state_file(location).unlink(missing_ok=True)
        else:
            _write(location, head)
    return head


def refuse_missing_journal(root: Path, storage: StorageBackend, mark: str | None) -> None:
    """IntegrityError when a ledger without a journal had one: its `mark` file says so
    (`journal.started`), or this machine saw its head. Never a fresh start (an older ledger
    anchored anew), and nothing is written: not even by `verify`."""

    if mark is not None:
        raise IntegrityError(
            f"{root}: the journal is missing (its first segment, {segment_key(1)}, is "
            f"gone) though {mark} says the ledger has one: deleted, or the "
            "ledger was replaced. This is never a fresh start: restore journal/ from "
            "a copy"
        )
    seen = read_seen_head(root, storage)
    if seen is not None:
        raise IntegrityError(
            f"{root}: the journal is missing, though this machine saw it at {seen.head}: "
            "deleted, or the ledger was replaced. This is never a fresh start, and nothing "
            "was written: restore journal/ from a copy"
        )
