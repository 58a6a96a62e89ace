"""Checking sealed runs for `verify`: each run's files against its manifest and its index row
against its records, on every CPU.

`examine_run` reads one run and says everything about it that does not need the journal's
verdict on its manifest (that is decided by the caller, who also orders the problems). It is
a function of the run's files, the journal's hash of its manifest and its index row, so runs
can be examined in any process: `examine_runs` forks helpers (when the storage backend allows
it and there are enough runs) that take chunks of runs from a shared pipe, as the caller
does, and send their findings back. Hashing and reading release no lock another process
needs, so two CPUs verify about twice as fast as one, which is what lets `verify` keep pace
with `sha256sum` (one process) while it also checks the journal, the records and the index.

A helper only reads. It dies with the caller (PR_SET_PDEATHSIG on Linux; a closed pipe
otherwise), and the caller examines any chunk a helper did not answer for, so a helper that
fails costs time, never a check.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import orjson

from agentledger.errors import InputError
from agentledger.identity import sha256_bytes
from agentledger.records import Manifest, RunMetadata, RunSummary, parse_record
from agentledger.store.index import RunColumns
from agentledger.store.storage import MANIFEST_NAME, NOT_A_FILE, StorageBackend
from agentledger.store.storage.local.fs import write_fd
from agentledger.store.verify_index import check_run_row
from agentledger.store.writer import METADATA, SUMMARY

__all__ = ["PARALLEL_FROM", "Problem", "RunExam", "examine_run", "examine_runs"]

KEEP = frozenset({MANIFEST_NAME, METADATA, SUMMARY})
PARALLEL_FROM = 2000
"""Below this many runs, forking helpers costs more than it saves."""
CHUNK = 200
MAX_CHUNKS = 4096
MAX_PROCESSES = 8
_FRAME = struct.Struct("<Q")
_PR_SET_PDEATHSIG = 1

IndexRow = tuple[RunColumns, dict[str, str]]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a record, the journal or the index.

    `record` is what it is about (run, score, label, decision, journal, checkpoint, index);
    `run_id` the run id, the record's key, or the journal segment. `kind` is one of:
    changed, missing, extra, manifest, metadata, unaccepted (announced by a writer that died
    before accepting it), unannounced (no writer announced it), quarantined, stranger (a
    judge, source or author no writer of this ledger announced), journal, checkpoint,
    not-indexed, index-stale, index-mismatch, index-orphan, unpositioned (an index row
    without its journal position), leftover.
    """

    run_id: str
    kind: str
    detail: str
    file: str | None = None
    record: str = "run"


class RunExam(NamedTuple):
    """What examining one run found (see `examine_run`)."""

    run_id: str
    digest: str | None
    """The sha256 of its MANIFEST.json; None when it has none."""
    lenient: bool
    """Whether its manifest was read by pydantic's parser rather than the strict reader:
    right only for the bytes the journal accepted (`examine_run`)."""
    problems: list[Problem]
    """Its files against its manifest, and its metadata's run id."""
    files: int
    size: int
    indexed_manifest: str | None
    """The manifest hash of its index row; None when it is not indexed."""
    mismatches: list[Problem]
    """Index columns that differ from what its records give."""


def _manifest(
    storage: StorageBackend, run_id: str, raw: bytes, strict: bool
) -> tuple[Manifest | None, str | None, bool]:
    """The run's manifest (or None and why it is broken), and whether it was read leniently.

    A manifest whose bytes are the ones the journal accepted was checked strictly when it was
    sealed; pydantic's own parser reads it again (the whole schema, at C speed). The strict
    reader (duplicate keys, numbers that do not fit, ...) is for any other: the caller, once
    it knows what the journal says, asks again with `strict` for a manifest read leniently
    whose bytes the journal did not accept.
    """
    if not strict:
        with contextlib.suppress(ValueError):
            return Manifest.model_validate_json(raw), None, True
    try:
        return parse_record(Manifest, raw, storage.locate(run_id, MANIFEST_NAME)), None, False
    except InputError as exc:
        return None, f"broken manifest: {exc}", False


def _check_files(
    manifest: Manifest, run_id: str, present: Mapping[str, tuple[str, int]], exam: list[Problem]
) -> tuple[int, int]:
    """Every listed file against the manifest, and files it does not list; (files, bytes)."""
    files = size = 0
    if manifest.run_id != run_id:
        exam.append(
            Problem(run_id, "manifest", f"manifest names run {manifest.run_id!r}", MANIFEST_NAME)
        )
    for name, expected in manifest.files.items():
        actual = present.get(name)
        if actual is None:
            exam.append(Problem(run_id, "missing", "file listed in the manifest is gone", name))
            continue
        digest, found = actual
        files += 1
        size += found
        if digest != expected.sha256 or found != expected.size:
            what = (
                "not a regular file (a symlink?)"
                if digest == NOT_A_FILE
                else (
                    f"content changed: sha256 {digest[7:19]}... size {found}, "
                    f"manifest says {expected.sha256[7:19]}... size {expected.size}"
                )
            )
            exam.append(Problem(run_id, "changed", what, name))
    for name in sorted(present.keys() - manifest.files.keys() - {MANIFEST_NAME}):
        exam.append(Problem(run_id, "extra", "file not in the manifest was added", name))
    return files, size


def _metadata(raw: bytes, run_id: str, exam: list[Problem]) -> RunMetadata | None:
    try:
        metadata = RunMetadata.model_validate_json(raw)
        named: object = metadata.run_id
    except ValueError:
        metadata = None
        try:
            value = orjson.loads(raw)
            named = value.get("run_id") if isinstance(value, dict) else None
        except orjson.JSONDecodeError:
            named = None  # unreadable: its hash cannot have matched, reported as changed
    if named is not None and named != run_id:
        exam.append(Problem(run_id, "metadata", f"names run {named!r}", METADATA))
    return metadata


def examine_run(
    storage: StorageBackend,
    run_id: str,
    row: IndexRow | None,
    *,
    strict: bool = False,
    names: Sequence[str] | None = None,
) -> RunExam:
    """Read run `run_id` and check it: its files against its manifest, its metadata's run id,
    and (when indexed: `row`) every index column against its records.

    The manifest is read leniently unless `strict` (see `_manifest`): a caller that finds its
    bytes are not the ones the journal accepted examines the run again, strictly. `names`:
    the run's files as a listing of every run found them (`StorageBackend.run_files`)."""
    scanned = storage.scan_run(run_id, keep=KEEP, names=names)
    raw = scanned.kept.get(MANIFEST_NAME)
    indexed = row[0].manifest_sha256 if row is not None else None
    if raw is None:
        return RunExam(run_id, None, False, [], 0, 0, indexed, [])
    digest = sha256_bytes(raw)
    problems: list[Problem] = []
    files = size = 0
    manifest, broken, lenient = _manifest(storage, run_id, raw, strict)
    if manifest is None:
        problems.append(Problem(run_id, "manifest", str(broken), MANIFEST_NAME))
    else:
        files, size = _check_files(manifest, run_id, scanned.files, problems)
    metadata_raw = scanned.kept.get(METADATA)
    metadata = None
    if manifest is not None and metadata_raw is not None and METADATA in manifest.files:
        metadata = _metadata(metadata_raw, run_id, problems)
    if row is None or manifest is None or metadata is None:
        # Not indexed, or what the index should hold cannot be known (the files say why).
        return RunExam(run_id, digest, lenient, problems, files, size, indexed, [])
    summary = None
    summary_raw = scanned.kept.get(SUMMARY)
    if summary_raw is not None and SUMMARY in manifest.files:
        try:
            summary = RunSummary.model_validate_json(summary_raw)
        except ValueError:
            return RunExam(run_id, digest, lenient, problems, files, size, indexed, [])
    mismatches = [
        Problem(run_id, "index-mismatch", detail, record="run")
        for detail in check_run_row(metadata, summary, manifest, digest, row)
    ]
    return RunExam(run_id, digest, lenient, problems, files, size, indexed, mismatches)


def _examine_chunk(
    storage: StorageBackend,
    run_ids: Sequence[str],
    rows: Mapping[str, IndexRow],
    files: Mapping[str, Sequence[str]] | None,
) -> list[RunExam]:
    return [
        examine_run(storage, run_id, rows.get(run_id), names=files.get(run_id) if files else None)
        for run_id in run_ids
    ]


def _processes(runs: int, storage: StorageBackend, asked: int | None) -> int:
    if asked is not None:
        wanted = asked
    elif runs < PARALLEL_FROM:
        return 1
    else:
        try:
            wanted = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            wanted = os.cpu_count() or 1
    if not storage.scans_when_forked or not hasattr(os, "fork"):
        return 1
    return max(1, min(wanted, MAX_PROCESSES))


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def _helper(
    work: int,
    out: int,
    chunks: Sequence[Sequence[str]],
    examine: Callable[[Sequence[str]], list[RunExam]],
) -> None:
    """A forked helper's life: chunks from `work`, findings to `out`; never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the caller reports it
        _die_with_parent()
        while (number := _take(work)) is not None:
            data = pickle.dumps((number, examine(chunks[number])), pickle.HIGHEST_PROTOCOL)
            write_fd(out, _FRAME.pack(len(data)) + data)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _take(work: int) -> int | None:
    """The next chunk number from the work pipe (4 bytes each, all written before any is
    taken, so a read returns a whole one); None when none is left."""
    data = os.read(work, 4)
    return struct.unpack("<I", data)[0] if len(data) == 4 else None


class _Helper:
    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.buffer = bytearray()
        self.open = True

    def drain(self, found: dict[int, list[RunExam]], block: bool) -> None:
        """Read what the helper has sent (all of it, until it ends, when `block`)."""
        while self.open:
            if not block and not select.select([self.fd], [], [], 0)[0]:
                break
            data = os.read(self.fd, 1 << 20)
            if not data:
                self.open = False
                break
            self.buffer += data
            while len(self.buffer) >= _FRAME.size:
                (length,) = _FRAME.unpack_from(self.buffer)
                if len(self.buffer) < _FRAME.size + length:
                    break
                frame = self.buffer[_FRAME.size : _FRAME.size + length]
                # From this process's own forked helper, over a pipe no one else holds.
                number, exams = pickle.loads(frame)  # noqa: S301
                found[number] = exams
                del self.buffer[: _FRAME.size + length]

    def end(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(self.pid, 0)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        self.end()


def examine_runs(
    storage: StorageBackend,
    run_ids: Sequence[str],
    rows: Mapping[str, IndexRow],
    *,
    files: Mapping[str, Sequence[str]] | None = None,
    processes: int | None = None,
    between: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[RunExam]:
    """`examine_run` of every run of `run_ids`, in that order, on up to `processes` processes
    (default: one per CPU from PARALLEL_FROM runs on, when the backend allows forking);
    `files`: each run's files, as `StorageBackend.run_files` listed them.

    `between` is called once, in this process, while the helpers work: the caller's own
    checks of everything else run beside the runs' hashing.
    """
    size = max(CHUNK, -(-len(run_ids) // MAX_CHUNKS))
    chunks = [run_ids[i : i + size] for i in range(0, len(run_ids), size)]

    def examine(chunk: Sequence[str]) -> list[RunExam]:
        return _examine_chunk(storage, chunk, rows, files)

    count = _processes(len(run_ids), storage, processes)
    found: dict[int, list[RunExam]] = {}
    told = 0

    def tell() -> None:
        nonlocal told
        done = sum(len(exams) for exams in found.values())
        if progress is not None and done != told:
            told = done
            progress(done, len(run_ids))

    helpers: list[_Helper] = []
    if count > 1 and len(chunks) > 1:
        work_r, work_w = os.pipe()
        try:
            # Every chunk number is in the pipe before any helper starts (at most
            # MAX_CHUNKS of 4 bytes: within any pipe's buffer), then it is closed for writing.
            write_fd(work_w, b"".join(struct.pack("<I", n) for n in range(len(chunks))))
            os.close(work_w)
            for _ in range(count - 1):
                out_r, out_w = os.pipe()
                pid = os.fork()
                if pid == 0:  # the helper
                    os.close(out_r)
                    _helper(work_r, out_w, chunks, examine)
                os.close(out_w)
                helpers.append(_Helper(pid, out_r))
            if between is not None:
                between()
            while (number := _take(work_r)) is not None:
                found[number] = examine(chunks[number])
                for helper in helpers:
                    helper.drain(found, block=False)
                tell()
            for helper in helpers:
                helper.drain(found, block=True)
                helper.end()
        except BaseException:
            for helper in helpers:
                helper.kill()
            raise
        finally:
            os.close(work_r)
    elif between is not None:
        between()
    exams: list[RunExam] = []
    for number, chunk in enumerate(chunks):
        answered = found.get(number)
        if answered is None:  # not answered by a helper that failed, or examined alone
            answered = found[number] = examine(chunk)
        tell()
        exams.extend(answered)
    return exams
