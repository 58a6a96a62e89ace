"""Rollback noticed by default: the head each ledger showed is kept outside it, on this
machine; a ledger found behind it (an older copy restored, the journal's tail deleted) or beside
it (another chain) is reported by every command and fails `verify`; a deleted journal is an
integrity failure, never a fresh start."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.store.storage.journal import segment_key
from conftest import WriteRun
from exact_output import normalised
from many_runs import write_runs


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _head(root: Path) -> str:
    code, out, err = run("checkpoint", "--ledger", str(root))
    assert code == 0, err
    return out.strip()


def test_a_restored_older_copy_is_reported_naming_both_heads(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    write_run()
    old = _head(ledger.root)
    shutil.copytree(ledger.root, tmp_path / "copy")
    with Ledger.open(ledger.root) as opened:
        assert opened.head_problem is None
    write_run("use_case_f")
    new = _head(ledger.root)
    assert new != old
    shutil.rmtree(ledger.root)
    shutil.copytree(tmp_path / "copy", ledger.root)
    code, out, err = run("verify", "--ledger", str(ledger.root))
    assert code == 3, (out, err)
    assert normalised(out, tmp_path) == (
        "RECORD   ID       PROBLEM   FILE  DETAIL\n"
        "journal  journal  rollback  -     /home/ops/work/ledger: its journal ends "
        "at 3:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926d"
        "fd, behind the head 5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8"
        "ea4665ac6a8a66cc88e this machine saw at 2026-05-01T12:00:00.000000+00:00: "
        "the ledger was rolled back (an older copy restored) or its journal's tail "
        "was deleted. Restore the ledger, or if the change was meant, accept the "
        "head it has now with `agentledger checkpoint --accept-current`\n"
    )
    # The normaliser shows a checkpoint's hash as a stand-in: the real heads, named.
    assert old in out and new in out
    code, _out, err = run("runs", "--ledger", str(ledger.root))
    assert code == 0 and normalised(err, tmp_path) == (
        "Warning: /home/ops/work/ledger: its journal ends at "
        "3:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd,"
        " behind the head 5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4"
        "665ac6a8a66cc88e this machine saw at 2026-05-01T12:00:00.000000+00:00: "
        "the ledger was rolled back (an older copy restored) or its journal's tail "
        "was deleted. Restore the ledger, or if the change was meant, accept the "
        "head it has now with `agentledger checkpoint --accept-current`\n"
    )
    assert new in err
    # The warning stays until the change is accepted...
    code, _out, err = run("runs", "--ledger", str(ledger.root))
    assert normalised(err, tmp_path) == (
        "Warning: /home/ops/work/ledger: its journal ends at "
        "3:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd,"
        " behind the head 5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4"
        "665ac6a8a66cc88e this machine saw at 2026-05-01T12:00:00.000000+00:00: "
        "the ledger was rolled back (an older copy restored) or its journal's tail "
        "was deleted. Restore the ledger, or if the change was meant, accept the "
        "head it has now with `agentledger checkpoint --accept-current`\n"
    )
    code, out, err = run("checkpoint", "--accept-current", "--ledger", str(ledger.root))
    assert code == 0 and out.strip() == old, err
    code, _out, err = run("runs", "--ledger", str(ledger.root))
    assert code == 0 and normalised(err, tmp_path) == ""
    code, _out, err = run("verify", "--ledger", str(ledger.root))
    assert code == 0, err


def test_a_truncated_journal_tail_fails_verify(ledger: Ledger, write_run: WriteRun) -> None:
    write_run()
    write_run("use_case_f")
    head = _head(ledger.root)
    segments = sorted((ledger.root / "journal").glob("*.jsonl"))
    assert len(segments) >= 2
    segments[-1].chmod(0o644)
    segments[-1].unlink()
    code, out, err = run("verify", "--ledger", str(ledger.root))
    assert code == 3 and normalised(out, ledger.root.parent) == (
        "RECORD   ID                                                   PROBLEM     "
        "FILE           DETAIL\n"
        "journal  journal                                              rollback    "
        "-              /home/ops/work/ledger: its journal ends at "
        "4:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd,"
        " behind the head 5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4"
        "665ac6a8a66cc88e this machine saw at 2026-05-01T12:00:00.000000+00:00: "
        "the ledger was rolled back (an older copy restored) or its journal's tail "
        "was deleted. Restore the ledger, or if the change was meant, accept the "
        "head it has now with `agentledger checkpoint --accept-current`\n"
        "run      use_case_f_gemini-2.5-flash_20260501T120000Z_000001  unaccepted  "
        "MANIFEST.json  the journal has no entry for it: announced by a writer "
        "that died before journaling it (`agentledger gc` completes or removes it)\n"
    ), (out, err)
    assert head in out  # the real head (the normaliser shows a stand-in)


def test_another_chain_in_the_journal_s_place_is_reported(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    write_run()
    _head(ledger.root)
    other = Ledger.init(tmp_path / "other")  # another ledger's journal, as long or longer
    other.close()
    for segment in (ledger.root / "journal").glob("*.jsonl"):
        segment.chmod(0o644)
        segment.unlink()
    for segment in (other.root / "journal").glob("*.jsonl"):
        shutil.copy(segment, ledger.root / "journal" / segment.name)
    code, out, err = run("verify", "--ledger", str(ledger.root))
    assert code == 3, (out, err)
    assert normalised(out, tmp_path) == (
        "RECORD   ID                                                   PROBLEM     "
        " FILE           DETAIL\n"
        "journal  journal                                              rollback    "
        " -              /home/ops/work/ledger: its journal ends at "
        "1:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd,"
        " behind the head 3:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4"
        "665ac6a8a66cc88e this machine saw at 2026-05-01T12:00:00.000000+00:00: "
        "the ledger was rolled back (an older copy restored) or its journal's tail "
        "was deleted. Restore the ledger, or if the change was meant, accept the "
        "head it has now with `agentledger checkpoint --accept-current`\n"
        "run      use_case_m_gemini-2.5-flash_20260501T120000Z_000001  unannounced "
        " MANIFEST.json  the journal has no entry for it and no writer announced "
        "it: put there by hand or by another program; never accepted, indexed or "
        "reported (`gc` leaves a sealed run's directory where it is: examine it, "
        "then remove runs/use_case_m_gemini-2.5-flash_20260501T120000Z_000001)\n"
    )


def test_a_deleted_journal_is_an_integrity_failure_never_a_fresh_start(
    ledger: Ledger, write_run: WriteRun
) -> None:
    write_run()
    ledger.close()
    shutil.rmtree(ledger.root / "journal")
    for command in (["verify"], ["runs"], ["gc"]):
        code, _out, err = run(*command, "--ledger", str(ledger.root))
        assert code == 3 and "journal is missing" in err, (command, err)
    assert not (ledger.root / segment_key(1)).exists()  # nothing re-anchored


def test_a_journal_deleted_with_its_mark_is_refused_where_it_was_seen_nothing_written(
    ledger: Ledger, write_run: WriteRun
) -> None:
    write_run()
    ledger.close()
    assert run("verify", "--ledger", str(ledger.root))[0] == 0  # this machine saw its head
    shutil.rmtree(ledger.root / "journal")
    (ledger.root / "journal.started").unlink()
    for command in (["verify"], ["runs"]):
        code, _out, err = run(*command, "--ledger", str(ledger.root))
        assert code == 3 and "this machine saw it at" in err, (command, err)
    assert not (ledger.root / segment_key(1)).exists()  # verify anchored nothing anew


def test_a_deleted_journal_is_caught_on_a_machine_that_never_saw_the_ledger(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    write_run()
    ledger.close()
    shutil.rmtree(tmp_path / ".user-state", ignore_errors=True)
    shutil.rmtree(ledger.root / "journal")
    code, _out, err = run("verify", "--ledger", str(ledger.root))
    assert code == 3 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/ledger: the journal is missing (its first segment, "
        "journal/000000000001.jsonl, is gone) though journal.started says the "
        "ledger has one: deleted, or the ledger was replaced. This is never a "
        "fresh start: restore journal/ from a copy\n"
    )


def test_a_new_ledger_and_ordinary_commands_never_warn(tmp_path: Path) -> None:
    root = str(tmp_path / "fresh")
    steps = [
        ["init", root],
        ["runs", "--ledger", root],
        ["checkpoint", "--ledger", root],
        ["verify", "--ledger", root],
        ["gc", "--ledger", root],
        ["reindex", "--ledger", root],
    ]
    for step in steps:
        code, _out, err = run(*step)
        assert code == 0 and "Warning" not in err, (step, err)
    with Ledger.open(root) as opened:
        assert opened.head_problem is None
        assert (Path(root) / "journal.started").is_file()


def test_verify_checkpoint_still_works(ledger: Ledger, write_run: WriteRun) -> None:
    write_run()
    head = _head(ledger.root)
    write_run("use_case_f")
    code, out, err = run("verify", "--ledger", str(ledger.root), "--checkpoint", head)
    assert code == 0 and "extends checkpoint" in err + out, (out, err)


def test_a_new_ledger_made_where_another_was_seen_is_no_rollback(tmp_path: Path) -> None:
    root = str(tmp_path / "again")
    code, _out, err = run("init", root)
    assert code == 0 and normalised(err, tmp_path) == ""
    code, _out, err = run("checkpoint", "--ledger", root)
    shutil.rmtree(root)
    code, _out, err = run("init", root)  # deleted and made again, on purpose
    assert code == 0 and normalised(err, tmp_path) == (
        "Note: another ledger was at /home/ops/work/again (journal head "
        "1:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd,"
        " seen 2026-05-01T12:00:00.000000+00:00); this machine now follows the new one.\n"
    ), err
    code, _out, err = run("verify", "--ledger", root)
    assert code == 0 and normalised(err, tmp_path) == "", err


def files_of(root: Path) -> list[str]:
    """Every file of the ledger but the index's own (SQLite's log comes and goes)."""
    found = (str(p.relative_to(root)) for p in root.rglob("*"))
    return sorted(name for name in found if not name.startswith("index.sqlite-"))


def test_writing_to_a_rolled_back_ledger_is_refused_until_the_rollback_is_accepted(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    run_id = write_run()
    old = _head(ledger.root)
    shutil.copytree(ledger.root, tmp_path / "copy")
    write_run("use_case_f")
    new = _head(ledger.root)
    shutil.rmtree(ledger.root)
    shutil.copytree(tmp_path / "copy", ledger.root)
    before = files_of(ledger.root)
    root = str(ledger.root)
    later = tmp_path / "later"
    write_runs(later, 1)  # a folder of runs to import
    writers = [
        ["label", run_id, "--by", "ana", "--verdict", "unsafe", "--reason", "tc change"],
        ["judge"],
        ["gc"],
        ["import", str(later)],
    ]
    for command in writers:
        code, out, err = run(*command, "--ledger", root)
        assert code == 3, (command, out, err)
        assert "refused to write, nothing was written" in err and old in err and new in err
        assert "checkpoint --accept-current" in err
    assert files_of(ledger.root) == before  # not one file more (no label, score, intent or segment)
    # Reading goes on, with the warning; verify fails.
    code, _out, err = run("runs", "--ledger", root)
    assert code == 0 and normalised(err, tmp_path) == (
        "Warning: /home/ops/work/ledger: its journal ends at "
        "3:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd,"
        " behind the head 5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4"
        "665ac6a8a66cc88e this machine saw at 2026-05-01T12:00:00.000000+00:00: "
        "the ledger was rolled back (an older copy restored) or its journal's tail "
        "was deleted. Restore the ledger, or if the change was meant, accept the "
        "head it has now with `agentledger checkpoint --accept-current`\n"
    )
    assert run("verify", "--ledger", root)[0] == 3
    # Accepting the head it has now lets writers write again.
    assert run("checkpoint", "--accept-current", "--ledger", root)[0] == 0
    code, out, err = run(*writers[0], "--ledger", root)
    assert code == 0 and normalised(err, tmp_path) == "", (out, err)
    assert run("verify", "--ledger", root)[0] == 0


def test_a_ledger_path_that_is_a_link_switched_to_an_older_copy_is_reported(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    """``/srv/ledger -> ledger-v2`` switched back to ``-> ledger-v1``: the head is noted for
    the path as given as well as the real one, so the older copy is that ledger gone back."""
    run_id = write_run()
    older = tmp_path / "older"
    shutil.copytree(ledger.root, older)
    write_run("use_case_f")
    link = tmp_path / "current"
    link.symlink_to(ledger.root)
    code, _out, err = run("verify", "--ledger", str(link))
    assert code == 0, err
    link.unlink()
    link.symlink_to(older)
    code, out, _err = run("verify", "--ledger", str(link))
    assert code == 3 and normalised(out, tmp_path) == (
        "RECORD   ID       PROBLEM   FILE  DETAIL\n"
        "journal  journal  rollback  -     /home/ops/work/current: its journal "
        "ends at 3:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a"
        "9926dfd, behind the head "
        "5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4665ac6a8a66cc88e "
        "this machine saw at 2026-05-01T12:00:00.000000+00:00: the ledger was "
        "rolled back (an older copy restored) or its journal's tail was deleted. "
        "Restore the ledger, or if the change was meant, accept the head it has "
        "now with `agentledger checkpoint --accept-current`\n"
    )
    code, _out, err = run(
        "label", run_id, "--verdict", "safe", "--by", "eve", "--reason", "z", "--ledger", str(link)
    )
    assert code == 3 and normalised(err, tmp_path) == (
        "Warning: /home/ops/work/current: its journal ends at "
        "3:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd,"
        " behind the head 5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4"
        "665ac6a8a66cc88e this machine saw at 2026-05-01T12:00:00.000000+00:00: "
        "the ledger was rolled back (an older copy restored) or its journal's tail "
        "was deleted. Restore the ledger, or if the change was meant, accept the "
        "head it has now with `agentledger checkpoint --accept-current`\n"
        "Error: refused to write, nothing was written: /home/ops/work/current: its "
        "journal ends at 3:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87"
        "963a794a9926dfd, behind the head "
        "5:sha256:c4c6f5261432b346b701f31fedaf73145bb57d8283ea8ea4665ac6a8a66cc88e "
        "this machine saw at 2026-05-01T12:00:00.000000+00:00: the ledger was "
        "rolled back (an older copy restored) or its journal's tail was deleted. "
        "Restore the ledger, or if the change was meant, accept the head it has "
        "now with `agentledger checkpoint --accept-current`\n"
    )
