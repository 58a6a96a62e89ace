"""Telling the format of a folder of traces, and leaving trace files out with --exclude."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.errors import InputError
from agentledger.importers import ImportOptions, prepare_import
from agentledger.importers.formats import detect_format
from exact_output import normalised

# A minimal trajectory: the user's task, one command and its output, the finish.
TRAJECTORY = [
    {"id": 0, "source": "user", "action": "message", "args": {"content": "check the disk"}},
    {"id": 1, "source": "agent", "action": "run", "args": {"command": "df -h"}},
    {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "/dev/vda 28%"},
    {"id": 3, "source": "agent", "action": "finish", "args": {"final_thought": "28% used"}},
]
PLAIN = (
    '{"run": {"scenario": "disk", "model": "m"}}\n'
    '{"kind": "message", "actor": "user", "content": "check the disk"}\n'
)
OTLP = {"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _folder(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_a_folder_says_its_format_by_its_files(tmp_path: Path) -> None:
    trajectory = json.dumps(TRAJECTORY)
    assert detect_format([_folder(tmp_path / "oh", {"traj_a.json": trajectory})]) == "openhands"
    # the checker's results and other JSON beside the trajectories say nothing
    beside = {"eval_a.json": '{"final_score": 1}', "notes.json": '{"eval": "no status"}'}
    assert detect_format([_folder(tmp_path / "oh", beside)]) == "openhands"
    assert detect_format([_folder(tmp_path / "plain", {"a.jsonl": PLAIN})]) == "jsonl"
    assert detect_format([_folder(tmp_path / "spans", {"a.json": json.dumps(OTLP)})]) == "otel"
    assert detect_format([_folder(tmp_path / "logs", {"a.eval": "zip"})]) == "inspect"
    # many checker files first in the listing do not hide the trajectories after them
    many = {f"eval_{n:04d}.json": "{}" for n in range(300)}
    flat = _folder(tmp_path / "flat", {**many, "traj_z.json": trajectory})
    assert detect_format([flat]) == "openhands"
    # run directories (the seed's layout) hold their files below the top
    runs = _folder(tmp_path / "runs" / "run-1", {"metadata.json": "{}", "trace.jsonl": PLAIN})
    assert detect_format([runs.parent]) == "directory"
    # and a run directory given itself: its shell log is no plain trace
    one = _folder(tmp_path / "one", {"PROMPT.txt": "go", "shell_audit_1.jsonl": PLAIN})
    assert detect_format([one]) == "directory"


def test_a_folder_of_several_formats_is_refused_with_what_it_holds(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path / "mixed",
        {"traj_a.json": json.dumps(TRAJECTORY), "b.jsonl": PLAIN, "c.json": json.dumps(OTLP)},
    )
    with pytest.raises(Exception, match="different formats") as caught:
        detect_format([folder])
    message = str(caught.value)
    for said in ("openhands: traj_a.json", "jsonl: b.jsonl", "otel: c.json", "--format"):
        assert said in message
    code, _, err = run("import", "--ledger", str(tmp_path / "ledger"), str(folder))
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/mixed: the folder holds traces of different formats "
        "(jsonl: b.jsonl; openhands: traj_a.json; otel: c.json); import each with "
        "--format (directory, inspect, jsonl, openhands, otel, promptfoo), which "
        "reads only that format's files\n"
    )
    assert not (tmp_path / "ledger").exists()
    # named, the format reads only its own files
    code, out, err = run(
        "import", "--ledger", str(tmp_path / "ledger"), str(folder), "--format", "jsonl"
    )
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 1 run into /home/ops/work/ledger.\n"


def test_exclude_leaves_trace_files_out(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    for task in ("keep-me", "delete-logs", "also-kept"):
        _folder(folder / "gpt-4o", {f"traj_{task}.json": json.dumps(TRAJECTORY)})
    ledger = tmp_path / "ledger"
    code, out, err = run(
        "import", "--ledger", str(ledger), str(folder), "--model", "m", "--exclude", "*delete*"
    )
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 2 runs into /home/ops/work/ledger.\n"
    scenarios = sorted(path.name.split("_")[0] for path in (ledger / "runs").iterdir())
    assert scenarios == ["also-kept", "keep-me"]
    # by the path below the folder too, and a broken file excluded is never read
    (folder / "broken").mkdir()
    (folder / "broken" / "traj_bad.json").write_text("[{")
    code, out, err = run(
        "import", "--ledger", str(tmp_path / "second"), str(folder), "--model", "m",
        "--exclude", "broken/*", "--exclude", "*delete*",
    )  # fmt: skip
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 2 runs into /home/ops/work/second.\n"
    # every file left out: said, and nothing written
    code, _, err = run(
        "import", "--ledger", str(tmp_path / "none"), str(folder), "--model", "m",
        "--exclude", "traj_*",
    )  # fmt: skip
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/in: every openhands file here or below is left out by --exclude\n"
    )
    assert not (tmp_path / "none").exists()


def test_a_run_directory_laid_out_by_map_is_one(tmp_path: Path) -> None:
    """--map names a run directory's files (its shell log as commands.jsonl): the directory
    is a run, never taken for a folder of plain traces."""
    run_dir = _folder(
        tmp_path / "run-001",
        {
            "task.md": "check the disk",
            "final_report.md": "28% used",
            "commands.jsonl": '{"ts": "2026-02-01T09:30:00Z", "command": "df -h"}\n',
        },
    )
    ledger = tmp_path / "ledger"
    code, out, err = run(
        "import", "--ledger", str(ledger), str(run_dir), "--map", "prompt=task.md",
        "--map", "report=final_report.md", "--map", "shell_audit=commands.jsonl",
        "--model", "m", "--scenario", "s",
    )  # fmt: skip
    assert code == 0, err
    assert normalised(out, tmp_path) == "Imported 1 run into /home/ops/work/ledger.\n"


def test_run_directories_are_not_taken_for_trajectories_deeper(tmp_path: Path) -> None:
    trajectory = json.dumps(TRAJECTORY)
    runs = tmp_path / "runs"
    _folder(runs / "run-1", {"metadata.json": "{}", "PROMPT.txt": "go"})
    _folder(runs / "run-1" / "evaluation", {"traj_a.json": trajectory})
    assert detect_format([runs]) == "directory"
    # without a run directory, the trajectories below are named, with the format to give
    _folder(tmp_path / "set" / "evaluation" / "gpt-4o", {"traj_a.json": trajectory})
    with pytest.raises(InputError, match="--format openhands") as caught:
        detect_format([tmp_path / "set"])
    assert "evaluation/gpt-4o/traj_a.json" in str(caught.value)


def test_a_prepared_import_says_the_format_it_read(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "oh", {"traj_a.json": json.dumps(TRAJECTORY)})
    with prepare_import([folder], ImportOptions(model="m")) as prepared:
        assert prepared.format == "openhands"
        assert len(prepared.runs) == 1
    runs = _folder(tmp_path / "runs" / "run-1", {"PROMPT.txt": "go", "metadata.json": "{}"})
    with prepare_import([runs.parent], ImportOptions(model="m", scenario="s")) as prepared:
        assert prepared.format == "directory"
