"""A writer on a ledger it has not read reads the journal on from the head this machine saw
(`Journal.anchor`), not from its first segment: `agentledger label` on a ledger of many runs
reads the segments written since, each linked to the one before, and the chain it extends
is the real one. What it does not read is `verify`'s (and any reader's) to check, as before:
a broken journal is still found, and a rollback still refuses the write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.cli.label_fast import fast_main
from agentledger.store.storage.base import BareStorage
from agentledger.store.storage.journal import segment_key
from conftest import WriteRun


@pytest.fixture
def journal_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The journal segments read from any storage from now on, in order."""
    reads: list[str] = []
    original = BareStorage.get

    def get(self: BareStorage, key: str) -> bytes:
        if key.startswith("journal/"):
            reads.append(key)
        return original(self, key)

    monkeypatch.setattr(BareStorage, "get", get)
    return reads


def _head(root: Path) -> tuple[int, str]:
    with Ledger.open(root) as opened:
        head = opened.storage.journal.head()
    assert head is not None
    return head.count, head.hash


def _label(root: Path, run_id: str, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main,
        ["label", run_id, "--ledger", str(root), "--verdict", "unsafe", "--by", "ada", *extra],
    )
    return result.exit_code, result.stdout, result.stderr


def _verify(root: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["verify", "--ledger", str(root)])
    return result.exit_code, result.stdout


def test_a_label_reads_the_journal_from_the_head_seen_not_from_its_start(
    ledger: Ledger,
    write_run: WriteRun,
    journal_reads: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = [write_run() for _ in range(12)]
    ledger.close()
    count, _ = _head(ledger.root)  # this machine saw the head
    assert count > 24  # two segments a run at least
    journal_reads.clear()
    code = fast_main([runs[0], "--ledger", str(ledger.root), "--verdict", "unsafe", "--by", "ada"])
    assert code == 0, capsys.readouterr()
    assert "Labelled" in capsys.readouterr().out
    # The segment holding the head seen (read to find it, and by the check of the head seen
    # at open and at close), and none before it.
    assert journal_reads and {int(key[8:20]) for key in journal_reads} <= set(
        range(count - 1, count + 3)
    ), journal_reads
    # The label's entries extend the chain: the intent and the label follow the head seen.
    new_count, _ = _head(ledger.root)
    assert new_count == count + 2
    code, out = _verify(ledger.root)
    assert code == 0, out


def test_a_second_label_of_a_run_still_reads_every_label_against_the_journal(
    ledger: Ledger, write_run: WriteRun, journal_reads: list[str]
) -> None:
    run_id = write_run()
    ledger.close()
    assert _label(ledger.root, run_id)[0] == 0
    journal_reads.clear()
    code, out, err = _label(ledger.root, run_id, "--criterion", "C1", "--fired", "no")
    assert code == 0, err
    assert "Labelled" in out
    # The run has a label: the journal is read whole to check it was accepted as stored.
    assert segment_key(1) in journal_reads


def test_an_entry_edited_after_the_head_seen_refuses_the_label(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, other_run = write_run(), write_run()
    ledger.close()
    seen, _ = _head(ledger.root)  # noted in this machine's state directory
    # Another machine (another state directory) labels a run, then an entry of it is edited.
    monkeypatch.setenv("AGENTLEDGER_STATE_DIR", str(tmp_path / "elsewhere"))
    assert _label(ledger.root, other_run)[0] == 0
    monkeypatch.setenv("AGENTLEDGER_STATE_DIR", str(tmp_path / ".user-state"))
    segment = ledger.root / "journal" / f"{seen + 1:012d}.jsonl"
    assert segment.exists()
    line = json.loads(segment.read_bytes().splitlines()[0])
    line["writer"] = "someone else"
    segment.write_bytes(json.dumps(line, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    code, out, err = _label(ledger.root, run_id)
    assert code == 2 or code == 3, (code, out, err)
    assert f"entry {seen + 1} does not match its hash (edited)" in err
    assert not (ledger.root / "labels" / run_id).exists()


def test_a_segment_planted_beyond_the_head_is_not_built_on(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    ledger.close()
    count, head_hash = _head(ledger.root)
    # A copy of the head's segment put far ahead: the listing's last segment, not the head.
    head_segment = sorted((ledger.root / "journal").glob("*.jsonl"))[-1]
    (ledger.root / "journal" / f"{count + 50:012d}.jsonl").write_bytes(head_segment.read_bytes())
    code, _out, err = _label(ledger.root, run_id)
    assert code == 0, err
    written = json.loads((ledger.root / "journal" / f"{count + 1:012d}.jsonl").read_bytes())
    assert written["seq"] == count + 1 and written["prev"] == head_hash


def test_a_rolled_back_ledger_still_refuses_the_label(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    import shutil

    run_id, other_run = write_run(), write_run()
    ledger.close()
    shutil.copytree(ledger.root, tmp_path / "copy")
    assert _label(ledger.root, other_run)[0] == 0  # the head seen moves on
    shutil.rmtree(ledger.root)
    shutil.copytree(tmp_path / "copy", ledger.root)
    code, _out, err = _label(ledger.root, run_id)
    assert code != 0
    assert "refused to write, nothing was written" in err and "rolled back" in err
    assert not (ledger.root / "labels").exists()
