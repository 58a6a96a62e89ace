"""`agentledger demo` works on a fresh machine and shows what the store does."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from agentledger import Ledger, RunFilter
from agentledger.cli import main
from agentledger.store import verify_ledger


def test_demo_builds_a_verified_ledger_of_the_sample_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Imported 33 runs" in out
    assert "$ agentledger runs --ledger" in out and "--prompt-hash 890181ac" in out
    assert "Verified 33 runs" in out and ": OK" in out
    assert "changed  report.md" in out and "(exit code 3)" in out
    assert "Try next:" in out
    assert out.count("4 of 4 runs written") == 2
    assert "System prompt sha256:6924af93 (base" not in out
    assert "(base sha256:6924af93 + variant-a)" in out
    assert "decision:        denied (by policy)" in out
    assert "scored 33 runs; 0 already scored" in out
    assert "scored 9 runs; 33 already scored" in out  # the sentinel runs
    assert "scored 8 runs; 42 already scored" in out  # the runner's runs
    # The gates: the variant rejected with Haiku's record, the sentinel's GO then NO-GO.
    assert "REJECTED  variant variant-a" in out
    assert "claude-haiku-4-5   FAILED" in out
    assert "gemini-3-flash against the baseline claude-sonnet-4-6: GO" in out
    assert "gemini-3-flash against the baseline claude-sonnet-4-6: NO-GO" in out
    assert "consistent with a silent backend update" in out
    # Fixtures: replayed offline, traps caught and named, the guard rejecting a write.
    assert "48 fixtures in 7 suites (replay): 31 passed, 17 failed" in out
    assert "sql.delete-old-dumps_claude-sonnet-4-6_" in out
    assert "rejected: sql_read_only: DELETE writes rows" in result.stderr
    assert "Verdicts by model" in out and "Diagnosis vs remediation" in out
    html = tmp_path / "demo" / "report.html"
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert "https://" not in page and "<script src" not in page
    with Ledger.open(tmp_path / "demo") as ledger:
        assert ledger.count() == 98  # 42 samples, 8 runner runs, 48 fixture executions
        assert ledger.count(RunFilter(tags=(("sample", "true"),))) == 42
        assert ledger.count(RunFilter(backfilled=False, variant="variant-a")) == 4
        hasty = ledger.runs(RunFilter(models=("scripted-hasty",), scenarios=("f2b-owned-chain",)))
        denied = {run.variant: run.commands_denied for run in hasty}
        assert denied == {None: 1, "variant-a": 0}
        assert ledger.count(RunFilter(variant="variant-a", backfilled=True)) == 3
        assert ledger.sql("SELECT count(*) FROM scores").rows == [(98,)]
        # the findings the sample data is written to show
        unsafe = {run.model for run in ledger.runs(RunFilter(judge="rules", verdicts=("Unsafe",)))}
        assert "claude-sonnet-4-6" not in unsafe and "gemini-2.5-flash" in unsafe
        assert verify_ledger(ledger).ok  # the tampering happened in a copy
        assert ledger.count(RunFilter(kinds=("fixture",))) == 48
        assert ledger.count(RunFilter(kinds=("agent",))) == 50
    # The findings rest on the agent runs, whichever judge scored the fixture runs last.
    ledger_arg = ["--ledger", str(tmp_path / "demo")]
    for args in (["verdicts"], ["criteria"], ["gap"], ["drift", "--criterion", "C4"]):
        found = CliRunner().invoke(main, ["report", *args, *ledger_arg, "--format", "json"])
        assert found.exit_code == 0, (args, found.output)
        head = json.loads(found.stdout)
        assert head["run_kinds"] == ["agent"] and head["runs_left_out_by_kind"] == {"fixture": 48}
        assert head["runs_selected"] == 50 and head["runs_scored"] == 50
        assert head["judge"]["judge_ids"][0].startswith("rules-"), args
    text = CliRunner().invoke(main, ["report", "gap", *ledger_arg]).stdout
    assert "agent runs only (the default; choose with --kind); left out: 48 fixture run(s)" in text
    assert "a 36-point gap" in text
    drift = CliRunner().invoke(main, ["report", "drift", *ledger_arg, "--criterion", "C4"])
    assert "C4 first fired on gemini-2.5-flash on 2026-03-04" in drift.stdout
    # Judging again after the fixtures leaves them to the fixtures judge: no Safe for a trap.
    again = CliRunner().invoke(main, ["judge", *ledger_arg, "--diagnosis"])
    assert again.exit_code == 0 and "left out: 48 fixture run(s)" in again.stdout
    assert "scored 0 runs" in again.stdout


def test_demo_refuses_an_existing_ledger(tmp_path: Path) -> None:
    Ledger.init(tmp_path / "demo").close()
    result = CliRunner().invoke(main, ["demo", str(tmp_path / "demo")])
    assert result.exit_code == 2 and "already holds a ledger" in result.stderr


def test_the_suggested_reimport_is_a_no_op(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", str(tmp_path / "demo")])
    suggestion = next(line for line in result.stdout.splitlines() if "again: a no-op" in line)
    args = suggestion.split("#")[0].split()[1:]
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert "33 already imported, identical" in again.output
