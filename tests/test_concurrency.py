"""Several writers at once: every run lands, the index agrees with the files, gc spares writers.

The multi-process tests start tests/writer_process.py with sys.executable (real processes, real
files, no mocks) and check the ledger through the public API afterwards.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from agentledger.errors import RunExistsError
from agentledger.identity import normalize_hash_prefix, sha256_bytes
from agentledger.store import Ledger, RunFilter, verify_ledger
from conftest import make_metadata as metadata
from conftest import staging_entries

WRITER = Path(__file__).with_name("writer_process.py")
WORKERS = 4
RUNS_PER_WORKER = 25
SHARED_IDS = ("shared-0", "shared-1", "shared-2", "shared-3", "shared-4")
# While writers are alive, verify may see a run that is visible but not yet indexed (its
# writer indexes it right after the rename); anything else is a real problem.
TRANSIENT_KINDS = {"not-indexed"}


def load_writer_module() -> ModuleType:
    name = "_agentledger_writer_process"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, WRITER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def spawn(
    ledger: Path, *args: str, stderr_path: Path, stdin: bool = False
) -> subprocess.Popen[str]:
    with stderr_path.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, str(WRITER), "--ledger", str(ledger), *args],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def reap(proc: subprocess.Popen[str]) -> None:
    """Kill `proc` if it still runs, wait for it and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=60)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def parse_events(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.strip()]


def sealed_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "runs").iterdir() if (p / "MANIFEST.json").is_file())


def assert_sealed_modes(run_dir: Path) -> None:
    """Sealed runs are read-only by mode bits (root ignores them, so check the bits)."""
    for path in [run_dir, *run_dir.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = 0o555 if path.is_dir() else 0o444
        assert mode == expected, f"{path}: mode {mode:o}, expected {expected:o}"
        assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def answers(ledger: Ledger, filters: dict[str, RunFilter]) -> dict[str, object]:
    return {name: (ledger.count(f), ledger.runs(f)) for name, f in filters.items()}


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    return root


@pytest.mark.slow
def test_concurrent_writers_all_land_and_index_agrees(tmp_path: Path, ledger_path: Path) -> None:
    wp = load_writer_module()
    go = tmp_path / "go"
    procs = []
    for worker in range(WORKERS):
        dup_args = [arg for shared in SHARED_IDS for arg in ("--dup", shared)]
        procs.append(
            spawn(
                ledger_path,
                "--worker", str(worker),
                "--prefix", f"w{worker}",
                "--count", str(RUNS_PER_WORKER),
                "--big-bytes", str(64 * 1024),
                "--start-file", str(go),
                *dup_args,
                stderr_path=tmp_path / f"w{worker}.err",
            )
        )  # fmt: skip
    outputs: list[str] = [""] * WORKERS

    def collect(i: int) -> None:
        assert procs[i].stdout is not None
        outputs[i] = procs[i].stdout.read()

    readers = [threading.Thread(target=collect, args=(i,)) for i in range(WORKERS)]
    for reader in readers:
        reader.start()
    go.touch()

    # While the writers run, verify and gc keep going from this process: verify must never
    # report a leftover or a damaged run, and gc must never remove a live writer's staging.
    checks = 0
    last_count = 0
    try:
        with Ledger.open(ledger_path) as watcher:
            while any(p.poll() is None for p in procs):
                report = verify_ledger(watcher)
                bad = [p for p in report.problems if p.kind not in TRANSIENT_KINDS]
                assert not bad, f"verify during concurrent writes: {bad}"
                gc = watcher.gc()
                assert gc.removed == [], f"gc removed staging of live writers: {gc.removed}"
                assert gc.unreadable == []
                count = watcher.count()
                assert count >= last_count
                last_count = count
                checks += 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for reader in readers:
            reader.join(timeout=60)
        for proc in procs:
            reap(proc)
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, (tmp_path / f"w{i}.err").read_text()
    assert checks > 0

    events = [parse_events(out) for out in outputs]
    sealed: dict[str, tuple[int, str]] = {}
    exists: Counter[str] = Counter()
    where: Counter[str] = Counter()
    for worker, lines in enumerate(events):
        assert lines[-1] == ["DONE"]
        for line in lines:
            if line[0] == "SEALED":
                assert line[1] not in sealed, f"{line[1]} sealed twice"
                sealed[line[1]] = (worker, line[2])
            elif line[0] == "EXISTS":
                exists[line[1]] += 1
                where[line[2]] += 1

    own = {f"w{w}-{n:05d}" for w in range(WORKERS) for n in range(RUNS_PER_WORKER)}
    assert own <= set(sealed), f"runs that did not land: {sorted(own - set(sealed))}"
    for shared in SHARED_IDS:
        assert shared in sealed, f"no worker sealed {shared}"
        assert exists[shared] == WORKERS - 1, f"{shared}: {exists[shared]} RunExistsError"
    assert set(sealed) == own | set(SHARED_IDS)
    print(f"\nconcurrent checks: {checks}; RunExistsError raised at {dict(where)}")

    expected_total = len(own) + len(SHARED_IDS)
    on_disk = sealed_dirs(ledger_path)
    assert on_disk == sorted(sealed)
    assert staging_entries(ledger_path) == []

    with Ledger.open(ledger_path) as ledger:
        assert ledger.count() == expected_total == len(on_disk)
        report = verify_ledger(ledger)
        assert report.ok, report.problems
        assert report.in_progress == []
        assert report.runs_checked == expected_total

        # The landed copy of each run is the one its writer sealed, byte for byte.
        for run_id, (worker, manifest_sha) in sealed.items():
            row = ledger.index.get(run_id)
            assert row is not None
            assert row.manifest_sha256 == manifest_sha
            raw = (ledger_path / "runs" / run_id / "MANIFEST.json").read_bytes()
            assert sha256_bytes(raw) == manifest_sha
            assert row.metadata["tags"]["worker"] == str(worker)
            assert_sealed_modes(ledger_path / "runs" / run_id)

        # The index agrees with the files: each query returns exactly the runs whose
        # metadata.json matches it.
        files = {
            run_id: json.loads((ledger_path / "runs" / run_id / "metadata.json").read_bytes())
            for run_id in on_disk
        }
        hashes = sorted({m["system_prompt_hash"] for m in files.values()})
        assert hashes == sorted(sha256_bytes(p) for p in wp.PROMPTS)
        filters: dict[str, RunFilter] = {"all": RunFilter()}
        for model in wp.MODELS:
            filters[f"model={model}"] = RunFilter(models=(model,))
            for digest in hashes:
                filters[f"model={model},hash={digest}"] = RunFilter(
                    models=(model,), prompt_hash=digest
                )
        filters["two models"] = RunFilter(models=wp.MODELS[:2])
        for digest in hashes:
            filters[f"hash={digest}"] = RunFilter(prompt_hash=digest)
            prefix = normalize_hash_prefix(digest[7:15])
            filters[f"prefix={prefix}"] = RunFilter(prompt_hash=prefix)
        for scenario in wp.SCENARIOS:
            filters[f"scenario={scenario}"] = RunFilter(scenarios=(scenario,))
        for worker in range(WORKERS):
            filters[f"worker={worker}"] = RunFilter(tags=(("worker", str(worker)),))
            filters[f"worker={worker},even"] = RunFilter(
                tags=(("worker", str(worker)), ("parity", "even"))
            )
        filters["odd,model0"] = RunFilter(models=wp.MODELS[:1], tags=(("parity", "odd"),))
        filters["limit"] = RunFilter(limit=7)

        def matches(meta: dict[str, object], f: RunFilter) -> bool:
            tags = meta["tags"]
            assert isinstance(tags, dict)
            digest = meta["system_prompt_hash"]
            assert isinstance(digest, str)
            return (
                (not f.models or meta["model"] in f.models)
                and (not f.scenarios or meta["scenario"] in f.scenarios)
                and (f.prompt_hash is None or digest.startswith(f.prompt_hash))
                and all(tags.get(k) == v for k, v in f.tags)
            )

        for name, f in filters.items():
            got = {run.run_id for run in ledger.runs(f)}
            if f.limit is None:
                expected = {run_id for run_id, meta in files.items() if matches(meta, f)}
                assert got == expected, name
                assert ledger.count(f) == len(expected), name
            else:
                assert len(got) == f.limit
        # Predicted from the writers' recipe too: the index is not just self-consistent.
        for worker in range(WORKERS):
            for model in wp.MODELS:
                f = RunFilter(models=(model,), tags=(("worker", str(worker)),))
                predicted = {
                    f"w{worker}-{n:05d}"
                    for n in range(RUNS_PER_WORKER)
                    if wp.attributes(worker, n).model == model
                }
                winners = {
                    s for s in SHARED_IDS if sealed[s][0] == worker and files[s]["model"] == model
                }
                assert {r.run_id for r in ledger.runs(f)} == predicted | winners

        before = answers(ledger, filters)
        rebuilt = ledger.reindex()
        assert rebuilt.indexed == expected_total
        assert rebuilt.skipped == []
        assert answers(ledger, filters) == before
        assert verify_ledger(ledger).ok

    # And from a fresh index file, as `agentledger reindex` after deleting it would do.
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            (ledger_path / f"index.sqlite{suffix}").unlink()
    with Ledger.open(ledger_path) as fresh:
        assert fresh.count() == 0
        fresh.reindex()
        assert answers(fresh, filters) == before
        assert verify_ledger(fresh).ok


@pytest.mark.slow
def test_gc_spares_a_live_writer_in_another_process(tmp_path: Path, ledger_path: Path) -> None:
    proc = spawn(
        ledger_path,
        "--hold",
        "--prefix",
        "held",
        "--big-bytes",
        "100000",
        stderr_path=tmp_path / "held.err",
        stdin=True,
    )
    assert proc.stdin and proc.stdout
    try:
        lines = []
        while not lines or lines[-1][0] != "STAGED":
            line = proc.stdout.readline()
            assert line, (tmp_path / "held.err").read_text()
            lines.append(line.split())
        staged = staging_entries(ledger_path)
        assert len(staged) == 1 and staged[0].startswith("held-held.")

        with Ledger.open(ledger_path) as ledger:
            report = ledger.gc()
            assert report.removed == []
            assert report.in_progress == staged
            assert staging_entries(ledger_path) == staged
            check = verify_ledger(ledger)
            assert check.ok, check.problems
            assert check.in_progress == staged

            proc.stdin.write("seal\n")
            proc.stdin.flush()
            out, _ = proc.communicate(timeout=30)
            assert proc.returncode == 0, (tmp_path / "held.err").read_text()
            assert parse_events(out)[0][:2] == ["SEALED", "held-held"]
            assert staging_entries(ledger_path) == []
            assert ledger.count() == 1
            assert verify_ledger(ledger).ok
            assert_sealed_modes(ledger_path / "runs" / "held-held")
    finally:
        reap(proc)


def test_gc_spares_a_live_writer_in_this_process(ledger_path: Path) -> None:
    with Ledger.open(ledger_path) as writing, Ledger.open(ledger_path) as other:
        writer = writing.new_run(metadata("live-run"))
        writer.add_text("report.md", "still working\n")
        writer.add_bytes("attachments/data/blob.bin", os.urandom(50_000))
        staged = staging_entries(ledger_path)
        assert len(staged) == 1

        report = other.gc()
        assert report.removed == []
        assert report.in_progress == staged
        assert verify_ledger(other).in_progress == staged

        writer.add_text("audit.md", "more after gc\n")
        sealed = writer.seal()
        assert sealed.run_id == "live-run"
        assert staging_entries(ledger_path) == []
        assert other.count() == 1
        assert verify_ledger(other).ok
        assert other.gc().removed == []
        assert_sealed_modes(ledger_path / "runs" / "live-run")


@pytest.mark.slow
def test_gc_running_while_writers_stage_never_breaks_them(ledger_path: Path) -> None:
    """gc in a tight loop in another thread while runs are staged and sealed one after another.

    A staging directory exists for a moment before its writer locks it; gc must not take it
    for a dead writer's debris then (it used to: the writer failed with FileNotFoundError)."""
    stop = threading.Event()
    removed: list[str] = []
    errors: list[BaseException] = []

    def collector() -> None:
        with Ledger.open(ledger_path) as gc_ledger:
            while not stop.is_set():
                try:
                    removed.extend(gc_ledger.gc().removed)
                except BaseException as exc:
                    errors.append(exc)
                    return

    thread = threading.Thread(target=collector)
    thread.start()
    try:
        with Ledger.open(ledger_path) as ledger:
            deadline = time.monotonic() + 2
            written = 0
            while time.monotonic() < deadline and written < 400:
                with ledger.new_run(metadata(f"gc-race-{written:05d}")) as run:
                    run.add_text("report.md", "x\n")
                written += 1
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not errors, errors
    assert removed == [], f"gc removed the staging of live writers: {removed}"
    with Ledger.open(ledger_path) as ledger:
        assert ledger.count() == written == len(sealed_dirs(ledger_path))
        assert verify_ledger(ledger).ok


def test_same_id_from_two_writers_in_one_process(ledger_path: Path) -> None:
    """Both staged, both seal: the first lands; the second gets RunExistsError, leaves nothing."""
    with Ledger.open(ledger_path) as one, Ledger.open(ledger_path) as two:
        first = one.new_run(metadata("twin", tags={"writer": "one"}))
        second = two.new_run(metadata("twin", tags={"writer": "two"}))
        first.add_text("report.md", "first\n")
        second.add_text("report.md", "second\n")
        assert len(staging_entries(ledger_path)) == 2
        first.seal()
        with pytest.raises(RunExistsError):
            second.seal()
        assert staging_entries(ledger_path) == []
        assert sealed_dirs(ledger_path) == ["twin"]
        assert (ledger_path / "runs" / "twin" / "report.md").read_text() == "first\n"
        assert one.count() == two.count() == 1
        assert two.runs()[0].metadata["tags"] == {"writer": "one"}
        assert verify_ledger(two).ok
        # A third writer is refused before it stages anything.
        with pytest.raises(RunExistsError):
            two.new_run(metadata("twin"))
        assert staging_entries(ledger_path) == []


@pytest.mark.slow
def test_losing_a_seal_race_never_closes_another_threads_file(ledger_path: Path) -> None:
    """The loser of a same-id race must close its lock once: a second close of the same fd
    number can close a file another thread opened meanwhile (and write to the wrong file)."""
    probe = ledger_path.parent / "probe.bin"
    probe.write_bytes(b"abcd")
    stop = threading.Event()
    damage: list[object] = []

    def hold_files() -> None:
        while not stop.is_set():
            fd = os.open(probe, os.O_RDONLY)
            try:
                for _ in range(5):
                    if os.pread(fd, 4, 0) != b"abcd":
                        damage.append("read another file")
            except OSError as exc:
                damage.append(exc)
            try:
                os.close(fd)
            except OSError as exc:
                damage.append(exc)

    threads = [threading.Thread(target=hold_files) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        with Ledger.open(ledger_path) as ledger:
            for number in range(120):
                first = ledger.new_run(metadata(f"twin-{number}"))
                second = ledger.new_run(metadata(f"twin-{number}"))
                first.add_text("report.md", "1\n")
                second.add_text("report.md", "2\n")
                first.seal()
                with pytest.raises(RunExistsError):
                    second.seal()
                if damage:
                    break
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not damage, f"after {number + 1} races: {damage[:3]}"
    assert staging_entries(ledger_path) == []
