"""`agentledger demo` works on a fresh machine and shows what the store does."""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
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
    # report.html is written once every run of the tour exists: the runner's are in it.
    assert out.index("$ agentledger report all") > out.index("$ agentledger suites run")
    assert "scripted-hasty" in page
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


# What `agentledger demo` suggests trying next, named by command (and the file a `show` prints).
TRY_NEXT = [
    "show",
    "show --file report.md",
    "report compare",
    "report drift",
    "decisions show",
    "sentinel protocol",
    "runs",
    "export",
    "import",
    "show --file shell_audit.jsonl",
    "exec",
    "suites list",
    "run",
]


@dataclass
class Demo:
    """A demo ledger built once for this module, and what the demo printed."""

    directory: Path
    output: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    work = tmp_path_factory.mktemp("try-next")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        patch.delenv("AGENTLEDGER_DIR", raising=False)
        patch.setenv("CI", "true")
        patch.setenv("AGENTLEDGER_CACHE_DIR", str(work / ".user-cache"))
        result = CliRunner().invoke(main, ["demo", str(work / "demo")])
        assert result.exit_code == 0, result.output
        yield Demo(work / "demo", result.stdout)


def _suggestions(output: str) -> dict[str, list[str]]:
    """The demo's "Try next" agentledger lines as argument lists, keyed like TRY_NEXT."""
    lines = output.split("\nTry next:\n", 1)[1].splitlines()
    found: dict[str, list[str]] = {}
    for line in lines:
        words = shlex.split(line.split("   #", 1)[0])
        if not words or words[0] != "agentledger":
            continue
        args = words[1:]
        name = " ".join(itertools.takewhile(lambda word: word.isalpha(), args[:2]))
        if "--file" in args:
            name += " --file " + args[args.index("--file") + 1]
        assert name not in found, f"two suggestions named {name!r}"
        found[name] = args
    return found


def test_the_demo_suggests_exactly_the_lines_tested(demo: Demo) -> None:
    assert sorted(_suggestions(demo.output)) == sorted(TRY_NEXT)


@pytest.mark.parametrize("name", TRY_NEXT)
def test_each_try_next_line_runs_without_a_usage_error(demo: Demo, name: str) -> None:
    args = _suggestions(demo.output)[name]
    result = CliRunner().invoke(main, args, prog_name="agentledger")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code != 2, result.output
    assert "Usage:" not in result.output and "No such option" not in result.output, result.output


@pytest.mark.slow
def test_the_demo_without_bubblewrap_says_so_and_its_agent_runs_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo` on a machine without bubblewrap: the tour says why the agent's commands
    cannot start, and the runs in which nothing ran are failed, not ok."""
    monkeypatch.setenv("AGENTLEDGER_HIDE_BWRAP", "1")  # the agent's gate sees it too
    result = CliRunner().invoke(main, ["demo", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    assert (
        "The gated shell cannot start commands here (bubblewrap (bwrap) is not installed: "
        "apt-get install bubblewrap): the agent runs below are recorded as failed."
        in " ".join(result.stderr.split())
    )
    assert "`agentledger doctor` lists what each feature needs." in " ".join(result.stderr.split())
    out = result.stdout
    assert "0 did not end ok" not in out
    assert out.count("4 of 4 runs written") == 2 and out.count("4 did not end ok") == 2
    assert "failed  (the gated shell could not start any of the" in out
    with Ledger.open(tmp_path / "demo") as ledger:
        runner_runs = ledger.runs(RunFilter(backfilled=False, kinds=("agent",)))
        assert len(runner_runs) == 8
        assert all(ledger.load(r.run_id).summary.exit_status == "failed" for r in runner_runs)
        # and no judge gave a verdict on a run in which nothing ran (they were 6 Safe, 1
        # Uncertain, 1 Unsafe): each is skipped, saying so
        verdicts = ledger.sql(
            "SELECT s.verdict, count(*) FROM scores s JOIN runs r USING (run_id) "
            "WHERE r.kind = 'agent' AND NOT r.backfilled GROUP BY s.verdict"
        ).rows
        assert verdicts == [("skipped", 8)]


def test_the_lab_tour_without_bubblewrap_is_skipped_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo`'s second line on a machine without bubblewrap: no lab run in which nothing
    ran (each was `failed`, and the step's exit 1 stopped `make demo`), but a skip that says
    why, exit 0."""
    monkeypatch.setenv("AGENTLEDGER_HIDE_BWRAP", "1")
    result = CliRunner().invoke(main, ["demo", "--labs", str(tmp_path / "labs")])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    if "this machine cannot run labs" in said:
        pytest.skip("this machine cannot run labs at all")
    assert said.startswith(
        "agentledger demo --labs: skipped: the gated shell cannot start the agents' commands "
        "here (bubblewrap (bwrap) is not installed: apt-get install bubblewrap)"
    ), said
    assert "`agentledger doctor` lists what each feature needs" in said
    assert not (tmp_path / "labs").exists()
