"""Imports of a real data set as a newcomer meets it: the router's prefix off the model, local
times given a zone, time filters that say what they cannot place, another layout suggested."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.importers.trace_runs import model_without_route
from agentledger.records import RunMetadata
from conftest import shared_samples

SAMPLES = shared_samples() / "openhands"

pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason="the OpenHands samples are absent")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def metadata(root: Path) -> list[RunMetadata]:
    with Ledger.open(root) as ledger:
        return [ledger.load(run.run_id).metadata for run in ledger.runs()]


@pytest.mark.parametrize(
    ("route", "model"),
    [
        ("openai/neulab/claude-3-7-sonnet-20250219", "claude-3-7-sonnet-20250219"),
        ("anthropic/claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("gpt-4o", "gpt-4o"),
        ("meta-llama/Llama-3-70b", "meta-llama/Llama-3-70b"),
    ],
)
def test_the_model_is_named_without_the_routers_prefix(route: str, model: str) -> None:
    assert model_without_route(route) == model


def test_an_imported_run_names_its_model_and_keeps_the_route(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    code, _out, err = run("import", "--ledger", str(root), str(SAMPLES / "claude-sonnet"))
    assert code == 0, err
    (first, *_rest) = metadata(root)
    assert first.model == "claude-3-7-sonnet-20250219"
    assert first.run_id.startswith(first.scenario + "_claude-3-7-sonnet-20250219_")
    assert first.source is not None
    assert first.source["model_in_trace"] == "openai/neulab/claude-3-7-sonnet-20250219"


def test_local_times_read_in_the_zone_given_and_the_metadata_says_so(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    folder = SAMPLES / "o3-mini"
    runs = len(list(folder.glob("traj_*.json")))
    code, out, err = run("import", "--ledger", str(root), str(folder))
    assert code == 0, err
    assert all(meta.started_at is None for meta in metadata(root))
    # The import says so at once, not only a later --since that matches nothing.
    assert err.endswith(
        f"{runs} of them have no start time (no times, or times without a zone: --timezone "
        "ZONE gives one); --since, --until and drift by week leave them out.\n"
    )
    code, out, err = run("runs", "--ledger", str(root), "--since", "2025-01-01")
    assert code == 0 and out == ""
    assert err == (
        "No runs match.\n"
        f"{runs} run(s) matching the other filters have no start time, so --since / --until "
        "cannot place them (traces with local times: import them with --timezone).\n"
    )
    zoned = tmp_path / "zoned"
    code, out, err = run(
        "import", "--ledger", str(zoned), str(folder), "--timezone", "Europe/Berlin"
    )
    assert code == 0, err
    assert "no start time" not in err
    for meta in metadata(zoned):
        assert meta.started_at is not None and meta.source is not None
        local = meta.source["local_times"]
        assert local == {
            "time_zone": "Europe/Berlin: the trace's times carry no zone; read as "
            "Europe/Berlin (--timezone)"
        }
    # The first event of the trajectory, as a time of Berlin (2 hours ahead of UTC in May).
    events = json.loads((folder / "traj_safety-abusive-apology.json").read_text())
    first = min(e["timestamp"] for e in events if e.get("timestamp"))
    (berlin,) = [m for m in metadata(zoned) if m.scenario == "safety-abusive-apology"]
    expected = datetime.fromisoformat(first).replace(tzinfo=ZoneInfo("Europe/Berlin"))
    assert berlin.started_at == expected
    assert berlin.started_at.astimezone(UTC).hour == (expected.hour - 2) % 24
    code, out, _err = run("runs", "--ledger", str(zoned), "--since", "2025-01-01")
    assert code == 0 and len(out.splitlines()) == runs + 1


def test_drift_by_week_says_how_many_runs_have_no_start(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    folder = SAMPLES / "o3-mini"
    assert run("import", "--ledger", str(root), str(folder))[0] == 0
    assert run("judge", "--ledger", str(root), "--pack", "ops-trajectory")[0] == 0
    code, out, _err = run("report", "drift", "--ledger", str(root))
    assert code == 0
    runs = len(list(folder.glob("traj_*.json")))
    assert (
        f"{runs} scored run(s) have no start time (their traces carry no times, or local times "
        "without a zone): they are in no ISO week" in " ".join(out.split())
    )


def test_an_unknown_time_zone_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    code, _out, err = run(
        "import", "--ledger", str(tmp_path / "l"), str(SAMPLES / "o3-mini"),
        "--timezone", "Mars/Olympus",
    )  # fmt: skip
    assert code == 2 and not (tmp_path / "l").exists()
    assert err == (
        "Error: --timezone 'Mars/Olympus': not a time zone name (an IANA name, e.g. "
        "Europe/Berlin or UTC)\n"
    )


def test_the_folder_above_evaluation_suggests_the_openhands_format(tmp_path: Path) -> None:
    data_set = tmp_path / "OpenAgentSafety"
    shutil.copytree(SAMPLES / "gpt-4o", data_set / "evaluation" / "gpt-4o")
    code, _out, err = run("import", "--ledger", str(tmp_path / "l"), str(data_set))
    assert code == 2
    assert err.startswith(
        f"Error: {data_set}: no run directories here, but OpenHands trajectories below it "
        "(e.g. evaluation/gpt-4o/traj_"
    )
    assert err.rstrip().endswith(
        "import them with --format openhands, which reads the traj_*.json files at any depth"
    )
    code, _out, err = run(
        "import", "--ledger", str(tmp_path / "l"), str(data_set), "--format", "openhands"
    )
    assert code == 0, err


@pytest.mark.parametrize("workers", ["1", "3"])
def test_bad_traces_are_all_named_and_skip_invalid_imports_the_rest(
    tmp_path: Path, workers: str
) -> None:
    folder = tmp_path / "traces"
    shutil.copytree(SAMPLES / "gpt-4o", folder)
    for extra in (SAMPLES / "o3-mini").glob("traj_*.json"):
        shutil.copy(extra, folder)
    (folder / "traj_safety-delete-logs.json").write_text('{"broken')
    (folder / "traj_safety-impossible-tests.json").write_text('[{"id": "x"}]')
    malformed = (
        f"{folder}/traj_safety-delete-logs.json, line 1: malformed JSON: Unterminated string "
        "starting at (column 2)"
    )
    no_model = (
        f"{folder}/traj_safety-impossible-tests.json, field 'model': cannot determine the "
        "run's model: the trace does not say; give it with --model or a --sidecar column "
        "'model' (entry: the file name)"
    )
    root = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(root), str(folder), "--workers", "1")
    assert code == 2 and out == "" and not root.exists()
    assert err == (
        "Error: 2 runs cannot be imported; nothing was written (--skip-invalid imports the "
        f"rest and lists these):\n  {malformed}\n  {no_model}\n"
    )
    code, out, err = run(
        "import", "--ledger", str(root), str(folder), "--skip-invalid", "--workers", workers
    )
    assert code == 0, err
    good = len(list(folder.glob("traj_*.json"))) - 2
    assert out == f"Imported {good} runs into {root}; 2 skipped as invalid.\n"
    assert err.splitlines()[:2] == [f"skipped {malformed}", f"skipped {no_model}"]
    with Ledger.open(root) as ledger:
        assert ledger.count() == good
