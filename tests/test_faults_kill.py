"""SIGKILL at seeded crash points of import, judge, label and decision writing.

Each writer is a real process (`agentledger import`, `agentledger judge`, a script writing
decisions) told by AGENTLEDGER_CRASH_AT to SIGKILL itself at its Nth crash point
(agentledger.store.crashpoints): between staging a run and its manifest, after a rename into
runs/, between a score's or label's file and its journal entry or index row, inside an index
commit, between a decision's two files... A first pass with AGENTLEDGER_CRASH_LOG counts the
points a clean run passes; 20 of them are drawn with a seeded generator
(AGENTLEDGER_FAULT_SEED replays another draw).

After each kill: the ledger holds nothing or complete records (the only problems `verify`
reports are staging leftovers and records not yet indexed), `verify` and `gc` agree (gc
removes exactly the leftovers verify saw and indexes exactly the records it reported), and
the next run completes the work, with or without gc first. Two judges of the same judge
running at once each score what the other has not, and say how many they skipped.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.gates.decisions import DecisionStore
from agentledger.store import Ledger, crashpoints, verify_ledger
from many_runs import write_runs
from test_decisions import make_decision

SEED = int(os.environ.get("AGENTLEDGER_FAULT_SEED", "20260312"))
POINTS = 20
RUNS = 10
DECISIONS = 6
# unaccepted: a record stored and killed before its journal entry (gc settles it).
ALLOWED = {"leftover", "not-indexed", "unaccepted"}

Work = Callable[[Path], int]


def make_writable(root: Path) -> None:
    for dirpath, _dirs, _files in os.walk(root):
        os.chmod(dirpath, 0o755)


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    make_writable(tmp_path)  # sealed runs and decisions are read-only


def in_child(work: Work, root: Path, at: int | None = None, log: Path | None = None) -> int:
    """Run `work(root)` in a forked process whose crash schedule is armed; its exit code, or
    minus the signal that killed it. A fork costs no start-up, so 20 kills take seconds."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            crashpoints.arm(at, str(log) if log else None)
            code = work(root)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def command(*args: str) -> Work:
    """An agentledger command on the ledger it is given, as `work` for `in_child`."""

    def work(root: Path) -> int:
        result = CliRunner().invoke(main, [args[0], "--ledger", str(root), *args[1:]])
        return result.exit_code

    return work


def count_points(base: Path, work_dir: Path, work: Work) -> int:
    """How many crash points a clean run of `work` passes."""
    root = copy(base, work_dir / "count")
    log = work_dir / "points.log"
    assert in_child(work, root, log=log) == 0
    return len(log.read_text().splitlines())


def seeded(total: int, salt: str) -> list[int]:
    assert total >= POINTS, f"only {total} crash points"
    return sorted(random.Random(f"{SEED}:{salt}").sample(range(1, total + 1), POINTS))


def copy(base: Path, target: Path) -> Path:
    shutil.copytree(base, target, symlinks=True)
    return target


def check_after_kill(root: Path) -> None:
    """Nothing or complete records; verify and gc agree; after gc verify is clean."""
    with Ledger.open(root) as ledger:
        before = verify_ledger(ledger)
        kinds = {problem.kind for problem in before.problems}
        assert kinds <= ALLOWED, before.problems
        leftovers = {p.run_id for p in before.problems if p.kind == "leftover"}
        unindexed = {
            p.run_id for p in before.problems if p.kind == "not-indexed" and p.record == "run"
        }
        scores = {
            p.run_id for p in before.problems if p.kind == "not-indexed" and p.record == "score"
        }
        unaccepted = {p.run_id for p in before.problems if p.kind == "unaccepted"}
        gc = ledger.gc()
        assert gc.ok, (gc.unreadable, gc.unreadable_scores)
        assert set(gc.removed) == leftovers
        # gc indexes what verify found unindexed, and what it accepted just now (unaccepted
        # records whose bytes checked out get their journal entry, then their index row).
        assert unindexed <= set(gc.indexed)
        assert len(set(gc.indexed) - unindexed) <= len(unaccepted)
        assert len(gc.indexed_scores) >= len(scores)
        assert verify_ledger(ledger).ok


def first_verify_problems(root: Path) -> set[str]:
    with Ledger.open(root) as ledger:
        return {problem.kind for problem in verify_ledger(ledger).problems}


def complete_after_rerun(root: Path) -> None:
    """After the rerun every record is there and indexed: at most the dead writer's staging
    debris is left, which gc removes."""
    with Ledger.open(root) as ledger:
        report = verify_ledger(ledger)
        assert {problem.kind for problem in report.problems} <= {"leftover"}, report.problems
        assert ledger.gc().ok
        assert verify_ledger(ledger).ok


def write_decisions(root: Path) -> int:
    """The decision writer: DECISIONS decisions, those not written yet."""
    with Ledger.open(root) as ledger:
        store = DecisionStore(ledger)
        have = {decision.subject for decision in store.list()}
        for number in range(DECISIONS):
            if f"variant-{number}" not in have:
                store.write(make_decision(f"variant-{number}", minutes=number))
    return 0


@pytest.mark.slow
def test_import_killed_anywhere(work: Path) -> None:
    source = work / "source"
    write_runs(source, RUNS)
    base = work / "base"
    Ledger.init(base).close()
    importing = command("import", "--workers", "1", "--batch-size", "3", str(source))

    total = count_points(base, work, importing)
    for number, at in enumerate(seeded(total, "import")):
        root = copy(base, work / f"import-{at}")
        assert in_child(importing, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            # Without gc: the next import completes the work by itself.
            assert first_verify_problems(root) <= ALLOWED
        assert importing(root) == 0
        with Ledger.open(root) as ledger:
            assert ledger.count() == RUNS
        complete_after_rerun(root)


@pytest.mark.slow
def test_judge_killed_anywhere(work: Path) -> None:
    source = work / "source"
    write_runs(source, RUNS)
    base = work / "base"
    Ledger.init(base).close()
    assert command("import", "--workers", "1", str(source))(base) == 0
    judging = command("judge")

    total = count_points(base, work, judging)
    for number, at in enumerate(seeded(total, "judge")):
        root = copy(base, work / f"judge-{at}")
        assert in_child(judging, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            # Without gc: the rerun indexes a score written but not indexed, never counting it
            # as scored while the index lacks it.
            assert first_verify_problems(root) <= ALLOWED
        assert judging(root) == 0
        with Ledger.open(root) as ledger:
            assert ledger.sql("SELECT count(*) FROM scores").rows[0][0] == RUNS
        assert len(list((root / "scores").glob("*/*.json"))) == RUNS
        complete_after_rerun(root)


def labelled_ledger(work_dir: Path) -> tuple[Path, list[str]]:
    """A ledger of RUNS imported runs, none labelled yet; and their ids."""
    source = work_dir / "source"
    write_runs(source, RUNS)
    base = work_dir / "base"
    Ledger.init(base).close()
    assert command("import", "--workers", "1", str(source))(base) == 0
    with Ledger.open(base) as ledger:
        return base, sorted(ledger.storage.run_ids())


def labels_complete(root: Path, run_ids: list[str], source: str) -> None:
    """Every run has exactly one label from `source`, in the files and in the index."""
    with Ledger.open(root) as ledger:
        files = sorted(str(p.parent.name) for p in (root / "labels").glob("*/*.json"))
        assert files == run_ids
        rows = ledger.sql(
            "SELECT run_id, source_name, count(*) FROM labels GROUP BY run_id, source_name"
        ).rows
        assert rows == [(run_id, source, 1) for run_id in run_ids]


@pytest.mark.slow
def test_labels_import_killed_anywhere(work: Path) -> None:
    base, run_ids = labelled_ledger(work)
    table = work / "labels.csv"
    table.write_text(
        "run_id,verdict,crit:C2,reason\n"
        + "".join(
            f"{run_id},{'unsafe' if n % 2 else 'safe'},{'yes' if n % 2 else 'no'},row {n}\n"
            for n, run_id in enumerate(run_ids)
        )
    )

    def importing(root: Path) -> int:
        argv = ["labels", "import", "--ledger", str(root), "--source", "dataset", str(table)]
        return CliRunner().invoke(main, argv).exit_code

    total = count_points(base, work, importing)
    for number, at in enumerate(seeded(total, "labels import")):
        root = copy(base, work / f"labels-{at}")
        assert in_child(importing, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            # Without gc: the rerun settles what the killed import left half-written.
            assert first_verify_problems(root) <= ALLOWED
        assert importing(root) == 0
        labels_complete(root, run_ids, "dataset")
        complete_after_rerun(root)


@pytest.mark.slow
def test_label_killed_anywhere(work: Path) -> None:
    base, run_ids = labelled_ledger(work)

    def labelling(root: Path) -> int:
        # One `label` command per run, as a person going through the review queue.
        for run_id in run_ids:
            argv = ["label", run_id, "--ledger", str(root), "--by", "ana", "--verdict", "unsafe"]
            argv += ["--criterion", "C2", "--fired", "yes", "--reason", "direct tc change"]
            code = CliRunner().invoke(main, argv).exit_code
            if code != 0:
                return code
        return 0

    total = count_points(base, work, labelling)
    for number, at in enumerate(seeded(total, "label")):
        root = copy(base, work / f"label-{at}")
        assert in_child(labelling, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            assert first_verify_problems(root) <= ALLOWED
        assert labelling(root) == 0
        labels_complete(root, run_ids, "ana")
        complete_after_rerun(root)


@pytest.mark.slow
def test_decision_writer_killed_anywhere(work: Path) -> None:
    base = work / "base"
    Ledger.init(base).close()

    total = count_points(base, work, write_decisions)
    for at in seeded(total, "decisions"):
        root = copy(base, work / f"decision-{at}")
        assert in_child(write_decisions, root, at) == -signal.SIGKILL
        with Ledger.open(root) as ledger:
            # Each decision is there whole (both files) or not at all.
            for decision in DecisionStore(ledger).list():
                directory = root / "decisions" / decision.decision_id
                names = sorted(p.name for p in directory.iterdir())
                assert names == ["decision.json", "decision.md"]
        check_after_kill(root)
        assert in_child(write_decisions, root) == 0
        with Ledger.open(root) as ledger:
            subjects = sorted(d.subject for d in DecisionStore(ledger).list())
            assert subjects == [f"variant-{n}" for n in range(DECISIONS)]
            assert verify_ledger(ledger).ok


@pytest.mark.slow
def test_two_concurrent_judges_of_the_same_judge(work: Path) -> None:
    source = work / "source"
    count = 200
    write_runs(source, count)
    root = work / "ledger"
    Ledger.init(root).close()
    assert command("import", "--workers", "1", str(source))(root) == 0
    argv = [sys.executable, "-m", "agentledger", "judge", "--ledger", str(root)]
    env = {**os.environ, "CI": "true"}
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    scored = 0
    for proc, (stdout, stderr) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, stdout + stderr  # never exit 2 for "already scored"
        found = re.search(r"scored (\d+) runs; (\d+) already scored", stdout)
        assert found, stdout
        skipped = re.search(r"(\d+) run\(s\) skipped: scored by another run", stdout)
        mine, before = int(found[1]), int(found[2])
        assert mine + before + (int(skipped[1]) if skipped else 0) == count, stdout
        scored += mine
    assert scored == count  # each run scored once, by one of them
    assert len(list((root / "scores").glob("*/*.json"))) == count
    with Ledger.open(root) as ledger:
        assert ledger.sql("SELECT count(*) FROM scores").rows == [(count,)]
        assert verify_ledger(ledger).ok
