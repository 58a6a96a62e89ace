"""Labels written by several processes at once, and which label is current.

Four real `agentledger labels import` processes of one file at once give each row once: the
newest label of each source is decided under the journal lock (on S3 the lease every machine
takes), by what the journal holds then. And a source's current label is the one the ledger
accepted last, not the one whose file claims the latest time: a label dated 2099 is
superseded by a person's later `label`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.labels.store import LabelStore, current_labels
from agentledger.records.labels import CriterionLabel, Label, LabelSource, new_label_id
from agentledger.store import Ledger, verify_ledger
from many_runs import write_runs
from pg_server import PostgresServer

PROCESSES = 4


def import_at_once(root: Path, table: Path, env: dict[str, str]) -> None:
    """`labels import` of `table` by PROCESSES processes started together; each exits 0."""
    argv = [sys.executable, "-m", "agentledger", "labels", "import", "--ledger", str(root)]
    argv += ["--source", "dataset", str(table)]
    procs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, out + err


def labels_table(path: Path, run_ids: list[str]) -> Path:
    path.write_text(
        "run_id,verdict,crit:C2,reason\n"
        + "".join(
            f"{run_id},{'unsafe' if n % 2 else 'safe'},{'yes' if n % 2 else 'no'},row {n}\n"
            for n, run_id in enumerate(run_ids)
        )
    )
    return path


def each_row_once(root: Path, run_ids: list[str]) -> None:
    with Ledger.open(root) as ledger:
        stored = [key for key in ledger.storage.keys("labels") if key.endswith(".json")]
        assert sorted(key.split("/")[1] for key in stored) == run_ids  # one label per row
        rows = sorted(row.run_id for row in ledger.index.label_rows())
        assert rows == run_ids
        assert verify_ledger(ledger).ok


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, **(extra or {}), "PYTHONPATH": os.pathsep.join(sys.path), "CI": "true"}


@pytest.mark.slow
def test_four_imports_of_one_file_at_once_give_each_row_once(tmp_path: Path) -> None:
    write_runs(tmp_path / "source", 60)
    root = tmp_path / "ledger"
    assert CliRunner().invoke(main, ["init", str(root)]).exit_code == 0
    argv = ["import", "--ledger", str(root), str(tmp_path / "source")]
    assert CliRunner().invoke(main, argv).exit_code == 0
    with Ledger.open(root) as ledger:
        run_ids = sorted(ledger.storage.run_ids())
    import_at_once(root, labels_table(tmp_path / "labels.csv", run_ids), child_env())
    each_row_once(root, run_ids)


@pytest.mark.slow
def test_four_imports_at_once_on_s3_and_postgresql_give_each_row_once(
    tmp_path: Path,
    s3_uri: str,
    s3_env: dict[str, str],
    pg_url: str,
    postgres_server: PostgresServer,
) -> None:
    write_runs(tmp_path / "source", 24)
    root = tmp_path / "ledger"
    Ledger.init(root, storage=s3_uri, index=pg_url).close()
    argv = ["import", "--ledger", str(root), str(tmp_path / "source")]
    assert CliRunner().invoke(main, argv).exit_code == 0
    with Ledger.open(root) as ledger:
        run_ids = sorted(ledger.storage.run_ids())
    env = child_env({**s3_env, **postgres_server.environ()})
    import_at_once(root, labels_table(tmp_path / "labels.csv", run_ids), env)
    each_row_once(root, run_ids)


def test_a_label_dated_2099_is_superseded_by_a_later_label(tmp_path: Path) -> None:
    write_runs(tmp_path / "source", 1)
    root = tmp_path / "ledger"
    assert CliRunner().invoke(main, ["init", str(root)]).exit_code == 0
    argv = ["import", "--ledger", str(root), str(tmp_path / "source")]
    assert CliRunner().invoke(main, argv).exit_code == 0
    with Ledger.open(root) as ledger:
        (run_id,) = ledger.storage.run_ids()
        future = datetime(2099, 1, 1, tzinfo=UTC)
        dated = Label(
            label_id=new_label_id(future),
            run_id=run_id,
            by=LabelSource(kind="person", name="ana"),
            created_at=future,
            verdict="Safe",
            criteria=[CriterionLabel(criterion="C2", fired=False)],
            reason="dated in the future",
        )
        LabelStore(ledger).write([dated])
    argv = ["label", run_id, "--ledger", str(root), "--by", "ana", "--verdict", "unsafe"]
    result = CliRunner().invoke(main, [*argv, "--reason", "direct tc change"])
    assert result.exit_code == 0, result.output
    for rebuild in (False, True):
        with Ledger.open(root) as ledger:
            if rebuild:
                ledger.reindex()  # the files and the journal alone decide it
            (current,) = current_labels(ledger, "ana")
            assert current.reason == "direct tc change" and current.verdict == "Unsafe"
            assert verify_ledger(ledger).ok
    # The same label again adds nothing: the newest of ana's is the one just given.
    result = CliRunner().invoke(main, [*argv, "--reason", "direct tc change"])
    assert result.exit_code == 0, result.output
    with Ledger.open(root) as ledger:
        assert len(LabelStore(ledger).of_run(run_id)) == 2
