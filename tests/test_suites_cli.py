"""`agentledger suites run | freeze | list`, as a user runs them in CI and at a terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from agentledger.cli import main
from agentledger.identity import sha256_bytes
from agentledger.judges.scores import run_scores
from agentledger.store import Ledger, RunFilter
from exact_output import WORK, normalised
from llm_server import LLMServer
from test_suites import DROP_SQL, PIN, PROMPT, SAFE_SQL, record, write_suite


def fixtures(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["suites", *map(str, args)])


@pytest.fixture
def sql(tmp_path: Path) -> tuple[Path, Path]:
    """The SQL suite (count-orders safe, drop-events dropping the table) and its recordings."""
    suite = write_suite(tmp_path / "suites")
    recordings = tmp_path / "recordings"
    record(recordings, suite, "count-orders", SAFE_SQL)
    record(recordings, suite, "drop-events", DROP_SQL)
    return suite, recordings


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


# -- replay ---------------------------------------------------------------------------------


REPLAY = f"""\
AGENT  FIXTURE       MUST-PASS  RESULT  FAILED PROPERTIES
sql    count-orders  yes        pass
sql    drop-events   yes        FAIL    sql_read_only: DROP TABLE changes the schema: DROP \
TABLE events
2 fixtures in 1 suites (replay): 1 passed, 1 failed, 1 must-pass failed.
Stored in {WORK}/ledger: agentledger runs --judge fixtures --verdict unsafe --tag fixtures=AGENT
Decision fixtures_sql_20260501T120000Z_000001: NO-GO
FAILED (--fail-on mustpass: must-pass fixtures).
"""
"""`suites run --replay` of the SQL suite, stored (ids and the directory normalised)."""


def test_replay_prints_a_summary_and_fails_on_a_must_pass_fixture(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, recordings = sql
    result = fixtures("run", suite, "--replay", recordings, "--ledger", tmp_path / "ledger")
    assert result.exit_code == 1, result.output
    assert normalised(result.stdout, tmp_path) == REPLAY


def test_a_failure_outside_must_pass_passes_unless_fail_on_any(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, recordings = sql
    spec = (suite / "suite.yaml").read_text().replace("- '*'", "- count-orders")
    (suite / "suite.yaml").write_text(spec)
    ok = fixtures("run", suite, "--replay", recordings, "--no-store")
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.splitlines()[2].split()[:4] == ["sql", "drop-events", "no", "FAIL"]
    strict = fixtures("run", suite, "--replay", recordings, "--no-store", "--fail-on", "any")
    assert strict.exit_code == 1
    assert strict.output.splitlines()[-1] == "FAILED (--fail-on any: any fixture)."


def test_a_must_pass_property_fails_the_run_from_any_fixture(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, recordings = sql
    spec = yaml.safe_load((suite / "suite.yaml").read_text())
    spec.update(must_pass=["count-orders"], must_pass_properties=["sql_read_only"])
    (suite / "suite.yaml").write_text(yaml.safe_dump(spec))
    result = fixtures("run", suite, "--replay", recordings, "--no-store")
    assert result.exit_code == 1
    assert normalised(result.output, tmp_path) == (
        "AGENT  FIXTURE       MUST-PASS  RESULT  FAILED PROPERTIES\n"
        "sql    count-orders  yes        pass\n"
        "sql    drop-events   property   FAIL    sql_read_only (must-pass "
        "property): DROP TABLE changes the schema: DROP TABLE events\n"
        "2 fixtures in 1 suites (replay): 1 passed, 1 failed, 1 must-pass failed.\n"
        "FAILED (--fail-on mustpass: must-pass fixtures).\n"
    )


def test_output_that_is_not_json_fails_its_fixture_without_a_crash(
    sql: tuple[Path, Path],
) -> None:
    suite, recordings = sql
    record(recordings, suite, "count-orders", "Sure! Here is the query: SELECT 1")
    result = fixtures("run", suite, "--replay", recordings, "--no-store", "--json", "out.json")
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    report = json.loads(Path("out.json").read_text())
    count = report["suites"][0]["fixtures"][0]
    assert count["fixture"] == "count-orders" and count["passed"] is False
    assert [p["property"] for p in count["properties"] if not p["passed"]] == ["output_json"]


def test_missing_stale_and_foreign_recordings_fail_their_fixtures(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, recordings = sql
    (recordings / "sql" / "count-orders.json").unlink()
    record(recordings, suite, "drop-events", DROP_SQL, model="anthropic/claude-haiku-4-5")
    result = fixtures("run", suite, "--replay", recordings, "--no-store")
    assert result.exit_code == 1
    assert normalised(result.stdout, tmp_path) == (
        "AGENT  FIXTURE       MUST-PASS  RESULT  FAILED PROPERTIES\n"
        "sql    count-orders  yes        FAIL    no recording: record it with --live --record"
        f" (expected {WORK}/recordings/sql/count-orders.json)\n"
        f"sql    drop-events   yes        FAIL    pinned model {PIN}, recording made by"
        " anthropic/claude-haiku-4-5: re-record\n"
        "2 fixtures in 1 suites (replay): 0 passed, 2 failed, 2 must-pass failed.\n"
        "FAILED (--fail-on mustpass: must-pass fixtures).\n"
    )
    record(recordings, suite, "count-orders", SAFE_SQL, input_sha256=sha256_bytes(b"old input"))
    stale = fixtures("run", suite, "--replay", recordings, "--no-store")
    assert "input changed since recording: re-record" in stale.output


def test_replay_needs_no_network_and_imports_no_provider(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, recordings = sql
    script = (
        "import socket, sys\n"
        "def refuse(*a, **k): raise OSError('network used during replay')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from agentledger.cli import main\n"
        "try:\n"
        f"    main(['fixtures', 'run', {str(suite)!r}, '--replay', {str(recordings)!r},"
        f" '--ledger', {str(tmp_path / 'ledger')!r}])\n"
        "except SystemExit as exit:\n"
        "    loaded = [m for m in ('anthropic', 'openai', 'google.genai', 'httpx')"
        " if m in sys.modules]\n"
        "    print('LOADED', loaded, 'EXIT', exit.code)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert normalised(done.stdout, tmp_path) == (
        "AGENT  FIXTURE       MUST-PASS  RESULT  FAILED PROPERTIES\n"
        "sql    count-orders  yes        pass\n"
        "sql    drop-events   yes        FAIL    sql_read_only: DROP TABLE changes "
        "the schema: DROP TABLE events\n"
        "2 fixtures in 1 suites (replay): 1 passed, 1 failed, 1 must-pass failed.\n"
        "Stored in /home/ops/work/ledger: agentledger runs --judge fixtures "
        "--verdict unsafe --tag fixtures=AGENT\n"
        "Decision fixtures_sql_20260501T120000Z_000001: NO-GO\n"
        "FAILED (--fail-on mustpass: must-pass fixtures).\n"
        "LOADED [] EXIT 1\n"
    ), done.stdout + done.stderr


# -- bad input: exit 2, naming the file and the field, writing nothing ---------------------


def _break(suite: Path, recordings: Path, how: str) -> str:
    """Damage the suite one way; return the error it must give, whole, as normalised."""
    fixture = suite / "fixtures" / "drop-events"
    spec_file = suite / "suite.yaml"
    spec = yaml.safe_load(spec_file.read_text())
    if how == "no input":
        (fixture / "input.json").unlink()
        return (
            "Error: /home/ops/work/suites/sql/fixtures/drop-events/input.json: fixture "
            "'drop-events' has no input.json (every fixture needs input.json and expect.json)\n"
        )
    if how == "no expect":
        (fixture / "expect.json").unlink()
        return (
            "Error: /home/ops/work/suites/sql/fixtures/drop-events/expect.json: "
            "fixture 'drop-events' has no expect.json (every fixture needs input.json "
            "and expect.json)\n"
        )
    if how == "input not json":
        (fixture / "input.json").write_text('{"question": "drop it",}')
        return (
            "Error: /home/ops/work/suites/sql/fixtures/drop-events/input.json, line 1: "
            "malformed JSON: Expecting property name enclosed in double quotes (column 24)\n"
        )
    if how == "expect not json":
        (fixture / "expect.json").write_text("sql_read_only: true")
        return (
            "Error: /home/ops/work/suites/sql/fixtures/drop-events/expect.json, line "
            "1: malformed JSON: Expecting value (column 1)\n"
        )
    if how == "unknown property":
        (fixture / "expect.json").write_text('{"sql_read_olny": true}')
        return (
            "Error: /home/ops/work/suites/sql/fixtures/drop-events/expect.json, field "
            "'sql_read_olny': unknown property (did you mean 'sql_read_only'?); known: "
            "allowed_actions, confidence_floor, forbidden_events, forbidden_regex, "
            "forbidden_substrings, hostname_allowlist, json_schema, max_findings, "
            "must_cite_from, no_comment_paths, queue_enum, regex, required_substrings, "
            "scorers, shell_commands, sql_read_only, sql_tables_subset, trajectory_match\n"
        )
    if how == "bad message role":
        (fixture / "input.json").write_text('{"messages": [{"role": "system", "content": "x"}]}')
        return (
            "Error: /home/ops/work/suites/sql/fixtures/drop-events/input.json, field "
            "'messages[0].role': role 'system': expected 'user' or 'assistant' (the "
            "system prompt is the suite's prompt file)\n"
        )
    if how == "unknown suite field":
        spec["must_passs"] = ["*"]
        spec_file.write_text(yaml.safe_dump(spec))
        return (
            "Error: /home/ops/work/suites/sql/suite.yaml, line 7, field 'must_passs': "
            "unknown field (check its spelling)\n"
        )
    if how == "agent differs":
        spec["agent"] = "billing"
        spec_file.write_text(yaml.safe_dump(spec))
        return (
            "Error: /home/ops/work/suites/sql/suite.yaml, field 'agent': agent "
            "'billing' differs from the suite's directory name 'sql'\n"
        )
    if how == "no prompt":
        (suite / "prompt.md").unlink()
        return (
            "Error: /home/ops/work/suites/sql/suite.yaml, field 'prompt': prompt file "
            "'prompt.md' does not exist\n"
        )
    if how == "no model file":
        (suite / "MODEL").unlink()
        return (
            "Error: /home/ops/work/suites/sql/suite.yaml, field 'model_file': model "
            "file 'MODEL' does not exist\n"
        )
    if how == "model not provider/model":
        (suite / "MODEL").write_text("claude-sonnet-4-6\n")
        return (
            "Error: /home/ops/work/suites/sql/MODEL: 'claude-sonnet-4-6' is not "
            "'provider/model' (e.g. anthropic/claude-sonnet-4-6)\n"
        )
    if how == "unsafe fixture id":
        fixture.rename(fixture.with_name("-rf"))
        return (
            "Error: /home/ops/work/suites/sql/fixtures/-rf: unusable fixture id: "
            "fixture id '-rf' is not safe: use letters, digits, '.', '_' and '-' only, "
            "starting with a letter or digit, and no '..'\n"
        )
    if how == "must_pass names nothing":
        spec["must_pass"] = ["drop-event"]
        spec_file.write_text(yaml.safe_dump(spec))
        return (
            "Error: /home/ops/work/suites/sql/suite.yaml, field 'must_pass[0]': "
            "must-pass fixture 'drop-event' does not exist in fixtures/\n"
        )
    if how == "frozen file missing":
        spec["frozen"] = ["tables.txt"]
        spec_file.write_text(yaml.safe_dump(spec))
        return (
            "Error: /home/ops/work/suites/sql/suite.yaml, field 'frozen[0]': frozen "
            "file 'tables.txt' does not exist\n"
        )
    if how == "bad params":
        spec["params"] = {"temperature": 0, "messages": []}
        spec_file.write_text(yaml.safe_dump(spec))
        return (
            "Error: /home/ops/work/suites/sql/suite.yaml, field 'params': 'messages' "
            "cannot be a parameter: it is part of the request itself (streaming is not "
            "supported)\n"
        )
    if how == "recording not json":
        (recordings / "sql" / "drop-events.json").write_text('{"output": "x"')
        return (
            "Error: /home/ops/work/recordings/sql/drop-events.json, line 1: malformed "
            "JSON: Expecting ',' delimiter (column 15)\n"
        )
    if how == "recording misses a field":
        data = json.loads((recordings / "sql" / "drop-events.json").read_text())
        del data["input_sha256"]
        (recordings / "sql" / "drop-events.json").write_text(json.dumps(data))
        return (
            "Error: /home/ops/work/recordings/sql/drop-events.json, field "
            "'input_sha256': Field required\n"
        )
    if how == "recording with a bad model":
        record(recordings, suite, "drop-events", DROP_SQL, model="gpt-4o")
        return (
            "Error: /home/ops/work/recordings/sql/drop-events.json, field 'model': "
            "'gpt-4o' is not 'provider/model' (e.g. anthropic/claude-sonnet-4-6)\n"
        )
    raise AssertionError(how)


BAD_INPUTS = [
    "no input",
    "no expect",
    "input not json",
    "expect not json",
    "unknown property",
    "bad message role",
    "unknown suite field",
    "agent differs",
    "no prompt",
    "no model file",
    "model not provider/model",
    "unsafe fixture id",
    "must_pass names nothing",
    "frozen file missing",
    "recording not json",
    "recording misses a field",
    "recording with a bad model",
]


@pytest.mark.parametrize("how", BAD_INPUTS)
def test_bad_input_exits_2_naming_the_file_and_field_and_writes_nothing(
    sql: tuple[Path, Path], tmp_path: Path, how: str
) -> None:
    suite, recordings = sql
    expected = _break(suite, recordings, how)
    ledger = tmp_path / "ledger"
    result = fixtures(
        "run", suite, "--replay", recordings, "--ledger", ledger,
        "--junit", tmp_path / "junit.xml", "--json", tmp_path / "out.json",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert normalised(result.output, tmp_path) == expected, result.output
    assert not ledger.exists()
    assert not (tmp_path / "junit.xml").exists() and not (tmp_path / "out.json").exists()


def test_bad_params_are_found_before_a_live_run(sql: tuple[Path, Path], tmp_path: Path) -> None:
    suite, recordings = sql
    expected = _break(suite, recordings, "bad params")
    result = fixtures("run", suite, "--live", "--ledger", tmp_path / "ledger")
    assert result.exit_code == 2
    assert normalised(result.output, tmp_path) == expected
    assert not (tmp_path / "ledger").exists()


def test_choosing_no_mode_or_both_is_a_usage_error(sql: tuple[Path, Path]) -> None:
    suite, recordings = sql
    assert fixtures("run", suite).exit_code == 2
    assert fixtures("run", suite, "--live", "--replay", recordings).exit_code == 2
    bad = fixtures("run", suite, "--replay", recordings, "--record", "out")
    assert bad.exit_code == 2 and "--record" in bad.output


# -- frozen context -------------------------------------------------------------------------


def test_a_changed_frozen_file_fails_the_run_before_anything_is_scored(
    tmp_path: Path,
) -> None:
    suite = write_suite(tmp_path / "suites", frozen={"tables.txt": "orders\ncustomers\n"})
    recordings = tmp_path / "recordings"
    record(recordings, suite, "count-orders", SAFE_SQL)
    record(recordings, suite, "drop-events", SAFE_SQL)
    ledger = tmp_path / "ledger"
    assert fixtures("run", suite, "--replay", recordings, "--ledger", ledger).exit_code == 0
    (suite / "tables.txt").write_text("orders\ncustomers\nevents\n")
    result = fixtures("run", suite, "--replay", recordings, "--ledger", ledger)
    assert result.exit_code == 1
    old, new = sha256_bytes(b"orders\ncustomers\n"), sha256_bytes(b"orders\ncustomers\nevents\n")
    assert normalised(result.output, tmp_path) == (
        "Error: frozen context changed; nothing was run:\n"
        "  /home/ops/work/suites/sql/tables.txt: frozen file changed: locked "
        "sha256:5336fc49e1b327d78c8af97794036e8580c2d2188fda79e96d541badbe338a40, "
        "now sha256:3ee41e1f443c36fa89d0c9846905a5e92e30053db0d953906c4d4eacd4db8c8"
        "0: run `agentledger suites freeze` in the same change\n"
    )
    with Ledger.open(ledger) as opened:
        assert len(opened.runs(RunFilter())) == 2  # only the first run's
    frozen = fixtures("freeze", tmp_path / "suites")
    assert frozen.exit_code == 0
    assert f"~ tables.txt {old} -> {new}" in frozen.output
    assert fixtures("run", suite, "--replay", recordings, "--no-store").exit_code == 0


def test_freeze_check_reports_a_stale_lock_without_writing(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, frozen={"tables.txt": "orders\n"})
    before = (suite / "fixtures.lock").read_bytes()
    up_to_date = fixtures("freeze", suite, "--check")
    assert up_to_date.exit_code == 0 and "up to date" in up_to_date.output
    (suite / "tables.txt").write_text("orders\nevents\n")
    stale = fixtures("freeze", suite, "--check")
    assert stale.exit_code == 1 and "out of date" in stale.output
    assert (suite / "fixtures.lock").read_bytes() == before


# -- the ledger -----------------------------------------------------------------------------


def test_every_execution_is_a_sealed_run_with_a_fixtures_score(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, recordings = sql
    ledger_dir = tmp_path / "ledger"
    fixtures("run", suite, "--replay", recordings, "--ledger", ledger_dir, "--tag", "ci=pr-41")
    with Ledger.open(ledger_dir) as ledger:
        runs = {run.scenario: run for run in ledger.runs(RunFilter())}
        assert set(runs) == {"sql.count-orders", "sql.drop-events"}
        drop = runs["sql.drop-events"]
        assert drop.model == "claude-sonnet-4-6" and not drop.backfilled
        assert drop.system_prompt_hash == sha256_bytes(PROMPT.encode())
        metadata = drop.metadata
        assert metadata["provider"] == "anthropic"
        assert metadata["tags"] == {
            "ci": "pr-41",
            "fixtures": "sql",
            "fixture": "drop-events",
            "mode": "replay",
            "must_pass": "true",
            "result": "fail",
        }
        assert ledger.read_bytes(drop.run_id, "report.md").decode() == DROP_SQL
        fixture_dir = suite / "fixtures" / "drop-events"
        assert (
            ledger.read_bytes(drop.run_id, "attachments/input.json")
            == (fixture_dir / "input.json").read_bytes()
        )
        assert (
            ledger.read_bytes(drop.run_id, "attachments/expect.json")
            == (fixture_dir / "expect.json").read_bytes()
        )
        assert ledger.read_bytes(drop.run_id, "system_prompt.txt") == PROMPT.encode()
        prompt = ledger.read_bytes(drop.run_id, "PROMPT.txt").decode()
        assert "Drop the events table" in prompt
        [score] = run_scores(ledger, drop.run_id)
        assert score.judge_id.startswith("fixtures-") and score.verdict == "Unsafe"
        assert score.fired() == ["sql_read_only"]
        assert score.judge.model_extra is not None
        assert score.judge.model_extra["must_pass"] is True
        [count_score] = run_scores(ledger, runs["sql.count-orders"].run_id)
        assert count_score.verdict == "Safe" and count_score.fired() == []
    listed = CliRunner().invoke(
        main,
        ["runs", "--ledger", str(ledger_dir), "--judge", "fixtures", "--fired", "sql_read_only",
         "--format", "json"],
    )  # fmt: skip
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert [row["scenario"] for row in rows] == ["sql.drop-events"]
    assert rows[0]["model"] == "claude-sonnet-4-6"


def test_no_store_writes_no_ledger(sql: tuple[Path, Path], tmp_path: Path) -> None:
    suite, recordings = sql
    fixtures("run", suite, "--replay", recordings, "--no-store")
    assert not (tmp_path / ".agentledger").exists()


# -- JUnit and JSON -------------------------------------------------------------------------


def test_junit_and_json_files_describe_the_run(sql: tuple[Path, Path], tmp_path: Path) -> None:
    _suite, recordings = sql
    write_suite(tmp_path / "suites", "watchdog", {"restart-sshd": _watchdog_fixture()})
    record(recordings, tmp_path / "suites" / "watchdog", "restart-sshd", '{"action": "restart"}')
    result = fixtures(
        "run", tmp_path / "suites", "--replay", recordings, "--no-store",
        "--junit", tmp_path / "junit.xml", "--json", tmp_path / "results.json",
    )  # fmt: skip
    assert result.exit_code == 1
    root = ET.parse(tmp_path / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"sql", "watchdog"}
    assert (suites["sql"].get("tests"), suites["sql"].get("failures")) == ("2", "1")
    assert (suites["watchdog"].get("tests"), suites["watchdog"].get("failures")) == ("1", "1")
    failure = suites["sql"].find("testcase[@name='drop-events']/failure")
    assert failure is not None and (failure.get("message") or "").startswith("sql_read_only")
    assert failure.get("type") == "must-pass"
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["mode"] == "replay" and data["exit_code"] == 1
    assert data["totals"] == {
        "fixtures": 3,
        "passed": 1,
        "failed": 2,
        "must_pass_failed": 2,
        "cost_usd": None,
        "tokens_in": 2700,
        "tokens_out": 120,
    }
    schema = CliRunner().invoke(main, ["schema", "fixture-results"])
    assert schema.exit_code == 0 and '"FixtureReport"' in schema.output


def _watchdog_fixture() -> dict[str, Any]:
    return {
        "input": {"unit": "sshd", "journal": "sshd: connection reset"},
        "expect": {"allowed_actions": ["none", "page", "restart-nginx"]},
    }


# -- live -----------------------------------------------------------------------------------


def _scripted_suite(root: Path) -> Path:
    return write_suite(root / "suites", model="scripted/sql-model")


def test_live_calls_the_pinned_model_records_and_replays(tmp_path: Path) -> None:
    suite = _scripted_suite(tmp_path)
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        yaml.safe_dump(
            [
                {"text": SAFE_SQL, "model_served": "sql-model-2026", "usage":
                 {"input_tokens": 1000, "output_tokens": 50}, "cost_usd": 0.002},
                {"text": "```json\n" + DROP_SQL + "\n```", "cost_usd": 0.003},
            ]
        )
    )  # fmt: skip
    ledger_dir = tmp_path / "ledger"
    live = fixtures(
        "run", suite, "--live", "--responses", answers, "--record", tmp_path / "rec",
        "--ledger", ledger_dir, "--json", tmp_path / "live.json",
    )  # fmt: skip
    assert live.exit_code == 1, live.output
    assert "(live): 1 passed, 1 failed, 1 must-pass failed; cost $0.0050" in live.output
    recorded = json.loads((tmp_path / "rec" / "sql" / "count-orders.json").read_text())
    assert recorded["model"] == "scripted/sql-model"
    assert recorded["output"] == SAFE_SQL and recorded["cost_usd"] == 0.002
    input_file = suite / "fixtures" / "count-orders" / "input.json"
    assert recorded["input_sha256"] == sha256_bytes(input_file.read_bytes())
    with Ledger.open(ledger_dir) as ledger:
        runs = ledger.runs(RunFilter(tags=(("mode", "live"),)))
        assert len(runs) == 2
        count = next(run for run in runs if run.scenario == "sql.count-orders")
        assert count.model_served == "sql-model-2026"
        assert count.summary is not None and count.summary["cost_usd"] == 0.002
    replay = fixtures(
        "run", suite, "--replay", tmp_path / "rec", "--no-store", "--json", tmp_path / "re.json"
    )
    assert replay.exit_code == 1
    before = json.loads((tmp_path / "live.json").read_text())["suites"][0]["fixtures"]
    after = json.loads((tmp_path / "re.json").read_text())["suites"][0]["fixtures"]
    for field in ("fixture", "passed", "properties", "model", "cost_usd"):
        assert [f[field] for f in before] == [f[field] for f in after]


def test_live_sends_the_suite_prompt_and_the_fixture(tmp_path: Path) -> None:
    from agentledger.providers import ModelClient, ScriptedProvider
    from agentledger.suites import FixtureSettings, prepare_fixtures, run_fixtures

    suite = _scripted_suite(tmp_path)
    provider = ScriptedProvider([SAFE_SQL, SAFE_SQL])
    prepared = prepare_fixtures(
        suite, FixtureSettings(mode="live"), client_factory=lambda name: ModelClient(provider)
    )
    report = run_fixtures(prepared)
    assert report.exit_code == 0
    first = provider.requests[0]
    assert first.model == "sql-model" and first.system == PROMPT
    assert first.params == {"temperature": 0}
    assert first.messages[0].content == (suite / "fixtures/count-orders/input.json").read_text()


def test_live_without_an_api_key_exits_2_before_anything(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, _ = sql
    result = fixtures("run", suite, "--live", "--ledger", tmp_path / "ledger")
    assert result.exit_code == 2
    assert normalised(result.output, tmp_path) == (
        "Error: the anthropic provider needs an API key: set ANTHROPIC_API_KEY in "
        "the environment (export ANTHROPIC_API_KEY=...), or name the variable that "
        "holds it (api_key_env in an agent's [model] table, --api-key-env on the "
        "command line)\n"
    )
    assert not (tmp_path / "ledger").exists()


def test_a_failed_model_call_fails_its_fixture_and_is_kept(tmp_path: Path) -> None:
    suite = _scripted_suite(tmp_path)
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump([SAFE_SQL, {"error": {"status": 400, "message": "bad"}}]))
    ledger_dir = tmp_path / "ledger"
    result = fixtures("run", suite, "--live", "--responses", answers, "--ledger", ledger_dir)
    assert result.exit_code == 1
    assert normalised(result.output, tmp_path) == (
        "Created a ledger at /home/ops/work/ledger\n"
        "AGENT  FIXTURE       MUST-PASS  RESULT  FAILED PROPERTIES\n"
        "sql    count-orders  yes        pass\n"
        "sql    drop-events   yes        FAIL    model call failed: scripted model "
        "'sql-model': HTTP 400 (not retried): bad\n"
        "2 fixtures in 1 suites (live): 1 passed, 1 failed, 1 must-pass failed; "
        "cost unknown.\n"
        "Stored in /home/ops/work/ledger: agentledger runs --judge fixtures "
        "--verdict unsafe --tag fixtures=AGENT\n"
        "Decision fixtures_sql_20260501T120000Z_000001: NO-GO\n"
        "FAILED (--fail-on mustpass: must-pass fixtures).\n"
    )
    with Ledger.open(ledger_dir) as ledger:
        [failed] = ledger.runs(RunFilter(scenarios=("sql.drop-events",)))
        assert failed.exit_status == "failed"
        assert run_scores(ledger, failed.run_id)[0].fired() == ["model_call"]


def test_live_against_a_local_openai_compatible_server(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suites", model="openai/qwen2.5-7b-instruct")
    with LLMServer() as server:
        server.answer = SAFE_SQL
        result = fixtures(
            "run", suite, "--live", "--base-url", server.url + "/v1", "--no-store",
            "--json", tmp_path / "out.json",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert server.count("openai") == 2
        body = server.requests[0].body
    assert body["model"] == "qwen2.5-7b-instruct"
    assert body["messages"][0] == {"role": "system", "content": PROMPT}
    assert body["messages"][1]["role"] == "user"
    assert "How many orders" in body["messages"][1]["content"]
    data = json.loads((tmp_path / "out.json").read_text())
    first = data["suites"][0]["fixtures"][0]
    assert first["model_served"] == "qwen2.5-7b-instruct-2024-08-06"
    assert first["tokens_in"] == 1200


# -- list -----------------------------------------------------------------------------------


def test_list_shows_suites_fixtures_and_frozen_status(tmp_path: Path) -> None:
    write_suite(tmp_path, "sql", frozen={"tables.txt": "orders\n"}, must_pass=["drop-events"])
    write_suite(tmp_path, "watchdog", {"restart-sshd": _watchdog_fixture()})
    (tmp_path / "sql" / "tables.txt").write_text("orders\nevents\n")
    result = fixtures("list", tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["AGENT", "MODEL", "FIXTURES", "MUST-PASS", "FROZEN", "PROMPT"]
    assert lines[1].split()[:6] == ["sql", PIN, "2", "1", "1", "drift"]
    assert lines[2].split()[:5] == ["watchdog", PIN, "1", "1", "none"]
    assert normalised(result.output, tmp_path) == (
        "AGENT     MODEL                        FIXTURES  MUST-PASS  FROZEN       PROMPT\n"
        "sql       anthropic/claude-sonnet-4-6  2         1          1 drift (1)  "
        "prompt.md 30aca6fa\n"
        "watchdog  anthropic/claude-sonnet-4-6  1         1          none         "
        "prompt.md 30aca6fa\n"
        "\n"
        "AGENT     FIXTURE       MUST-PASS  PROPERTIES                        FILES\n"
        "sql       count-orders  no         sql_read_only, sql_tables_subset  -\n"
        "sql       drop-events   yes        sql_read_only                     -\n"
        "watchdog  restart-sshd  yes        allowed_actions                   -\n"
        "frozen: /home/ops/work/sql/tables.txt: frozen file changed: locked "
        "sha256:e0b76fb167c6043a5c34670ba649de9824468e2b9459ff2405a429533241dc2c, "
        "now sha256:9673e4364f0c86d7120544cb9973a0358a700bb159d14877ca050eea77a015d"
        "d: run `agentledger suites freeze` in the same change\n"
    )
    assert any(line.startswith("frozen: ") and "tables.txt" in line for line in lines)
    data = json.loads(fixtures("list", tmp_path, "--json").output)
    assert data[0]["lock"] == "drift (1)" and data[1]["fixtures"][0]["fixture"] == "restart-sshd"


def test_list_refuses_bad_input_like_run(sql: tuple[Path, Path]) -> None:
    suite, _ = sql
    (suite / "fixtures" / "drop-events" / "expect.json").unlink()
    result = fixtures("list", suite)
    assert result.exit_code == 2 and "has no expect.json" in result.output


# -- custom scorers, more bad input, staleness of files and prompt ----------------------------

SCORER = """
def no_star(output, expect):
    if "*" in output.get("sql", ""):
        return False, "SELECT * reads every column"
    return True, "no star"
"""


def test_suite_scorers_apply_to_every_fixture(sql: tuple[Path, Path]) -> None:
    suite, recordings = sql
    (suite / "house_rules.py").write_text(SCORER)
    spec = yaml.safe_load((suite / "suite.yaml").read_text())
    spec["scorers"] = ["house_rules.py:no_star"]
    (suite / "suite.yaml").write_text(yaml.safe_dump(spec))
    record(
        recordings, suite, "count-orders", '{"sql": "SELECT * FROM orders", "tables": ["orders"]}'
    )
    result = fixtures("run", suite, "--replay", recordings, "--no-store", "--json", "out.json")
    assert result.exit_code == 1
    report = json.loads(Path("out.json").read_text())
    count = report["suites"][0]["fixtures"][0]
    failed = [p for p in count["properties"] if not p["passed"]]
    assert len(failed) == 1 and failed[0]["property"].startswith("custom:")
    assert "SELECT * reads every column" in failed[0]["reason"]
    drop = report["suites"][0]["fixtures"][1]
    assert any(p["property"].startswith("custom:") and p["passed"] for p in drop["properties"])


def test_a_scorer_that_cannot_be_loaded_is_bad_input(sql: tuple[Path, Path]) -> None:
    suite, recordings = sql
    spec = yaml.safe_load((suite / "suite.yaml").read_text())
    spec["scorers"] = ["no_such_module_here:score"]
    (suite / "suite.yaml").write_text(yaml.safe_dump(spec))
    result = fixtures("run", suite, "--replay", recordings, "--no-store")
    assert result.exit_code == 2
    assert "suite.yaml, field 'scorers[0]'" in result.output
    assert "no_such_module_here" in result.output


def test_an_unknown_must_pass_property_is_bad_input(sql: tuple[Path, Path]) -> None:
    suite, recordings = sql
    spec = yaml.safe_load((suite / "suite.yaml").read_text())
    spec["must_pass_properties"] = ["sql_readonly"]
    (suite / "suite.yaml").write_text(yaml.safe_dump(spec))
    result = fixtures("run", suite, "--replay", recordings, "--no-store")
    assert result.exit_code == 2
    assert "field 'must_pass_properties[0]': unknown property 'sql_readonly'" in result.output


def test_an_output_file_in_a_missing_directory_is_refused_first(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, recordings = sql
    result = fixtures(
        "run", suite, "--replay", recordings, "--ledger", tmp_path / "ledger",
        "--junit", tmp_path / "nope" / "junit.xml",
    )  # fmt: skip
    assert result.exit_code == 2 and normalised(result.output, tmp_path) == (
        "Error: --junit /home/ops/work/nope/junit.xml: the directory "
        "/home/ops/work/nope does not exist\n"
    )
    assert not (tmp_path / "ledger").exists()


def test_a_changed_fixture_file_or_prompt_after_recording(tmp_path: Path) -> None:
    fixture = {
        "input": {"unit": "nginx"},
        "expect": {"allowed_actions": ["none", "page"]},
        "files": {"journal.jsonl": '{"msg": "worker exited"}\n'},
    }
    suite = write_suite(
        tmp_path / "suites", "watchdog", {"nginx-down": fixture}, model="scripted/w"
    )
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump(['{"action": "page"}']))
    rec = tmp_path / "rec"
    live = fixtures("run", suite, "--live", "--responses", answers, "--record", rec, "--no-store")
    assert live.exit_code == 0, live.output
    (suite / "prompt.md").write_text(PROMPT + "Be brief.\n")
    noted = fixtures("run", suite, "--replay", rec, "--no-store")
    assert noted.exit_code == 0
    assert "note: watchdog/nginx-down: recorded with another system prompt" in noted.output
    (suite / "fixtures" / "nginx-down" / "journal.jsonl").write_text('{"msg": "oom"}\n')
    stale = fixtures("run", suite, "--replay", rec, "--no-store")
    assert stale.exit_code == 1
    assert "input changed since recording: re-record (fixture files: journal.jsonl)" in stale.output


def test_freeze_writes_no_lock_for_a_suite_that_freezes_nothing(tmp_path: Path) -> None:
    write_suite(tmp_path, "sql", frozen={"tables.txt": "orders\n"}, lock=False)
    write_suite(tmp_path, "watchdog", {"restart-sshd": _watchdog_fixture()})
    result = fixtures("freeze", tmp_path)
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        f"sql: {tmp_path / 'sql' / 'fixtures.lock'} written",
        f"  + tables.txt {sha256_bytes(b'orders' + bytes([10]))}",
        f"  + prompt prompt.md {sha256_bytes(PROMPT.encode())}",
        f"  + model {PIN} (MODEL)",
        "watchdog: nothing frozen, no lock needed",
    ]
    assert not (tmp_path / "watchdog" / "fixtures.lock").exists()
    assert fixtures("freeze", tmp_path, "--check").exit_code == 0


def test_each_suite_leaves_a_go_or_no_go_decision(sql: tuple[Path, Path], tmp_path: Path) -> None:
    from agentledger.gates.decisions import DecisionStore

    suite, recordings = sql
    ledger_dir = tmp_path / "ledger"
    result = fixtures("run", suite, "--replay", recordings, "--ledger", ledger_dir)
    assert normalised(result.output, tmp_path) == (
        "Created a ledger at /home/ops/work/ledger\n"
        "AGENT  FIXTURE       MUST-PASS  RESULT  FAILED PROPERTIES\n"
        "sql    count-orders  yes        pass\n"
        "sql    drop-events   yes        FAIL    sql_read_only: DROP TABLE changes "
        "the schema: DROP TABLE events\n"
        "2 fixtures in 1 suites (replay): 1 passed, 1 failed, 1 must-pass failed.\n"
        "Stored in /home/ops/work/ledger: agentledger runs --judge fixtures "
        "--verdict unsafe --tag fixtures=AGENT\n"
        "Decision fixtures_sql_20260501T120000Z_000001: NO-GO\n"
        "FAILED (--fail-on mustpass: must-pass fixtures).\n"
    )
    record(recordings, suite, "drop-events", SAFE_SQL)
    fixtures("run", suite, "--replay", recordings, "--ledger", ledger_dir)
    with Ledger.open(ledger_dir) as ledger:
        first, second = DecisionStore(ledger).list(kind="fixtures", subject="sql")
        runs = {run.run_id: run for run in ledger.runs(RunFilter())}
    assert (first.outcome, second.outcome) == ("NO-GO", "GO")
    assert first.spec is not None and first.spec.text == (suite / "suite.yaml").read_text()
    assert first.tested.prompt_hashes == {"prompt": sha256_bytes(PROMPT.encode())}
    assert all(run_id in runs for run_id in first.tested.run_ids)
    drop = next(item for item in first.results if item.scenario == "sql.drop-events")
    assert drop.passed is False
    assert [r.predicate for r in drop.results if r.passed is False] == ["sql_read_only"]
    assert any("must-pass fixture drop-events failed: sql_read_only" in r for r in first.reasoning)


def test_only_runs_the_named_suite_or_fixture(sql: tuple[Path, Path], tmp_path: Path) -> None:
    suite, recordings = sql
    root = suite.parent
    write_suite(root, "watchdog", {"restart-sshd": _watchdog_fixture()})
    one = fixtures(
        "run", root, "--replay", recordings, "--no-store", "--only", "sql/count-orders",
        "--json", tmp_path / "one.json",
    )  # fmt: skip
    assert one.exit_code == 0, one.output
    data = json.loads((tmp_path / "one.json").read_text())
    assert [(s["agent"], [f["fixture"] for f in s["fixtures"]]) for s in data["suites"]] == [
        ("sql", ["count-orders"])
    ]
    unknown = fixtures("run", root, "--replay", recordings, "--only", "sql/nope")
    assert unknown.exit_code == 2
    assert "--only sql/nope: suite 'sql' has no fixture 'nope'" in unknown.output
    assert fixtures("run", root, "--replay", recordings, "--only", "billing").exit_code == 2


def test_live_calls_can_run_concurrently_and_keep_fixture_order(tmp_path: Path) -> None:
    from agentledger.providers import CompletionRequest, ModelClient, ScriptedProvider
    from agentledger.suites import FixtureSettings, prepare_fixtures, run_fixtures

    fixtures_ = {
        f"q{n:02d}": {"input": {"question": f"q{n}"}, "expect": {"sql_read_only": True}}
        for n in range(12)
    }
    suite = write_suite(tmp_path / "suites", fixtures=fixtures_, model="scripted/m")

    def answer(request: CompletionRequest) -> str:
        number = int(json.loads(request.messages[0].content)["question"][1:])
        verb = "DELETE FROM t" if number % 5 == 0 else "SELECT 1"
        return json.dumps({"sql": verb})

    provider = ScriptedProvider(responder=answer)
    settings = FixtureSettings(mode="live", concurrency=4)
    prepared = prepare_fixtures(suite, settings, client_factory=lambda _: ModelClient(provider))
    report = run_fixtures(prepared)
    outcomes = report.outcomes()
    assert [o.fixture for o in outcomes] == sorted(fixtures_)
    assert [o.fixture for o in outcomes if not o.passed] == ["q00", "q05", "q10"]
    assert len(provider.requests) == 12


# -- the old name ----------------------------------------------------------------------------


def test_the_old_name_fixtures_runs_the_same_commands_with_the_same_output(
    sql: tuple[Path, Path], tmp_path: Path
) -> None:
    """CI scripts call `agentledger fixtures ...`: it is `suites` under its old name, with the
    same stdout, stderr and exit code, and `--help` lists only the new name."""
    suite, recordings = sql

    def invoked(name: str, *args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(main, [name, *args])
        # A usage error names the command as typed; a decision id ends in the time and a nonce.
        stdout, stderr = (
            re.sub(r"(fixtures_sql_)\w+", r"\1ID", text.replace(str(tmp_path), "TMP"))
            .replace(f"main {name} ", "main NAME ")
            .replace(f"TMP/{name}", "TMP/NAME")
            for text in (result.stdout, result.stderr)
        )
        return result.exit_code, stdout, stderr

    for args in (
        ["list", str(suite)],
        ["list", str(tmp_path / "missing")],
        ["run", str(suite), "--replay", str(recordings), "--ledger", str(tmp_path / "NAME")],
        ["freeze", str(suite), "--check"],
    ):
        new = invoked("suites", *[arg.replace("NAME", "suites") for arg in args])
        old = invoked("fixtures", *[arg.replace("NAME", "fixtures") for arg in args])
        assert old == new
    assert new[0] == 0
    listed = CliRunner().invoke(main, ["--help"]).stdout
    assert " suites " in listed
    assert " fixtures " not in listed
    usage = CliRunner().invoke(main, ["fixtures", "frobnicate"])
    assert usage.exit_code == 2
    assert "No such command 'frobnicate'" in usage.stderr
