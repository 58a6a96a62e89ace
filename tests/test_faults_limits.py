"""Nothing is sealed that the index cannot take, on every path that writes runs.

A sealed run can never be removed, so one value the index (64-bit integers, finite floats) or
the strict reader (nesting depth) cannot take would break a ledger for good: `verify` exiting
3 and `gc` and `reindex` failing forever. Every such value is refused before anything is
written: by `import` (exit 2, the file and field named), by `agentledger run` (a model server
reporting absurd usage), and by the Python API (RunWriter, Ledger.seal_batch,
Ledger.seal_runs). `gc` and `reindex` report what they cannot index and go on.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import llm_server
from agentledger.cli import main
from agentledger.errors import RecordError
from agentledger.records import RunSummary
from agentledger.records.limits import MAX_STRING_CHARS, check_storable
from agentledger.store import Ledger, RunContent, verify_ledger
from conftest import make_metadata
from exact_output import normalised
from llm_server import LLMServer
from many_runs import write_runs
from test_hanging_model import environment, llm_agent, suite

HUGE = "99999999999999999999999999"
FLOAT_OVERFLOW = "1" + "0" * 309 + ".0"  # 1e308 * 10, spelled out


def nothing_written(root: Path) -> None:
    assert list((root / "runs").iterdir()) == []
    assert list((root / ".staging").iterdir()) == []
    with Ledger.open(root) as ledger:
        assert ledger.count() == 0
        assert verify_ledger(ledger).ok


def nested(depth: int) -> dict[str, Any]:
    """An object `depth` levels deep (the outermost included)."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "source"
    write_runs(root, 3)
    return root


def bad_run(source: Path) -> Path:
    return source / "use_case_00001_haiku_20260312"


@pytest.mark.parametrize(
    ("summary", "field", "message"),
    [
        (
            f'{{"input_tokens": {HUGE}}}',
            "64 bits",
            (
                "Error: /home/ops/work/source/use_case_00001_haiku_20260312/run_summary.jso"
                "n: malformed JSON: the number 99999999999999999999999999 does not fit in 64 bits\n"
            ),
        ),
        (
            f'{{"input_tokens": -{HUGE}}}',
            "64 bits",
            (
                "Error: /home/ops/work/source/use_case_00001_haiku_20260312/run_summary.jso"
                "n: malformed JSON: the number -99999999999999999999999999 does not fit in "
                "64 bits\n"
            ),
        ),
        (
            '{"input_tokens": 9223372036854775808}',
            "64 bits",
            (
                "Error: /home/ops/work/source/use_case_00001_haiku_20260312/run_summary.jso"
                "n: malformed JSON: the number 9223372036854775808 does not fit in 64 bits\n"
            ),
        ),
        (
            '{"output_tokens": -9223372036854775809}',
            "64 bits",
            (
                "Error: /home/ops/work/source/use_case_00001_haiku_20260312/run_summary.jso"
                "n: malformed JSON: the number -9223372036854775809 does not fit in 64 bits\n"
            ),
        ),
        (
            f'{{"cost_usd": {FLOAT_OVERFLOW}}}',
            "not a finite number",
            (
                "Error: /home/ops/work/source/use_case_00001_haiku_20260312/run_summary.jso"
                "n: malformed JSON: the number 1000000000000000000000000000000000000000... "
                "(312 characters) is not a finite number (floats end near 1.8e308)\n"
            ),
        ),
        (
            '{"cost_usd": 1e400}',
            "not a finite number",
            (
                "Error: /home/ops/work/source/use_case_00001_haiku_20260312/run_summary.jso"
                "n: malformed JSON: the number 1e400 is not a finite number (floats end "
                "near 1.8e308)\n"
            ),
        ),
    ],
)
def test_import_refuses_a_summary_number_the_index_cannot_take(
    source: Path, tmp_path: Path, summary: str, field: str, message: str
) -> None:
    (bad_run(source) / "run_summary.json").write_text(summary)
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    result = CliRunner().invoke(main, ["import", "--ledger", str(root), str(source)])
    assert result.exit_code == 2, result.output
    assert normalised(result.output, tmp_path) == message
    nothing_written(root)


def test_import_refuses_metadata_the_ledger_would_nest_too_deep(
    source: Path, tmp_path: Path
) -> None:
    # 64 levels is what the reader accepts; inside the ledger's metadata.json (under
    # source.original_metadata) it would sit two levels deeper and could never be read back.
    metadata = json.loads((bad_run(source) / "metadata.json").read_text())
    metadata["extra"] = nested(63)
    (bad_run(source) / "metadata.json").write_text(json.dumps(metadata))
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    result = CliRunner().invoke(main, ["import", "--ledger", str(root), str(source)])
    assert result.exit_code == 2, result.output
    assert normalised(result.output, tmp_path) == (
        "Error: /home/ops/work/source/use_case_00001_haiku_20260312: the ledger's "
        "metadata.json of this run, field "
        "'source.original_metadata.extra.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
        "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
        "a.a.a': nested deeper than 64 levels; nothing was written\n"
    )
    nothing_written(root)


def test_import_refuses_a_string_longer_than_the_limit(source: Path, tmp_path: Path) -> None:
    metadata = json.loads((bad_run(source) / "metadata.json").read_text())
    metadata["notes"] = "x" * (MAX_STRING_CHARS + 1)
    (bad_run(source) / "metadata.json").write_text(json.dumps(metadata))
    root = tmp_path / "ledger"
    Ledger.init(root).close()
    result = CliRunner().invoke(main, ["import", "--ledger", str(root), str(source)])
    assert result.exit_code == 2, result.output
    assert normalised(result.output, tmp_path) == (
        "Error: /home/ops/work/source/use_case_00001_haiku_20260312: the ledger's "
        "metadata.json of this run, field 'source.original_metadata.notes': a "
        "string of 1000001 characters is longer than 1000000; nothing was written\n"
    )
    nothing_written(root)


@pytest.mark.parametrize(
    ("params", "field", "problem"),
    [
        ({"seed": 2**64}, "params.seed", "64 bits"),
        ({"seed": -(2**63) - 1}, "params.seed", "64 bits"),
        ({"top_p": float("inf")}, "params.top_p", "not a finite number"),
        ({"top_p": float("nan")}, "params.top_p", "not a finite number"),
        ({"deep": nested(70)}, "params.deep.a", "nested deeper"),
        ({"long": "y" * (MAX_STRING_CHARS + 1)}, "params.long", "characters is longer"),
        ({"k" * (MAX_STRING_CHARS + 1): 1}, "params.kkk", "key: a string"),
    ],
)
def test_run_writer_refuses_metadata_it_cannot_keep(
    ledger: Ledger, params: dict[str, Any], field: str, problem: str
) -> None:
    with (
        pytest.raises(RecordError) as caught,
        ledger.new_run(make_metadata("r1", params=params)) as run,
    ):
        run.add_text("report.md", "x")
    message = str(caught.value)
    assert "run r1: metadata.json" in message and field in message and problem in message
    nothing_written(ledger.root)


def test_run_writer_refuses_a_summary_it_cannot_keep(ledger: Ledger) -> None:
    with (
        pytest.raises(RecordError, match=r"run_summary\.json, field 'tokens_in'.*64 bits"),
        ledger.new_run(make_metadata("r1")) as run,
    ):
        run.add_text("report.md", "x")
        run.set_summary(RunSummary(tokens_in=2**63))
    # A summary built without validation (model_copy) and slipped in is caught at sealing.
    with (
        pytest.raises(RecordError, match="field 'cost_usd'"),
        ledger.new_run(make_metadata("r2")) as run,
    ):
        run.summary = RunSummary().model_copy(update={"cost_usd": float("inf")})
    nothing_written(ledger.root)


def test_seal_batch_refuses_the_whole_batch(ledger: Ledger) -> None:
    good = ledger.new_run(make_metadata("good"))
    good.add_text("report.md", "fine")
    bad = ledger.new_run(make_metadata("bad"))
    bad.summary = RunSummary().model_copy(update={"tokens_out": 2**70})
    with pytest.raises(RecordError, match=r"run bad: run_summary\.json"):
        ledger.seal_batch([good, bad])
    nothing_written(ledger.root)


def test_seal_runs_refuses_before_staging(ledger: Ledger) -> None:
    content = RunContent(
        make_metadata("r1", params={"n": 10**30}),
        RunSummary(),
        [("report.md", b"x")],
    )
    with pytest.raises(RecordError, match=r"params\.n"):
        ledger.seal_runs([content])
    nothing_written(ledger.root)


def test_check_storable_accepts_the_limits_themselves() -> None:
    check_storable(
        {"a": 2**63 - 1, "b": -(2**63), "c": 1.7976931348623157e308, "d": "z" * MAX_STRING_CHARS},
        "x.json",
    )
    check_storable(nested(64), "x.json")
    with pytest.raises(RecordError, match="nested deeper"):
        check_storable(nested(65), "x.json")


@pytest.mark.slow
def test_run_refuses_absurd_usage_from_the_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm_server, "USAGE", (2**70, 5))
    with LLMServer() as server:
        agent = llm_agent(tmp_path / "agent", server.url, 30)
        done = subprocess.run(
            [sys.executable, "-m", "agentledger", "run", str(suite(tmp_path)), "--agent",
             str(agent), "--ledger", str(tmp_path / "l")],
            capture_output=True, text=True, env=environment(), timeout=120,
        )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert normalised(done.stderr, tmp_path) == (
        "Created a ledger at /home/ops/work/l\n"
        "Error: run alpha_model-a_20260501T120000Z_000001: run_summary.json, field "
        "'tokens_in': the integer (22 digits) does not fit in 64 bits (from "
        "-9223372036854775808 to 9223372036854775807); nothing was written\n"
    )
    nothing_written(tmp_path / "l")


def test_gc_and_reindex_report_a_run_they_cannot_index_and_go_on(ledger: Ledger) -> None:
    # A run sealed by an older agentledger that did not check: its summary cannot be read back.
    with ledger.new_run(make_metadata("ok1")) as run:
        run.add_text("report.md", "fine")
    with ledger.new_run(make_metadata("bad")) as run:
        run.add_text("report.md", "fine")
    summary = ledger.root / "runs" / "bad" / "run_summary.json"
    (ledger.root / "runs" / "bad").chmod(0o755)
    summary.chmod(0o644)
    summary.write_text(f'{{"schema_version": 1, "tokens_in": {HUGE}}}\n')
    ledger.close()
    db = sqlite3.connect(ledger.root / "index.sqlite")
    db.execute("DELETE FROM runs")
    db.commit()
    db.close()

    gc = CliRunner().invoke(main, ["gc", "--ledger", str(ledger.root)])
    assert gc.exit_code == 3, gc.output
    assert "indexed ok1" in gc.output
    assert "cannot index run bad" in gc.output and "64 bits" in gc.output
    assert "Traceback" not in gc.output

    reindex = CliRunner().invoke(main, ["reindex", "--ledger", str(ledger.root)])
    assert reindex.exit_code == 3, reindex.output
    assert "skipped run bad" in reindex.output and "Indexed 1 runs" in reindex.output
    verify = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root)])
    assert verify.exit_code == 3 and "Traceback" not in verify.output
    assert "bad" in verify.output and "changed" in verify.output
    with Ledger.open(ledger.root) as reopened:
        assert [run.run_id for run in reopened.runs()] == ["ok1"]


def test_verify_reports_a_planted_fifo_and_symlink_loop_without_blocking(ledger: Ledger) -> None:
    with ledger.new_run(make_metadata("r1")) as run:
        run.add_text("report.md", "fine")
    directory = ledger.root / "runs" / "r1"
    directory.chmod(0o755)
    os.mkfifo(directory / "fifo")  # opening it to read would wait for a writer forever
    (directory / "loop").symlink_to("loop")
    result = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root)])
    assert result.exit_code == 3, result.output
    assert normalised(result.output, ledger.root.parent) == (
        "RECORD  ID  PROBLEM  FILE  DETAIL\n"
        "run     r1  extra    fifo  file not in the manifest was added\n"
        "run     r1  extra    loop  file not in the manifest was added\n"
        "Verified 1 run, 3 files (899 bytes), 0 records and 3 journal entries in "
        "0.0s: 2 problem(s)\n"
    )
