"""What an import is made of: its options, the checked runs it would write, and its report.

`agentledger.importers.run_plan` turns one run directory into a `PlannedRun`;
`agentledger.importers.directory` plans a whole import and writes it.
"""

from __future__ import annotations

import hashlib
import shutil
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentledger.errors import (
    InputError,
)
from agentledger.identity import HASH_PREFIX, sha256_bytes
from agentledger.records import (
    RunMetadata,
    RunSummary,
)
from agentledger.store.storage.checked import open_source

__all__ = [
    "ImportOptions",
    "ImportPlan",
    "ImportReport",
    "PlannedArtifact",
    "PlannedRun",
    "Problem",
    "Progress",
    "duplicate_run_id",
    "refuse",
]

Progress = Callable[[int, int | None], None]
"""Called with (done, total) as runs are planned or written; total None when not known."""


@dataclass(frozen=True)
class ImportOptions:
    """How to read the runs: layout patterns, and identity fields the runs do not carry.

    Identity fields come from the run's own metadata.json, the sidecar and these options, which
    must agree (a run's metadata is evidence, never overwritten); `name_pattern` and dates in
    file names only fill what is still missing. `workers`: processes for a large import (None:
    one more than the CPUs, up to 8, from 1000 runs on, or 300 trace files of openhands and
    jsonl; 1: everything in this process).
    """

    mapping: Mapping[str, Sequence[str]] = field(default_factory=dict)
    sidecar: Path | None = None
    model: str | None = None
    scenario: str | None = None
    provider: str | None = None
    agent_name: str | None = None
    agent_commit: str | None = None
    variant: str | None = None
    system_prompt_file: Path | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    name_pattern: str | None = None
    exclude: Sequence[str] = ()
    max_artifact_bytes: int | None = None
    batch_size: int = 200
    workers: int | None = None
    format: str | None = None  # an importers.formats name; None: detected from the paths
    timezone: str | None = None
    """The IANA zone of trace times written without one (None: such times stay unzoned)."""
    skip_invalid: bool = False
    """Leave out the runs that cannot be imported (listed in the plan's `skipped`) and import
    the rest; without it, any such run refuses the whole import, every problem listed."""


@dataclass(frozen=True)
class PlannedArtifact:
    """One file of a run to import: its name in the ledger and where its bytes come from."""

    name: str
    path: str | None
    size: int
    data: bytes | None = None

    def sha256(self) -> str:
        if self.data is not None:
            return sha256_bytes(self.data)
        assert self.path is not None
        with open(open_source(self.path), "rb") as handle:
            return HASH_PREFIX + hashlib.file_digest(handle, "sha256").hexdigest()


@dataclass(frozen=True)
class PlannedRun:
    """A checked run, ready to seal (or already in the ledger with identical content)."""

    directory: Path
    metadata: RunMetadata
    summary: RunSummary
    artifacts: tuple[PlannedArtifact, ...]
    identical: bool = False

    @property
    def run_id(self) -> str:
        return self.metadata.run_id


@dataclass(frozen=True)
class Problem:
    """A run (or a file found for one) that cannot be imported, and the error that says why."""

    path: str
    error: InputError

    @property
    def why(self) -> str:
        """The error's message on one line."""
        return " ".join(str(self.error).split())


def refuse(problems: Sequence[Problem]) -> None:
    """Refuse an import with problems (nothing is written): one problem is raised as it is,
    several in one InputError listing each, in the order given."""
    if not problems:
        return
    if len(problems) == 1:
        raise problems[0].error
    lines = "\n".join(f"  {problem.why}" for problem in problems)
    raise InputError(
        f"{len(problems)} runs cannot be imported; nothing was written (--skip-invalid "
        f"imports the rest and lists these):\n{lines}"
    )


@dataclass(frozen=True)
class ImportPlan:
    """Every run of an import, checked; nothing has been written yet."""

    runs: list[PlannedRun]
    max_artifact_bytes: int
    batch_size: int = 200
    spool: str | None = None
    """The directory where files planning made wait for sealing, when memory could not hold
    them all (`run_plan.PlanContext.keep_made`); removed by `discard`, or when the plan is
    freed or the process ends."""
    problems: list[Problem] = field(default_factory=list)
    """The runs left out: under `ImportOptions.skip_invalid`, or when the plan is one share
    of an import whose problems are listed together (`plan_runs(collect=True)`)."""
    _discard: weakref.finalize[..., Any] | None = field(
        init=False, repr=False, compare=False, default=None
    )

    def __post_init__(self) -> None:
        remove = weakref.finalize(self, shutil.rmtree, self.spool, True) if self.spool else None
        object.__setattr__(self, "_discard", remove)  # frozen: set once, here

    def discard(self) -> None:
        """Remove the spool directory (the plan can no longer be sealed after this)."""
        if self._discard is not None:
            self._discard()

    @property
    def new_runs(self) -> list[PlannedRun]:
        return [run for run in self.runs if not run.identical]

    @property
    def skipped(self) -> list[tuple[str, str]]:
        """(path, why) of the runs left out."""
        return [(problem.path, problem.why) for problem in self.problems]


@dataclass
class ImportReport:
    """What an import did: run ids sealed, and run ids already present with identical content."""

    imported: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    indexed: list[str] = field(default_factory=list)
    """Identical runs that were sealed but missing from the index (an import killed between
    the two): indexed now."""
    untimed: int = 0
    """Of the runs imported from traces, how many have no start time (set by the command)."""


def duplicate_run_id(run_id: str, first: Path, second: Path) -> InputError:
    """The error for two run directories that give the same run id: the second is the one
    refused (or skipped), so it comes first."""
    return InputError(
        f"{second}: gives run id {run_id!r}, as {first} does; give one another id with a "
        "--sidecar column 'run_id'"
    )
