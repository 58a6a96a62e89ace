"""Copying a ledger to other backends (`agentledger migrate-backend`), verified at the end.

What is copied is what the source's journal accepted, as of its head when the copy starts:
every sealed run (its files and its MANIFEST.json, byte for byte), every score, label and
decision, the journal segments themselves (so the chain, and every checkpoint noted from it,
stays valid), the label splits and the response cache. The source must verify clean first: a
copy never carries a changed or half-written record forward.

**Nothing half-copied is ever a ledger.** The destination's ledger.json is written last, only
after its index was built from the copied files and `verify` found it clean; until then no
command opens it. A migration that stopped (killed, a network failure) is **resumed** by
running it again with the same destination: what was copied already is checked (the same
bytes) and skipped. A destination that holds anything else (another ledger's journal, runs or
records) is refused before anything is written to it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentledger.errors import InputError, IntegrityError, RecordExistsError, RecordNotFoundError
from agentledger.records import LedgerConfig
from agentledger.records.journal import JournalEntry
from agentledger.store.backends import UnknownBackendError, check_index, make_index, make_storage
from agentledger.store.ledger import CONFIG_NAME, Ledger
from agentledger.store.storage import MANIFEST_NAME, RECORD_AREAS, StorageBackend
from agentledger.store.storage.journal import JOURNAL_AREA, JOURNALED_AREAS, segment_key
from agentledger.store.verify import VerifyReport, verify_ledger
from agentledger.store.writer import record_bytes

__all__ = ["MigrationReport", "migrate_ledger"]

_BATCH = 50
_FIRST = segment_key(1)
_UNJOURNALED = sorted(RECORD_AREAS - JOURNALED_AREAS - {JOURNAL_AREA})


@dataclass
class MigrationReport:
    """What `migrate_ledger` copied, and what it found copied already (a resumed run)."""

    destination: Path
    storage: str
    index: str
    runs: int = 0
    runs_present: int = 0
    records: int = 0
    records_present: int = 0
    segments: int = 0
    journal_entries: int = 0
    verify: VerifyReport | None = None
    indexed: int = 0
    notes: list[str] = field(default_factory=list)


def _problems(report: VerifyReport) -> str:
    first = report.problems[:3]
    shown = "; ".join(f"{problem.run_id}: {problem.kind} ({problem.detail})" for problem in first)
    more = f" and {len(report.problems) - 3} more" if len(report.problems) > 3 else ""
    return f"{len(report.problems)} problem(s): {shown}{more}"


def _check_destination(source: StorageBackend, target: StorageBackend, where: str) -> bool:
    """Refuse a destination holding anything but an earlier, stopped copy of this ledger;
    True when such a copy is there (the migration resumes)."""
    try:
        started = target.get(_FIRST)
    except RecordNotFoundError:
        started = None
    if started is not None:
        if started != source.get(_FIRST):
            raise InputError(
                f"{where} holds another ledger (its journal begins otherwise); "
                "choose an empty destination"
            )
        return True
    if next(iter(target.run_ids()), None) is not None or any(
        target.keys(area) for area in sorted(RECORD_AREAS)
    ):
        raise InputError(f"{where} is not empty; choose an empty destination")
    return False


def _copy_value(target: StorageBackend, key: str, data: bytes) -> bool:
    """Create `key` in `target` unless it holds these very bytes; True when it was copied."""
    try:
        target._create(key, data)
        return True
    except RecordExistsError:
        if target.get(key) != data:
            raise IntegrityError(
                f"{target.describe(key)} holds other bytes than the source's; the destination "
                "was written by something else"
            ) from None
        return False


def _copy_group(target: StorageBackend, prefix: str, values: dict[str, bytes]) -> bool:
    try:
        target._create_group(prefix, {key.rsplit("/", 1)[1]: data for key, data in values.items()})
        return True
    except RecordExistsError:
        for key, data in values.items():
            if target.get(key) != data:
                raise IntegrityError(
                    f"{target.describe(key)} holds other bytes than the source's"
                ) from None
        return False


def _copy_runs(
    source: Ledger,
    target: StorageBackend,
    run_ids: Sequence[str],
    report: MigrationReport,
    progress: Callable[[int], None] | None,
) -> None:
    limit = source.config.max_artifact_bytes
    for start in range(0, len(run_ids), _BATCH):
        batch = []
        for run_id in run_ids[start : start + _BATCH]:
            manifest = source.storage.read(run_id, MANIFEST_NAME)
            if target.has_run(run_id):
                if target.read(run_id, MANIFEST_NAME) != manifest:
                    raise IntegrityError(
                        f"{target.locate(run_id)} is another run than the source's"
                    )
                report.runs_present += 1
            else:
                batch.append((run_id, manifest))
        staged = target.stage_batch([run_id for run_id, _ in batch], limit)
        try:
            for run, (run_id, manifest) in zip(staged, batch, strict=True):
                for name in source.storage.list_files(run_id):
                    if name != MANIFEST_NAME:
                        run.write(name, source.storage.read(run_id, name))
                target.write_manifest(run, manifest)
        except BaseException:
            for run in staged:
                target.discard(run)
            raise
        existing = target.publish_written(staged)
        if existing:
            raise IntegrityError(f"{target.locate(existing[0])} appeared while it was copied")
        report.runs += len(batch)
        if progress:
            progress(min(start + _BATCH, len(run_ids)))


def _accepted_records(entries: Iterable[JournalEntry]) -> dict[str, list[str]]:
    """Record (key, or a decision's group prefix) -> its storage keys, for every score,
    label and decision entry."""
    records: dict[str, list[str]] = {}
    for entry in entries:
        if entry.kind in ("genesis", "run"):
            continue
        for key in entry.keys:
            parts = key.split("/")
            record = "/".join(parts[:2]) if parts[0] == "decisions" else key
            records.setdefault(record, []).append(key)
    return records


def migrate_ledger(
    source: Ledger,
    destination: str | Path,
    *,
    storage: str,
    index: str = "sqlite",
    progress: Callable[[int], None] | None = None,
) -> MigrationReport:
    """Copy `source` to a new ledger at `destination` on the backends `storage` and `index`.

    Refuses (IntegrityError) a source that does not verify clean and (InputError) a
    destination that is a ledger already or holds anything but an earlier copy of this one.
    The destination's ledger.json is written last, once its own verify is clean.
    """
    root = Path(destination)
    if (root / CONFIG_NAME).exists():
        raise InputError(f"{root} already holds a ledger; migrate into a new directory")
    if root.exists() and not root.is_dir():
        raise InputError(f"{root} is a file, not a directory")
    try:
        config = LedgerConfig(
            storage=storage,
            index=index,
            max_artifact_bytes=source.config.max_artifact_bytes,
            created_at=source.config.created_at,
        )
        target = make_storage(config.storage, root)
        check_index(config.index)
    except (ValueError, UnknownBackendError) as exc:
        raise InputError(f"cannot migrate to {root}: {exc}") from None
    if target.uri == source.storage.uri and target.uri != "local":
        raise InputError(f"{target.uri} is the source's own storage; choose another")

    checked = verify_ledger(source)
    if not checked.ok:
        raise IntegrityError(
            f"{source.root} does not verify clean, so it is not copied ({_problems(checked)}); "
            "run `agentledger verify` and `agentledger gc` first"
        )
    entries = source.storage.journal.read().entries
    report = MigrationReport(root, config.storage, config.index, journal_entries=len(entries))

    root.mkdir(parents=True, exist_ok=True)
    target.initialize()
    where = str(root) if target.uri == "local" else target.uri
    if _check_destination(source.storage, target, where):
        report.notes.append("resumed a copy that had stopped")
    # The first segment first: it is what marks the destination as a copy of this ledger,
    # should the copy stop and be resumed. The others come last (no ledger.json before them).
    report.segments += _copy_value(target, _FIRST, source.storage.get(_FIRST))

    run_ids = sorted(entry.id for entry in entries if entry.kind == "run")
    _copy_runs(source, target, run_ids, report, progress)
    for record, keys in sorted(_accepted_records(entries).items()):
        values = {key: source.storage.get(key) for key in keys}
        if record.startswith("decisions/"):
            copied = _copy_group(target, record, values)
        else:
            copied = all([_copy_value(target, key, data) for key, data in values.items()])
        report.records += copied
        report.records_present += not copied
    for area in _UNJOURNALED:
        for key in source.storage.keys(area):
            _copy_value(target, key, source.storage.get(key))
    # The journal last, as far as it was read: every record it names is there before it is.
    head = entries[-1].seq if entries else 0
    for key in source.storage.keys(JOURNAL_AREA):
        first = key.removeprefix(f"{JOURNAL_AREA}/").removesuffix(".jsonl")
        if first.isdigit() and int(first) <= head:
            report.segments += _copy_value(target, key, source.storage.get(key))

    ledger = Ledger(root, config, target, make_index(config.index, root))
    try:
        for leftover in target.leftovers():  # what an earlier, killed copy left staged
            if not leftover.in_progress:
                target.remove_leftover(leftover)
        rebuilt = ledger.reindex()
        report.indexed = rebuilt.indexed
        report.verify = verify_ledger(ledger)
    finally:
        ledger.close()
    if not report.verify.ok:
        raise IntegrityError(
            f"the copy at {root} does not verify clean ({_problems(report.verify)}); "
            "its ledger.json was not written"
        )
    temporary = root / f".{CONFIG_NAME}.tmp"
    temporary.write_bytes(record_bytes(config))
    os.replace(temporary, root / CONFIG_NAME)
    return report
