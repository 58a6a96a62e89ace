"""`agentledger migrate-backend`: a ledger copied to other backends, verified, never half-made.

Local to S3 and back, with runs, scores and a decision: the copy holds the same records byte
for byte and the same journal (a checkpoint taken before still verifies). A source that does
not verify, a destination that is a ledger or holds another one, and a bad URI are refused
with nothing written; a copy that stopped is no ledger, and the same command resumes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.gates.decisions import DecisionStore
from agentledger.store import copy_ledger, verify_ledger
from exact_output import normalised
from many_runs import write_runs
from test_decisions import make_decision


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A local ledger with runs, their scores and a decision."""
    runs = tmp_path / "runs"
    write_runs(runs, 4)
    root = tmp_path / "source"
    assert invoke("init", str(root))[0] == 0
    assert invoke("import", "--ledger", str(root), str(runs))[0] == 0
    code, output = invoke("judge", "--ledger", str(root))
    assert code in (0, 1), output
    with Ledger.open(root) as ledger:
        DecisionStore(ledger).write([make_decision("variant-a")])
    return root


def checkpoint(root: Path) -> str:
    code, output = invoke("checkpoint", "--ledger", str(root))
    assert code == 0, output
    return output.splitlines()[0]


def listing(root: Path) -> list[str]:
    code, output = invoke("runs", "--ledger", str(root), "--json")
    assert code == 0, output
    return sorted(run["run_id"] for run in json.loads(output))


@pytest.mark.usefixtures("s3_env")
def test_a_ledger_goes_to_s3_and_back(tmp_path: Path, source: Path, s3_uri: str) -> None:
    head = checkpoint(source)
    code, output = invoke(
        "migrate-backend", "--ledger", str(source), "--to-storage", s3_uri, str(tmp_path / "on-s3")
    )
    assert code == 0, output
    assert normalised(output, tmp_path) == (
        "Copied 4 run(s) and 5 record(s) to /home/ops/work/on-s3 (storage "
        f"{s3_uri}, index sqlite); journal of 16 "
        "entries; verify clean\n"
    )
    on_s3 = tmp_path / "on-s3"
    assert json.loads((on_s3 / "ledger.json").read_text())["storage"] == s3_uri
    assert listing(on_s3) == listing(source)
    assert invoke("verify", "--ledger", str(on_s3), "--checkpoint", head)[0] == 0
    assert checkpoint(on_s3) == head
    with Ledger.open(source) as one, Ledger.open(on_s3) as other:
        for run_id in one.storage.run_ids():
            for name in one.storage.list_files(run_id):
                assert other.storage.read(run_id, name) == one.storage.read(run_id, name)
        for area in ("scores", "decisions", "journal"):
            keys = one.storage.keys(area)
            assert other.storage.keys(area) == keys
            assert [other.storage.get(k) for k in keys] == [one.storage.get(k) for k in keys]
        assert DecisionStore(other).list() == DecisionStore(one).list()

    back = tmp_path / "back"
    code, output = invoke(
        "migrate-backend", "--ledger", str(on_s3), "--to-storage", "local", str(back)
    )
    assert code == 0, output
    assert listing(back) == listing(source)
    assert checkpoint(back) == head
    assert (back / "runs").is_dir()


def test_a_source_that_does_not_verify_is_not_copied(tmp_path: Path, source: Path) -> None:
    with Ledger.open(source) as ledger:
        run_id = sorted(ledger.storage.run_ids())[0]
    report = source / "runs" / run_id / "PROMPT.txt"
    report.chmod(0o644)
    report.write_text("rewritten\n")
    code, output = invoke(
        "migrate-backend", "--ledger", str(source), "--to-storage", "local", str(tmp_path / "copy")
    )
    assert code == 3, output
    assert normalised(output, tmp_path) == (
        "Error: /home/ops/work/source does not verify clean, so it is not copied "
        "(1 problem(s): use_case_00000_haiku_20260312: changed (content changed: "
        "sha256 352ba0d353cf... size 10, manifest says e325fa422755... size 18)); "
        "run `agentledger verify` and `agentledger gc` first\n"
    )
    assert not (tmp_path / "copy").exists()


def test_destinations_that_are_not_new_are_refused(tmp_path: Path, source: Path) -> None:
    other = tmp_path / "other"
    assert invoke("init", str(other))[0] == 0
    code, output = invoke(
        "migrate-backend", "--ledger", str(source), "--to-storage", "local", str(other)
    )
    assert (
        code == 2
        and normalised(output, tmp_path)
        == "Error: /home/ops/work/other already holds a ledger; migrate into a new directory\n"
    )
    code, output = invoke(
        "migrate-backend", "--ledger", str(source), "--to-storage", "s4://x", str(tmp_path / "d")
    )
    assert code == 2 and normalised(output, tmp_path) == (
        "Error: cannot migrate to /home/ops/work/d: unknown storage backend 's4' "
        "(known: local, memory, s3)\n"
    )
    assert not (tmp_path / "d").exists()


@pytest.mark.usefixtures("s3_env")
def test_an_s3_prefix_holding_another_ledger_is_refused(
    tmp_path: Path, source: Path, s3_uri: str
) -> None:
    Ledger.init(tmp_path / "elsewhere", storage=s3_uri).close()
    code, output = invoke(
        "migrate-backend", "--ledger", str(source), "--to-storage", s3_uri, str(tmp_path / "d")
    )
    assert code == 2, output
    # Varies between runs (the bucket is named for each run of the tests): a substring.
    assert "holds another ledger" in output
    assert not (tmp_path / "d" / "ledger.json").exists()
    with Ledger.open(tmp_path / "elsewhere") as ledger:
        assert list(ledger.storage.run_ids()) == [] and ledger.storage.keys("scores") == []


def test_a_copy_that_stopped_is_no_ledger_and_resumes(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_group = copy_ledger._copy_group

    def fail(*args: object) -> bool:
        raise OSError(5, "the network went away")

    monkeypatch.setattr(copy_ledger, "_copy_group", fail)
    target = tmp_path / "copy"
    with Ledger.open(source) as ledger, pytest.raises(OSError, match="network"):
        copy_ledger.migrate_ledger(ledger, target, storage="local")
    assert (target / "runs").is_dir() and not (target / "ledger.json").exists()
    assert invoke("runs", "--ledger", str(target))[0] == 2  # no ledger there

    monkeypatch.setattr(copy_ledger, "_copy_group", copy_group)
    with Ledger.open(source) as ledger:
        report = copy_ledger.migrate_ledger(ledger, target, storage="local")
    assert report.notes == ["resumed a copy that had stopped"]
    assert (report.runs, report.runs_present) == (0, 4)
    # Records are copied in key order, decisions before scores: none had been copied.
    assert (report.records, report.records_present) == (5, 0)
    with Ledger.open(target) as copied:
        assert verify_ledger(copied).ok
    assert listing(target) == listing(source)
