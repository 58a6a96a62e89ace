"""The command line, used the way a person uses it."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from conftest import WriteRun
from exact_output import WORK, normalised


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def usage_error(command: str, error: str) -> str:
    """What click prints for a bad value given to `command`, whole."""
    name = command.split()[0]
    return f"Usage: main {command}\nTry 'main {name} --help' for help.\n\nError: {error}\n"


@pytest.fixture
def populated(ledger: Ledger, write_run: WriteRun) -> Ledger:
    write_run("use_case_f", "claude-haiku-4-5", tags={"suite": "netops"})
    write_run("use_case_f", "gemini-2.5-flash")
    write_run("use_case_m", "gemini-2.5-flash", addon=b"MANDATORY", variant="variant-a")
    return ledger


def test_python_dash_m_works(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentledger", "--version"], capture_output=True, text=True
    )
    assert (
        done.returncode == 0 and normalised(done.stdout, tmp_path) == "agentledger, version 0.1.0\n"
    )


def test_init_then_runs_in_the_default_location(tmp_path: Path) -> None:
    code, out, _ = run("init")
    assert (code, out) == (0, "Created ledger at .agentledger (artifacts up to 100 MB)\n")
    assert (tmp_path / ".agentledger" / "ledger.json").is_file()
    code, _, err = run("runs")
    assert (code, err) == (0, "No runs match.\n")
    code, _, err = run("init")
    assert (code, err) == (2, "Error: .agentledger already holds a ledger\n")


def test_env_variable_chooses_the_ledger(
    populated: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLEDGER_DIR", str(populated.root))
    code, out, _ = run("runs", "--csv")
    assert code == 0 and len(out.strip().splitlines()) == 4


def test_missing_ledger_is_exit_2(tmp_path: Path) -> None:
    code, _, err = run("runs", "--ledger", str(tmp_path / "none"))
    assert (code, err) == (
        2,
        f"Error: no ledger at {tmp_path / 'none'} (ledger.json not found); create one with "
        "`agentledger init` or point --ledger / AGENTLEDGER_DIR at it\n",
    )


# The runs table as `runs --model gemini-2.5-flash` prints it (newest first; ids normalised).
RUNS_TABLE = """\
RUN_ID                                               SCENARIO    MODEL             PROMPT    \
VARIANT    STARTED           CMDS/DENIED  BACKFILLED  KIND
use_case_m_gemini-2.5-flash_20260501T120000Z_000001  use_case_m  gemini-2.5-flash  c3914c42  \
variant-a  2026-03-12 10:17  1/1          no          agent
use_case_f_gemini-2.5-flash_20260501T120000Z_000002  use_case_f  gemini-2.5-flash  6a00782a  \
-          2026-03-12 10:16  1/1          no          agent
"""


def test_runs_table_filters_and_formats(populated: Ledger) -> None:
    root = str(populated.root)
    code, out, _ = run("runs", "--ledger", root, "--model", "gemini-2.5-flash")
    assert code == 0
    assert all(line == line.rstrip() for line in out.splitlines())
    assert normalised(out, populated.root) == RUNS_TABLE

    code, out, _ = run("runs", "--ledger", root, "--variant", "variant-a", "--json")
    records = json.loads(out)
    assert [r["variant"] for r in records] == ["variant-a"]
    assert records[0]["summary"]["commands_denied"] == 1
    prompt_hash = records[0]["system_prompt_hash"]

    code, out, _ = run("runs", "--ledger", root, "--prompt-hash", prompt_hash[7:15], "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [row["variant"] for row in rows] == ["variant-a"]

    code, out, _ = run("runs", "--ledger", root, "--tag", "suite=netops", "--json")
    assert [r["model"] for r in json.loads(out)] == ["claude-haiku-4-5"]


def test_runs_limit_says_how_many_are_hidden(populated: Ledger) -> None:
    code, out, err = run("runs", "--ledger", str(populated.root), "--limit", "1")
    assert code == 0
    assert normalised(out, populated.root) == "\n".join(RUNS_TABLE.splitlines()[:2]) + "\n"
    assert err == "1 of 3 runs shown (--limit 0 for all).\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--prompt-hash", "zzz"],
            "Invalid value for '--prompt-hash': 'zzz' is not a sha256 hash or a prefix of one "
            "(hex digits expected)",
        ),
        (
            ["--since", "yesterday-ish"],
            "Invalid value for '--since': 'yesterday-ish' is not a date: use 2026-03-12, "
            "2026-03-12T10:15:00Z, or 7d / 12h / 2w",
        ),
        (["--tag", "novalue"], "Invalid value for '--tag': 'novalue' is not KEY=VALUE"),
    ],
)
def test_bad_filters_are_usage_errors(populated: Ledger, args: list[str], message: str) -> None:
    code, _, err = run("runs", "--ledger", str(populated.root), *args)
    assert (code, err) == (2, usage_error("runs [OPTIONS]", message))


SHOWN = """\
run                       use_case_m_gemini-2.5-flash_20260501T120000Z_000001
scenario                  use_case_m
model                     gemini-2.5-flash
model served              -
provider                  -
fingerprint               -
system prompt             sha256:c3914c42312d02e3e61ea842a824217dce03a6dcf5fd242da6c56c891ff4595f
base prompt               sha256:6a00782a452bca0bfb9c3829f54c492c23b1fbfc5b3630283ede96c321c9546a
addon                     -
variant                   variant-a
agent                     -
commit                    -
params                    -
started                   2026-03-12T10:17:00+00:00
ended                     2026-03-12T10:18:30+00:00
silent update detectable  no
backfilled                no
tags                      -
sealed                    2026-05-01T12:00:00.000000+00:00
path                      WORK/runs/use_case_m_gemini-2.5-flash_20260501T120000Z_000001
commands run              1
commands denied           1
duration s                90
tokens in/out             -/-
cost usd                  -
exit status               -
exit code                 -
error                     -
model calls               -
notes                     -

FILE               SIZE       SHA256
PROMPT.txt         48 bytes   fb9a5a3eef856d72
audit.md           33 bytes   7248ae35c5319d9d
metadata.json      751 bytes  HASH
report.md          60 bytes   89be861dbbc38a1b
run_summary.json   274 bytes  80fc2740d73e70a0
shell_audit.jsonl  205 bytes  49cb85fe5470d9e4
system_prompt.txt  78 bytes   c3914c42312d02e3
"""
"""What `show` prints of the variant-a run: its identity, then its files (sizes, hashes)."""


def test_show_prints_identity_and_files(populated: Ledger, tmp_path: Path) -> None:
    run_id = populated.runs()[0].run_id
    code, out, _ = run("show", "--ledger", str(populated.root), run_id[:12])
    assert code == 0
    # metadata.json holds the run id, whose random part changes its hash from run to run.
    shown = re.sub(r"(metadata\.json +751 bytes  )[0-9a-f]{16}", r"\1HASH", out)
    assert normalised(shown, populated.root) == SHOWN.replace("WORK", WORK)
    code, out, _ = run("show", "--ledger", str(populated.root), run_id, "--file", "report.md")
    assert code == 0 and out.startswith("# Report")
    code, _, err = run("show", "--ledger", str(populated.root), run_id, "--file", "nope.md")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: run use_case_m_gemini-2.5-flash_20260501T120000Z_000001 has no "
        "file 'nope.md' (it has: MANIFEST.json, PROMPT.txt, audit.md, "
        "metadata.json, report.md, run_summary.json, shell_audit.jsonl, "
        "system_prompt.txt)\n"
    )
    code, _, err = run("show", "--ledger", str(populated.root), run_id, "--file", "../ledger.json")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: artifact name '../ledger.json' is not safe: each path part may "
        "hold letters, digits, '.', '_', '+' and '-', must not start with '.' or "
        "'-', and '..' is refused\n"
    )
    code, out, _ = run("show", "--ledger", str(populated.root), run_id, "--json")
    assert json.loads(out)["metadata"]["run_id"] == run_id


def test_show_refuses_an_artifact_changed_after_sealing(populated: Ledger, tmp_path: Path) -> None:
    """`show --file` prints the run's evidence: changed bytes must not pass for it."""
    run_id = populated.runs()[0].run_id
    report = populated.root / "runs" / run_id / "report.md"
    report.chmod(0o644)
    report.write_bytes(report.read_bytes().replace(b"Report", b"Tampered", 1))
    code, out, err = run("show", "--ledger", str(populated.root), run_id, "--file", "report.md")
    assert code == 3 and normalised(out, tmp_path) == ""
    assert normalised(err, tmp_path) == (
        "Error: report.md of run "
        "use_case_m_gemini-2.5-flash_20260501T120000Z_000001 does not match its "
        "manifest (sha256:74e614293b3a..., 62 bytes; sealed as "
        "sha256:89be861dbbc3..., 60 bytes): it was changed after the run was "
        "sealed, so it is not read as the run's evidence; `agentledger verify "
        "use_case_m_gemini-2.5-flash_20260501T120000Z_000001` lists every problem, "
        "and the file is at /home/ops/work/ledger/runs/use_case_m_gemini-2.5-flash_"
        "20260501T120000Z_000001/report.md\n"
    )
    code, out, _ = run("show", "--ledger", str(populated.root), run_id, "--file", "MANIFEST.json")
    assert code == 0 and json.loads(out)["run_id"] == run_id


def test_agent_output_cannot_drive_the_terminal() -> None:
    from agentledger.cli.output import terminal_safe

    assert terminal_safe("\x1b]0;pwned\x07\x1b[2J ok\n\ttab") == (
        "\\x1b]0;pwned\\x07\\x1b[2J ok\n\ttab"
    )


def test_sql_reads_and_refuses_writes(populated: Ledger, tmp_path: Path) -> None:
    root = str(populated.root)
    code, out, _ = run(
        "sql",
        "--ledger",
        root,
        "SELECT model, count(*) AS n FROM runs GROUP BY model ORDER BY model",
        "--json",
    )
    assert code == 0
    assert json.loads(out) == [
        {"model": "claude-haiku-4-5", "n": 1},
        {"model": "gemini-2.5-flash", "n": 2},
    ]
    for statement in (
        "DELETE FROM runs",
        "UPDATE runs SET model = 'x'",
        "DROP TABLE runs",
        "INSERT INTO run_tags VALUES ('a', 'b', 'c')",
        "WITH x AS (SELECT 1) DELETE FROM runs",
        "ATTACH DATABASE 'other.db' AS other",
        "PRAGMA journal_mode = DELETE",
        "CREATE TABLE t (x)",
        "SELECT 1; DELETE FROM runs",
    ):
        code, _, err = run("sql", "--ledger", root, statement)
        assert code == 2, statement
        assert err.startswith("Error:"), statement
    assert populated.count() == 3
    code, _, err = run("sql", "--ledger", root, "SELEC nonsense")
    assert (
        code == 2 and normalised(err, tmp_path) == 'Error: SQL error: near "SELEC": syntax error\n'
    )
    query = "SELECT model, count(*) AS n FROM runs GROUP BY model ORDER BY model"
    code, out, _ = run("sql", "--ledger", root, query)
    assert (code, out) == (0, "MODEL             N\nclaude-haiku-4-5  1\ngemini-2.5-flash  2\n")


def test_export_formats(populated: Ledger, tmp_path: Path) -> None:
    root = str(populated.root)
    code, out, _ = run("export", "--ledger", root)
    document = json.loads(out)
    assert document["count"] == 3 and len(document["runs"]) == 3
    first = document["runs"][0]
    assert {"run_id", "system_prompt_hash", "model", "agent", "silent_update_detectable"} <= set(
        first
    )
    assert first["path"] == f"runs/{first['run_id']}"

    code, out, _ = run(
        "export", "--ledger", root, "--format", "jsonl", "--model", "gemini-2.5-flash"
    )
    assert [json.loads(line)["model"] for line in out.splitlines()] == ["gemini-2.5-flash"] * 2

    target = tmp_path / "run_index.csv"
    code, _, err = run("export", "--ledger", root, "--format", "csv", "-o", str(target))
    assert (code, err) == (0, f"Exported 3 runs to {target}\n")
    with target.open() as handle:
        assert len(list(csv.DictReader(handle))) == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run_index.csv")]


def test_schema_lists_and_prints(tmp_path: Path) -> None:
    code, out, _ = run("schema")
    assert code == 0
    # Each name, then its record's first line, in one column two spaces past the longest name.
    lines = out.splitlines()
    width = max(len(line.split()[0]) for line in lines)
    assert all(line[width : width + 2] == "  " and line[width + 2] != " " for line in lines)
    shell_event = "One command the agent ran or tried (a line of shell_audit.jsonl)."
    assert f"{'shell-event':<{width}}  {shell_event}" in lines
    code, out, _ = run("schema", "metadata")
    schema = json.loads(out)
    assert "system_prompt_hash" in schema["properties"]
    code, _, err = run("schema", "nope")
    assert code == 2 and normalised(err, tmp_path) == (
        "Usage: main schema [OPTIONS] [NAME]\n"
        "Try 'main schema --help' for help.\n"
        "\n"
        "Error: Invalid value for NAME: unknown record 'nope'; choose one of "
        "agent, decision, fixture-lock, fixture-recording, fixture-results, "
        "fixture-suite, lab, label, ledger, manifest, metadata, outcome, policy, "
        "response, scenario, score, sentinel, shell-event, split, summary, "
        "trace-step, trajectory-references, variant\n"
    )


def test_init_with_a_size_limit(tmp_path: Path) -> None:
    code, out, _ = run("init", str(tmp_path / "l"), "--max-artifact-size", "5MB")
    assert (code, out) == (0, f"Created ledger at {tmp_path / 'l'} (artifacts up to 5 MB)\n")
    code, _, err = run("init", str(tmp_path / "l2"), "--max-artifact-size", "lots")
    assert (code, err) == (
        2,
        usage_error(
            "init [OPTIONS] [PATH]",
            "Invalid value for --max-artifact-size: 'lots' is not a size "
            "(examples: 100MB, 1.5GB, 52428800)",
        ),
    )
    (tmp_path / "afile").write_text("x")
    code, _, err = run("init", str(tmp_path / "afile"))
    assert (code, err) == (
        2,
        f"Error: {tmp_path / 'afile'} is a file, not a directory; cannot create a ledger\n",
    )


def test_runs_filter_by_kind_and_show_it(ledger: Ledger, write_run: WriteRun) -> None:
    agent = write_run("use_case_m")
    write_run("sql.delete-old-dumps", kind="fixture")
    root = str(ledger.root)
    code, out, _ = run("runs", "--ledger", root, "--kind", "fixture")
    assert code == 0 and normalised(out, ledger.root.parent) == (
        "RUN_ID                                                         SCENARIO   "
        "           MODEL             PROMPT    VARIANT  STARTED           "
        "CMDS/DENIED  BACKFILLED  KIND\n"
        "sql.delete-old-dumps_gemini-2.5-flash_20260501T120000Z_000001  "
        "sql.delete-old-dumps  gemini-2.5-flash  6a00782a  -        2026-03-12 "
        "10:16  1/1          no          fixture\n"
    )
    assert (
        out.splitlines()[0].split()[-1] == "KIND" and out.splitlines()[1].split()[-1] == "fixture"
    )
    code, out, _ = run("runs", "--ledger", root, "--kind", "agent", "--kind", "fixture", "--json")
    assert code == 0 and {r["kind"] for r in json.loads(out)} == {"agent", "fixture"}
    code, out, _ = run("export", "--ledger", root, "--format", "csv", "--kind", "agent")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [(r["run_id"], r["kind"]) for r in rows] == [(agent, "agent")]
    code, _, err = run("runs", "--ledger", root, "--kind", "probe")
    assert (code, err) == (
        2,
        usage_error(
            "runs [OPTIONS]",
            "Invalid value for '--kind': 'probe' is not one of 'agent', 'fixture', 'sentinel', "
            "'variant'.",
        ),
    )
