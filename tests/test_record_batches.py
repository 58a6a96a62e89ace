"""A batch of records on the local backend is made durable together: `labels import` of many
rows flushes once (one syncfs, or an fsync of each file and directory where there is none),
and always before the journal entries that accept them are appended."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.store import Ledger
from agentledger.store.storage.journal import Journal
from agentledger.store.storage.local import records
from conftest import WriteRun


def _table(path: Path, run_ids: list[str]) -> Path:
    path.write_text(
        "run_id,verdict,crit:C2,reason\n"
        + "".join(f"{run_id},unsafe,yes,row {n}\n" for n, run_id in enumerate(run_ids))
    )
    return path


class Watch:
    """What the import did, in order: fsyncs (of what), syncfs calls, journal appends."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, syncfs_works: bool) -> None:
        self.events: list[tuple[str, str]] = []
        real_fsync, real_append = os.fsync, Journal.append

        def fsync(fd: int) -> None:
            self.events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
            real_fsync(fd)

        def syncfs(fd: int) -> bool:
            self.events.append(("syncfs", os.readlink(f"/proc/self/fd/{fd}")))
            return syncfs_works

        def append(journal: Journal, pending: Any) -> Any:
            kinds = {getattr(entry, "kind", "") for entry in pending}
            self.events.append(("append", ",".join(sorted(map(str, kinds)))))
            return real_append(journal, pending)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(records, "syncfs", syncfs)
        monkeypatch.setattr(Journal, "append", append)

    def label_fsyncs(self) -> list[int]:
        """Positions of fsyncs of label files and label directories."""
        return [
            n
            for n, (kind, what) in enumerate(self.events)
            if kind == "fsync" and "/labels/" in what
        ]


def _import(root: Path, table: Path) -> str:
    result = CliRunner().invoke(
        main, ["labels", "import", "--ledger", str(root), "--source", "dataset", str(table)]
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("rows", [3, 30])
def test_a_labels_import_flushes_once_whatever_its_size(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int
) -> None:
    run_ids = [write_run() for _ in range(rows)]
    root = ledger.root
    ledger.close()
    watch = Watch(monkeypatch, syncfs_works=True)
    _import(root, _table(tmp_path / "labels.csv", run_ids))
    assert [kind for kind, _ in watch.events].count("syncfs") == 1
    assert watch.label_fsyncs() == []  # no label file nor its directory fsynced on its own
    # The flush comes before the append of the entries that accept the labels.
    flush = next(n for n, (kind, _) in enumerate(watch.events) if kind == "syncfs")
    assert any(kind == "append" and n > flush for n, (kind, _) in enumerate(watch.events))
    last_append = max(n for n, (kind, _) in enumerate(watch.events) if kind == "append")
    assert flush < last_append
    with Ledger.open(root) as reopened:
        assert len(reopened.index.label_rows()) == rows


def test_without_syncfs_every_label_file_and_directory_is_fsynced_before_its_entry(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_ids = [write_run() for _ in range(4)]
    root = ledger.root
    ledger.close()
    watch = Watch(monkeypatch, syncfs_works=False)
    _import(root, _table(tmp_path / "labels.csv", run_ids))
    synced = {what for kind, what in watch.events if kind == "fsync" and "/labels/" in what}
    files = {str(path) for path in (root / "labels").rglob("*.json")}
    assert files <= synced
    assert {str(path.parent) for path in (root / "labels").rglob("*.json")} <= synced
    # Every label's fsync precedes the last journal append (the one holding their entries).
    last_append = max(n for n, (kind, _) in enumerate(watch.events) if kind == "append")
    assert max(watch.label_fsyncs()) < last_append


def test_a_single_record_is_fsynced_on_its_own_not_the_whole_file_system(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = write_run()
    root = ledger.root
    ledger.close()
    watch = Watch(monkeypatch, syncfs_works=True)
    _import(root, _table(tmp_path / "labels.csv", [run_id]))
    assert "syncfs" not in [kind for kind, _ in watch.events]
    assert len(watch.label_fsyncs()) == 2  # the file and its directory
