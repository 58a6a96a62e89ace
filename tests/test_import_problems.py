"""An import of many files names every bad one at once, whatever the number of processes: the
problems of every worker's share and the files refused while finding the runs, in the order
of their paths; nothing is written; --skip-invalid imports the rest and lists the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _events(task: str, thoughts: int = 0) -> list[dict[str, object]]:
    events: list[dict[str, object]] = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": f"do {task}"}},
    ]
    events += [
        {"id": i + 1, "source": "agent", "action": "think", "args": {"thought": "x" * 40}}
        for i in range(thoughts)
    ]
    events.append(
        {"id": thoughts + 1, "source": "agent", "action": "finish", "args": {"final_thought": "ok"}}
    )
    return events


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Twelve trajectories, five of them bad, spread so that with three processes (shares of
    four files) each share holds at least one: bad JSON, a duplicate key, NaN, a link out of
    the folder, and one over a 20 KB limit."""
    folder = tmp_path / "trajs"
    folder.mkdir()
    for number in range(12):
        path = folder / f"traj_t{number:02}.json"
        path.write_text(json.dumps(_events(f"t{number:02}")))
    (folder / "traj_t01.json").write_text('[{"id": 0, "source": "user"')
    (folder / "traj_t04.json").write_text('[{"id": 0, "id": 1, "source": "user"}]')
    (folder / "traj_t07.json").write_text('[{"id": 0, "source": "user", "timeout": NaN}]')
    (folder / "traj_t09.json").write_text(json.dumps(_events("t09", thoughts=400)))
    (folder / "traj_t10.json").unlink()
    secret = tmp_path / "private" / "traj_secret.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps(_events("secret")))
    (folder / "traj_t10.json").symlink_to(secret)
    return folder


def _problems(folder: Path, secret: Path) -> list[str]:
    """Each bad file named with what is wrong in it, in the order of the file names."""
    return [
        f"{folder}/traj_t01.json, line 1: malformed JSON:",
        f"{folder}/traj_t04.json: malformed JSON: duplicate key 'id'",
        f"{folder}/traj_t07.json: malformed JSON: NaN is not a JSON number",
        f"{folder}/traj_t09.json: ",
        f"{folder}/traj_t10.json: symlink points outside {folder} (to {secret})",
    ]


@pytest.mark.parametrize("workers", ["1", "3", "4"])  # shares of 12, 4 and 3 files
def test_every_bad_file_of_every_share_is_named_and_nothing_written(
    folder: Path, tmp_path: Path, workers: str
) -> None:
    root = tmp_path / "ledger"
    code, out, err = run(
        "import", "--ledger", str(root), str(folder), "--model", "m", "--workers", workers,
        "--max-artifact-size", "20KB",
    )  # fmt: skip
    assert code == 2 and out == "", err
    lines = err.splitlines()
    assert lines[0] == (
        "Error: 5 runs cannot be imported; nothing was written (--skip-invalid imports the "
        "rest and lists these):"
    )
    expected = _problems(folder, tmp_path / "private" / "traj_secret.json")
    assert len(lines) == 1 + len(expected)
    for line, start in zip(lines[1:], expected, strict=True):
        assert line.startswith(f"  {start}"), (line, start)
    assert "20 KB artifact size limit" in lines[4]
    assert not root.exists()


@pytest.mark.parametrize("workers", ["1", "3"])
def test_skip_invalid_imports_the_rest_and_lists_each_skipped(
    folder: Path, tmp_path: Path, workers: str
) -> None:
    root = tmp_path / "ledger"
    code, out, err = run(
        "import", "--ledger", str(root), str(folder), "--model", "m", "--workers", workers,
        "--max-artifact-size", "20KB", "--skip-invalid",
    )  # fmt: skip
    assert code == 0, err
    assert out == f"Imported 7 runs into {root}; 5 skipped as invalid.\n"
    skipped = [line for line in err.splitlines() if line.startswith("skipped ")]
    expected = _problems(folder, tmp_path / "private" / "traj_secret.json")
    for line, start in zip(skipped, expected, strict=True):
        assert line.startswith(f"skipped {start}"), (line, start)
    with Ledger.open(root) as ledger:
        scenarios = sorted(ledger.load(run.run_id).metadata.scenario for run in ledger.runs())
    assert scenarios == [f"t{n:02}" for n in (0, 2, 3, 5, 6, 8, 11)]
    assert "secret" not in "".join(p.read_text() for p in root.rglob("*.json*"))


def _run_dir(parent: Path, name: str, run_id: str) -> None:
    directory = parent / name
    directory.mkdir(parents=True)
    (directory / "PROMPT.txt").write_text("ssh is refused\n")
    (directory / "report.md").write_text("a DROP rule\n")
    meta = {"run_id": run_id, "model": "m", "scenario": "s"}
    (directory / "metadata.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("workers", ["1", "3"])
def test_run_directories_one_id_twice_in_two_shares_and_a_link_out(
    tmp_path: Path, workers: str
) -> None:
    """Run directories: a bad metadata.json, one run id given in two shares, and a link to a
    directory outside: all three listed; skipped, the first of the two ids is kept."""
    runs = tmp_path / "runs"
    for number in range(6):
        _run_dir(runs, f"r{number}", "run1" if number == 4 else f"run{number}")
    (runs / "r2" / "metadata.json").write_text('{"run_id": ')
    (tmp_path / "outside").mkdir()
    (runs / "r9").symlink_to(tmp_path / "outside", target_is_directory=True)
    root = tmp_path / "ledger"

    code, _out, err = run("import", "--ledger", str(root), str(runs), "--workers", workers)
    assert code == 2 and not root.exists()
    assert err.splitlines()[1:] == [
        f"  {runs}/r2/metadata.json, line 1: malformed JSON: Expecting value (column 12)",
        f"  {runs}/r4: gives run id 'run1', as {runs}/r1 does; give one another id with a "
        "--sidecar column 'run_id'",
        f"  {runs}/r9: symlink points outside {runs} (to {tmp_path}/outside); refusing to "
        "import it",
    ]

    code, out, err = run(
        "import", "--ledger", str(root), str(runs), "--workers", workers, "--skip-invalid"
    )
    assert code == 0, err
    assert out == f"Imported 4 runs into {root}; 3 skipped as invalid.\n"
    with Ledger.open(root) as ledger:
        sources = {run.run_id: ledger.load(run.run_id).metadata for run in ledger.runs()}
    assert sorted(sources) == ["run0", "run1", "run3", "run5"]
