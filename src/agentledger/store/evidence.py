"""One sealed run as the readers of its evidence see it: identity, file names, texts, and the
shell log parsed once, each event with its line in shell_audit.jsonl.

The judges (`judges.inputs`) and the trace predicates (`gates.predicates.run_view`) both read
runs through this, so a shell log means the same to them: the same events, the same line
numbers, and the same answer when it cannot be read (no events, and why).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from agentledger.errors import RecordError, RunNotFoundError
from agentledger.records import (
    FileEntry,
    RunMetadata,
    RunSummary,
    ShellEvent,
    parse_shell_audit,
)
from agentledger.records.trace import TRACE, TraceStep, parse_trace
from agentledger.store.sealed_reads import check_manifest_accepted, check_sealed
from agentledger.store.writer import SHELL_AUDIT

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "LoggedCommand",
    "RunEvidence",
    "ShellLog",
    "TraceLog",
    "check_manifest_accepted",
    "check_sealed",
    "load_run_evidence",
    "parse_shell_log",
    "read_sealed",
]


@dataclass(frozen=True)
class LoggedCommand:
    """One event of the shell log and its 1-based line in shell_audit.jsonl."""

    line: int
    event: ShellEvent

    @property
    def command(self) -> str:
        return self.event.command

    @property
    def ran(self) -> bool:
        """True unless the gate denied it (denied commands were attempted, not run)."""
        return not self.event.denied


@dataclass(frozen=True)
class ShellLog:
    """A run's shell log: its commands in order, or None and why there are none."""

    commands: tuple[LoggedCommand, ...] | None
    problem: str | None = None

    @property
    def events(self) -> list[ShellEvent] | None:
        """The events alone, in log order (None without a readable log)."""
        if self.commands is None:
            return None
        return [item.event for item in self.commands]


@dataclass(frozen=True)
class TraceLog:
    """A run's trace (trace.jsonl): its steps in order, or None and why there are none."""

    steps: tuple[TraceStep, ...] | None
    problem: str | None = None


def parse_shell_log(raw: bytes, source: str = SHELL_AUDIT) -> tuple[LoggedCommand, ...]:
    """The events of a shell_audit.jsonl with their line numbers; RecordError when malformed."""
    numbers = [n for n, text in enumerate(raw.split(b"\n"), start=1) if text.strip()]
    events = parse_shell_audit(raw, source)
    if len(numbers) != len(events):  # cannot happen: one event per non-blank line
        raise RecordError(source, "could not match events to lines")
    return tuple(LoggedCommand(line, event) for line, event in zip(numbers, events, strict=True))


def read_sealed(ledger: Ledger, run_id: str, name: str) -> bytes:
    """Artifact `name` of run `run_id`, checked against the run's manifest (itself checked
    against its journal entry): what a report, an export or the viewer reads of one file.
    RunNotFoundError when the manifest seals no such file; TamperedError when it changed."""
    stored = ledger.load(run_id)
    check_manifest_accepted(ledger.storage, run_id, stored.manifest_sha256)
    entry = stored.manifest.files.get(name)
    if entry is None:
        raise RunNotFoundError(
            f"run {run_id} has no file {name!r} (it has: {', '.join(stored.manifest.files)})"
        )
    data = ledger.read_bytes(run_id, name)
    check_sealed(ledger.storage, run_id, name, data, entry)
    return data


class RunEvidence:
    """A sealed run's files, read on demand: what judges and predicates read of a run.

    The manifest is checked against its journal entry when loading, and every artifact
    against the manifest (size and sha256) when first read: a file changed since sealing is a
    TamperedError naming the run and the file, never judged or shown. The shell log is parsed
    once, on first use. A log that cannot be parsed counts as missing, with the problem said;
    a broken metadata.json or manifest is an error when loading.
    """

    def __init__(self, ledger: Ledger, run_id: str) -> None:
        stored = ledger.load(run_id, sealed=True)
        check_manifest_accepted(ledger.storage, run_id, stored.manifest_sha256)
        self._ledger = ledger
        self.run_id = run_id
        self.metadata: RunMetadata = stored.metadata
        self.summary: RunSummary | None = stored.summary
        self._sealed: dict[str, FileEntry] = dict(stored.manifest.files)
        self.files: frozenset[str] = frozenset(self._sealed)
        self._small: dict[str, bytes] = {}

    def read(self, name: str) -> bytes | None:
        """The bytes of artifact `name`, or None when the run has no such file. A small file is
        kept once read (a judge asks for the report twice: whether the pack applies, then to
        judge it), so that on S3 it costs one request, not two."""
        if name not in self.files:
            return None
        kept = self._small.get(name)
        if kept is not None:
            return kept
        raw = self._ledger.read_bytes(self.run_id, name)
        check_sealed(self._ledger.storage, self.run_id, name, raw, self._sealed[name])
        if len(raw) <= SMALL_FILE:
            self._small[name] = raw
        return raw

    def text(self, name: str) -> str | None:
        """Artifact `name` decoded as UTF-8 (bad bytes replaced), or None when absent."""
        raw = self.read(name)
        return raw.decode("utf-8", "replace") if raw is not None else None

    @property
    def snapshot_name(self) -> str | None:
        """The name of the run's infrastructure snapshot (`snapshot` or `snapshot.*`), if any."""
        for name in sorted(self.files):
            if name == "snapshot" or name.startswith("snapshot."):
                return name
        return None

    @cached_property
    def shell_log(self) -> ShellLog:
        """The shell log, parsed once."""
        raw = self.read(SHELL_AUDIT)
        if raw is None:
            return ShellLog(None, f"the run has no shell log ({SHELL_AUDIT})")
        try:
            return ShellLog(parse_shell_log(raw, SHELL_AUDIT))
        except RecordError as exc:
            return ShellLog(None, f"the shell log cannot be read ({exc})")

    @cached_property
    def trace(self) -> TraceLog:
        """The trace, parsed once; a trace that cannot be read counts as missing, with why."""
        raw = self.read(TRACE)
        if raw is None:
            return TraceLog(None, f"the run has no trace ({TRACE})")
        try:
            return TraceLog(tuple(parse_trace(raw, TRACE)))
        except RecordError as exc:
            return TraceLog(None, f"the trace cannot be read ({exc})")


SMALL_FILE = 256 * 1024
"""Artifacts up to this size are kept by `RunEvidence` once read."""


def load_run_evidence(ledger: Ledger, run_id: str) -> RunEvidence:
    """The evidence of run `run_id` (an exact id; see `Ledger.resolve`)."""
    return RunEvidence(ledger, run_id)
