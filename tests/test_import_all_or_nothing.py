"""One bad file, nothing written: limits on the parts an import makes (a trace.jsonl derived
from a trajectory) are checked while planning, before the first run is sealed; a ledger a
failing command created is removed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from conftest import WriteRun


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _trajectories(folder: Path, small: int, big_events: int) -> None:
    """`small` trajectories of two events, then one of `big_events` short thoughts: a file of
    20 kB whose derived trace.jsonl is about five times larger."""
    folder.mkdir()
    finish = {"id": 1, "source": "agent", "action": "finish", "args": {"final_thought": "ok"}}
    for number in range(small):
        events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}}]
        (folder / f"traj_t{number:03}.json").write_text(json.dumps([*events, finish]))
    thoughts = [
        {"id": i, "source": "agent", "action": "think", "args": {"thought": "x"}}
        for i in range(big_events)
    ]
    (folder / f"traj_t{small:03}.json").write_text(json.dumps(thoughts, separators=(",", ":")))


def test_a_derived_trace_over_the_limit_in_the_201st_run_writes_nothing(tmp_path: Path) -> None:
    _trajectories(tmp_path / "trajs", 200, 300)
    code, out, err = run(
        "import", str(tmp_path / "trajs"), "--model", "m", "--ledger", str(tmp_path / "new"),
        "--max-artifact-size", "50KB",
    )  # fmt: skip
    assert code == 2, (out, err)
    assert "traj_t200.json" in err and "trace.jsonl" in err and "50 KB" in err, err
    assert not (tmp_path / "new").exists()


def test_into_an_existing_ledger_no_run_is_sealed(ledger: Ledger, tmp_path: Path) -> None:
    _trajectories(tmp_path / "trajs", 3, 300)
    code, _out, err = run(
        "import", str(tmp_path / "trajs"), "--model", "m", "--ledger", str(ledger.root),
        "--max-artifact-size", "50KB", "--batch-size", "1",
    )  # fmt: skip
    assert code == 2 and "trace.jsonl" in err
    assert ledger.count() == 0 and not any((ledger.root / "runs").glob("*/MANIFEST.json"))


def test_a_ledger_created_and_unused_is_removed(tmp_path: Path) -> None:
    made = Ledger.init(tmp_path / "made")
    assert made.remove_if_unused() and not (tmp_path / "made").exists()
    (tmp_path / "empty").mkdir()  # a directory that was there stays, emptied
    assert Ledger.init(tmp_path / "empty").remove_if_unused()
    assert (tmp_path / "empty").is_dir() and not any((tmp_path / "empty").iterdir())


def test_a_ledger_with_a_run_or_opened_is_never_removed(
    ledger: Ledger, write_run: WriteRun
) -> None:
    assert not Ledger.open(ledger.root).remove_if_unused()  # opened, not created here
    write_run()
    ledger.created_here = True  # as if this process had created it
    assert not ledger.remove_if_unused() and (ledger.root / "ledger.json").is_file()


def test_concurrent_imports_of_the_same_runs_land_each_once_and_all_succeed(
    tmp_path: Path,
) -> None:
    """Two imports racing on the same runs: each run is sealed once; the import that finds a
    run the other sealed meanwhile, byte for byte the same, counts it as already imported."""
    import subprocess
    import sys

    from agentledger.importers import sample_runs_dir

    root = tmp_path / "shared"
    Ledger.init(root).close()
    argv = [
        sys.executable, "-m", "agentledger", "import", str(sample_runs_dir()),
        "--ledger", str(root), "--batch-size", "1", "--workers", "1",
    ]  # fmt: skip
    writers = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outcomes = [writer.communicate(timeout=180) for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0, 0], outcomes
    expected = sum(1 for path in sample_runs_dir().iterdir() if path.is_dir())
    with Ledger.open(root) as ledger:
        assert ledger.count() == expected
        runs = [e.id for e in ledger.storage.journal.entries() if e.kind == "run"]
        assert len(set(runs)) == len(runs) == expected
    code, _out, err = run("verify", "--ledger", str(root))
    assert code == 0, err
