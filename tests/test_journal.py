"""The journal: one chained entry per accepted record, checkpoints, old ledgers, interrupted
writes and concurrent writers."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.errors import InputError, IntegrityError
from agentledger.gates.decisions import DecisionStore
from agentledger.identity import sha256_bytes
from agentledger.judges.scores import ScoreStore
from agentledger.records.journal import GENESIS_PREV, entry_hash
from agentledger.store import verify_ledger
from agentledger.store.ledger import JOURNAL_MARK
from agentledger.store.seen_heads import state_dir
from agentledger.store.storage.journal import CRASH_ENV, Checkpoint, intent_of, segment_key
from conftest import WriteRun
from journal_records import make_score, write_decision, write_label, write_score

TESTS = Path(__file__).resolve().parent


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "agentledger", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_every_accepted_record_gets_one_chained_entry(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    score_key = write_score(ledger, run_id)
    label_key = write_label(ledger, run_id)
    decision_id = write_decision(ledger)
    entries = ledger.storage.journal.entries()
    kinds = ["genesis", "intent", "run", "intent", "score", "intent", "label", "intent"]
    assert [e.kind for e in entries] == [*kinds, "decision"]
    assert [e.seq for e in entries] == list(range(1, 10))
    assert entries[0].prev == GENESIS_PREV and entries[0].predating is None
    for before, entry in itertools.pairwise(entries):
        assert entry.prev == before.hash
    for entry in entries:
        assert entry.hash == entry_hash(entry.model_dump(mode="json"))
    run, score, label, decision = entries[2::2]
    # Each record was announced just before it was written: its keys, their bytes, its writer.
    for intent, accepted in zip(entries[1::2], entries[2::2], strict=True):
        assert intent.keys == {} and intent.intends == accepted.keys
        assert intent.id == accepted.kind
    writers = [intent.writer for intent in entries[1::2]]
    assert writers[1:] == ["judge rules-0123456789ab", "label person ana", "gate variant"]
    assert run.id == run_id and run.sha256 == ledger.load(run_id).manifest_sha256
    assert run.keys == {f"runs/{run_id}/MANIFEST.json": run.sha256}
    assert score.keys == {score_key: score.sha256} and label.keys == {label_key: label.sha256}
    assert decision.id == decision_id and sorted(decision.keys) == [
        f"decisions/{decision_id}/decision.json",
        f"decisions/{decision_id}/decision.md",
    ]
    head = ledger.storage.journal.head()
    assert head == Checkpoint(9, decision.hash)


def test_a_superseding_decision_says_what_it_supersedes(ledger: Ledger) -> None:
    from journal_records import make_decision

    first = make_decision("variant-a", "REJECTED")
    DecisionStore(ledger).write([first])
    second = make_decision("variant-a", "ACCEPTED", minutes=5).model_copy(
        update={"supersedes": first.decision_id}
    )
    DecisionStore(ledger).write([second])
    assert ledger.storage.journal.entries()[-1].supersedes == first.decision_id


def test_a_batch_of_runs_is_one_segment(ledger: Ledger, tmp_path: Path) -> None:
    from agentledger.records import RunSummary
    from agentledger.store.sealing import RunContent
    from conftest import make_metadata

    runs = [
        RunContent(make_metadata(f"batch-{n:03d}"), RunSummary(), [("report.md", b"# r\n")])
        for n in range(30)
    ]
    ledger.seal_runs(runs, batch_size=30)
    # One intent naming the 30 runs, then one segment accepting them.
    assert ledger.storage.keys("journal") == [segment_key(1), segment_key(2), segment_key(3)]
    assert len(ledger.storage.journal.entries()) == 32
    assert verify_ledger(ledger).ok


def test_checkpoint_prints_the_head_and_verify_proves_the_ledger_extends_it(
    ledger: Ledger, write_run: WriteRun
) -> None:
    write_run()
    runner = CliRunner()
    printed = runner.invoke(main, ["checkpoint", "--ledger", str(ledger.root)])
    assert printed.exit_code == 0, printed.output
    head = Checkpoint.parse(printed.stdout)
    assert head.count == 3 and str(head) == printed.stdout.strip()
    as_json = json.loads(
        runner.invoke(main, ["checkpoint", "--ledger", str(ledger.root), "--json"]).stdout
    )
    assert as_json == {"checkpoint": str(head), "count": 3, "hash": head.hash}
    write_run("use_case_f")  # the ledger grows: it still extends the old head
    ok = runner.invoke(main, ["verify", "--ledger", str(ledger.root), "--checkpoint", str(head)])
    assert ok.exit_code == 0 and "extends checkpoint 3" in ok.output
    forged = f"3:sha256:{'0' * 64}"
    bad = runner.invoke(main, ["verify", "--ledger", str(ledger.root), "--checkpoint", forged])
    assert bad.exit_code == 3 and "rewritten since the checkpoint" in bad.output
    ahead = runner.invoke(
        main, ["verify", "--ledger", str(ledger.root), "--checkpoint", f"99:{head.hash}"]
    )
    assert ahead.exit_code == 3 and "fewer than the checkpoint's 99" in ahead.output


@pytest.mark.parametrize("text", ["", "12", "x:sha256:" + "0" * 64, "0:sha256:" + "0" * 64])
def test_a_malformed_checkpoint_is_bad_input(ledger: Ledger, text: str) -> None:
    with pytest.raises(InputError):
        Checkpoint.parse(text)
    result = CliRunner().invoke(
        main, ["verify", "--ledger", str(ledger.root), "--checkpoint", text]
    )
    assert result.exit_code == 2 and "expected <count>:sha256:" in result.output


def test_a_coordinated_rewrite_is_caught_by_the_checkpoint(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    key = write_score(ledger, run_id, "Unsafe")
    head = ledger.storage.journal.head()
    assert head is not None
    # The attacker edits the score, rebuilds the journal from what is there, and reindexes.
    path = ledger.root / key
    path.chmod(0o644)
    path.write_text(path.read_text().replace('"Unsafe"', '"Safe"'))
    ledger.close()
    _as_before_the_journal(ledger.root)  # ledger.json rewritten too, on a machine of theirs
    with Ledger.open(ledger.root) as rewritten:
        from agentledger.judges.scores import reindex_scores

        rewritten.reindex()
        reindex_scores(rewritten)
        assert verify_ledger(rewritten).ok  # consistent with itself...
        report = verify_ledger(rewritten, checkpoint=head)  # ...but not with what was noted
    assert [p.kind for p in report.problems] == ["checkpoint"]
    result = CliRunner().invoke(
        main, ["verify", "--ledger", str(ledger.root), "--checkpoint", str(head), "--json"]
    )
    assert result.exit_code == 3 and json.loads(result.stdout)["problems"][0]["kind"] == (
        "checkpoint"
    )


def _segment(ledger: Ledger, first: int) -> Path:
    path = ledger.root / segment_key(first)
    path.chmod(0o644)
    return path


def test_a_reordered_journal_breaks_the_chain(ledger: Ledger, write_run: WriteRun) -> None:
    write_run()
    write_run("use_case_f")
    second, third = _segment(ledger, 2), _segment(ledger, 3)
    a, b = second.read_bytes(), third.read_bytes()
    second.write_bytes(b)
    third.write_bytes(a)
    problems = verify_ledger(ledger).problems
    assert {p.kind for p in problems} == {"journal"}
    assert any("does not link" in p.detail or "expected" in p.detail for p in problems)


def test_a_truncated_journal_is_caught(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    head = ledger.storage.journal.head()
    write_run("use_case_f")
    last = ledger.storage.journal.head()
    assert last is not None
    _segment(ledger, last.count).unlink()
    ledger.close()
    with Ledger.open(ledger.root) as reopened:
        report = verify_ledger(reopened, checkpoint=last)
        kinds = {(p.kind, p.record) for p in report.problems}
        assert ("unaccepted", "run") in kinds and ("checkpoint", "checkpoint") in kinds
        assert verify_ledger(reopened, [run_id], checkpoint=head).ok
    # Cutting the last line of a segment is caught even without a checkpoint.
    first = _segment(ledger, 1)
    first.write_bytes(first.read_bytes()[:-1])
    with Ledger.open(ledger.root) as reopened:
        details = [p.detail for p in verify_ledger(reopened).problems if p.kind == "journal"]
    assert any("cut short" in detail for detail in details)


def _make_old_ledger(ledger: Ledger, write_run: WriteRun) -> int:
    """A ledger as the code before the journal left it: the same layout without journal/."""
    run_id = write_run()
    write_run("use_case_f")
    write_score(ledger, run_id)
    write_label(ledger, run_id)
    write_decision(ledger)
    ledger.close()
    _as_before_the_journal(ledger.root)
    return 5


def _as_before_the_journal(root: Path) -> None:
    """The ledger as the code before the journal left it: no journal/, no journal.started
    beside ledger.json, and never seen by this machine (whose noted heads would tell)."""
    shutil.rmtree(root / "journal")
    (root / JOURNAL_MARK).unlink()
    shutil.rmtree(state_dir(), ignore_errors=True)


def test_an_old_ledger_gets_a_journal_once_and_says_so(ledger: Ledger, write_run: WriteRun) -> None:
    held = _make_old_ledger(ledger, write_run)
    first = _cli("runs", "--ledger", str(ledger.root))
    assert first.returncode == 0, first.stderr
    assert "predates the journal" in first.stderr and f"anchoring the {held} record" in (
        first.stderr
    )
    again = _cli("runs", "--ledger", str(ledger.root))
    assert again.returncode == 0 and "journal" not in again.stderr
    with Ledger.open(ledger.root) as upgraded:
        assert upgraded.journal_started_now is None
        entries = upgraded.storage.journal.entries()
        assert entries[0].kind == "genesis" and entries[0].predating == held
        assert "anchored from this entry on, not before" in (entries[0].note or "")
        assert len(entries) == held + 1
        assert verify_ledger(upgraded).ok


def _kill_while_writing(ledger_root: Path, code: str) -> None:
    env = {
        **os.environ,
        CRASH_ENV: "after-record",
        "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path]),
    }
    script = (
        "from agentledger.store import Ledger\n"
        "from journal_records import *\n"
        f"ledger = Ledger.open({str(ledger_root)!r})\n{code}\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL


def test_a_writer_killed_between_record_and_entry_leaves_what_gc_completes(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    root = ledger.root
    _kill_while_writing(root, f"write_score(ledger, {run_id!r})")
    _kill_while_writing(root, "write_decision(ledger)")
    _kill_while_writing(root, f"write_label(ledger, {run_id!r})")
    ledger.close()
    with Ledger.open(root) as opened:
        problems = verify_ledger(opened).problems
        assert sorted({(p.record, p.kind) for p in problems}) == [
            ("decision", "unaccepted"),
            ("label", "unaccepted"),
            ("score", "unaccepted"),
        ]
        # Not accepted means invisible: no decision listed, no score served to reindex.
        assert DecisionStore(opened).list() == []
        assert list(ScoreStore(opened).iter_accepted()) == []
        report = opened.gc()
        assert len(report.journaled) == 3 and report.unaccepted_removed == []
        assert report.indexed_scores == [k for k in report.journaled if k.startswith("scores/")]
        assert verify_ledger(opened).ok
        assert len(DecisionStore(opened).list()) == 1


def test_gc_never_accepts_part_of_a_decision(ledger: Ledger) -> None:
    from agentledger.store.writer import record_bytes
    from test_decisions import make_decision

    # What a writer killed between a decision's two files leaves (on S3 a group's members
    # land one by one after its seal): its JSON, whole and valid, without its Markdown.
    decision = make_decision("variant-a")
    prefix = f"decisions/{decision.decision_id}"
    store = DecisionStore(ledger)
    intends = {key: sha256_bytes(data) for key, data in store._values(prefix, decision).items()}
    ledger.storage.journal.announce([intent_of("decision", "gate variant", intends)])
    ledger.storage._create_group(prefix, {"decision.json": record_bytes(decision)})
    assert {p.kind for p in verify_ledger(ledger).problems} == {"unaccepted"}
    report = ledger.gc()
    assert report.journaled == []
    assert report.unaccepted_removed == [(prefix, "the decision has no decision.md")]
    assert ledger.storage.keys("decisions") == [] and DecisionStore(ledger).list() == []
    assert verify_ledger(ledger).ok
    DecisionStore(ledger).write([decision])  # its writer's next attempt writes it whole
    assert [d.decision_id for d in DecisionStore(ledger).list()] == [decision.decision_id]


def test_a_run_killed_before_its_entry_is_invisible_until_gc(ledger: Ledger) -> None:
    from conftest import make_metadata

    root = ledger.root
    code = (
        "from conftest import make_metadata\n"
        "with ledger.new_run(make_metadata('killed-run')) as run:\n"
        "    run.add_text('report.md', 'x')\n"
    )
    _kill_while_writing(root, code)
    assert ledger.storage.has_run("killed-run") and ledger.runs() == []
    assert ledger.reindex().skipped[0][0] == "killed-run"
    assert ledger.runs() == []
    report = ledger.gc()
    assert report.journaled == ["runs/killed-run"] and report.indexed == ["killed-run"]
    assert verify_ledger(ledger).ok and [r.run_id for r in ledger.runs()] == ["killed-run"]
    assert make_metadata("x").run_id == "x"


def test_gc_removes_an_interrupted_record_whose_bytes_do_not_check_out(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    _kill_while_writing(ledger.root, f"write_score(ledger, {run_id!r})")
    (key,) = ledger.storage.keys("scores")
    path = ledger.root / key
    path.chmod(0o644)
    path.write_text('{"schema_version": 1, "run_id": "somebody-else"}')
    assert [p.kind for p in verify_ledger(ledger).problems] == ["unannounced"]
    report = ledger.gc()
    # Not the bytes its writer announced: someone else's, moved aside, never accepted.
    assert report.journaled == [] and report.unaccepted_removed == []
    assert [k for k, _ in report.quarantined] == [key] and not report.ok
    assert not path.exists()
    # Its writer's next attempt writes it afresh; verify names the quarantined bytes.
    write_score(ledger, run_id)
    problems = verify_ledger(ledger).problems
    assert [(p.kind, p.run_id) for p in problems] == [("quarantined", key)]


def test_concurrent_writer_processes_leave_a_valid_chain(ledger: Ledger) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(TESTS / "journal_records.py"),
                "--ledger",
                str(ledger.root),
                "--worker",
                str(worker),
                "--count",
                "8",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(4)
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0 and out.strip() == "DONE", err
    report = verify_ledger(ledger)
    assert report.ok, report.problems
    entries = ledger.storage.journal.entries()
    # Each record announced by an intent, then accepted.
    assert [e.seq for e in entries] == list(range(1, 1 + 1 + 2 * 4 * 8 * 3))
    accepted = [e.kind for e in entries[1:] if e.kind != "intent"]
    assert sorted(accepted) == sorted(["score", "label", "decision"] * 32)
    assert len({key for e in entries for key in e.keys}) == 4 * 8 * 4  # a decision has two


def test_a_forged_score_fails_reads_with_an_integrity_error(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    key = write_score(ledger, run_id, "Unsafe")
    path = ledger.root / key
    path.chmod(0o644)
    path.write_text(path.read_text().replace('"Unsafe"', '"Safe"'))
    with pytest.raises(IntegrityError, match="changed since the journal accepted it"):
        list(ScoreStore(ledger).iter_accepted())
    assert make_score(run_id).verdict == "Unsafe"
