"""`agentledger exec` on the command line: the real console script, and the click command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.records import parse_shell_audit

SCRIPT = Path(sys.executable).parent / "agentledger"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AGENTLEDGER_RUN_DIR", raising=False)
    monkeypatch.delenv("AGENTLEDGER_POLICY", raising=False)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


def agentledger(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as an agent runs it."""
    return subprocess.run(
        [str(SCRIPT), *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def audit(run_dir: Path) -> list[dict[str, object]]:
    path = run_dir / "shell_audit.jsonl"
    parse_shell_audit(path.read_bytes(), str(path))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_allowed_command_output_and_exit_code_pass_through(run_dir: Path) -> None:
    done = agentledger("exec", "--run-dir", str(run_dir), "--", "echo hello; echo err >&2; exit 7")
    assert (done.returncode, done.stdout, done.stderr) == (7, "hello\n", "err\n")
    (event,) = audit(run_dir)
    assert event["decision"] == "allowed" and event["exit_code"] == 7


def test_several_words_are_an_argv_quoted_as_given(run_dir: Path) -> None:
    done = agentledger("exec", "--run-dir", str(run_dir), "printf", "%s|", "a b", "$HOME", "it's")
    assert done.returncode == 0 and done.stdout == "a b|$HOME|it's|"
    (event,) = audit(run_dir)
    assert event["command"] == "printf '%s|' 'a b' '$HOME' 'it'\"'\"'s'"


def test_denied_command_exits_126_with_the_reason(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "keep"
    target.write_text("x")
    done = agentledger("exec", "--run-dir", str(run_dir), "--", f"rm -f {target}")
    assert done.returncode == 126 and done.stdout == ""
    assert "denied by policy [destructive]" in done.stderr and "rm" in done.stderr
    assert target.exists()
    (event,) = audit(run_dir)
    assert event["decision"] == "denied" and event["exit_code"] is None


def test_the_environment_contract(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: remediate\non_mutating: allow\ncommands:\n  healthcheck: read-only\n")
    monkeypatch.setenv("AGENTLEDGER_RUN_DIR", str(run_dir))
    monkeypatch.setenv("AGENTLEDGER_POLICY", str(policy))
    done = agentledger("exec", "--", "healthcheck --deep")
    # Known to the policy's knowledge, so classified (and then not found by the shell).
    assert done.returncode == 127
    # CI=true (set for the whole test suite): mutating commands never run.
    refused = agentledger("exec", "--", "touch made-in-ci")
    assert refused.returncode == 126 and "denied by ci" in refused.stderr
    assert [event["policy"] for event in audit(run_dir)] == [str(policy), str(policy)]


def test_without_a_run_dir_exec_refuses() -> None:
    done = agentledger("exec", "--", "true")
    assert done.returncode == 2 and "AGENTLEDGER_RUN_DIR" in done.stderr


def test_a_run_dir_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    done = agentledger("exec", "--run-dir", str(tmp_path / "nope"), "--", "true")
    assert done.returncode == 2 and "does not exist" in done.stderr


@pytest.mark.parametrize(
    ("content", "field"),
    [("mode: yolo\n", "mode"), ("timeout: [1, 2]\n", "timeout"), ("mode: [\n", None)],
)
def test_bad_policy_exits_2_naming_file_and_field(
    run_dir: Path, tmp_path: Path, content: str, field: str | None
) -> None:
    policy = tmp_path / "bad-policy.yaml"
    policy.write_text(content)
    done = agentledger("exec", "--run-dir", str(run_dir), "--policy", str(policy), "--", "ls")
    assert done.returncode == 2
    assert str(policy) in done.stderr
    if field:
        assert f"field '{field}'" in done.stderr
    assert not (run_dir / "shell_audit.jsonl").exists()


@pytest.mark.parametrize("args", [["--"], [], ["--", ""], ["--bogus", "ls"], ["--timeout", "0"]])
def test_bad_usage_exits_2(run_dir: Path, args: list[str]) -> None:
    done = agentledger("exec", "--run-dir", str(run_dir), *args)
    assert done.returncode == 2, done.stderr
    assert not (run_dir / "shell_audit.jsonl").exists()


def test_timeout_exits_124(run_dir: Path) -> None:
    done = agentledger("exec", "--run-dir", str(run_dir), "--timeout", "0.3", "--", "sleep 20")
    assert done.returncode == 124 and "timed out after 0.3 s" in done.stderr
    (event,) = audit(run_dir)
    assert event["timed_out"] is True


def test_stdin_is_passed_to_the_command(run_dir: Path) -> None:
    done = agentledger("exec", "--run-dir", str(run_dir), "--", "grep -c x", stdin="x\ny\nx\n")
    assert done.returncode == 0 and done.stdout == "2\n"


def test_dry_run_prints_the_decision_and_runs_nothing(tmp_path: Path) -> None:
    done = agentledger("exec", "--dry-run", "--", f"sudo sh -c 'iptables -F' > {tmp_path}/x")
    assert done.returncode == 126
    assert "classification:  destructive" in done.stdout
    assert "iptables -F  (via sudo sh)" in done.stdout
    assert "decision:        denied (by policy)" in done.stdout
    assert not (tmp_path / "x").exists()
    allowed = agentledger("exec", "--dry-run", "--", "ip -br a")
    assert allowed.returncode == 0 and "decision:        allowed" in allowed.stdout


def test_batch_prints_one_json_object_per_command() -> None:
    corpus = "iptables -L -n\n\n# a comment\nkubectl delete pod x\nfrobnicate\n"
    done = agentledger("exec", "--batch", stdin=corpus)
    assert done.returncode == 0
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["command"], line["classification"], line["decision"]) for line in lines] == [
        ("iptables -L -n", "read-only", "allowed"),
        ("kubectl delete pod x", "destructive", "denied"),
        ("frobnicate", "unknown", "denied"),
    ]
    assert lines[1]["parts"][0]["reason"] == "kubectl delete is destructive"
    assert agentledger("exec", "--batch", "--", "ls").returncode == 2


def test_python_dash_m_and_help_go_through_the_same_entry(run_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentledger", "exec", "--run-dir", str(run_dir), "--", "echo hi"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == "hi\n"
    helped = agentledger("exec", "--help")
    assert helped.returncode == 0 and "--dry-run" in helped.stdout and "126" in helped.stdout
    assert "exec" in agentledger("--help").stdout


def test_binary_output_reaches_the_caller_unchanged(run_dir: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "exec", "--run-dir", str(run_dir), "--", "printf '\\377\\000\\201'"],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == b"\xff\x00\x81"


# --- the click command (agentledger --help, docs, CliRunner) -------------------------------


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["exec", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_click_command_runs_and_logs(run_dir: Path) -> None:
    code, out, _ = invoke("--run-dir", str(run_dir), "--", "echo from click")
    assert (code, out) == (0, "from click\n")
    code, _, err = invoke("--run-dir", str(run_dir), "--", "reboot")
    assert code == 126 and "destructive" in err
    assert [event["decision"] for event in audit(run_dir)] == ["allowed", "denied"]


def test_click_command_dry_run_batch_and_errors(tmp_path: Path) -> None:
    code, out, _ = invoke("--dry-run", "--", "kubectl get pods")
    assert code == 0 and "read-only" in out
    code, out, _ = invoke("--batch", stdin="tc qdisc del dev eth0 root\n")
    assert code == 0 and json.loads(out)["classification"] == "mutating"
    code, _, err = invoke("--", "true")
    assert code == 2 and "No run directory" in err
    bad = tmp_path / "p.yaml"
    bad.write_text("on_destructive: sometimes\n")
    code, _, err = invoke("--policy", str(bad), "--dry-run", "--", "ls")
    assert code == 2 and "field 'on_destructive'" in err


def test_the_policy_schema_is_printable() -> None:
    result = CliRunner().invoke(main, ["schema", "policy"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert {"mode", "allow", "deny", "on_mutating", "timeout"} <= set(schema["properties"])


def test_packaged_policies_are_valid() -> None:
    from agentledger.runner.shell_gate.rules import DEFAULT_POLICY, load_policy

    example = os.path.join(os.path.dirname(DEFAULT_POLICY), "remediate.yaml")
    assert load_policy(DEFAULT_POLICY).mode == "investigate"
    remediate = load_policy(example)
    assert remediate.mode == "remediate" and remediate.on_mutating == "prompt"


START_UP_PROBE = """
import sys
sys.argv = ["agentledger", *sys.argv[1:]]
import atexit
heavy = ("re", "json", "enum", "dataclasses", "pathlib", "agentledger.runner.lab_shell")
atexit.register(lambda: sys.stderr.write("LOADED " + " ".join(
    name for name in heavy if name in sys.modules) + "\\n"))
from agentledger._entry import main
main()
"""


def test_exec_of_a_plain_command_loads_no_regular_expression_engine(run_dir: Path) -> None:
    # Every agent command pays the gate's start-up (issue 33: within 3x `python -c pass`):
    # a plain command, its audit line and its sandbox need neither `re` nor the lab code
    # (once the policy is in the cache: the first command validates it).
    assert agentledger("exec", "--run-dir", str(run_dir), "--", "true").returncode == 0
    for command in ("true", "ls -d /"):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                START_UP_PROBE,
                "exec",
                "--run-dir",
                str(run_dir),
                "--",
                command,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip().splitlines()[-1] == "LOADED", command
    assert [event["exit_code"] for event in audit(run_dir)] == [0, 0, 0]


def test_a_lab_named_in_the_environment_is_still_read(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentledger.runner.lab_shell import LAB_ENV
    from agentledger.runner.shell_gate import gate

    assert gate.LAB_ENV == LAB_ENV
    broken = tmp_path / "lab.json"
    broken.write_text("{}")
    monkeypatch.setenv(LAB_ENV, str(broken))
    done = agentledger("exec", "--run-dir", str(run_dir), "--", "true")
    assert done.returncode == 2 and "not a lab target file" in done.stderr
