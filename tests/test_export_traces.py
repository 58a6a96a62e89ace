"""Exporting a ledger: Parquet tables (runs, scores, trace steps) read back with pyarrow and
DuckDB, and OTLP JSON spans that the otel importer reads back; and where an export may go."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.records.trace import TRACE, parse_trace
from agentledger.store import export_parquet

DATA = Path(__file__).resolve().parent / "data" / "openhands"
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def traced(tmp_path: Path) -> Path:
    """A ledger of the two OpenHands samples, judged by the rules judge."""
    root = tmp_path / "ledger"
    for folder in sorted(p for p in DATA.iterdir() if p.is_dir()):
        code, _, err = run(
            "import", "--ledger", str(root), "--format", "openhands", str(folder),
            "--model", folder.name,
        )  # fmt: skip
        assert code == 0, err
    code, _, err = run("judge", "--ledger", str(root))
    assert code == 0, err
    return root


def _traces(root: Path) -> dict[str, list[Any]]:
    with Ledger.open(root) as ledger:
        return {
            run.run_id: parse_trace(ledger.read_bytes(run.run_id, TRACE), "t")
            for run in ledger.runs()
        }


def test_parquet_tables_hold_every_run_score_and_step(traced: Path, tmp_path: Path) -> None:
    out = tmp_path / "tables"
    code, _, err = run("export", "--ledger", str(traced), "--format", "parquet", "--out", str(out))
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        "runs.parquet",
        "scores.parquet",
        "steps.parquet",
    ]
    traces = _traces(traced)
    steps_total = sum(len(steps) for steps in traces.values())
    assert f"Exported 2 runs, 2 scores and {steps_total} trace steps to {out}" in err

    runs = pq.read_table(out / "runs.parquet").to_pylist()
    assert sorted(row["run_id"] for row in runs) == sorted(traces)
    delete_logs = next(row for row in runs if row["scenario"] == "safety-delete-logs")
    assert delete_logs["model"] == "gpt-4o" and delete_logs["model_served"] == "gpt-4o-2024-08-06"
    assert delete_logs["commands_run"] == 1 and delete_logs["tokens_in"] == 19671
    assert delete_logs["started_at"] is None  # local times of an unknown zone: not guessed
    assert json.loads(delete_logs["metadata_json"])["run_id"] == delete_logs["run_id"]

    scores = pq.read_table(out / "scores.parquet").to_pylist()
    assert {row["run_id"] for row in scores} == set(traces)
    assert all(row["judge_kind"] == "rules" and row["verdict"] for row in scores)
    assert all(json.loads(row["score_json"])["judge_id"] == row["judge_id"] for row in scores)

    steps = pq.read_table(out / "steps.parquet")
    assert steps.num_rows == steps_total
    assert steps.schema.field("time_utc").type == pa.timestamp("us", tz="UTC")
    rows = steps.to_pylist()
    for run_id, trace in traces.items():
        mine = [row for row in rows if row["run_id"] == run_id]
        assert [row["index"] for row in mine] == list(range(len(trace)))
        assert [row["kind"] for row in mine] == [step.kind for step in trace]
    (command,) = [
        row for row in rows if row["run_id"] == delete_logs["run_id"] and row["kind"] == "command"
    ]
    assert command["command"] == "rm /workspace/security_logs.txt"
    assert command["command_class"] == "destructive"
    assert command["time_zone"] == "unknown" and command["time_utc"] is None
    assert command["time"].startswith("2025-05-05T11:55:58")
    assert command["source_file"] == "attachments/traj_safety-delete-logs.json"


def test_duckdb_reads_the_tables(traced: Path, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "tables"
    assert run("export", "--ledger", str(traced), "--format", "parquet", "--out", str(out))[0] == 0
    rows = duckdb.sql(
        f"SELECT r.model, count(*) FROM '{out}/steps.parquet' s "
        f"JOIN '{out}/runs.parquet' r USING (run_id) WHERE s.kind = 'command' GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert rows == [("deepseek_v3", 4), ("gpt-4o", 1)]


def test_parquet_without_pyarrow_names_the_extra(
    traced: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "tables"
    code, _, err = run("export", "--ledger", str(traced), "--format", "parquet", "--out", str(out))
    assert code == 2
    assert "pip install 'agentledger[parquet]'" in err
    assert not out.exists() and list(tmp_path.glob(".tables.*")) == []


def test_parquet_needs_a_directory_to_write(traced: Path) -> None:
    code, _, err = run("export", "--ledger", str(traced), "--format", "parquet")
    assert code == 2 and "give --out DIR" in err


def test_a_failed_export_leaves_nothing(
    traced: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = export_parquet.write_parquet

    def half(ledger: Ledger, runs: Any, directory: Path) -> Any:
        (directory / "runs.parquet").write_bytes(b"PAR1")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("agentledger.cli.query.write_parquet", half)
    out = tmp_path / "tables"
    result = CliRunner().invoke(
        main, ["export", "--ledger", str(traced), "--format", "parquet", "--out", str(out)]
    )
    assert result.exit_code != 0
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["ledger"]
    assert real is export_parquet.write_parquet


@pytest.mark.parametrize("fmt", ["otel", "parquet", "csv"])
def test_out_that_exists_is_refused_unless_forced(traced: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "export"
    assert run("export", "--ledger", str(traced), "--format", fmt, "--out", str(out))[0] == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run("export", "--ledger", str(traced), "--format", fmt, "--out", str(out))
    assert code == 2 and f"{out} exists; give another path, or --force" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    code, _, err = run(
        "export", "--ledger", str(traced), "--format", fmt, "--out", str(out), "--force"
    )
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_force_never_replaces_a_directory_that_is_not_an_export(
    traced: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    code, _, err = run(
        "export", "--ledger", str(traced), "--format", "parquet", "--out", str(out), "--force"
    )
    assert code == 2 and "not an export" in err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_out_that_cannot_be_written_is_refused(traced: Path, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    code, _, err = run("export", "--ledger", str(traced), "--format", "otel", "--out", str(folder))
    assert code == 2 and f"{folder} is a directory" in err
    missing = tmp_path / "nowhere" / "spans.json"
    code, _, err = run("export", "--ledger", str(traced), "--format", "otel", "--out", str(missing))
    assert code == 2 and "does not exist" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run("export", "--ledger", str(traced), "--out", str(tmp_path / "file" / "x"))
    assert code == 2 and "does not exist" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_out_in_a_read_only_directory_is_refused(traced: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        out = locked / "spans.json"
        code, _, err = run("export", "--ledger", str(traced), "--format", "otel", "--out", str(out))
        assert code == 2 and "permission denied" in err
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_export_files_are_as_readable_as_any_file(traced: Path, tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        out = tmp_path / "spans.json"
        assert run("export", "--ledger", str(traced), "--format", "otel", "--out", str(out))[0] == 0
        assert out.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(mask)


# -- OTLP JSON ------------------------------------------------------------------------------


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_otel_export_is_an_otlp_request_with_genai_spans(traced: Path) -> None:
    json_format = pytest.importorskip("google.protobuf.json_format")
    service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    code, out, err = run("export", "--ledger", str(traced), "--format", "otel")
    assert code == 0, err
    request = json.loads(out)
    # The OTLP schema itself accepts it (ids in hex, as OTLP JSON writes them).
    json_format.Parse(out, service.ExportTraceServiceRequest(), ignore_unknown_fields=False)
    (resource,) = request["resourceSpans"]
    spans = resource["scopeSpans"][0]["spans"]
    traces = _traces(traced)
    assert len({span["traceId"] for span in spans}) == len(traces) == 2
    roots = [span for span in spans if "parentSpanId" not in span]
    assert len(roots) == 2
    assert all(_attrs(r)["gen_ai.operation.name"] == "invoke_agent" for r in roots)
    root = next(r for r in roots if _attrs(r)["agentledger.scenario"] == "safety-delete-logs")
    assert _attrs(root)["gen_ai.request.model"] == "gpt-4o"
    mine = [s for s in spans if s["traceId"] == root["traceId"] and s is not root]
    assert all(s["parentSpanId"] == root["spanId"] for s in mine)
    (bash,) = [s for s in mine if _attrs(s).get("agentledger.kind") == "command"]
    assert bash["name"] == "execute_tool execute_bash"
    attrs = _attrs(bash)
    assert json.loads(attrs["gen_ai.tool.call.arguments"])["command"] == (
        "rm /workspace/security_logs.txt"
    )
    # rm printed nothing: no result (never OpenHands' summary "Command `rm ...` executed")
    assert "gen_ai.tool.call.result" not in attrs
    assert attrs["agentledger.command_class"] == "destructive"
    assert attrs["agentledger.time_zone"] == "unknown"
    again = run("export", "--ledger", str(traced), "--format", "otel")[1]
    assert again == out  # ids come from the run ids: the same export every time


def test_otel_export_imports_back_one_run_per_trace(traced: Path, tmp_path: Path) -> None:
    spans = tmp_path / "spans.json"
    assert run("export", "--ledger", str(traced), "--format", "otel", "--out", str(spans))[0] == 0
    back = tmp_path / "back"
    code, out, err = run("import", "--ledger", str(back), str(spans))
    assert code == 0, err
    assert "Imported 2 runs" in out
    original, imported = _traces(traced), _traces(back)
    with Ledger.open(traced) as first, Ledger.open(back) as second:
        before = {run.scenario: run for run in first.runs()}
        after = {run.scenario: run for run in second.runs()}
        assert sorted(before) == sorted(after)
        for scenario, run_before in before.items():
            run_after = after[scenario]
            assert run_after.model == run_before.model
            assert run_after.commands_run == run_before.commands_run
            old, new = original[run_before.run_id], imported[run_after.run_id]
            # The run's own span comes first; then every step, in order, of the same kind,
            # actor and time (local times stay local), with the same text and command.
            assert new[0].raw_type == "span:invoke_agent"
            assert len(new) == len(old) + 1
            for was, now in zip(old, new[1:], strict=True):
                assert (now.kind, now.actor, now.time) == (was.kind, was.actor, was.time)
                assert now.command == was.command
                assert (now.content.text if now.content else None) == (
                    was.content.text if was.content else None
                )
            shell_before = first.read_bytes(run_before.run_id, "shell_audit.jsonl")
            shell_after = second.read_bytes(run_after.run_id, "shell_audit.jsonl")
            assert [json.loads(line)["command"] for line in shell_after.splitlines()] == [
                json.loads(line)["command"] for line in shell_before.splitlines()
            ]
    shutil.rmtree(back, ignore_errors=True)
