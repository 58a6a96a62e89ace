"""The production guard: `agentledger.suites.guard.check` and `agentledger guard`.

It gives the same answer as the fixture scorers for the same output, exits 0/1/2, prints one
line per failed property on stderr, and imports little.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.errors import InputError, RecordError
from agentledger.suites.guard import GuardResult, check
from agentledger.suites.properties.score import score_output, validate_expect

CORPUS = Path(__file__).parent / "property_corpus"
SCRIPT = Path(sys.executable).parent / "agentledger"
SQL_EXPECT = {"sql_read_only": True, "sql_tables_subset": ["events", "invoices"]}


def corpus_cases() -> list[Any]:
    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        data = json.loads(path.read_text())
        for case in data["cases"]:
            output = case["output"]
            text = output if isinstance(output, str) else json.dumps(output)
            cases.append(pytest.param(data["expect"], text, id=f"{path.stem}: {case['name']}"))
    return cases


@pytest.mark.parametrize(("expect", "output"), corpus_cases())
def test_guard_gives_the_fixture_answer(expect: dict[str, Any], output: str) -> None:
    scored = score_output(output, expect)
    result = check(output, expect)
    assert result.results == scored
    assert result.ok == all(item.passed for item in scored)
    assert result.reasons == [item.reason for item in scored if not item.passed]
    assert bool(result) is result.ok


def test_check_takes_a_path_and_rereads_it_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "expect.json"
    path.write_text(json.dumps({"allowed_actions": ["noop"]}))
    assert check('{"action": "noop"}', path).ok
    assert not check('{"action": "restart_sshd"}', str(path)).ok
    path.write_text(json.dumps({"allowed_actions": ["noop", "restart_sshd"], "max_findings": 0}))
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    assert check('{"action": "restart_sshd"}', path).ok
    with pytest.raises(RecordError) as caught:
        check("{}", tmp_path / "missing.json")
    assert caught.value.source == str(tmp_path / "missing.json")


def test_check_with_a_bad_expect_raises_and_bad_output_does_not() -> None:
    with pytest.raises(InputError, match="unknown property"):
        check("{}", {"sql_readonly": True})
    result = check(b"\x00\x00", SQL_EXPECT)
    assert not result.ok and result.reasons[0].startswith("output_json: ")


def test_check_reuses_a_validated_expect() -> None:
    spec = validate_expect(SQL_EXPECT, "sql/expect.json")
    result = check('{"sql": "DROP TABLE events"}', spec)
    assert isinstance(result, GuardResult)
    assert result.reasons == ["sql_read_only: DROP TABLE changes the schema: DROP TABLE events"]
    assert result.as_dict()["results"][0]["evidence"] == ["DROP TABLE events"]


# -- the command line: the real console script ------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "expect.json").write_text(json.dumps(SQL_EXPECT))
    (tmp_path / "good.json").write_text(
        '{"sql": "SELECT count(*) FROM events", "tables": ["events"]}'
    )
    (tmp_path / "drop.json").write_text('{"sql": "DROP TABLE events; SELECT * FROM users"}')
    (tmp_path / "bad-expect.json").write_text('{"sql_read_only": "yes please"}')
    return tmp_path


def guard(
    *args: str, stdin: str | bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run(
        [str(SCRIPT), "guard", *args], input=data, capture_output=True, cwd=cwd, check=False
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def test_cli_lets_a_safe_output_run(files: Path) -> None:
    done = guard("--expect", str(files / "expect.json"), str(files / "good.json"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_cli_rejects_with_one_line_per_failed_property(files: Path) -> None:
    done = guard("--expect", str(files / "expect.json"), str(files / "drop.json"))
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("agentledger guard: rejected: sql_read_only: DROP TABLE")
    assert lines[1].startswith("agentledger guard: rejected: sql_read_only") is False
    assert lines[1].startswith("agentledger guard: rejected: sql_tables_subset: ")
    assert "users" in lines[1]


def test_cli_reads_stdin_and_prints_json(files: Path) -> None:
    done = guard(
        "-e", str(files / "expect.json"), "--json", "-", stdin='{"sql": "DELETE FROM events"}'
    )
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["ok"] is False
    assert [item["property"] for item in document["results"]] == [
        "sql_read_only",
        "sql_tables_subset",
    ]
    assert document["reasons"] == [document["results"][0]["reason"]]
    done = guard(f"--expect={files / 'expect.json'}", stdin="not json at all")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "agentledger guard: rejected: output_json: the output is not JSON"
    )


def test_cli_huge_output_is_refused_and_binary_rejected_not_crashed(files: Path) -> None:
    huge = b'{"sql": "' + b"x" * 2_000_000 + b'"}'
    done = guard("--expect", str(files / "expect.json"), stdin=huge)
    # Not read past the limit: nothing was checked, which is exit 2 (do not run either).
    assert done.returncode == 2 and "standard input" in done.stderr and "limit" in done.stderr
    done = guard("--expect", str(files / "expect.json"), stdin=b"\x89PNG\r\n\x1a\n\x00\x00")
    assert done.returncode == 1 and "binary" in done.stderr


def test_cli_control_characters_in_reasons_stay_on_one_line(files: Path) -> None:
    done = guard(
        "--expect",
        str(files / "expect.json"),
        stdin='{"sql": "SELECT * FROM \\"us\\u001b[2Jers\\nx\\""}',
    )
    assert done.returncode == 1
    assert "\x1b" not in done.stderr
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "Missing option '--expect'"),
        (["--expect"], "requires an argument"),
        (["--expect", "E", "--frobnicate"], "No such option: --frobnicate"),
        (["--expect", "E", "a.json", "b.json"], "unexpected extra argument"),
        (["--expect", "bad-expect.json", "good.json"], "bad-expect.json, field 'sql_read_only'"),
        (["--expect", "missing.json", "good.json"], "missing.json: cannot read"),
        (["--expect", "expect.json", "missing-output.json"], "cannot read the output file"),
        (["--expect", "expect.json", "--scorer", "nosuch_mod_q:f", "good.json"], "nosuch_mod_q"),
    ],
)
def test_cli_usage_and_bad_expect_exit_2(files: Path, args: list[str], words: str) -> None:
    done = guard(*args, cwd=files)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr
    assert done.stdout == ""


def test_cli_custom_scorer(files: Path) -> None:
    (files / "house.py").write_text(
        "def no_star(output, expect):\n"
        "    return '*' not in (output.get('sql') or ''), 'no SELECT *'\n"
    )
    done = guard(
        "--expect", "expect.json", "--scorer", "house.py:no_star", "--json", "drop.json", cwd=files
    )
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["results"][-1]["property"] == "custom:house.py:no_star"
    assert document["results"][-1]["passed"] is False


def test_cli_imports_little(files: Path) -> None:
    """No pydantic, rich, click, sqlite3 or sqlglot for a guard without SQL properties."""
    (files / "watchdog.json").write_text(
        json.dumps({"allowed_actions": ["noop"], "hostname_allowlist": ["a.example.com"]})
    )
    code = (
        "import sys\n"
        "sys.argv = ['agentledger', 'guard', '--expect', 'watchdog.json', 'good.json']\n"
        "from agentledger._entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    heavy = ('pydantic', 'rich', 'click', 'sqlite3', 'sqlglot', 'yaml', 'jsonschema',"
        " 'tree_sitter', 'dataclasses', 'typing')\n"
        "    print(exc.code, sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=files, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "1 []", done.stderr  # good.json has no action: rejected


def test_library_imports_sqlglot_only_for_sql() -> None:
    code = (
        "import sys\n"
        "from agentledger.suites.guard import check\n"
        "check('{\"action\": \"noop\"}', {'allowed_actions': ['noop']})\n"
        "print('sqlglot' in sys.modules)\n"
        "check('{\"sql\": \"SELECT 1\"}', {'sql_read_only': True})\n"
        "print('sqlglot' in sys.modules)\n"
        "check('{\"sql\": \"WITH x AS (SELECT 1) SELECT * FROM x\"}', {'sql_read_only': True})\n"
        "print('sqlglot' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # A plain query is read without sqlglot (shell/sql_plain.py); other SQL is parsed.
    assert done.stdout.split() == ["False", "False", "True"]


# -- the click command (for --help, the docs, python -m) ---------------------------------------


def test_click_command_same_behaviour(files: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["--help"])
    assert "guard" in result.output
    result = runner.invoke(main, ["guard", "--help"])
    assert result.exit_code == 0 and "--expect" in result.output and "exit 0" in result.output
    good = runner.invoke(
        main, ["guard", "--expect", str(files / "expect.json"), str(files / "good.json")]
    )
    assert good.exit_code == 0
    bad = runner.invoke(
        main, ["guard", "--expect", str(files / "expect.json"), str(files / "drop.json")]
    )
    assert bad.exit_code == 1
    usage = runner.invoke(main, ["guard", str(files / "good.json")])
    assert usage.exit_code == 2


def test_script_help_goes_to_click(files: Path) -> None:
    done = guard("--help")
    assert done.returncode == 0
    assert "Usage: agentledger guard" in done.stdout and "--scorer" in done.stdout
