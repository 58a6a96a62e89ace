"""Integrity checks: re-hash sealed runs and compare the index with the files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.identity import sha256_bytes
from agentledger.records import Manifest, parse_record
from agentledger.store.reindex import score_keys_in
from agentledger.store.storage import MANIFEST_NAME, NOT_A_FILE, Leftover
from agentledger.store.writer import METADATA

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger, Progress

__all__ = ["Problem", "VerifyReport", "verify_ledger"]

_KEEP = frozenset({MANIFEST_NAME, METADATA})


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a run or the index.

    kind is one of: changed, missing, extra, manifest, metadata, not-indexed, index-stale,
    index-orphan, leftover, score-not-indexed.
    """

    run_id: str
    kind: str
    detail: str
    file: str | None = None


@dataclass
class VerifyReport:
    """The outcome of `verify`: what was checked and every problem found."""

    runs_checked: int = 0
    files_checked: int = 0
    bytes_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _verify_run(ledger: Ledger, run_id: str, indexed: dict[str, str], report: VerifyReport) -> None:
    problems = report.problems
    scanned = ledger.storage.scan_run(run_id, keep=_KEEP)
    present = scanned.files
    raw = scanned.kept.get(MANIFEST_NAME)
    if raw is None:
        problems.append(
            Problem(
                run_id, "manifest", "MANIFEST.json is missing: the run is not sealed", MANIFEST_NAME
            )
        )
        return
    try:
        manifest = parse_record(Manifest, raw, ledger.storage.locate(run_id, MANIFEST_NAME))
    except InputError as exc:
        problems.append(Problem(run_id, "manifest", f"broken manifest: {exc}", MANIFEST_NAME))
        return
    if manifest.run_id != run_id:
        problems.append(
            Problem(run_id, "manifest", f"manifest names run {manifest.run_id!r}", MANIFEST_NAME)
        )
    for name, expected in manifest.files.items():
        actual = present.get(name)
        if actual is None:
            problems.append(Problem(run_id, "missing", "file listed in the manifest is gone", name))
            continue
        digest, size = actual
        report.files_checked += 1
        report.bytes_checked += size
        if digest != expected.sha256 or size != expected.size:
            what = (
                "not a regular file (a symlink?)"
                if digest == NOT_A_FILE
                else (
                    f"content changed: sha256 {digest[7:19]}... size {size}, "
                    f"manifest says {expected.sha256[7:19]}... size {expected.size}"
                )
            )
            problems.append(Problem(run_id, "changed", what, name))
    for name in sorted(set(present) - set(manifest.files) - {MANIFEST_NAME}):
        problems.append(Problem(run_id, "extra", "file not in the manifest was added", name))
    metadata_raw = scanned.kept.get(METADATA)
    if metadata_raw is not None and METADATA in manifest.files:
        try:
            named = json.loads(metadata_raw).get("run_id")
        except (ValueError, AttributeError):
            named = None  # unreadable: its hash cannot have matched, reported as changed
        if named is not None and named != run_id:
            problems.append(Problem(run_id, "metadata", f"names run {named!r}", METADATA))
    digest = sha256_bytes(raw)
    if run_id not in indexed:
        problems.append(
            Problem(
                run_id,
                "not-indexed",
                "sealed run missing from the index "
                "(`agentledger gc` or `agentledger reindex` adds it)",
            )
        )
    elif indexed[run_id] != digest:
        problems.append(
            Problem(
                run_id,
                "index-stale",
                "MANIFEST.json differs from the one indexed when the run was sealed",
                MANIFEST_NAME,
            )
        )


def _check_scores_indexed(ledger: Ledger, report: VerifyReport) -> None:
    """Score files the index lacks (a judge killed between writing and indexing one)."""
    try:
        indexed = ledger.index.score_keys()
    except NotImplementedError:
        return
    for key in score_keys_in(ledger.storage):
        _, run_id, name = key.split("/")
        if (run_id, name.removesuffix(".json")) not in indexed:
            report.problems.append(
                Problem(
                    run_id,
                    "score-not-indexed",
                    "a score file the index does not know (`agentledger gc` indexes it)",
                    ledger.storage.describe(key),
                )
            )


def verify_ledger(
    ledger: Ledger, run_ids: Sequence[str] | None = None, progress: Progress | None = None
) -> VerifyReport:
    """Re-hash runs (all, or `run_ids`) and cross-check them with the index."""
    report = VerifyReport()
    indexed = ledger.index.manifest_hashes()
    whole = not run_ids
    targets = sorted(ledger.storage.run_ids()) if whole else list(dict.fromkeys(run_ids or ()))
    for done, run_id in enumerate(targets, start=1):
        if not ledger.storage.has_run(run_id):
            kind = "index-orphan" if run_id in indexed else "missing"
            report.problems.append(Problem(run_id, kind, "no such run directory"))
        else:
            _verify_run(ledger, run_id, indexed, report)
        report.runs_checked += 1
        if progress:
            progress(done, len(targets))
    if whole:
        on_disk = set(targets)
        for run_id in sorted(set(indexed) - on_disk):
            report.problems.append(
                Problem(run_id, "index-orphan", "indexed, but the run directory is gone")
            )
        _check_scores_indexed(ledger, report)
        leftovers: list[Leftover] = ledger.storage.leftovers()
        for leftover in leftovers:
            if leftover.in_progress:
                report.in_progress.append(leftover.name)
            else:
                report.problems.append(
                    Problem(
                        leftover.name,
                        "leftover",
                        "staging debris of a writer that died before sealing "
                        "(`agentledger gc` removes it)",
                        leftover.path,
                    )
                )
    return report
