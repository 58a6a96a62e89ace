"""The storage backend contract: what every backend must do, run against each of them.

A new backend (an object store, say) is added to BACKENDS and must pass every test here
unchanged: write-once records, reads of what is not there, listing by prefix, runs that appear
whole or not at all, bytes kept exactly, bad keys refused, one winner among concurrent writers.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.errors import (
    ArtifactTooLargeError,
    InputError,
    RecordExistsError,
    RecordNotFoundError,
    RunNotFoundError,
    UnsafeNameError,
)
from agentledger.store import LocalStorage, StorageBackend
from agentledger.store.storage import MANIFEST_NAME
from agentledger.store.storage.memory import MemoryStorage, forget

BACKENDS = ["local", "memory", "s3"]
SCORE = "scores/run-1/rules-0123456789ab.json"
BINARY = bytes(range(256)) * 4 + b"\x00\r\n\xff"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageBackend]:
    if request.param == "local":
        storage: StorageBackend = LocalStorage(tmp_path / "ledger")
    elif request.param == "s3":
        from agentledger.store.storage.s3 import S3Storage, parse_location

        uri = request.getfixturevalue("s3_uri")
        storage = S3Storage(parse_location(uri.removeprefix("s3://")))
    else:
        storage = MemoryStorage(f"contract-{request.node.name}")
    storage.initialize()
    yield storage
    forget(f"contract-{request.node.name}")


# -- records: create if absent, else fail ------------------------------------------------------


def test_a_created_value_reads_back_byte_for_byte(backend: StorageBackend) -> None:
    backend.create(SCORE, BINARY)
    assert backend.get(SCORE) == BINARY
    assert backend.exists(SCORE)


def test_a_large_value_reads_back_whole(backend: StorageBackend) -> None:
    large = os.urandom(1 << 20) * 9  # 9 MiB, over any single read or write size
    backend.create("cache/ab/large.json", large)
    assert hashlib.sha256(backend.get("cache/ab/large.json")).digest() == (
        hashlib.sha256(large).digest()
    )


def test_the_second_create_fails_and_the_first_value_stays(backend: StorageBackend) -> None:
    backend.create(SCORE, b"first")
    with pytest.raises(RecordExistsError, match="already exists"):
        backend.create(SCORE, b"second")
    assert backend.get(SCORE) == b"first"
    assert backend.keys("scores") == [SCORE]  # no temporary left beside it


def test_an_empty_value_is_a_value(backend: StorageBackend) -> None:
    backend.create("labels/run-1/l1.json", b"")
    assert backend.exists("labels/run-1/l1.json")
    assert backend.get("labels/run-1/l1.json") == b""
    with pytest.raises(RecordExistsError):
        backend.create("labels/run-1/l1.json", b"x")


def test_reading_what_is_not_there(backend: StorageBackend) -> None:
    with pytest.raises(RecordNotFoundError):
        backend.get(SCORE)
    assert not backend.exists(SCORE)
    assert backend.keys("scores") == []
    assert backend.keys("scores/run-1") == []
    backend.create(SCORE, b"x")
    with pytest.raises(RecordNotFoundError):
        backend.get("scores/run-1")  # a prefix of a value is not a value
    assert not backend.exists("scores/run-1")


def test_which_of_many_keys_exist_is_what_exists_says_of_each(backend: StorageBackend) -> None:
    stored = [f"scores/run-{n}/rules-0123456789ab.json" for n in range(0, 30, 3)]
    for key in stored:
        backend.create(key, b"{}")
    backend.create("scores/run-1/rules-ba9876543210.json", b"{}")  # another judge's
    asked = [f"scores/run-{n}/rules-0123456789ab.json" for n in range(30)]
    assert backend.existing(asked) == set(stored) == {key for key in asked if backend.exists(key)}
    assert backend.existing(asked[:2]) == {asked[0]}
    assert backend.existing([]) == set()
    with pytest.raises(UnsafeNameError):
        backend.existing(["scores/../runs/x"])


def test_listing_by_prefix_is_sorted_and_segment_aligned(backend: StorageBackend) -> None:
    keys = [
        "scores/b/z.json",
        "scores/a/y.json",
        "scores/a/x.json",
        "scores/ab/q.json",
        "labels/a/l.json",
        "cache/ab/c.json",
    ]
    for key in keys:
        backend.create(key, key.encode())
    assert backend.keys("scores") == [
        "scores/a/x.json",
        "scores/a/y.json",
        "scores/ab/q.json",
        "scores/b/z.json",
    ]
    assert backend.keys("scores/a") == ["scores/a/x.json", "scores/a/y.json"]
    assert backend.keys("scores/c") == []
    assert backend.keys("scores/a/x.json") == []
    assert backend.keys("labels") == ["labels/a/l.json"]
    assert backend.keys("cache") == ["cache/ab/c.json"]
    assert backend.keys("decisions") == []


def test_a_key_is_a_value_or_a_prefix_never_both(backend: StorageBackend) -> None:
    backend.create("labels/run-1", b"a value")
    with pytest.raises(RecordExistsError):
        backend.create("labels/run-1/l1.json", b"under a value")
    backend.create("labels/run-2/l1.json", b"x")
    with pytest.raises(RecordExistsError):
        backend.create("labels/run-2", b"over values")
    assert backend.keys("labels") == ["labels/run-1", "labels/run-2/l1.json"]
    assert backend.get("labels/run-1") == b"a value"


BAD_KEYS = [
    "",
    "/scores/run-1/x.json",
    "scores/../runs/x",
    "scores/./x.json",
    "scores//x.json",
    "scores/run-1/",
    "scores/a\x00b.json",
    "scores/a\nb.json",
    "scores/a\\b.json",
    "scores/.hidden.json",
    "../scores/x.json",
    "runs/run-1/report.md",
    "ledger.json",
    "index.sqlite/x",
    "scores",
    "x" * 2000,
]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_bad_keys_are_refused_and_nothing_is_written(
    backend: StorageBackend, key: str, tmp_path: Path
) -> None:
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    for write in (backend.create, backend.replace):
        with pytest.raises(UnsafeNameError):
            write(key, b"x")
    with pytest.raises(UnsafeNameError):
        backend.create_group(key, {"a.json": b"x"})
    with pytest.raises(UnsafeNameError):
        backend.get(key)
    with pytest.raises(UnsafeNameError):
        backend.exists(key)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    for area in ("scores", "labels", "decisions", "cache", "journal"):
        assert backend.keys(area) == []


@pytest.mark.parametrize("prefix", ["", "/scores", "scores/", "scores/../x", "runs", "score"])
def test_bad_prefixes_are_refused(backend: StorageBackend, prefix: str) -> None:
    with pytest.raises(UnsafeNameError):
        backend.keys(prefix)


def test_only_the_cache_can_be_replaced(backend: StorageBackend) -> None:
    backend.create(SCORE, b"evidence")
    for key in (SCORE, "decisions/d/decision.json", "labels/r/l.json", "journal/1"):
        with pytest.raises(InputError, match="write-once"):
            backend.replace(key, b"rewritten")
    assert backend.get(SCORE) == b"evidence"
    assert not backend.exists("labels/r/l.json")
    backend.replace("cache/ab/abcd.json", b"old")
    backend.replace("cache/ab/abcd.json", b"new")
    assert backend.get("cache/ab/abcd.json") == b"new"
    assert backend.keys("cache") == ["cache/ab/abcd.json"]


def test_a_group_appears_whole_and_once(backend: StorageBackend) -> None:
    values = {"decision.json": b'{"a": 1}\n', "decision.md": BINARY}
    backend.create_group("decisions/variant_x_1", values)
    assert backend.keys("decisions") == [
        "decisions/variant_x_1/decision.json",
        "decisions/variant_x_1/decision.md",
    ]
    assert backend.get("decisions/variant_x_1/decision.md") == BINARY
    with pytest.raises(RecordExistsError):
        backend.create_group("decisions/variant_x_1", {"decision.json": b"other"})
    with pytest.raises(RecordExistsError):
        backend.create("decisions/variant_x_1/extra.txt", b"added later")
    assert backend.get("decisions/variant_x_1/decision.json") == b'{"a": 1}\n'
    assert len(backend.keys("decisions")) == 2


def test_a_bad_group_writes_nothing(backend: StorageBackend) -> None:
    with pytest.raises(UnsafeNameError):
        backend.create_group("decisions/d1", {"ok.json": b"x", "a/b.json": b"y"})
    with pytest.raises(UnsafeNameError):
        backend.create_group("decisions/d1", {"ok.json": b"x", "..": b"y"})
    with pytest.raises(InputError, match="no values"):
        backend.create_group("decisions/d1", {})
    assert backend.keys("decisions") == []


def _race(backend: StorageBackend, key: str, count: int) -> list[bool]:
    start = threading.Barrier(count)
    won: list[bool] = [False] * count

    def create(index: int) -> None:
        start.wait()
        try:
            backend.create(key, f"writer {index}".encode())
            won[index] = True
        except RecordExistsError:
            pass

    threads = [threading.Thread(target=create, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return won


def test_of_concurrent_creates_exactly_one_wins(backend: StorageBackend) -> None:
    for round_ in range(5):
        key = f"scores/run-{round_}/rules-0123456789ab.json"
        won = _race(backend, key, 8)
        assert won.count(True) == 1
        assert backend.get(key) == f"writer {won.index(True)}".encode()
        assert backend.keys(f"scores/run-{round_}") == [key]


def _create_in_process(root: str, key: str, index: int, start: object, results: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    try:
        LocalStorage(Path(root)).create(key, f"process {index}".encode())
        results.put((index, True))  # type: ignore[attr-defined]
    except RecordExistsError:
        results.put((index, False))  # type: ignore[attr-defined]


@pytest.mark.slow
def test_of_concurrent_processes_exactly_one_wins_locally(tmp_path: Path) -> None:
    """Processes share the local backend (threads of one process share a memory one)."""
    context = multiprocessing.get_context("fork")
    root = tmp_path / "ledger"
    LocalStorage(root).initialize()
    count = 6
    start = context.Barrier(count)
    results = context.Queue()
    processes = [
        context.Process(target=_create_in_process, args=(str(root), SCORE, i, start, results))
        for i in range(count)
    ]
    for process in processes:
        process.start()
    outcomes = dict(results.get(timeout=60) for _ in processes)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    winners = [index for index, won in outcomes.items() if won]
    assert len(winners) == 1
    assert LocalStorage(root).get(SCORE) == f"process {winners[0]}".encode()
    assert sorted(p.name for p in (root / "scores" / "run-1").iterdir()) == [Path(SCORE).name]


# -- runs: staged, then sealed -----------------------------------------------------------------


def _stage(backend: StorageBackend, run_id: str, limit: int = 1 << 30) -> list[str]:
    staged = backend.stage(run_id, limit)
    staged.write("report.md", b"# Report\n")
    staged.write("attachments/blob.bin", BINARY)
    assert backend.publish([staged], [b'{"manifest": true}\n']) == []
    return ["MANIFEST.json", "attachments/blob.bin", "report.md"]


def test_a_staged_run_is_invisible_until_published(backend: StorageBackend) -> None:
    staged = backend.stage("run-1", 1 << 30)
    entry = staged.write("report.md", b"# Report\n")
    assert entry.size == 9 and entry.sha256 == "sha256:" + hashlib.sha256(b"# Report\n").hexdigest()
    assert not backend.has_run("run-1")
    assert list(backend.run_ids()) == []
    with pytest.raises(RunNotFoundError):
        backend.read("run-1", "report.md")
    assert [left.in_progress for left in backend.leftovers()] == [True]
    backend.publish([staged], [b"{}\n"])
    assert backend.has_run("run-1")
    assert list(backend.run_ids()) == ["run-1"]
    assert backend.list_files("run-1") == [MANIFEST_NAME, "report.md"]
    assert backend.read("run-1", MANIFEST_NAME) == b"{}\n"
    assert backend.leftovers() == []


def test_a_sealed_run_keeps_its_bytes_and_scans_to_its_hashes(backend: StorageBackend) -> None:
    names = _stage(backend, "run-1")
    assert backend.list_files("run-1") == names
    assert backend.read("run-1", "attachments/blob.bin") == BINARY
    scanned = backend.scan_run("run-1", keep=frozenset({"report.md"}))
    assert sorted(scanned.files) == names
    assert scanned.files["attachments/blob.bin"] == (
        "sha256:" + hashlib.sha256(BINARY).hexdigest(),
        len(BINARY),
    )
    assert scanned.kept == {"report.md": b"# Report\n"}
    with pytest.raises(FileNotFoundError):
        backend.read("run-1", "absent.md")
    with pytest.raises(RunNotFoundError):
        backend.read("run-2", "report.md")


def test_every_runs_files_at_once_are_what_each_run_lists(backend: StorageBackend) -> None:
    names = _stage(backend, "run-1")
    _stage(backend, "run-2")
    unsealed = backend.stage("run-3", 1 << 30)
    unsealed.write("report.md", b"staged, never sealed")
    listed = backend.run_files()
    backend.discard(unsealed)
    if listed is None:
        return  # a backend that lists each run as cheaply
    assert {run_id: sorted(files) for run_id, files in listed.items()} == {
        "run-1": names,
        "run-2": names,
    }
    keep = frozenset({"report.md"})
    assert backend.scan_run("run-1", keep, names=listed["run-1"]) == backend.scan_run("run-1", keep)


def test_a_large_streamed_artifact_and_the_size_limit(
    backend: StorageBackend, tmp_path: Path
) -> None:
    big = tmp_path / "snapshot.bin"
    big.write_bytes(os.urandom(3 << 20))
    staged = backend.stage("run-1", 4 << 20)
    entry = staged.copy_file("snapshot.bin", big)
    assert entry.size == 3 << 20
    with pytest.raises(ArtifactTooLargeError, match="over the"):
        staged.write("too-big.bin", b"x" * (5 << 20))
    backend.publish([staged], [b"{}\n"])
    assert backend.read("run-1", "snapshot.bin") == big.read_bytes()
    assert "too-big.bin" not in backend.list_files("run-1")


def test_a_run_id_is_sealed_once(backend: StorageBackend) -> None:
    _stage(backend, "run-1")
    again = backend.stage("run-1", 1 << 30)
    again.write("report.md", b"# Another report\n")
    assert backend.publish([again], [b"{}\n"]) == ["run-1"]
    assert backend.read("run-1", "report.md") == b"# Report\n"
    assert backend.leftovers() == []


def test_a_discarded_run_leaves_nothing(backend: StorageBackend) -> None:
    staged = backend.stage("run-1", 1 << 30)
    staged.write("report.md", b"# Report\n")
    backend.discard(staged)
    assert not backend.has_run("run-1")
    assert backend.leftovers() == []


def test_a_batch_is_published_run_by_run(backend: StorageBackend) -> None:
    with pytest.raises(InputError, match="same run twice"):
        backend.stage_batch(["run-1", "run-1"], 1 << 30)
    staged = backend.stage_batch(["run-1", "run-2"], 1 << 30)
    for run in staged:
        run.write("report.md", run.run_id.encode())
        backend.write_manifest(run, b"{}\n")
    assert backend.publish_written(staged) == []
    assert sorted(backend.run_ids()) == ["run-1", "run-2"]
    assert backend.read("run-2", "report.md") == b"run-2"


@pytest.mark.parametrize("run_id", ["", "../x", "a/b", ".hidden", "x\x00"])
def test_unsafe_run_ids_are_refused(backend: StorageBackend, run_id: str) -> None:
    with pytest.raises(UnsafeNameError):
        backend.stage(run_id, 1 << 30)


def test_never_a_partial_run_is_visible(backend: StorageBackend) -> None:
    """A reader polling while runs are sealed sees each run with every file, or not at all."""
    names = [f"part-{i:02d}.txt" for i in range(8)]
    done = threading.Event()
    seen: list[list[str]] = []

    def watch() -> None:
        while not done.is_set():
            for run_id in list(backend.run_ids()):
                seen.append(backend.list_files(run_id))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for number in range(6):
            staged = backend.stage(f"run-{number}", 1 << 30)
            for name in names:
                staged.write(name, name.encode() * 100)
                time.sleep(0)  # let the watcher look while the run is half written
            backend.publish([staged], [b"{}\n"])
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:  # a loaded machine may be slow to switch
            time.sleep(0.01)
    finally:
        done.set()
        watcher.join()
    expected = sorted([*names, MANIFEST_NAME])
    assert seen, "the watcher never saw a run"
    assert all(files == expected for files in seen)


# -- the journal: an entry per record, one writer at a time ------------------------------------


def test_a_record_and_its_journal_entry_land_together(backend: StorageBackend) -> None:
    from agentledger.identity import sha256_bytes

    backend.create(SCORE, b"score")
    backend.create_group("decisions/d1", {"decision.json": b"{}", "decision.md": b"# d1\n"})
    entries = backend.journal.entries()
    # Each announced by an intent (its keys and their bytes' hashes), then accepted.
    assert [(e.seq, e.kind) for e in entries] == [
        (1, "genesis"),
        (2, "intent"),
        (3, "score"),
        (4, "intent"),
        (5, "decision"),
    ]
    assert entries[1].intends == entries[2].keys == {SCORE: sha256_bytes(b"score")}
    assert (
        entries[3].intends
        == entries[4].keys
        == {
            "decisions/d1/decision.json": sha256_bytes(b"{}"),
            "decisions/d1/decision.md": sha256_bytes(b"# d1\n"),
        }
    )
    with pytest.raises(RecordExistsError):
        backend.create(SCORE, b"again")
    with pytest.raises(RecordExistsError):
        backend.create_group("decisions/d1", {"decision.json": b"[]"})
    assert len(backend.journal.entries()) == 5  # a refused create appends nothing
    backend.create("cache/ab/x.json", b"cached")  # the cache is not evidence: no entry
    assert len(backend.journal.entries()) == 5
    assert backend.keys("journal") == [f"journal/{n:012d}.jsonl" for n in range(1, 6)]


def test_the_journal_lock_is_exclusive(backend: StorageBackend) -> None:
    inside: list[int] = []
    overlaps: list[int] = []

    def hold(number: int) -> None:
        with backend.journal_lock():
            inside.append(number)
            if len(inside) > 1:
                overlaps.append(number)
            time.sleep(0.02)
            inside.remove(number)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert overlaps == []


def test_concurrent_journaled_creates_leave_one_unbroken_chain(backend: StorageBackend) -> None:
    def write(worker: int) -> None:
        for number in range(10):
            backend.create(f"labels/run-{worker}/l{number}.json", f"{worker}-{number}".encode())

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    read = backend.journal.read()
    assert read.problems == [] and [e.seq for e in read.entries] == list(range(1, 82))
    assert {key for e in read.entries for key in e.keys} == set(backend.keys("labels"))


def test_a_segment_position_is_taken_once(backend: StorageBackend) -> None:
    """Two writers that both think the journal ends at entry N: one segment wins (an object
    store's compare-and-swap on the head), and the other appends after it."""
    from agentledger.store.storage.journal import Journal, record_entry

    backend.create(SCORE, b"x")
    stale = Journal(backend)  # a second writer's view: the journal ends at entry 3
    assert len(stale.entries()) == 3
    backend.create("labels/run-1/l1.json", b"y")  # entries 4 and 5, by the first writer
    key = "labels/run-1/l2.json"
    made = stale.append([record_entry(key, {key: b"z"})])
    assert [entry.seq for entry in made] == [6]
    assert [e.seq for e in backend.journal.read().entries] == [1, 2, 3, 4, 5, 6]
    assert backend.journal.read().problems == []


def test_an_unaccepted_record_can_be_removed(backend: StorageBackend) -> None:
    backend._create("scores/run-9/rules-0123456789ab.json", b"half")  # as a dying writer left it
    backend._create_group("decisions/d9", {"decision.json": b"{}"})
    backend.remove_unaccepted("scores/run-9/rules-0123456789ab.json")
    backend.remove_unaccepted("decisions/d9")
    assert backend.keys("scores") == [] and backend.keys("decisions") == []
    backend.create_group("decisions/d9", {"decision.json": b"{}"})  # the id is free again
