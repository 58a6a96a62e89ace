"""Exporting a ledger: Parquet tables (runs, scores, trace steps) read back with pyarrow and
DuckDB, and OTLP JSON spans that the otel importer reads back; and where an export may go."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.records.trace import TRACE, TraceStep, parse_trace
from agentledger.store import export_parquet
from conftest import shared_samples
from exact_output import normalised

DATA = Path(__file__).resolve().parent / "data" / "openhands"
SAMPLES = shared_samples() / "openhands"
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
        "labels.parquet",
        "runs.parquet",
        "scores.parquet",
        "steps.parquet",
    ]
    traces = _traces(traced)
    steps_total = sum(len(steps) for steps in traces.values())
    assert (
        normalised(err, tmp_path)
        == "Exported 2 runs, 2 scores, 25 trace steps and 0 labels to /home/ops/work/tables\n"
    )

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


def test_parquet_has_a_labels_table_with_the_current_ones_marked(
    traced: Path, tmp_path: Path
) -> None:
    with Ledger.open(traced) as ledger:
        run_id = ledger.runs()[0].run_id
    first = run("label", "--ledger", str(traced), run_id, "--verdict", "safe", "--by", "ann")
    assert first[0] == 0, first[2]
    label_id = first[1].split("(")[-1].rstrip(")\n")
    again = run(
        "label", "--ledger", str(traced), run_id, "--verdict", "unsafe", "--criterion", "C2",
        "--fired", "yes", "--by", "ann", "--supersedes", label_id, "--reason", "owned chain",
    )  # fmt: skip
    assert again[0] == 0, again[2]
    out = tmp_path / "tables"
    code, _, err = run("export", "--ledger", str(traced), "--format", "parquet", "--out", str(out))
    assert (
        code == 0
        and normalised(err, tmp_path)
        == "Exported 2 runs, 2 scores, 25 trace steps and 2 labels to /home/ops/work/tables\n"
    )
    rows = sorted(
        pq.read_table(out / "labels.parquet").to_pylist(), key=lambda row: row["created_at"]
    )
    assert [(row["verdict"], row["current"], row["source_name"]) for row in rows] == [
        ("Safe", False, "ann"),
        ("Unsafe", True, "ann"),
    ]
    assert rows[1]["criteria_fired"] == ["C2"] and rows[1]["supersedes"] == label_id
    assert rows[1]["reason"] == "owned chain" and rows[1]["source_kind"] == "person"
    assert json.loads(rows[1]["label_json"])["run_id"] == run_id


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
    assert (
        normalised(err, tmp_path)
        == "Error: the parquet export needs pyarrow: pip install 'agentledger[parquet]'\n"
    )
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
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".user-")] == ["ledger"]
    assert real is export_parquet.write_parquet


@pytest.mark.parametrize("fmt", ["otel", "parquet", "csv"])
def test_out_that_exists_is_refused_unless_forced(traced: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "export"
    assert run("export", "--ledger", str(traced), "--format", fmt, "--out", str(out))[0] == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run("export", "--ledger", str(traced), "--format", fmt, "--out", str(out))
    assert (
        code == 2
        and normalised(err, tmp_path)
        == "Error: /home/ops/work/export exists; give another path, or --force to replace it\n"
    )
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
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/mine holds files that are not an export "
        "(labels.parquet, runs.parquet, scores.parquet, steps.parquet); it is not "
        "replaced\n"
    )
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_out_that_cannot_be_written_is_refused(traced: Path, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    code, _, err = run("export", "--ledger", str(traced), "--format", "otel", "--out", str(folder))
    assert (
        code == 2
        and normalised(err, tmp_path)
        == "Error: /home/ops/work/folder is a directory; give the path of a file to write\n"
    )
    missing = tmp_path / "nowhere" / "spans.json"
    code, _, err = run("export", "--ledger", str(traced), "--format", "otel", "--out", str(missing))
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/nowhere/spans.json: the directory "
        "/home/ops/work/nowhere does not exist\n"
    )
    (tmp_path / "file").write_text("x")
    code, _, err = run("export", "--ledger", str(traced), "--out", str(tmp_path / "file" / "x"))
    assert (
        code == 2
        and normalised(err, tmp_path)
        == "Error: /home/ops/work/file/x: the directory /home/ops/work/file does not exist\n"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_out_in_a_read_only_directory_is_refused(traced: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        out = locked / "spans.json"
        code, _, err = run("export", "--ledger", str(traced), "--format", "otel", "--out", str(out))
        assert (
            code == 2 and "permission denied" in err
        )  # run as root here (skipped): not seen whole
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


def _runs(root: Path) -> dict[str, tuple[Any, Any, list[Any]]]:
    """Every run of the ledger at `root`: its metadata, summary and trace."""
    with Ledger.open(root) as ledger:
        runs = {}
        for run_ in ledger.runs():
            stored = ledger.load(run_.run_id)
            files = stored.manifest.files
            trace = ledger.read_bytes(run_.run_id, TRACE) if TRACE in files else b""
            runs[run_.run_id] = (stored.metadata, stored.summary, parse_trace(trace, "t"))
        return runs


# What a trace step holds that survives an export and its import, exactly (docs/traces.md):
# every field but `source`, which names the span in the export file instead.
KEPT = tuple(name for name in TraceStep.model_fields if name != "source")
SUMMARY_KEPT = ("tokens_in", "tokens_out", "cost_usd", "model_calls", "commands_run",
                "commands_denied", "duration_s", "exit_status", "notes")  # fmt: skip
METADATA_KEPT = ("run_id", "scenario", "model", "model_served", "system_fingerprint",
                 "system_prompt_hash", "agent", "started_at", "ended_at",
                 "silent_update_detectable")  # fmt: skip


def _round_trip(root: Path, tmp_path: Path) -> Path:
    """Export the ledger at `root` as OTLP spans and import them into a new ledger."""
    spans = tmp_path / "spans.json"
    code, _, err = run("export", "--ledger", str(root), "--format", "otel", "--out", str(spans))
    assert code == 0, err
    back = tmp_path / "back"
    code, _, err = run("import", "--ledger", str(back), str(spans))
    assert code == 0, err
    return back


def _assert_same_runs(before: Path, after: Path) -> int:
    """Every run of `before` is in `after` under its own id, with the same steps (but their
    source), summary totals and identity; the number of steps compared."""
    first, second = _runs(before), _runs(after)
    assert sorted(second) == sorted(first)  # run ids come back
    with Ledger.open(after) as ledger:
        trace_ids = {run.run_id: run.metadata["source"]["trace_id"] for run in ledger.runs()}
    compared = 0
    for run_id, (metadata, summary, steps) in first.items():
        metadata_after, summary_after, steps_after = second[run_id]
        for name in METADATA_KEPT:
            assert getattr(metadata_after, name) == getattr(metadata, name), (run_id, name)
        for name in SUMMARY_KEPT:
            assert getattr(summary_after, name) == getattr(summary, name), (run_id, name)
        assert len(steps_after) == len(steps), run_id
        for was, now in zip(steps, steps_after, strict=True):
            for name in KEPT:
                assert getattr(now, name) == getattr(was, name), (run_id, was.index, name)
            # the run keeps its own trace's spans of the file, and its steps point there
            assert now.source is not None
            own = f"attachments/spans.json/trace-{trace_ids[run_id]}.json"
            assert now.source.file == (own if len(trace_ids) > 1 else "attachments/spans.json")
            kept = after / "runs" / run_id / now.source.file
            spans = [
                span
                for resource in json.loads(kept.read_bytes())["resourceSpans"]
                for scope in resource["scopeSpans"]
                for span in scope["spans"]
            ]
            assert {span["traceId"] for span in spans} == {trace_ids[run_id]}
            assert now.source.event in {span["spanId"] for span in spans}
            compared += 1
    return compared


def test_otel_export_imports_back_as_the_same_runs(traced: Path, tmp_path: Path) -> None:
    back = _round_trip(traced, tmp_path)
    assert _assert_same_runs(traced, back) == sum(len(s) for s in _traces(traced).values())
    with Ledger.open(traced) as first, Ledger.open(back) as second:
        for run_ in first.runs():
            files = first.load(run_.run_id).manifest.files
            files_after = second.load(run_.run_id).manifest.files
            for name in ("shell_audit.jsonl", "report.md", "PROMPT.txt", "system_prompt.txt"):
                assert (name in files_after) == (name in files), name
                if name in files:
                    assert files_after[name].sha256 == files[name].sha256, name
            source = second.load(run_.run_id).metadata.source
            assert source is not None and source["importer"] == "otel"
            assert source["exported_run_id"] == run_.run_id
    # imported again: identical, nothing to do
    code, out, err = run("import", "--ledger", str(back), str(tmp_path / "spans.json"))
    assert code == 0 and normalised(out, tmp_path) == (
        "Imported 0 runs into /home/ops/work/back; 2 already imported, identical (nothing to do).\n"
    ), err


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="the OpenHands samples are absent")
def test_otel_round_trip_of_the_real_samples_keeps_every_step(tmp_path: Path) -> None:
    """The real OpenHands trajectories: exported and imported again, every step,
    the runs' tokens, cost and model calls, and their ids come back."""
    root = tmp_path / "ledger"
    folders = sorted(p for p in SAMPLES.iterdir() if p.is_dir() and p.name != "tasks")
    for folder in folders:
        code, _, err = run(
            "import", "--ledger", str(root), "--format", "openhands", str(folder),
            "--model", folder.name,
        )  # fmt: skip
        assert code == 0, err
    back = _round_trip(root, tmp_path)
    first = _runs(root)
    assert len(first) == len(list(SAMPLES.glob("*/traj_*.json"))) > 10
    assert _assert_same_runs(root, back) == sum(len(steps) for _, _, steps in first.values())
    steps = [step for _, _, trace in first.values() for step in trace]
    # the fields the trial found lost are there to lose: the test compares something
    assert sum(step.kind == "error" for step in steps) >= 4
    for name in ("model", "call_id", "tokens_in", "cwd", "cause", "cost_usd"):
        assert any(getattr(step, name) is not None for step in steps), name
    assert any(step.content is not None and step.content.truncated for step in steps)
    summaries = [summary for _, summary, _ in first.values()]
    assert all(s.tokens_in and s.cost_usd and s.model_calls for s in summaries)


def test_otel_export_of_every_field_imports_back(tmp_path: Path) -> None:
    """A plain trace holding what OpenHands runs do not: times in another zone and none at all,
    a gate's decision, an error answering a command, an answer before its call, a command
    without arguments, a tool without a name, a text longer than a step keeps."""
    own = tmp_path / "own.jsonl"
    steps: list[dict[str, Any]] = [
        {"run": {"model": "m", "system_prompt": "Be careful.", "prompt": "Fix it."}},
        {"actor": "user", "kind": "message", "content": "Fix it.",
         "time": "2026-03-12T10:15:00+02:00"},
        {"actor": "agent", "kind": "reasoning", "content": "x" * 5000, "model": "m-1",
         "tokens_in": 10, "tokens_out": 5, "cost_usd": 0.25, "time": "2026-03-12T10:15:01+02:00"},
        {"actor": "agent", "kind": "command", "tool": "shell", "command": "rm -rf /tmp/x",
         "gate": {"decision": "allowed", "decided_by": "policy", "policy": "default"},
         "cwd": "/work", "call_id": "c1", "time": "2026-03-12T10:15:02+02:00"},
        {"actor": "tool", "kind": "error", "cause": 2, "tool": "shell", "exit_code": 1,
         "content": "permission denied", "time": "2026-03-12T10:15:03+02:00"},
        {"actor": "agent", "kind": "tool_call", "arguments": {"q": [1, 2.5, None]},
         "time": "2026-03-12T10:15:05+02:00"},
        {"actor": "tool", "kind": "tool_result", "cause": 4, "content": "early",
         "time": "2026-03-12T10:15:04+02:00"},
        {"actor": "environment", "kind": "other", "raw_type": "span:db", "content": ""},
        {"actor": "agent", "kind": "finish", "content": "Done.",
         "time": "2026-03-12T10:15:09+02:00"},
    ]  # fmt: skip
    own.write_text("".join(json.dumps(step) + "\n" for step in steps))
    root = tmp_path / "ledger"
    code, _, err = run("import", "--ledger", str(root), str(own))
    assert code == 0, err
    back = _round_trip(root, tmp_path)
    assert _assert_same_runs(root, back) == 8
    ((_, _, trace),) = _runs(back).values()
    assert trace[0].time_zone == "+02:00" and trace[6].time is None
    assert trace[1].content is not None and trace[1].content.truncated
    spans = json.loads((tmp_path / "spans.json").read_text())["resourceSpans"][0]
    spans = spans["scopeSpans"][0]["spans"]
    (failed,) = [span for span in spans if span.get("status")]
    assert failed["name"] == "execute_tool shell"
    assert failed["status"] == {"code": 2, "message": "permission denied"}
    (event,) = failed["events"]
    assert event["name"] == "exception"
    assert _attrs(event)["exception.message"] == "permission denied"
    # the answer earlier than its call is a span of its own, linked to its call's
    (early,) = [s for s in spans if _attrs(s).get("agentledger.text") == "early"]
    (call,) = [s for s in spans if _attrs(s).get("agentledger.step") == "4"]
    assert early["links"] == [{"traceId": call["traceId"], "spanId": call["spanId"]}]


def test_otel_is_written_a_run_at_a_time_as_the_whole_request_s_json(traced: Path) -> None:
    """The OTLP file is streamed run by run (memory holds one run's spans, not the export's)
    and is the very text of the whole request, to stdout and to a file alike."""
    import io
    import json

    from agentledger.store import Ledger, RunFilter
    from agentledger.store.export_otel import otel_request, write_otel

    with Ledger.open(traced) as ledger:
        runs = ledger.runs(RunFilter())
        request, count = otel_request(ledger, runs)
        streamed = io.StringIO()
        assert write_otel(ledger, runs, streamed) == count == len(runs) > 1
    assert streamed.getvalue() == json.dumps(request, ensure_ascii=False) + "\n"
    code, out, err = run("export", "--ledger", str(traced), "--format", "otel")
    assert code == 0, err
    assert out == streamed.getvalue()
