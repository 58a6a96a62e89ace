"""SIGKILL at seeded crash points of import, judge, label and decision writing, on a local
ledger and on S3 storage with a PostgreSQL index.

Each writer is a real process (`agentledger import`, `agentledger judge`, a script writing
decisions) told by AGENTLEDGER_CRASH_AT to SIGKILL itself at its Nth crash point
(agentledger.store.crashpoints): between staging a run and its manifest, after a rename into
runs/ (locally) or between one object copied into runs/ and the next (on S3), between a
score's or label's object and its journal entry, between the journal entry and the index row,
inside an index commit, between a decision's two files... A first pass with
AGENTLEDGER_CRASH_LOG counts the points a clean run passes; 20 of them are drawn with a seeded
generator on a local ledger, 6 on S3 + PostgreSQL (AGENTLEDGER_FAULT_SEED replays another
draw).

After each kill: the ledger holds nothing or complete records (the only problems `verify`
reports are staging leftovers and records not yet indexed), `verify` and `gc` agree (gc
removes the leftovers verify saw, and on S3 perhaps those it saw still in progress, and
indexes exactly the records it reported), and the next run completes the work, with or
without gc first. On S3 + PostgreSQL each point's ledger is a copy of its own (a prefix of
the bucket, a database) and the points run side by side. Two judges of the same judge
running at once each score what the other has not, and say how many they skipped.
"""

from __future__ import annotations

import os
import random
import re
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
from agentledger.store import GcReport, Ledger, crashpoints, verify_ledger
from agentledger.store.storage.s3.lease import LEASE_ENV
from conftest import S3_LEASE_SECONDS, make_bucket
from ledger_kinds import LOCAL, S3_POSTGRESQL, LedgerKind, S3PostgresLedgers
from many_runs import write_runs
from test_decisions import make_decision

SEED = int(os.environ.get("AGENTLEDGER_FAULT_SEED", "20260312"))
POINTS = {LOCAL: 20, S3_POSTGRESQL: 6}
"""Kill points drawn per writer: fewer on S3 + PostgreSQL, where each costs a second or two."""
RUNS = {LOCAL: 10, S3_POSTGRESQL: 4}
"""Runs written (and judged, labelled) per kill point."""
LARGE = 300 * 1024
"""An attachment too large to be held in memory until publishing: S3 stages it as an object
and copies it into runs/ on the server."""
DECISIONS = 6
# unaccepted: a record stored and killed before its journal entry (gc settles it).
ALLOWED = {"leftover", "not-indexed", "unaccepted"}

Work = Callable[[Path], int]
Point = Callable[[int, int, Path], None]
"""What a test does at one kill point: (its number in the draw, the point, the ledger)."""


def make_writable(root: Path) -> None:
    for dirpath, _dirs, _files in os.walk(root):
        os.chmod(dirpath, 0o755)


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    make_writable(tmp_path)  # sealed runs and decisions are read-only


@pytest.fixture(params=[LOCAL, S3_POSTGRESQL])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[LedgerKind]:
    """Where the ledgers live. On S3, a killed writer's journal lease and presence go stale
    after a second (the shortest lease there is), which the next writer waits out."""
    if request.param == LOCAL:
        yield LedgerKind()
        return
    request.getfixturevalue("s3_env")
    server = request.getfixturevalue("postgres_server")
    monkeypatch.setenv(LEASE_ENV, "1")
    ledgers = S3PostgresLedgers(make_bucket(request.node.nodeid), server)
    try:
        yield ledgers
    finally:
        ledgers.close()


def in_child(work: Work, root: Path, at: int | str | None = None, log: Path | None = None) -> int:
    """Run `work(root)` in a forked process whose crash schedule is armed (at the `at`-th
    crash point, or the first one named `at`); its exit code, or minus the signal that
    killed it. A fork costs no start-up, so 20 kills take seconds."""
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


def count_points(kind: LedgerKind, base: Path, work_dir: Path, work: Work) -> int:
    """How many crash points a clean run of `work` passes."""
    root = kind.copy(base, work_dir / "count")
    log = work_dir / "points.log"
    assert in_child(work, root, log=log) == 0
    return len(log.read_text().splitlines())


def seeded(kind: LedgerKind, total: int, salt: str) -> list[int]:
    points = POINTS[kind.name]
    assert total >= points, f"only {total} crash points"
    return sorted(random.Random(f"{SEED}:{salt}").sample(range(1, total + 1), points))


def each_point(
    kind: LedgerKind, base: Path, work_dir: Path, salt: str, total: int, point: Point
) -> None:
    """`point(number, at, root)` for each kill point drawn, on a copy of `base` of its own.
    Locally one after another; on S3 + PostgreSQL side by side, each in a forked process: a
    writer killed holding the journal lease holds up the next one there for a second or two
    (until the lease is stale), and those waits overlap."""
    points = seeded(kind, total, salt)
    roots = [kind.copy(base, work_dir / f"{salt.replace(' ', '-')}-{at}") for at in points]
    if kind.name == LOCAL:
        for number, (at, root) in enumerate(zip(points, roots, strict=True)):
            point(number, at, root)
        return
    children = []
    for number, (at, root) in enumerate(zip(points, roots, strict=True)):
        failure = root.with_suffix(".failure")
        pid = os.fork()
        if pid == 0:  # never returns into pytest
            code = 0
            try:
                point(number, at, root)
            except BaseException:
                failure.write_text(traceback.format_exc())
                code = 1
            finally:
                os._exit(code)
        children.append((pid, at, failure))
    failures = []
    for pid, at, failure in children:
        _, status = os.waitpid(pid, 0)
        if status:
            told = failure.read_text() if failure.exists() else f"wait status {status}"
            failures.append(f"kill point {at} (AGENTLEDGER_FAULT_SEED={SEED}):\n{told}")
    assert not failures, "\n".join(failures)


def stored(root: Path, area: str) -> list[str]:
    """The keys of the records stored in `area` (scores, labels, decisions), as the storage
    lists them."""
    with Ledger.open(root) as ledger:
        return ledger.storage.keys(area)


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
        # On S3 a dead writer's presence may still have looked alive to verify (its staging
        # then in progress) and have gone stale by the time gc looked.
        assert leftovers <= set(gc.removed) <= leftovers | set(before.in_progress)
        # gc indexes what verify found unindexed, and what it accepted just now (unaccepted
        # records whose bytes checked out get their journal entry, then their index row).
        assert unindexed <= set(gc.indexed)
        assert len(set(gc.indexed) - unindexed) <= len(unaccepted)
        assert len(gc.indexed_scores) >= len(scores)
        clean_but_for(ledger, gc)


def clean_but_for(ledger: Ledger, gc: GcReport) -> None:
    """`verify` is clean after `gc`, but for debris gc left in progress: on S3, that of a
    dead writer whose presence was not stale yet when gc looked, and may be by now."""
    after = verify_ledger(ledger)
    assert all(p.kind == "leftover" and p.run_id in gc.in_progress for p in after.problems), (
        after.problems
    )


def first_verify_problems(root: Path) -> set[str]:
    with Ledger.open(root) as ledger:
        return {problem.kind for problem in verify_ledger(ledger).problems}


def complete_after_rerun(root: Path) -> None:
    """After the rerun every record is there and indexed: at most the dead writer's staging
    debris is left, which gc removes."""
    with Ledger.open(root) as ledger:
        report = verify_ledger(ledger)
        assert {problem.kind for problem in report.problems} <= {"leftover"}, report.problems
        gc = ledger.gc()
        assert gc.ok
        clean_but_for(ledger, gc)


def write_decisions(root: Path) -> int:
    """The decision writer: DECISIONS decisions, those not written yet."""
    with Ledger.open(root) as ledger:
        store = DecisionStore(ledger)
        have = {decision.subject for decision in store.list()}
        for number in range(DECISIONS):
            if f"variant-{number}" not in have:
                store.write([make_decision(f"variant-{number}", minutes=number)])
    return 0


@pytest.mark.slow
def test_import_killed_anywhere(kind: LedgerKind, work: Path) -> None:
    source = work / "source"
    runs = RUNS[kind.name]
    write_runs(source, runs)
    (next(source.iterdir()) / "tool_output.log").write_bytes(b"x" * LARGE)
    base = kind.init(work / "base")
    importing = command("import", "--workers", "1", "--batch-size", "3", str(source))

    def kill_and_rerun(number: int, at: int, root: Path) -> None:
        assert in_child(importing, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            # Without gc: the next import completes the work by itself.
            assert first_verify_problems(root) <= ALLOWED
        assert importing(root) == 0
        with Ledger.open(root) as ledger:
            assert ledger.count() == runs
        complete_after_rerun(root)

    total = count_points(kind, base, work, importing)
    each_point(kind, base, work, "import", total, kill_and_rerun)


@pytest.mark.slow
def test_judge_killed_anywhere(kind: LedgerKind, work: Path) -> None:
    source = work / "source"
    runs = RUNS[kind.name]
    write_runs(source, runs)
    base = kind.init(work / "base")
    assert command("import", "--workers", "1", str(source))(base) == 0
    judging = command("judge")

    def kill_and_rerun(number: int, at: int, root: Path) -> None:
        assert in_child(judging, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            # Without gc: the rerun indexes a score written but not indexed, and settles one
            # written but not journaled, never counting it as scored while the index lacks it.
            assert first_verify_problems(root) <= ALLOWED
        assert judging(root) == 0
        with Ledger.open(root) as ledger:
            assert len(ledger.index.score_keys()) == runs
        assert len([key for key in stored(root, "scores") if key.endswith(".json")]) == runs
        complete_after_rerun(root)

    total = count_points(kind, base, work, judging)
    each_point(kind, base, work, "judge", total, kill_and_rerun)


@pytest.mark.slow
def test_a_judge_killed_between_a_score_and_its_entry_is_completed_by_the_next(
    kind: LedgerKind, work: Path
) -> None:
    source = work / "source"
    write_runs(source, 3)
    root = kind.init(work / "ledger")
    assert command("import", "--workers", "1", str(source))(root) == 0
    assert in_child(command("judge"), root, "after-record") == -signal.SIGKILL
    assert first_verify_problems(root) == {"unaccepted"}
    # No gc in between: the next judge settles the score the killed one left unjournaled
    # (it checks out, so it gets its entry and its index row) and scores the others.
    assert command("judge")(root) == 0
    with Ledger.open(root) as ledger:
        assert len(ledger.index.score_keys()) == 3
        assert verify_ledger(ledger).ok


def labelled_ledger(kind: LedgerKind, work_dir: Path) -> tuple[Path, list[str]]:
    """A ledger of imported runs, none labelled yet; and their ids."""
    source = work_dir / "source"
    write_runs(source, RUNS[kind.name])
    base = kind.init(work_dir / "base")
    assert command("import", "--workers", "1", str(source))(base) == 0
    with Ledger.open(base) as ledger:
        return base, sorted(ledger.storage.run_ids())


def labels_complete(root: Path, run_ids: list[str], source: str) -> None:
    """Every run has exactly one label from `source`, in the storage and in the index."""
    files = sorted(key.split("/")[1] for key in stored(root, "labels") if key.endswith(".json"))
    assert files == run_ids
    with Ledger.open(root) as ledger:
        rows = sorted((row.run_id, row.source_name) for row in ledger.index.label_rows())
        assert rows == [(run_id, source) for run_id in run_ids]


@pytest.mark.slow
def test_labels_import_killed_anywhere(kind: LedgerKind, work: Path) -> None:
    base, run_ids = labelled_ledger(kind, work)
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

    def kill_and_rerun(number: int, at: int, root: Path) -> None:
        assert in_child(importing, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            # Without gc: the rerun settles what the killed import left half-written.
            assert first_verify_problems(root) <= ALLOWED
        assert importing(root) == 0
        labels_complete(root, run_ids, "dataset")
        complete_after_rerun(root)

    total = count_points(kind, base, work, importing)
    each_point(kind, base, work, "labels import", total, kill_and_rerun)


@pytest.mark.slow
def test_label_killed_anywhere(kind: LedgerKind, work: Path) -> None:
    base, run_ids = labelled_ledger(kind, work)

    def labelling(root: Path) -> int:
        # One `label` command per run, as a person going through the review queue.
        for run_id in run_ids:
            argv = ["label", run_id, "--ledger", str(root), "--by", "ana", "--verdict", "unsafe"]
            argv += ["--criterion", "C2", "--fired", "yes", "--reason", "direct tc change"]
            code = CliRunner().invoke(main, argv).exit_code
            if code != 0:
                return code
        return 0

    def kill_and_rerun(number: int, at: int, root: Path) -> None:
        assert in_child(labelling, root, at) == -signal.SIGKILL
        if number % 2:
            check_after_kill(root)
        else:
            assert first_verify_problems(root) <= ALLOWED
        assert labelling(root) == 0
        labels_complete(root, run_ids, "ana")
        complete_after_rerun(root)

    total = count_points(kind, base, work, labelling)
    each_point(kind, base, work, "label", total, kill_and_rerun)


@pytest.mark.slow
def test_decision_writer_killed_anywhere(kind: LedgerKind, work: Path) -> None:
    base = kind.init(work / "base")

    def kill_and_rerun(_number: int, at: int, root: Path) -> None:
        assert in_child(write_decisions, root, at) == -signal.SIGKILL
        decisions_whole(root)
        check_after_kill(root)
        decisions_whole(root)  # gc accepted no part of a decision as the whole of it
        assert in_child(write_decisions, root) == 0
        assert decisions_whole(root) == [f"variant-{n}" for n in range(DECISIONS)]
        with Ledger.open(root) as ledger:
            assert verify_ledger(ledger).ok

    total = count_points(kind, base, work, write_decisions)
    each_point(kind, base, work, "decisions", total, kill_and_rerun)


def decisions_whole(root: Path) -> list[str]:
    """The subjects of the decisions the ledger holds, each checked to be there whole (both
    files) or not at all."""
    with Ledger.open(root) as ledger:
        decisions = DecisionStore(ledger).list()
        for decision in decisions:
            keys = ledger.storage.keys(f"decisions/{decision.decision_id}")
            assert [key.rsplit("/", 1)[1] for key in keys] == ["decision.json", "decision.md"]
        return sorted(decision.subject for decision in decisions)


@pytest.mark.slow
def test_two_concurrent_judges_of_the_same_judge(kind: LedgerKind, work: Path) -> None:
    source = work / "source"
    count = 200 if kind.name == LOCAL else 40  # a record on S3 costs tens of ms
    write_runs(source, count)
    root = kind.init(work / "ledger")
    assert command("import", "--workers", "1", str(source))(root) == 0
    argv = [sys.executable, "-m", "agentledger", "judge", "--ledger", str(root)]
    env = {**os.environ, "CI": "true"}
    if kind.name == S3_POSTGRESQL:
        env[LEASE_ENV] = S3_LEASE_SECONDS  # two live writers: not the one second of a kill
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
    assert len([key for key in stored(root, "scores") if key.endswith(".json")]) == count
    with Ledger.open(root) as ledger:
        assert len(ledger.index.score_keys()) == count
        assert verify_ledger(ledger).ok
