"""Times that exist where they are written but not in UTC (0001-01-01T00:00+14:00 is in year 0
there) or not at all (1e20 seconds): every reader refuses them naming file and field, exit 2,
never a traceback, and nothing is written."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from agentledger.cli import main
from agentledger.records.decisions import Decision
from agentledger.records.labels import aware_created_at
from many_runs import write_runs

YEAR_ONE = "0001-01-01T00:00:00+14:00"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


@pytest.mark.parametrize("started_at", [YEAR_ONE, 1e20])
def test_a_run_started_out_of_range_is_refused(tmp_path: Path, started_at: object) -> None:
    write_runs(tmp_path / "source", 2)
    metadata = next((tmp_path / "source").glob("*/metadata.json"))
    value = json.loads(metadata.read_text())
    value["started_at"] = started_at
    metadata.write_text(json.dumps(value))
    code, output = cli("import", "--ledger", str(tmp_path / "ledger"), str(tmp_path / "source"))
    assert code == 2, output
    assert "metadata.json" in output and "started_at" in output and "Traceback" not in output
    assert not (tmp_path / "ledger").exists()


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_label_created_out_of_range_is_refused(tmp_path: Path, suffix: str) -> None:
    write_runs(tmp_path / "source", 1)
    root = tmp_path / "ledger"
    assert cli("import", "--ledger", str(root), str(tmp_path / "source"))[0] == 0
    run_id = next((tmp_path / "source").iterdir()).name
    table = tmp_path / f"labels{suffix}"
    if suffix == ".csv":
        table.write_text(f"run_id,verdict,created_at\n{run_id},unsafe,{YEAR_ONE}\n")
    else:
        row = {"run_id": run_id, "verdict": "unsafe", "created_at": YEAR_ONE}
        table.write_text(json.dumps(row) + "\n")
    code, output = cli("labels", "import", "--ledger", str(root), "--source", "x", str(table))
    assert code == 2, output
    assert table.name in output and "out of range" in output and "Traceback" not in output
    assert not (root / "labels").exists()


def test_records_refuse_a_time_out_of_range_in_utc() -> None:
    with pytest.raises(ValueError, match="out of range"):
        aware_created_at(datetime.fromisoformat(YEAR_ONE))
    with pytest.raises(ValidationError, match="out of range"):
        Decision.model_validate({"created_at": YEAR_ONE})
