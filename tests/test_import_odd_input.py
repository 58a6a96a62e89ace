"""Odd input that once gave a traceback or was quietly misread: a year-1 time at +14:00, a
metadata.json that is a folder, OTLP ids that are no ids, a ledger file that may not be
changed (immutable). Each is a clear error naming what is wrong, and nothing is written."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from exact_output import normalised


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_a_year_1_time_at_plus_14_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    steps = [
        {"actor": "user", "kind": "message", "content": "x", "time": "0001-01-01T00:00:00+14:00"},
        {"actor": "agent", "kind": "finish", "content": "y", "time": "0001-01-01T00:00:00+14:00"},
    ]
    path.write_text("".join(json.dumps(step) + "\n" for step in steps))
    code, _out, err = run(
        "import", str(path), "--model", "m", "--scenario", "s", "--ledger", str(tmp_path / "l")
    )
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/t.jsonl, field 'started_at': "
        "0001-01-01T00:00:00+14:00 is out of the range of times once taken to UTC\n"
    )
    assert normalised(err, tmp_path) == (
        "Error: /home/ops/work/t.jsonl, field 'started_at': "
        "0001-01-01T00:00:00+14:00 is out of the range of times once taken to UTC\n"
    ), err
    assert not (tmp_path / "l").exists()


def test_a_metadata_json_that_is_a_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "use_case_m_haiku_20260312"
    (run_dir / "metadata.json").mkdir(parents=True)
    (run_dir / "metadata.json" / "model.txt").write_text("gpt-4o")
    (run_dir / "PROMPT.txt").write_text("SSH is refused")
    (run_dir / "report.md").write_text("a DROP rule")
    code, _out, err = run("import", str(tmp_path / "runs"), "--ledger", str(tmp_path / "l"))
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/runs/use_case_m_haiku_20260312/metadata.json: a "
        "directory, where the run's metadata file is expected; rename it, or leave "
        "it out with --exclude\n"
    ), err


def _spans(path: Path, trace_id: str, span_id: str) -> Path:
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1741774500000000000",
        "endTimeUnixNano": "1741774501000000000",
        "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}}],
    }
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    return path


@pytest.mark.parametrize(
    ("trace_id", "span_id", "field", "message"),
    [
        (
            "AAAA",
            "eee19b7ec3c1b174",
            "traceId",
            (
                "Error: /home/ops/work/spans.json, field "
                "'resourceSpans[0].scopeSpans[0].spans[0].traceId': 'AAAA' is not a "
                "16-byte id: OTLP/JSON writes 32 hex digits\n"
            ),
        ),
        (
            "5b8efff798038103d269b633813fc60c",
            "AAAA",
            "spanId",
            (
                "Error: /home/ops/work/spans.json, field "
                "'resourceSpans[0].scopeSpans[0].spans[0].spanId': 'AAAA' is not a 8-byte "
                "id: OTLP/JSON writes 16 hex digits\n"
            ),
        ),
        (
            "5b8efff798038103",
            "eee19b7ec3c1b174",
            "traceId",
            (
                "Error: /home/ops/work/spans.json, field "
                "'resourceSpans[0].scopeSpans[0].spans[0].traceId': '5b8efff798038103' is "
                "not a 16-byte id: OTLP/JSON writes 32 hex digits\n"
            ),
        ),
        (
            "0" * 32,
            "eee19b7ec3c1b174",
            "traceId",
            (
                "Error: /home/ops/work/spans.json, field "
                "'resourceSpans[0].scopeSpans[0].spans[0].traceId': an id of zeros "
                "('00000000000000000000000000000000') is invalid\n"
            ),
        ),
    ],
)
def test_otlp_ids_must_be_ids(
    tmp_path: Path, trace_id: str, span_id: str, field: str, message: str
) -> None:
    path = _spans(tmp_path / "spans.json", trace_id, span_id)
    code, _out, err = run("import", str(path), "--format", "otel", "--ledger", str(tmp_path / "l"))
    assert code == 2 and normalised(err, tmp_path) == message, err


def test_protobuf_json_base64_ids_of_the_right_size_are_read(tmp_path: Path) -> None:
    path = _spans(tmp_path / "spans.json", "W47/95gDgQPSabYzgT/GDA==", "7uGbfsPBsXQ=")
    code, _out, err = run("import", str(path), "--format", "otel", "--ledger", str(tmp_path / "l"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "l" / "runs").iterdir()
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["source"]["trace_id"] == "5b8efff798038103d269b633813fc60c"


def test_an_immutable_ledger_folder_is_a_clear_error(tmp_path: Path) -> None:
    from agentledger.importers import sample_runs_dir

    ledger = tmp_path / "l"
    code, _out, err = run("init", str(ledger))
    assert code == 0, err
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    made = subprocess.run(["chattr", "+i", str(ledger / "runs")], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is refused here: {made.stderr!r}")
    try:
        code, _out, err = run("import", str(sample_runs_dir()), "--ledger", str(ledger))
    finally:
        subprocess.run(["chattr", "-i", str(ledger / "runs")], check=True)
    assert code != 0 and normalised(err, tmp_path) == (
        "Error: Operation not permitted (use_case_a_gemini_20260303): the command "
        "stopped. What it finished is complete and nothing half-written is "
        "visible; make room (or make the ledger writable), then run it again "
        "(`agentledger gc` indexes whatever was sealed but not yet indexed)\n"
    )
    assert normalised(err, tmp_path) == (
        "Error: Operation not permitted (use_case_a_gemini_20260303): the command "
        "stopped. What it finished is complete and nothing half-written is "
        "visible; make room (or make the ledger writable), then run it again "
        "(`agentledger gc` indexes whatever was sealed but not yet indexed)\n"
    ), err


@pytest.mark.parametrize("fmt", ["openhands", "jsonl", "dir"])
@pytest.mark.parametrize("tag", ["k=\tTAB=1", "k=a\nb", "\x1b[31m=red"])
def test_a_tag_with_control_characters_is_refused_before_anything_is_read(
    tmp_path: Path, fmt: str, tag: str
) -> None:
    """The same usage error (exit 2, naming --tag) for every format, never a traceback from
    deep inside one format's planning, and no ledger made."""
    source = tmp_path / "source"
    source.mkdir()
    ledger = tmp_path / "ledger"
    args = ["import", "--ledger", str(ledger), str(source), "--tag", tag]
    if fmt != "dir":
        args += ["--format", fmt]
    code, _out, err = run(*args)
    assert code == 2, err
    assert "Invalid value for --tag: tag " in err and "control characters" in err
    assert "Traceback" not in err and not ledger.exists()
