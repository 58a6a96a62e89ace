"""Faults: writers killed with SIGKILL at random points, and writes interrupted in-process.

The kill test starts tests/writer_process.py (a real process writing runs with a large
attachment, so that most kills land mid-write), kills it with SIGKILL after a seeded random
delay or right after it reports reaching a point of its loop, and then checks the ledger: no
partial run is ever visible, every run the writer reported as sealed is there and intact, the
only problems before gc are staging leftovers and unindexed runs, and after gc verify is clean.
Set AGENTLEDGER_FAULT_SEED to replay another schedule.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentledger.errors import (
    ArtifactTooLargeError,
    InputError,
    RecordError,
    RunExistsError,
    UnsafeNameError,
)
from agentledger.identity import sha256_bytes
from agentledger.store import Ledger, RunWriter, verify_ledger
from conftest import make_metadata as metadata
from conftest import staging_entries

WRITER = Path(__file__).with_name("writer_process.py")
SEED = int(os.environ.get("AGENTLEDGER_FAULT_SEED", "20260312"))
BIG = 2 * 1024 * 1024
# unaccepted: sealed, and killed before its journal entry (gc completes it).
ALLOWED_BEFORE_GC = {"leftover", "not-indexed", "unaccepted"}


def make_writable(root: Path) -> None:
    for dirpath, _dirs, _files in os.walk(root):
        os.chmod(dirpath, 0o755)


@pytest.fixture
def ledger_path(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    yield root
    # The kill test leaves a few hundred MB behind; sealed directories are read-only.
    make_writable(root)
    shutil.rmtree(root, ignore_errors=True)


def run_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "runs").iterdir())


class Writer:
    """A writer_process.py subprocess whose stdout lines are collected as they come."""

    def __init__(self, ledger: Path, stderr_path: Path, *args: str) -> None:
        self.stderr_path = stderr_path
        with stderr_path.open("w") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, str(WRITER), "--ledger", str(ledger), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.lines: list[list[str]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.split())
                self._changed.notify_all()
        with self._changed:
            self.lines.append(["EOF"])
            self._changed.notify_all()

    def wait_for(self, word: str, occurrence: int = 1, timeout: float = 30) -> None:
        def seen() -> bool:
            return sum(1 for line in self.lines if line[0] in (word, "EOF")) >= occurrence

        with self._changed:
            assert self._changed.wait_for(seen, timeout), f"no {word} #{occurrence}"
        assert ["EOF"] not in self.lines, f"writer ended early: {self.stderr_path.read_text()}"

    def kill(self) -> int:
        self.proc.send_signal(signal.SIGKILL)
        code = self.proc.wait(timeout=30)
        self._reader.join(timeout=30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return code

    def ids(self, word: str) -> list[str]:
        return [line[1] for line in self.lines if line[0] == word]

    def sealed(self) -> dict[str, str]:
        return {line[1]: line[2] for line in self.lines if line[0] == "SEALED"}


def kill_plan(rng: random.Random) -> list[tuple[str, float]]:
    """Where each kill lands: a random delay, or just after the n-th report of a loop point."""
    plan: list[tuple[str, float]] = [("startup", rng.uniform(0.05, 0.3)) for _ in range(2)]
    plan += [("delay", rng.uniform(0.0, 0.35)) for _ in range(12)]
    for point in ("BEGIN", "ADDED", "SEALED"):
        plan += [(point, rng.randint(1, 3)) for _ in range(4)]
    rng.shuffle(plan)
    return plan


@pytest.mark.slow
def test_sigkill_at_random_points_never_loses_or_exposes_a_run(
    tmp_path: Path, ledger_path: Path
) -> None:
    rng = random.Random(SEED)
    big_file = tmp_path / "big.bin"
    big_file.write_bytes(rng.randbytes(BIG))
    plan = kill_plan(rng)
    reported: dict[str, str] = {}  # every run a writer said was sealed -> its manifest hash
    outcomes: Counter[str] = Counter()
    pending_leftovers: set[str] = set()
    pending_unindexed: set[str] = set()
    context = f"(AGENTLEDGER_FAULT_SEED={SEED})"

    for number, (point, amount) in enumerate(plan):
        prefix = f"k{number:02d}"
        attachment = ["--big-file", str(big_file)] if number % 2 else ["--big-bytes", str(BIG)]
        writer = Writer(
            ledger_path, tmp_path / f"{prefix}.err", "--prefix", prefix, "--worker",
            str(number), *attachment,
        )  # fmt: skip
        if point == "startup":
            time.sleep(amount)
        elif point == "delay":
            writer.wait_for("READY")
            time.sleep(amount)
        else:
            writer.wait_for(point, int(amount))
        code = writer.kill()
        where = f"kill #{number} at {point} {amount:.3f} {context}"
        assert code == -signal.SIGKILL, f"{where}: writer exited {code} on its own: " + (
            writer.stderr_path.read_text()
        )

        sealed_now = writer.sealed()
        begun = writer.ids("BEGIN")
        reported.update(sealed_now)
        mine = [r for r in run_dirs(ledger_path) if r.startswith(prefix + "-")]
        # Runs are written one after another: at most the last one begun can have sealed
        # without the writer living to report it.
        unreported = sorted(set(mine) - set(sealed_now))
        assert set(mine) <= set(begun), where
        assert unreported in ([], begun[-1:]), f"{where}: unreported runs {unreported}"

        with Ledger.open(ledger_path) as ledger:
            # No partial run is ever visible: each directory is sealed and its hashes match.
            report = verify_ledger(ledger)
            kinds = {p.kind for p in report.problems}
            assert kinds <= ALLOWED_BEFORE_GC, f"{where}: {report.problems}"
            assert report.in_progress == [], where
            unindexed = {p.run_id for p in report.problems if p.kind == "not-indexed"}
            leftovers = {p.run_id for p in report.problems if p.kind == "leftover"}
            assert unindexed - pending_unindexed <= set(unreported), where
            new_leftovers = leftovers - pending_leftovers
            assert len(new_leftovers) <= 1, f"{where}: {new_leftovers}"
            # The debris is the run being written: the last one begun, or the next one when
            # the kill landed between staging it and reporting BEGIN.
            candidates = {*begun[-1:], f"{prefix}-{len(begun):05d}"} - set(mine)
            for name in new_leftovers:
                assert name.rsplit(".", 1)[0] in candidates, f"{where}: {name}"
            for run_id in mine:
                run_dir = ledger_path / "runs" / run_id
                assert (run_dir / "MANIFEST.json").is_file(), where
                for path in run_dir.rglob("*"):
                    if path.is_file():
                        assert stat.S_IMODE(path.stat().st_mode) == 0o444, f"{where}: {path}"

            # No sealed run is ever lost, and each is the very run its writer sealed.
            indexed = ledger.index.manifest_hashes()
            for run_id, manifest_sha in reported.items():
                run_dir = ledger_path / "runs" / run_id
                raw = (run_dir / "MANIFEST.json").read_bytes()
                assert sha256_bytes(raw) == manifest_sha, f"{where}: {run_id}"
                assert indexed.get(run_id) == manifest_sha, f"{where}: {run_id} not indexed"
                assert stat.S_IMODE(run_dir.stat().st_mode) == 0o555, f"{where}: {run_id}"
            if run_id_problems := [p for p in report.problems if p.run_id in reported]:
                pytest.fail(f"{where}: reported runs have problems: {run_id_problems}")

            outcomes["mid-write" if new_leftovers else "between writes"] += 1
            if unreported:
                outcomes["sealed, unreported"] += 1
            if unindexed - pending_unindexed:
                outcomes["sealed, unindexed"] += 1
            pending_leftovers |= leftovers
            pending_unindexed |= unindexed

            # gc now and then (so that it also meets debris from several kills at once).
            if number % 4 == 3 or number == len(plan) - 1:
                gc = ledger.gc()
                assert sorted(gc.removed) == sorted(pending_leftovers), where
                assert sorted(gc.indexed) == sorted(pending_unindexed), where
                assert gc.in_progress == [] and gc.unreadable == [], where
                after = verify_ledger(ledger)
                assert after.ok, f"{where}: after gc: {after.problems}"
                assert staging_entries(ledger_path) == [], where
                pending_leftovers.clear()
                pending_unindexed.clear()

    print(f"\nkill outcomes {context}: {dict(outcomes)}; sealed and reported: {len(reported)}")
    assert outcomes["mid-write"] >= len(plan) // 4, f"kills rarely landed mid-write {outcomes}"
    assert reported, "no writer ever sealed a run"

    with Ledger.open(ledger_path) as ledger:
        assert ledger.count() == len(run_dirs(ledger_path)) >= len(reported)
        rebuilt = ledger.reindex()
        assert rebuilt.skipped == []
        assert rebuilt.indexed == ledger.count()
        assert verify_ledger(ledger).ok
        assert ledger.gc().removed == []


# -- interrupted in-process writes ------------------------------------------------------------


class Boom(Exception):
    pass


def raise_boom(_run: RunWriter, _tmp: Path) -> None:
    raise Boom("the agent crashed")


def raise_interrupt(_run: RunWriter, _tmp: Path) -> None:
    raise KeyboardInterrupt


def add_too_large(run: RunWriter, tmp: Path) -> None:
    source = tmp / "huge.bin"
    source.write_bytes(b"x" * (run.ledger.config.max_artifact_bytes + 1))
    run.add_file("attachments/huge.bin", source)


def add_bad_audit(run: RunWriter, _tmp: Path) -> None:
    run.add_bytes("shell_audit.jsonl", b'{"command": "ls"}\n{not json\n')


def add_unsafe_name(run: RunWriter, _tmp: Path) -> None:
    run.add_text("../escape.txt", "out")


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (raise_boom, Boom),
        (raise_interrupt, KeyboardInterrupt),
        (add_too_large, ArtifactTooLargeError),
        (add_bad_audit, RecordError),
        (add_unsafe_name, UnsafeNameError),
    ],
    ids=["exception", "keyboard-interrupt", "too-large", "bad-audit", "unsafe-name"],
)
def test_exception_inside_new_run_leaves_nothing(
    tmp_path: Path, fault: Callable[[RunWriter, Path], None], expected: type[BaseException]
) -> None:
    root = tmp_path / "ledger"
    Ledger.init(root, max_artifact_bytes=256 * 1024).close()
    source = tmp_path / "snapshot.json"
    source.write_bytes(os.urandom(200 * 1024))
    with Ledger.open(root) as ledger:
        with pytest.raises(expected), ledger.new_run(metadata("crashed")) as run:
            run.add_text("PROMPT.txt", "disk full\n")
            run.add_bytes("report.md", b"# half a report")
            run.add_file("snapshot.json", source)
            run.add_text("attachments/deep/nested/notes.txt", "more\n")
            assert len(staging_entries(root)) == 1
            fault(run, tmp_path)
        assert run_dirs(root) == []
        assert staging_entries(root) == []
        assert ledger.count() == 0
        report = verify_ledger(ledger)
        assert report.ok and report.in_progress == []
        # The id is free: the crashed run can be written again.
        with ledger.new_run(metadata("crashed")) as again:
            again.add_text("report.md", "second try\n")
        assert run_dirs(root) == ["crashed"]
        assert verify_ledger(ledger).ok


def test_losing_the_race_at_seal_in_a_with_block_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    with Ledger.init(root) as ledger, Ledger.open(root) as other:
        late = other.new_run(metadata("twin", tags={"who": "late"}))
        with pytest.raises(RunExistsError), late:
            late.add_text("report.md", "late\n")
            with ledger.new_run(metadata("twin", tags={"who": "early"})) as early:
                early.add_text("report.md", "early\n")
        assert run_dirs(root) == ["twin"]
        assert staging_entries(root) == []
        assert (root / "runs" / "twin" / "report.md").read_text() == "early\n"
        assert ledger.runs()[0].metadata["tags"] == {"who": "early"}
        assert verify_ledger(ledger).ok


def test_exception_after_seal_keeps_the_sealed_run(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    with Ledger.init(root) as ledger:
        with pytest.raises(Boom), ledger.new_run(metadata("kept")) as run:
            run.add_text("report.md", "done\n")
            run.seal()
            raise Boom("after sealing")
        assert run_dirs(root) == ["kept"]
        assert staging_entries(root) == []
        assert ledger.count() == 1
        assert verify_ledger(ledger).ok


def test_discarded_and_abandoned_writers(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    with Ledger.init(root) as ledger:
        run = ledger.new_run(metadata("discarded"))
        run.add_text("report.md", "never mind\n")
        run.discard()
        run.discard()  # twice is harmless
        assert staging_entries(root) == []
        with pytest.raises(InputError, match="already sealed or discarded"):
            run.add_text("audit.md", "too late\n")
        assert verify_ledger(ledger).ok

    # A writer whose process dies without sealing or discarding leaves debris that verify
    # reports and gc removes (here: a subprocess that stages one run and exits at once).
    code = (
        "import sys, os\n"
        "from datetime import UTC, datetime\n"
        "from agentledger.identity import sha256_bytes\n"
        "from agentledger.records import RunMetadata\n"
        "from agentledger.store import Ledger\n"
        "ledger = Ledger.open(sys.argv[1])\n"
        "run = ledger.new_run(RunMetadata(run_id='abandoned', scenario='s', model='m',\n"
        "    system_prompt_hash=sha256_bytes(b'p'), started_at=datetime.now(UTC)))\n"
        "run.add_text('report.md', 'half')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(root)], check=True, timeout=60)
    with Ledger.open(root) as ledger:
        debris = staging_entries(root)
        assert len(debris) == 1 and debris[0].startswith("abandoned.")
        report = verify_ledger(ledger)
        assert [(p.kind, p.run_id) for p in report.problems] == [("leftover", debris[0])]
        assert ledger.gc().removed == debris
        assert staging_entries(root) == []
        assert verify_ledger(ledger).ok
        assert run_dirs(root) == []
