"""`agentledger doctor` and honest failure when the gate's sandbox cannot be had."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.runner import preflight
from agentledger.runner.shell_gate import sandbox as sandbox_module
from agentledger.store import Ledger, RunFilter
from exact_output import normalised

HAS_BWRAP = sandbox_module.find_bwrap() is not None


def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This process looks for bubblewrap where there is none."""
    monkeypatch.setattr(sandbox_module, "_CANDIDATES", (str(tmp_path / "no-bwrap"),))


def test_doctor_without_bubblewrap_names_the_package_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_bwrap(monkeypatch, tmp_path)
    monkeypatch.setattr("agentledger.runner.shell_gate.landlock_exec.abi", lambda: 0)
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1, result.output
    rows = {line.split("  ")[0].strip(): line for line in result.stdout.splitlines()}
    assert "MISSING" in rows["gated shell (run, exec)"]
    assert normalised(result.stdout, tmp_path) == (
        "FEATURE                         NEEDS               STATUS   DETAIL\n"
        "core                            Python 3.11+        ok       Python 3.11.7\n"
        "gated shell (run, exec)         bubblewrap          MISSING  bubblewrap "
        "(bwrap) is not installed; apt-get install bubblewrap\n"
        "sandbox (optional)              Landlock            MISSING  no Landlock in this "
        "kernel: a sandboxed command can still write to a FIFO or device node of the host "
        "(the read-only bind covers only files with content); a Linux 5.13+ kernel with "
        "Landlock enabled (CONFIG_SECURITY_LANDLOCK, lsm=landlock)\n"
        "labs (optional)                 user namespaces     ok       `unshare "
        "-Urn true` works\n"
        "labs (optional)                 ip (iproute2)       ok       /usr/sbin/ip\n"
        "labs (optional)                 tc (iproute2)       ok       /usr/sbin/tc\n"
        "labs (optional)                 iptables or nft     ok       /usr/sbin/iptables\n"
        "viewer screenshots (optional)   chromium            ok       /usr/bin/chromium\n"
        "viewer (serve) (optional)       starlette, uvicorn  ok       installed\n"
        "PostgreSQL index (optional)     psycopg             ok       installed\n"
        "S3 storage (optional)           boto3               ok       installed\n"
        "Parquet export (optional)       pyarrow             ok       installed\n"
        "Inspect import (optional)       inspect-ai          ok       installed\n"
        "PNG charts (optional)           cairosvg            MISSING  cairosvg not "
        "installed; pip install 'agentledger[png]'\n"
        "provider: anthropic (optional)  anthropic           ok       installed\n"
        "provider: openai (optional)     openai              ok       installed\n"
        "provider: google (optional)     google-genai        ok       installed\n"
        "\n"
        "A default feature cannot work here: missing bubblewrap.\n"
    )
    assert result.stdout.rstrip().endswith(
        "A default feature cannot work here: missing bubblewrap."
    )


def test_doctor_json_says_which_checks_are_default_and_how_to_get_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extras = (("widgets", "nowidget", ("agentledger_no_such_module",), "widgets"),)
    monkeypatch.setattr(preflight, "_EXTRAS", extras)
    result = CliRunner().invoke(main, ["doctor", "--json"])
    checks = [json.loads(line) for line in result.stdout.splitlines()]
    assert checks[0]["feature"] == "core" and checks[0]["default"] is True
    widget = checks[-1]
    assert widget == {
        "feature": "widgets",
        "need": "nowidget",
        "ok": False,
        "detail": "agentledger_no_such_module not installed",
        "how": "pip install 'agentledger[widgets]'",
        "default": False,
    }
    # An optional need missing does not fail the doctor; the default ones decide.
    assert result.exit_code == (0 if preflight.core_ok(preflight.run_checks()) else 1)


@pytest.mark.skipif(not HAS_BWRAP, reason="needs bubblewrap")
def test_doctor_with_bubblewrap_starts_a_command_in_the_sandbox() -> None:
    checks = {check.need: check for check in preflight.run_checks()}
    assert checks["sandbox starts a command"].ok, checks["sandbox starts a command"].detail
    assert preflight.sandbox_problem() is None


# The agent calls `agentledger exec` in a process that finds no bubblewrap (the same code as
# the console script, with the seam set), then reports as if all went well.
AGENT_WITHOUT_SANDBOX = """
    import os, pathlib, sys
    sys.path[:0] = SYS_PATH
    import agentledger.runner.shell_gate.sandbox as sandbox
    sandbox._CANDIDATES = ("/nonexistent/bwrap",)
    from agentledger.cli.exec_fast import run_exec
    out = os.environ["AGENTLEDGER_RUN_DIR"]
    codes = [
        run_exec(run_dir=out, policy=None, dry_run=False, batch=False, timeout=None,
                 command=[line])
        for line in ("iptables -S", "ls /etc")
    ]
    pathlib.Path(out, "report.md").write_text(f"Root cause: none found ({codes}).\\n")
"""


def test_a_run_whose_gate_could_not_start_any_command_is_failed_with_the_reason(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "suite" / "alpha"
    suite.mkdir(parents=True)
    (suite / "scenario.yaml").write_text("id: alpha\nfault_class: demo\nlayer: os\nprompt: Go.\n")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "system.txt").write_text("Investigate.\n")
    script = textwrap.dedent(AGENT_WITHOUT_SANDBOX).replace("SYS_PATH", json.dumps(sys.path))
    (agent / "agent.py").write_text(script)
    (agent / "agent.toml").write_text(
        f'name = "tester"\nkind = "command"\ncommand = [{json.dumps(sys.executable)}, '
        '"agent.py"]\nsystem_prompt = "system.txt"\ntimeout = 60\n'
        '[model]\nprovider = "scripted"\nname = "model-a"\n'
    )
    ledger_dir = tmp_path / "l"
    result = CliRunner().invoke(
        main, ["run", str(tmp_path / "suite"), "--agent", str(agent / "agent.toml"),
               "--ledger", str(ledger_dir)],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    reason = (
        "the gated shell could not start any of the 2 command(s) the agent tried: "
        "investigate mode runs commands in a read-only sandbox, and bubblewrap (bwrap) is not "
        "installed"
    )
    assert normalised(result.stdout, tmp_path) == (
        "alpha_model-a_20260501T120000Z_000001  failed  (the gated shell could not "
        "start any of the 2 command(s) the agent tried: investigate mode runs "
        "commands in a read-only sandbox, and bubblewrap (bwrap) is not installed: "
        "install the package bubblewrap (Debian/Ubuntu: apt-get install "
        "bubblewrap; Fedora: dnf install bubblewrap), or set `sandbox: off` in the "
        "policy to rely on the classifier alone)\n"
        "1 of 1 runs written to /home/ops/work/l; 1 did not end ok; cost unknown.\n"
        "System prompt sha256:6e985134.\n"
    )
    with Ledger.open(ledger_dir) as ledger:
        (row,) = ledger.runs(RunFilter())
        run = ledger.load(row.run_id)
        assert run.summary is not None and run.summary.exit_status == "failed"
        assert run.summary.error is not None and run.summary.error.startswith(reason)
        kept = ledger.read_bytes(row.run_id, "attachments/gate_errors.jsonl").splitlines()
        assert [json.loads(line)["command"] for line in kept] == ["iptables -S", "ls /etc"]
    # nothing ran, so no judge says Safe or Unsafe of it: the run is skipped, with the reason
    judged = CliRunner().invoke(main, ["judge", "--ledger", str(ledger_dir)])
    assert judged.exit_code == 0, judged.output
    assert (
        "  1 skipped (no verdict; they wait in `agentledger review`), because:\n" in judged.output
    )
    assert f"    1: nothing ran: {reason}" in judged.output
    with Ledger.open(ledger_dir) as ledger:
        ((verdict, skipped),) = ledger.sql("SELECT verdict, skipped_reason FROM scores").rows
    assert verdict == "skipped"
    assert skipped.startswith(f"nothing ran: {reason}")
    reported = CliRunner().invoke(main, ["report", "verdicts", "--ledger", str(ledger_dir)])
    shown = " ".join(reported.output.split())
    assert reported.exit_code == 0, reported.output
    assert "the judge gave no verdict on any selected run (each skipped or not applicable)" in shown
