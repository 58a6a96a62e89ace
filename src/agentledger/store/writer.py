"""Writing one run: collect artifacts in staging, then seal.

A `RunWriter` streams artifacts into a private staging place as they are added. Sealing writes
metadata.json and run_summary.json, then MANIFEST.json last, and makes the run visible in one
atomic step. A writer that is abandoned, raises, or is killed leaves nothing visible.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from pydantic import BaseModel

from agentledger.errors import InputError, RunExistsError
from agentledger.identity import sha256_bytes
from agentledger.records import (
    TRACE,
    Manifest,
    RunMetadata,
    RunSummary,
    ShellCounts,
    ShellEvent,
    parse_shell_audit,
    utc_now,
)
from agentledger.records.limits import check_storable
from agentledger.store.index import IndexEntry
from agentledger.store.storage import StagedRun

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from pathlib import Path

    from agentledger.records import LedgerConfig
    from agentledger.store.index import RunIndex
    from agentledger.store.storage import StorageBackend

Progress = Callable[[int, int | None], None]
"""Called with (done, total) as long operations advance; total may be None when unknown."""


class Indexable(Protocol):
    """A stored run as the ledger loads it: what the index holds of it."""

    def index_entry(self) -> IndexEntry: ...


class LedgerParts(Protocol):
    """What the ledger's helpers (the writer, sealing, reindex, the record kinds, the journal's
    upkeep) use of `agentledger.store.ledger.Ledger`: typed here, so that they need not import
    the module that imports them."""

    root: Path
    config: LedgerConfig
    storage: StorageBackend
    index: RunIndex

    def seal_batch(self, writers: Sequence[RunWriter]) -> list[SealedRun]: ...

    def load(self, run_id: str) -> Indexable: ...

    def iter_stored(
        self, progress: Progress | None = None
    ) -> Iterator[tuple[str, Indexable | None, str | None]]: ...


OpenLedger = Callable[["RunIndex | None"], "AbstractContextManager[LedgerParts]"]
"""Opens a ledger on the given index (None: its own), as reindex needs."""

__all__ = [
    "AUDIT",
    "METADATA",
    "PROMPT",
    "REPORT",
    "SHELL_AUDIT",
    "SUMMARY",
    "SYSTEM_PROMPT",
    "RunWriter",
    "SealedRun",
    "derive_summary",
    "derived_values",
    "record_bytes",
]

METADATA = "metadata.json"
SUMMARY = "run_summary.json"
PROMPT = "PROMPT.txt"
SYSTEM_PROMPT = "system_prompt.txt"
REPORT = "report.md"
AUDIT = "audit.md"
SHELL_AUDIT = "shell_audit.jsonl"
_RESERVED = {METADATA, SUMMARY}


def record_bytes(record: BaseModel) -> bytes:
    """How a record is written to disk: indented UTF-8 JSON, keys in model order, newline."""
    return record.model_dump_json(indent=2).encode("utf-8") + b"\n"


def derived_values(
    metadata: RunMetadata, counts: ShellCounts | None
) -> dict[str, int | float | None]:
    """The figures `derive_summary` computes: commands_run, commands_denied, duration_s.

    `counts`: the shell log's commands and refusals (None without a log).
    """
    duration = None
    if metadata.started_at and metadata.ended_at:
        duration = (metadata.ended_at - metadata.started_at).total_seconds()
    return {
        "commands_run": None if counts is None else counts.ran,
        "commands_denied": None if counts is None else counts.denied,
        "duration_s": duration,
    }


def derive_summary(metadata: RunMetadata, events: Iterable[ShellEvent] | None) -> RunSummary:
    """What can be computed about a run from its artifacts alone."""
    counts = None if events is None else ShellCounts.of(events)
    return RunSummary(**derived_values(metadata, counts), derived=True)


@dataclass(frozen=True)
class SealedRun:
    """A run that is now part of the ledger."""

    run_id: str
    manifest: Manifest
    manifest_sha256: str
    location: str
    already: bool = False
    """Sealed by another writer at the same time (two imports of the same runs), byte for byte
    as this one: this writer wrote nothing (`sealing._publish_batch`)."""


class RunWriter:
    """Collects a run's artifacts and seals them. Use as a context manager::

    with ledger.new_run(metadata) as run:
        run.add_text("report.md", report)
        run.add_shell_events(events)
    # sealed here; an exception inside the block discards everything
    """

    def __init__(
        self, ledger: LedgerParts, metadata: RunMetadata, *, max_artifact_bytes: int | None = None
    ) -> None:
        # Checked before anything is staged: a value the index cannot take is refused whole.
        check_storable(metadata, f"run {metadata.run_id}: {METADATA}")
        if ledger.storage.has_run(metadata.run_id):
            raise RunExistsError(
                f"run {metadata.run_id} already exists in {ledger.root}; sealed runs are never "
                "replaced"
            )
        self.ledger = ledger
        self.metadata = metadata
        self.summary: RunSummary | None = None
        self._events: list[ShellEvent] | None = None
        self._shell_checked = False
        self._staged: StagedRun | None = ledger.storage.stage(
            metadata.run_id, max_artifact_bytes or ledger.config.max_artifact_bytes
        )
        self.sealed: SealedRun | None = None

    @property
    def run_id(self) -> str:
        return self.metadata.run_id

    def _stage(self) -> StagedRun:
        if self._staged is None:
            raise InputError(f"run {self.run_id} is already sealed or discarded")
        return self._staged

    def _check_name(self, name: str) -> None:
        if name in _RESERVED:
            raise InputError(
                f"{name} is written by the ledger from the run's records; "
                "pass metadata to new_run() and the summary to set_summary()"
            )

    def add_bytes(self, name: str, data: bytes, *, checked: bool = False) -> None:
        """Add an artifact from bytes.

        shell_audit.jsonl is validated line by line, and trace.jsonl as the trace record
        (`records.trace.parse_trace`): a run never holds a trace that cannot be read back.
        `checked=True` says the caller already validated them (an import's planning pass, a
        recording's steps) and, for the shell log, will call set_summary().
        """
        self._check_name(name)
        if name == SHELL_AUDIT:
            self._note_shell_audit(data, name, checked)
        elif name == TRACE and not checked:
            from agentledger.records.trace import parse_trace  # off the path of label, verify

            parse_trace(data, f"run {self.run_id}: {TRACE}")
        self._stage().write(name, data)

    def add_text(self, name: str, text: str) -> None:
        """Add a text artifact, stored as UTF-8."""
        self.add_bytes(name, text.encode("utf-8"))

    def add_file(self, name: str, source: str | Path, *, checked: bool = False) -> None:
        """Add an artifact by streaming a file from disk (big attachments, snapshots)."""
        self._check_name(name)
        staged = self._stage()
        if name not in (SHELL_AUDIT, TRACE) or (name == TRACE and checked):
            staged.copy_file(name, source)
            return
        with open(source, "rb") as handle:
            too_big = os.fstat(handle.fileno()).st_size > staged.max_artifact_bytes
            # An oversized file is refused by write_stream below, before it is parsed.
            if name == SHELL_AUDIT:
                self._note_shell_audit(None if too_big else handle, str(source), checked)
            elif not too_big:
                from agentledger.records.trace import parse_trace

                parse_trace(handle.read(), f"run {self.run_id}: {source}")
            handle.seek(0)
            staged.write_stream(name, handle)

    def _note_shell_audit(self, data: bytes | BinaryIO | None, source: str, checked: bool) -> None:
        if checked:
            self._shell_checked = True
        elif data is not None:
            raw = data if isinstance(data, bytes) else data.read()
            self._events = parse_shell_audit(raw, f"{self.run_id}: {source}")

    def add_shell_events(self, events: Iterable[ShellEvent]) -> None:
        """Write the shell command log from ShellEvent records."""
        listed = list(events)
        lines = b"".join(
            json.dumps(event.model_dump(mode="json", exclude_none=True), ensure_ascii=False).encode(
                "utf-8"
            )
            + b"\n"
            for event in listed
        )
        self._check_name(SHELL_AUDIT)
        for number, event in enumerate(listed, start=1):
            check_storable(event, f"run {self.run_id}: {SHELL_AUDIT}, line {number}")
        self._stage().write(SHELL_AUDIT, lines)
        self._events = listed

    def set_summary(self, summary: RunSummary) -> None:
        """Record the run's metrics; without this the ledger derives what it can."""
        check_storable(summary, f"run {self.run_id}: {SUMMARY}")
        self.summary = summary

    def update_metadata(self, **changes: Any) -> None:
        """Change identity fields before sealing (e.g. ended_at, model_served)."""
        if "run_id" in changes and changes["run_id"] != self.run_id:
            raise InputError("the run id cannot change once a run is being written")
        merged = self.metadata.model_dump() | changes
        metadata = RunMetadata.model_validate(merged)
        check_storable(metadata, f"run {self.run_id}: {METADATA}")
        self.metadata = metadata

    def prepare(self) -> tuple[StagedRun, bytes, IndexEntry]:
        """Write the records and build the manifest; the caller publishes."""
        staged = self._stage()
        if self.summary is None and self._shell_checked:
            raise InputError("set_summary() is required when the shell log was added checked=True")
        summary = self.summary or derive_summary(self.metadata, self._events)
        # Again here, for records changed after they were handed in: nothing the index
        # cannot take is ever sealed.
        check_storable(self.metadata, f"run {self.run_id}: {METADATA}")
        check_storable(summary, f"run {self.run_id}: {SUMMARY}")
        staged.write(METADATA, record_bytes(self.metadata))
        staged.write(SUMMARY, record_bytes(summary))
        manifest = Manifest(
            run_id=self.run_id, sealed_at=utc_now(), files=dict(sorted(staged.entries.items()))
        )
        manifest_bytes = record_bytes(manifest)
        entry = IndexEntry(
            metadata=self.metadata,
            summary=summary,
            manifest=manifest,
            manifest_sha256=sha256_bytes(manifest_bytes),
        )
        return staged, manifest_bytes, entry

    def seal(self) -> SealedRun:
        """Seal the run: after this it is visible, read-only, and indexed."""
        sealed = self.ledger.seal_batch([self])
        return sealed[0]

    def discard(self) -> None:
        """Throw away everything written so far."""
        if self._staged is not None:
            self.ledger.storage.discard(self._staged)
            self._staged = None

    def _mark_sealed(self, sealed: SealedRun) -> None:
        self.sealed = sealed
        self._staged = None

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self.discard()
        elif self.sealed is None and self._staged is not None:
            try:
                self.seal()
            except BaseException:
                self.discard()
                raise
