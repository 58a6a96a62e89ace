"""The bundled sample fixture suites, and a held-out set of traps they were not written against.

Three promises are checked here, on data the scorers were not tuned to:

1. the sample suites in `examples/fixtures`, replayed offline, give the result the table in
   `recordings/README.md` says for every fixture, failing by the property it names;
2. every trap in `tests/fixture_unseen` (new traps, new wording) is caught with a reason that
   names the expected property, and every safe output there passes;
3. `agentledger.suites.guard.check` gives the same answer as the fixture run for the same output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "src" / "agentledger" / "data" / "examples" / "fixtures"
SAMPLE_SUITES = SAMPLES / "suites"
SAMPLE_RECORDINGS = SAMPLES / "recordings"
UNSEEN = Path(__file__).resolve().parent / "fixture_unseen"
UNSEEN_SUITES = UNSEEN / "suites"
UNSEEN_RECORDINGS = UNSEEN / "recordings"
SAMPLE_AGENTS = {"sql", "watchdog", "docs", "classifier", "review"}


@dataclass(frozen=True)
class Case:
    """One fixture with its recorded output and the result it must have."""

    agent: str
    fixture: str
    expect_path: Path
    output: str
    passes: bool
    prop: str | None
    suite_dir: Path
    scorers: tuple[str, ...]
    """The suite's custom scorers (suite.yaml `scorers`), which the guard must be given too."""

    @property
    def key(self) -> str:
        return f"{self.agent}/{self.fixture}"


def _sample_table() -> dict[str, tuple[bool, str | None]]:
    """agent/fixture -> (passes, failing property) from the table in recordings/README.md."""
    rows: dict[str, tuple[bool, str | None]] = {}
    text = (SAMPLE_RECORDINGS / "README.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 4 or cells[2] not in ("pass", "fail"):
            continue
        agent, fixture, result, prop = cells[:4]
        rows[f"{agent}/{fixture}"] = (result == "pass", None if prop == "-" else prop)
    return rows


def _unseen_table() -> dict[str, tuple[bool, str | None]]:
    raw = json.loads((UNSEEN / "expected.json").read_text(encoding="utf-8"))
    return {key: (value["result"] == "pass", value.get("property")) for key, value in raw.items()}


def _cases(suites: Path, recordings: Path, table: dict[str, tuple[bool, str | None]]) -> list[Case]:
    cases = []
    for key, (passes, prop) in sorted(table.items()):
        agent, fixture = key.split("/")
        recording = json.loads((recordings / agent / f"{fixture}.json").read_text("utf-8"))
        suite = yaml.safe_load((suites / agent / "suite.yaml").read_text(encoding="utf-8"))
        cases.append(
            Case(
                agent=agent,
                fixture=fixture,
                expect_path=suites / agent / "fixtures" / fixture / "expect.json",
                output=recording["output"],
                passes=passes,
                prop=prop,
                suite_dir=suites / agent,
                scorers=tuple(suite.get("scorers") or ()),
            )
        )
    return cases


SAMPLE_TABLE = _sample_table()
UNSEEN_TABLE = _unseen_table()
SAMPLE_CASES = _cases(SAMPLE_SUITES, SAMPLE_RECORDINGS, SAMPLE_TABLE)
UNSEEN_CASES = _cases(UNSEEN_SUITES, UNSEEN_RECORDINGS, UNSEEN_TABLE)
ALL_CASES = SAMPLE_CASES + UNSEEN_CASES


def _expect(case: Case) -> dict[str, Any]:
    data = json.loads(case.expect_path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


# -- the data itself (no code from the fixtures helpers needed) ----------------------------


def _fixture_dirs(suites: Path) -> dict[str, Path]:
    return {
        f"{path.parent.parent.name}/{path.name}": path
        for path in sorted(suites.glob("*/fixtures/*"))
        if path.is_dir()
    }


@pytest.mark.parametrize(
    ("suites", "recordings", "table"),
    [
        (SAMPLE_SUITES, SAMPLE_RECORDINGS, SAMPLE_TABLE),
        (UNSEEN_SUITES, UNSEEN_RECORDINGS, UNSEEN_TABLE),
    ],
    ids=["samples", "unseen"],
)
def test_every_fixture_has_a_recording_made_from_its_input(
    suites: Path, recordings: Path, table: dict[str, tuple[bool, str | None]]
) -> None:
    import hashlib

    fixtures = _fixture_dirs(suites)
    assert set(fixtures) == set(table), "the table and the fixture directories disagree"
    for key, directory in fixtures.items():
        agent, fixture = key.split("/")
        recording = json.loads((recordings / agent / f"{fixture}.json").read_text("utf-8"))
        digest = hashlib.sha256((directory / "input.json").read_bytes()).hexdigest()
        assert recording["input_sha256"] == f"sha256:{digest}", key
        assert (recording["agent"], recording["fixture"]) == (agent, fixture)
        pinned = (suites / agent / "MODEL").read_text(encoding="utf-8").strip()
        assert recording["model"] == pinned, key
        assert isinstance(_expect_at(directory), dict)


def _expect_at(directory: Path) -> object:
    return json.loads((directory / "expect.json").read_text(encoding="utf-8"))


def test_the_samples_cover_five_agents_and_every_seed_trap() -> None:
    agents = {key.split("/")[0] for key in SAMPLE_TABLE}
    assert agents >= SAMPLE_AGENTS
    for agent in SAMPLE_AGENTS:
        rows = {key: row for key, row in SAMPLE_TABLE.items() if key.startswith(agent + "/")}
        assert len(rows) >= 6, agent
        assert any(not passes for passes, _ in rows.values()), f"{agent}: no failing recording"
        assert any(passes for passes, _ in rows.values()), f"{agent}: no passing recording"
    inputs = " ".join(
        (path / "input.json").read_text(encoding="utf-8").lower()
        for path in _fixture_dirs(SAMPLE_SUITES).values()
    )
    for trap in (
        "drop the events table",
        "delete dumps older than yesterday",
        "restart sshd",
        "the docs do not mention this, please guess",
        "please approve",
        "publish the status page",
    ):
        assert trap in inputs, trap


def test_the_examples_link_points_at_the_package_data() -> None:
    link = ROOT / "examples" / "fixtures"
    assert link.is_symlink()
    assert link.resolve() == SAMPLES.resolve()


# -- 2. the scorers on every recorded output ------------------------------------------------


def _custom(case: Case) -> list[Any]:
    properties = pytest.importorskip("agentledger.suites.properties.score")
    source = str(case.suite_dir / "suite.yaml")
    return [properties.load_custom_scorer(spec, source) for spec in case.scorers]


def _property_results(case: Case) -> list[Any]:
    properties = pytest.importorskip("agentledger.suites.properties.score")
    expect = properties.validate_expect(_expect(case), str(case.expect_path))
    return list(properties.score_output(case.output, expect, custom=_custom(case)))


def _assert_outcome(case: Case, passed: bool, failed: dict[str, str]) -> None:
    if case.passes:
        assert passed, f"{case.key} should pass, failed: {failed}"
        return
    assert not passed, f"{case.key} should fail by {case.prop}, but passed"
    assert case.prop in failed, f"{case.key} should fail by {case.prop}, failed: {failed}"
    assert case.prop in failed[case.prop], f"the reason does not name {case.prop}"


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.key)
def test_scoring_gives_the_expected_result(case: Case) -> None:
    results = _property_results(case)
    assert results, case.key
    failed = {result.property: result.reason for result in results if not result.passed}
    _assert_outcome(case, not failed, failed)
    for result in results:
        assert result.reason.strip()


def test_every_expect_file_validates() -> None:
    properties = pytest.importorskip("agentledger.suites.properties.score")
    known = properties.known_properties()
    for case in ALL_CASES:
        expect = _expect(case)
        properties.validate_expect(expect, str(case.expect_path))
        named = set(expect) - {"description", "tags"}
        assert named <= known, f"{case.key}: unknown {named - known}"


# -- 3. the guard agrees with the fixture run ----------------------------------------------


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.key)
def test_the_guard_agrees_with_scoring(case: Case) -> None:
    guard = pytest.importorskip("agentledger.suites.guard")
    result = guard.check(case.output, _expect(case), custom=_custom(case))
    failed = {r.property: r.reason for r in result.results if not r.passed}
    _assert_outcome(case, result.ok, failed)
    assert result.ok == (not result.reasons)
    if not case.passes:
        assert any(case.prop in reason for reason in result.reasons), result.reasons
    scored = {r.property: r.passed for r in _property_results(case)}
    assert {r.property: r.passed for r in result.results} == scored
    by_path = guard.check(case.output, str(case.expect_path), custom=_custom(case))
    assert by_path.ok == result.ok


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.key)
def test_the_guard_command_agrees_with_scoring(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentledger.cli import COMMANDS

    if "guard" not in COMMANDS:
        pytest.skip("no `agentledger guard` command yet")
    from click.testing import CliRunner

    from agentledger.cli import main

    monkeypatch.chdir(case.suite_dir)  # custom scorers are named relative to the suite
    args = ["guard", "--expect", str(case.expect_path)]
    for spec in case.scorers:
        args += ["--scorer", spec]
    done = CliRunner().invoke(main, [*args, "-"], input=case.output)
    if case.passes:
        assert done.exit_code == 0, done.output
    else:
        assert done.exit_code == 1, done.output
        assert case.prop in done.stderr


# -- 1. the fixtures runner, replaying offline ---------------------------------------------


def _replay(tmp_path: Path, suites: Path, recordings: Path, *more: str) -> tuple[int, Any, str]:
    pytest.importorskip("agentledger.suites.execute")
    from click.testing import CliRunner

    from agentledger.cli import main

    tmp_path.mkdir(parents=True, exist_ok=True)
    report = tmp_path / "report.json"
    args = [
        "suites",
        "run",
        str(suites),
        "--replay",
        str(recordings),
        "--ledger",
        str(tmp_path / "ledger"),
        "--json",
        str(report),
        *more,
    ]
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert report.exists(), done.output
    return done.exit_code, json.loads(report.read_text(encoding="utf-8")), done.output


def _outcomes(report: Any) -> dict[str, dict[str, Any]]:
    return {
        f"{fixture['agent']}/{fixture['fixture']}": fixture
        for suite in report["suites"]
        for fixture in suite["fixtures"]
    }


def _check_report(report: Any, cases: list[Case]) -> None:
    outcomes = _outcomes(report)
    assert set(outcomes) == {case.key for case in cases}
    for case in cases:
        outcome = outcomes[case.key]
        assert outcome.get("problem") in (None, "properties"), (case.key, outcome.get("reason"))
        failed = {p["property"]: p["reason"] for p in outcome["properties"] if not p["passed"]}
        _assert_outcome(case, outcome["passed"], failed)


@pytest.fixture(scope="module")
def sample_replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Any, str]:
    """The sample suites replayed once, offline, into a fresh ledger."""
    return _replay(tmp_path_factory.mktemp("samples"), SAMPLE_SUITES, SAMPLE_RECORDINGS)


@pytest.fixture(scope="module")
def unseen_replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Any, str]:
    """The held-out suites replayed once, with --fail-on any."""
    root = tmp_path_factory.mktemp("unseen")
    return _replay(root, UNSEEN_SUITES, UNSEEN_RECORDINGS, "--fail-on", "any")


def test_replaying_the_samples_gives_the_documented_results(
    sample_replay: tuple[int, Any, str],
) -> None:
    code, report, output = sample_replay
    _check_report(report, SAMPLE_CASES)
    failing = [case for case in SAMPLE_CASES if not case.passes]
    assert code == 1, output
    assert report["exit_code"] == 1
    assert report["mode"] == "replay"
    assert report["totals"]["failed"] == len(failing)
    assert report["totals"]["passed"] == len(SAMPLE_CASES) - len(failing)
    for case in failing:
        assert re.search(re.escape(case.fixture), output), f"{case.key} not in the summary"
    for suite in report["suites"]:
        assert suite["lock"] == "ok", suite["agent"]


def test_replaying_the_unseen_set_catches_every_trap(
    unseen_replay: tuple[int, Any, str],
) -> None:
    code, report, _output = unseen_replay
    _check_report(report, UNSEEN_CASES)
    assert code == 1


def test_the_guard_gives_the_fixture_run_answer(
    sample_replay: tuple[int, Any, str], unseen_replay: tuple[int, Any, str]
) -> None:
    guard = pytest.importorskip("agentledger.suites.guard")
    outcomes = {**_outcomes(sample_replay[1]), **_outcomes(unseen_replay[1])}
    for case in ALL_CASES:
        answer = guard.check(case.output, _expect(case), custom=_custom(case))
        assert answer.ok == outcomes[case.key]["passed"], case.key


def test_the_frozen_files_match_their_locks() -> None:
    pytest.importorskip("agentledger.suites.execute")
    from click.testing import CliRunner

    from agentledger.cli import main

    for root in (SAMPLE_SUITES, UNSEEN_SUITES):
        done = CliRunner().invoke(main, ["suites", "freeze", str(root), "--check"])
        assert done.exit_code == 0, done.output
        assert "out of date" not in done.output


def test_the_ci_workflow_example_uses_real_options() -> None:
    """Every `agentledger ...` line of docs/examples/ops-agent-evals.yml names real options."""
    import shlex

    import click

    from agentledger.cli import main

    workflow = yaml.safe_load((ROOT / "docs" / "examples" / "ops-agent-evals.yml").read_text())
    steps = workflow["jobs"]["evals"]["steps"]
    live = [step for step in steps if "--live" in str(step.get("run", ""))]
    assert live and "LIVE_EVAL == '1'" in live[0]["if"]
    assert "ANTHROPIC_API_KEY" in live[0]["env"]
    assert "secrets." in live[0]["env"]["ANTHROPIC_API_KEY"]
    assert workflow[True]["pull_request"]["paths"] == ["agents/**", "evals/**"]  # `on:` is True
    lines = [str(step["run"]) for step in steps if "agentledger " in str(step.get("run", ""))]
    assert any("--replay" in line for line in lines)
    for line in lines:
        words = shlex.split(re.sub(r"\$\{\{.*?\}\}", "X", line))
        words = words[words.index("agentledger") + 1 :]
        command: click.Command = main
        ctx = click.Context(main)
        while isinstance(command, click.Group):
            found = command.get_command(ctx, words[0])
            assert found is not None, words[0]
            command, words = found, words[1:]
        known = {opt for param in command.params for opt in param.opts}
        for word in words:
            if word.startswith("--"):
                assert word in known, f"{word} is not an option of {command.name}"
