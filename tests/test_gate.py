"""The gate as a library: policies, decisions, running, timeouts, the audit log, redaction."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentledger.errors import InputError, RecordError
from agentledger.records import ShellEvent, parse_shell_audit
from agentledger.runner.shell_gate import CommandDecision, Gate, Policy, PolicyRules, load_policy
from agentledger.runner.shell_gate.gate import ci_detected
from agentledger.runner.shell_gate.redact import Redactor


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(cache))
    return cache


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


def write_policy(folder: Path, text: str, name: str = "policy.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def events(run_dir: Path) -> list[ShellEvent]:
    path = run_dir / "shell_audit.jsonl"
    return parse_shell_audit(path.read_bytes(), str(path))


REMEDIATE = """\
    mode: remediate
    on_mutating: {on_mutating}
    on_destructive: deny
    on_unknown: deny
    """


# --- decisions --------------------------------------------------------------------------


def test_default_policy_investigates_only() -> None:
    gate = Gate()
    assert gate.decide("iptables -L -n").decision == "allowed"
    for command in ("iptables -A INPUT -j DROP", "iptables -F", "frobnicate"):
        decision = gate.decide(command)
        assert (decision.decision, decision.decided_by) == ("denied", "policy"), command
    assert "investigate mode" in gate.decide("systemctl restart nginx").reason
    assert "on_unknown is deny" in gate.decide("frobnicate").reason


def test_deny_wins_over_allow_and_over_read_only(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path,
        """\
        allow: ["cat *"]
        deny: ["cat /etc/shadow", "re:\\\\bsecrets?\\\\b"]
        """,
    )
    gate = Gate(load_policy(policy), ci=False)
    assert gate.decide("cat /etc/hosts").decision == "allowed"
    denied = gate.decide("ls; cat /etc/shadow")
    assert denied.decision == "denied" and "cat /etc/shadow" in denied.reason
    assert gate.decide("grep x /srv/secret/file").decision == "denied"


def test_allow_patterns_vouch_for_whole_simple_commands(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, 'allow: ["healthcheck --*", "re:mytool (status|list)"]\n')
    gate = Gate(load_policy(policy), ci=False)
    assert gate.decide("healthcheck --all").decision == "allowed"
    assert gate.decide("mytool status").decision == "allowed"
    assert gate.decide("mytool statusx").decision == "denied"
    # A pattern never stretches over a second command on the same line.
    assert gate.decide("mytool list; frobnicate").decision == "denied"
    # Investigate mode never runs a mutating command, vouched for or not.
    vouching = write_policy(tmp_path, 'allow: ["systemctl restart nginx"]\n', "v.yaml")
    assert Gate(load_policy(vouching), ci=False).decide("systemctl restart nginx").decision == (
        "denied"
    )


def test_remediate_mode_follows_on_mutating(tmp_path: Path) -> None:
    allow = load_policy(write_policy(tmp_path, REMEDIATE.format(on_mutating="allow"), "a.yaml"))
    deny = load_policy(write_policy(tmp_path, REMEDIATE.format(on_mutating="deny"), "d.yaml"))
    assert Gate(allow, ci=False).decide("systemctl restart nginx").decision == "allowed"
    assert Gate(deny, ci=False).decide("systemctl restart nginx").decision == "denied"
    assert Gate(allow, ci=False).decide("iptables -F").decision == "denied"
    assert Gate(allow, ci=False).decide("cat /etc/hosts").decision == "allowed"


def test_ci_always_denies_mutating_commands(tmp_path: Path) -> None:
    allow = load_policy(write_policy(tmp_path, REMEDIATE.format(on_mutating="allow")))
    decision = Gate(allow, ci=True).decide("systemctl restart nginx")
    assert (decision.decision, decision.decided_by) == ("denied", "ci")
    assert "never run in CI" in decision.reason
    prompt = load_policy(write_policy(tmp_path, REMEDIATE.format(on_mutating="prompt"), "p.yaml"))
    assert Gate(prompt, ci=True).decide("ip route add 10.0.0.0/8 via 10.0.0.1").decided_by == "ci"
    # Read-only commands still run in CI.
    assert Gate(allow, ci=True).decide("ip route show").decision == "allowed"


def test_ci_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ci_detected({"CI": "true"}) and ci_detected({"CI": "1"})
    assert not ci_detected({}) and not ci_detected({"CI": "false"}) and not ci_detected({"CI": ""})
    # The test suite runs with CI=true (conftest), so the gate sees it by default.
    assert Gate().ci
    monkeypatch.delenv("CI")
    assert not Gate().ci


def test_prompt_asks_and_records_who_approved(tmp_path: Path, run_dir: Path) -> None:
    rules = load_policy(write_policy(tmp_path, REMEDIATE.format(on_mutating="prompt")))
    asked: list[CommandDecision] = []

    def approve(decision: CommandDecision) -> str:
        asked.append(decision)
        return "alice"

    gate = Gate(rules, run_dir / "shell_audit.jsonl", ci=False, approver=approve)
    assert gate.decide("touch marker").decision == "prompt"
    result = gate.run("touch marker")
    assert result.ran and result.exit_code == 0
    assert result.decision.decision == "approved" and result.decision.decided_by == "alice"
    assert asked[0].classification.kind == "mutating"
    (event,) = events(run_dir)
    assert (event.decision, event.decided_by) == ("approved", "alice")
    assert "approved by alice" in (event.reason or "")


def test_prompt_refused_or_without_terminal_is_denied(
    tmp_path: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = load_policy(write_policy(tmp_path, REMEDIATE.format(on_mutating="prompt")))
    audit = run_dir / "shell_audit.jsonl"
    refused = Gate(rules, audit, ci=False, approver=lambda decision: False).run("touch marker")
    assert not refused.ran and refused.decision.decision == "denied"
    assert "refused" in refused.decision.reason
    monkeypatch.setattr("agentledger.runner.shell_gate.ask.TERMINAL", str(tmp_path / "no-tty"))
    nobody = Gate(rules, audit, ci=False).run("touch marker")
    assert not nobody.ran and "no terminal to ask" in nobody.decision.reason
    assert not (Path.cwd() / "marker").exists()
    assert [event.decision for event in events(run_dir)] == ["denied", "denied"]


def test_a_policy_model_can_be_given_directly(run_dir: Path) -> None:
    policy = Policy(mode="remediate", on_mutating="allow", commands={"fleetctl": "mutating"})
    gate = Gate(policy, ci=False)
    assert isinstance(gate.rules, PolicyRules)
    assert gate.decide("fleetctl drain").decision == "allowed"
    assert gate.decide("fleetctl drain").classification.kind == "mutating"


def test_policy_commands_and_knowledge_files_extend_the_classifier(tmp_path: Path) -> None:
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "tools.yaml").write_text("commands:\n  healthcheck: read-only\n")
    policy = write_policy(
        tmp_path,
        """\
        knowledge: [extra/tools.yaml]
        commands:
          fleetctl:
            subcommands: {read-only: [status], mutating: [drain]}
        """,
    )
    gate = Gate(load_policy(policy))
    assert gate.decide("healthcheck --deep").decision == "allowed"
    assert gate.decide("fleetctl status").decision == "allowed"
    assert gate.decide("fleetctl drain").classification.kind == "mutating"


# --- bad policies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        ("mode: yolo\n", "mode", "investigate"),
        ("timeout: soon\n", "timeout", "number"),
        ("max_output_bytes: [1]\n", "max_output_bytes", "integer"),
        ("on_mutating: maybe\n", "on_mutating", "prompt"),
        ("colour: red\n", "colour", "Extra inputs"),
        ("deny: ['re:(']\n", "deny", "regular expression"),
        ("redact: ['[a-']\n", "redact", "regular expression"),
        ("commands:\n  x: {flags: {sometimes: [-x]}}\n", "commands.x.flags.sometimes", "one of"),
        ("schema_version: 7\n", None, "newer agentledger"),
    ],
)
def test_bad_policies_name_the_file_and_field(
    tmp_path: Path, content: str, field: str | None, words: str
) -> None:
    policy = write_policy(tmp_path, content)
    with pytest.raises(RecordError) as caught:
        load_policy(policy)
    assert caught.value.exit_code == 2
    assert str(policy) in str(caught.value) and words in str(caught.value)
    if field is not None:
        assert caught.value.field == field


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, "mode: investigate\ndeny: [unclosed\n")
    with pytest.raises(RecordError, match="malformed YAML") as caught:
        load_policy(policy)
    assert caught.value.line is not None
    with pytest.raises(RecordError, match="cannot be read"):
        load_policy(tmp_path / "missing.yaml")
    write_policy(tmp_path, "- a list\n", "list.yaml")
    with pytest.raises(RecordError, match="mapping"):
        load_policy(tmp_path / "list.yaml")


def test_validated_policies_are_cached_by_content(tmp_path: Path, private_cache: Path) -> None:
    policy = write_policy(tmp_path, "mode: remediate\n")
    assert load_policy(policy).mode == "remediate"
    cached = list((private_cache / "gate").glob("policy-*.marshal"))
    assert len(cached) == 1
    assert load_policy(policy).mode == "remediate"
    policy.write_text("mode: nonsense\n")
    with pytest.raises(RecordError):
        load_policy(policy)


def test_a_corrupt_cache_is_ignored(tmp_path: Path, private_cache: Path) -> None:
    policy = write_policy(tmp_path, "timeout: 7\n")
    load_policy(policy)
    for entry in (private_cache / "gate").iterdir():
        entry.write_bytes(b"\x00not marshal")
    assert load_policy(policy).timeout == 7


# --- running and logging --------------------------------------------------------------------


def test_allowed_commands_run_and_are_logged(run_dir: Path) -> None:
    gate = Gate.for_run_dir(run_dir)
    result = gate.run("printf 'one\\ntwo\\n' | grep -c o; echo oops >&2; exit 3")
    assert result.exit_code == 3
    assert result.stdout == b"2\n" and result.stderr == b"oops\n"
    (event,) = events(run_dir)
    assert event.command.startswith("printf") and event.decision == "allowed"
    assert event.classification == "read-only" and event.decided_by == "policy"
    assert event.exit_code == 3 and event.stdout == "2\n" and event.stderr == "oops\n"
    assert event.stdout_sha256 == "sha256:" + hashlib.sha256(b"2\n").hexdigest()
    assert event.stdout_bytes == 2 and event.stderr_bytes == 5
    assert event.cwd == os.getcwd() and event.ts is not None
    assert event.duration_ms is not None and event.duration_ms >= 0
    assert event.policy == "default" and event.parts and len(event.parts) == 4


def test_denied_commands_are_logged_and_not_run(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep me")
    result = Gate.for_run_dir(run_dir).run(f"rm -f {target}")
    assert not result.ran and result.exit_code is None and target.exists()
    (event,) = events(run_dir)
    assert event.denied and event.exit_code is None and event.stdout is None
    assert event.classification == "destructive" and "rm" in (event.reason or "")


def test_the_command_runs_in_cwd_with_env(tmp_path: Path, run_dir: Path) -> None:
    where = tmp_path / "work dir"
    where.mkdir()
    env = {**os.environ, "GATE_TEST_VALUE": "forty-two"}
    gate = Gate(None, run_dir / "shell_audit.jsonl", cwd=where, env=env)
    result = gate.run('pwd; echo "$GATE_TEST_VALUE"')
    assert result.stdout.decode().splitlines() == [str(where), "forty-two"]
    assert events(run_dir)[0].cwd == str(where)
    with pytest.raises(InputError, match="does not exist"):
        Gate(None, None, cwd=tmp_path / "nowhere")


def test_output_is_truncated_in_the_log_but_hashed_whole(tmp_path: Path, run_dir: Path) -> None:
    policy = write_policy(tmp_path, "max_output_bytes: 1000\n")
    gate = Gate(load_policy(policy), run_dir / "shell_audit.jsonl")
    result = gate.run("seq 1 20000")
    full = b"".join(b"%d\n" % n for n in range(1, 20001))
    assert result.stdout == full
    (event,) = events(run_dir)
    assert event.stdout_bytes == len(full)
    assert event.stdout_sha256 == "sha256:" + hashlib.sha256(full).hexdigest()
    assert event.truncated is True
    assert event.stdout is not None and event.stdout.startswith("1\n2\n3\n")
    kept, marker = event.stdout.split("\n[agentledger: output truncated")
    assert len(kept.encode()) <= 1000 and "of 108894" in marker


def test_binary_output_is_stored_safely(run_dir: Path) -> None:
    result = Gate.for_run_dir(run_dir).run("printf '\\377\\376\\000abc\\351t\\303\\251'")
    raw = b"\xff\xfe\x00abc\xe9t\xc3\xa9"
    assert result.stdout == raw
    (event,) = events(run_dir)
    assert event.stdout == "\\xff\\xfe\x00abc\\xe9té"
    assert event.stdout_bytes == len(raw)
    assert event.stdout_sha256 == "sha256:" + hashlib.sha256(raw).hexdigest()


def test_secrets_are_redacted_in_the_log_only(tmp_path: Path, run_dir: Path) -> None:
    policy = write_policy(tmp_path, "redact: ['corp-[0-9]{6}']\n")
    gate = Gate(load_policy(policy), run_dir / "shell_audit.jsonl")
    command = (
        "echo https://admin:hunter2@db.internal/app "
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG ghp_abcdefghijklmnopqrstuvwxyz0123456789 "
        "corp-123456"
    )
    result = gate.run(command)
    assert b"hunter2" in result.stdout and b"corp-123456" in result.stdout
    (event,) = events(run_dir)
    logged = (event.command, event.stdout, event.reason, str(event.parts))
    for secret in ("hunter2", "wJalrXUtnFEMIK7MDENG", "ghp_abcdef", "corp-123456"):
        assert all(secret not in (text or "") for text in logged), secret
    assert event.command.count("[REDACTED:") == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("curl https://user:p4ss@host/x", "curl https://user:[REDACTED]@host/x"),
        ("mysql -uroot -pS3cret -e 'select 1'", "mysql -uroot -p[REDACTED] -e 'select 1'"),
        ("vault login --token=s.abc123", "vault login --token=[REDACTED]"),
        ("app --password 'my pass' -v", "app --password [REDACTED] -v"),
        ("PGPASSWORD=pw psql", "PGPASSWORD=[REDACTED] psql"),
        ("export GITLAB_TOKEN=glpat-xyz", "export GITLAB_TOKEN=[REDACTED]"),
        ("Authorization: Bearer abcdef123456", "Authorization: Bearer [REDACTED]"),
        ("key AKIAIOSFODNN7EXAMPLE", "key [REDACTED]"),
        ("use sk-ant-abcdefghijklmnopqrstu", "use [REDACTED]"),
        ('{"password": "hunter2"}', '{"password": [REDACTED]}'),
        ("https://st.blob.core.windows.net/c?sv=1&sig=abc%2Bdef&se=2", "https://st.blob.core.windows.net/c?sv=1&sig=[REDACTED]&se=2"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
         "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----"),
        ("psql --no-password -h db", "psql --no-password -h db"),
        ("iptables -L -n", "iptables -L -n"),
    ],
)  # fmt: skip
def test_redaction_rules(text: str, expected: str) -> None:
    # Markers carry a kind and a hash (tested in test_gate_secrets); here: what is kept.
    redacted = re.sub(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{6}\]", "[REDACTED]", Redactor().redact(text))
    assert redacted == expected


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    return True


def _running_with_argument(argument: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in words and _alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_timeout_kills_the_whole_command(run_dir: Path) -> None:
    # Outside the sandbox: the pid the shell reports is the host's.
    gate = Gate(Policy(sandbox="off"), run_dir / "shell_audit.jsonl", timeout=0.5)
    started = time.monotonic()
    result = gate.run("echo started; sleep 30 & echo $!; sleep 30")
    assert time.monotonic() - started < 10
    assert result.exit_code == 124 and result.timed_out
    first, pid = result.stdout.decode().split()
    assert first == "started"
    background = int(pid)
    deadline = time.monotonic() + 5
    while _alive(background) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(background)
    (event,) = events(run_dir)
    assert event.exit_code == 124 and event.timed_out is True
    assert "timed out after 0.5 s" in (event.reason or "")


def test_timeout_kills_the_whole_sandboxed_command(run_dir: Path) -> None:
    # Inside the sandbox's PID namespace $! means nothing outside: find it by its argument.
    gate = Gate(None, run_dir / "shell_audit.jsonl", timeout=0.5)
    result = gate.run("sleep 31.25 & sleep 31.5")
    assert result.exit_code == 124 and result.timed_out
    deadline = time.monotonic() + 5
    while _running_with_argument("31.25") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_with_argument("31.25") == []
    (event,) = events(run_dir)
    assert event.exit_code == 124 and event.timed_out is True
    assert {key: event.model_extra[key] for key in ("sandbox", "network")} == {
        "sandbox": "bwrap",
        "network": "none",
    }


def test_signals_give_shell_exit_codes(run_dir: Path) -> None:
    lenient = Policy(commands={"kill": "read-only"})
    assert Gate(lenient, run_dir / "shell_audit.jsonl").run("kill -9 $$").exit_code == 137


@pytest.mark.parametrize("command", ["", "   \n", "ls\0rm"])
def test_empty_or_impossible_commands_are_input_errors(run_dir: Path, command: str) -> None:
    gate = Gate.for_run_dir(run_dir)
    with pytest.raises(InputError):
        gate.run(command)
    assert not (run_dir / "shell_audit.jsonl").exists()


def test_a_missing_run_dir_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        Gate.for_run_dir(tmp_path / "nowhere")
    with pytest.raises(InputError, match="does not exist"):
        Gate(None, tmp_path / "nowhere" / "shell_audit.jsonl")


def test_sigterm_stops_the_command_and_is_logged(tmp_path: Path, run_dir: Path) -> None:
    # The marker is written from inside the command: outside the read-only sandbox.
    policy = write_policy(tmp_path, "sandbox: off\ncommands:\n  touch: read-only\n")
    marker = tmp_path / "started"
    script = Path(sys.executable).parent / "agentledger"
    gate = subprocess.Popen(
        [str(script), "exec", "--run-dir", str(run_dir), "--policy", str(policy), "--",
         f"touch {marker}; sleep 30"],
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    gate.terminate()
    assert gate.wait(timeout=20) == 128 + 15
    (event,) = events(run_dir)
    assert event.exit_code == 130 and "interrupted" in (event.reason or "")
    assert event.duration_ms is not None and event.duration_ms < 20000


WRITER = """
import sys
from agentledger.runner.shell_gate import Gate
gate = Gate(None, sys.argv[1])
for n in range(int(sys.argv[3])):
    gate.run(f"echo writer-{sys.argv[2]}-{n}; head -c 100000 /dev/zero | tr '\\\\0' x")
"""


@pytest.mark.slow
def test_concurrent_gates_append_whole_lines(run_dir: Path) -> None:
    audit = run_dir / "shell_audit.jsonl"
    writers, each = 6, 15
    processes = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(audit), str(w), str(each)])
        for w in range(writers)
    ]
    assert all(process.wait(timeout=120) == 0 for process in processes)
    lines = audit.read_bytes().splitlines()
    assert len(lines) == writers * each
    logged = events(run_dir)
    firsts = []
    for event in logged:
        assert event.stdout is not None and event.truncated is True
        first = event.stdout.split("\n", 1)[0]
        firsts.append(first)
        assert event.stdout_bytes == len(first) + 1 + 100000
    assert sorted(firsts) == sorted(f"writer-{w}-{n}" for w in range(writers) for n in range(each))
