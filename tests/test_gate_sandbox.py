"""The read-only sandbox: what the classifier lets through still cannot change a local file."""

from __future__ import annotations

import os
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from agentledger.cli.exec_fast import run_exec
from agentledger.records import parse_shell_audit
from agentledger.runner.shell_gate import Gate, Policy, load_policy
from agentledger.runner.shell_gate import sandbox as sandbox_module
from agentledger.runner.shell_gate.sandbox import Sandbox, find_bwrap
from agentledger.runner.shell_gate.unavailable import SandboxUnavailableError

# In CI a missing bubblewrap is a failure, not a skip: .ci/run installs it.
pytestmark = pytest.mark.skipif(
    find_bwrap() is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def scratch_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from agentledger.runner.shell_gate import sandbox

    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(sandbox, "SCRATCH_BASE", str(base))
    return base


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "F").write_text("precious\n")
    (folder / "G").write_text("line one\nline two\n")
    return folder


def audit(run_dir: Path) -> list[dict[str, object]]:
    return audit_file(run_dir / "shell_audit.jsonl")


def audit_file(path: Path) -> list[dict[str, object]]:
    return [event.model_dump() for event in parse_shell_audit(path.read_bytes(), str(path))]


# The classifier now sees through what once fooled it (these four were read-only by their
# text); the sandbox test below needs commands it still calls read-only.
ONCE_MISCLASSIFIED = [
    "x='a[$(rm -f F)]'; echo $((x))",
    "sed -n '1e rm F' G",
    "sort -oF G",
    "awk 'BEGIN{system (\"rm F\")}'",
]
# Each of these is read-only by its text, and deletes F when run in a repository whose own
# configuration (which no command line shows) names a program to run.
MISCLASSIFIED = ["git status", "git diff --stat", "git -C . status --short"]


@pytest.fixture
def trapped_repository(workdir: Path) -> Path:
    """`workdir` as a git repository whose core.fsmonitor removes F."""
    git = subprocess.run(["git", "init", "-q", str(workdir)], capture_output=True, check=False)
    if git.returncode != 0:
        pytest.skip("git is not available")
    config = workdir / ".git" / "config"
    config.write_text(config.read_text() + "[core]\n\tfsmonitor = rm -f F\n")
    return workdir


@pytest.mark.parametrize("command", MISCLASSIFIED)
def test_a_command_wrongly_called_read_only_leaves_the_file_untouched(
    tmp_path: Path, trapped_repository: Path, scratch_base: Path, command: str
) -> None:
    workdir = trapped_repository
    gate = Gate(None, tmp_path / "shell_audit.jsonl", cwd=workdir)
    decision = gate.decide(command)
    # The premise: the classifier lets it through. If it ever stops doing so, the sandbox
    # is no longer what this test exercises and the command must be replaced.
    assert decision.decision == "allowed", decision.reason
    result = gate.run(command)
    assert (workdir / "F").read_text() == "precious\n"
    assert b"Read-only file system" in result.stderr
    assert result.event["sandbox"] == "bwrap"
    assert list(scratch_base.iterdir()) == []


# The attacks: whatever the classifier comes to say about them, none changes a file.
ATTACKS = [
    *ONCE_MISCLASSIFIED,
    "PS4='$(rm -f F)'; set -x; true",
    "x='$(rm F)'; echo ${x@P}",
    "hash -p /usr/bin/rm ls; ls F",
    "env --split-string='rm -f F'",
    "git -c core.fsmonitor='rm -f F' status",
    "sed 'w F' G",
    "uniq G F",
    "openssl rand -out F 8",
    "curl --trace F file:///etc/hostname",
    "git log --output=F",
    "time -o F true",
    "awk '{print > \"F\"}' G",
    "python3 -c 'import os; os.remove(\"F\")'",
    "echo 'rm F' | sh",
]


@pytest.mark.parametrize("command", ATTACKS)
def test_no_attack_changes_a_file_whatever_it_is_classified(
    tmp_path: Path, workdir: Path, scratch_base: Path, command: str
) -> None:
    policy = Policy(on_unknown="allow", commands={"python3": "read-only", "sh": "read-only"})
    gate = Gate(policy, tmp_path / "shell_audit.jsonl", cwd=workdir)
    gate.run(command)
    assert sorted(path.name for path in workdir.iterdir()) == ["F", "G"]
    assert (workdir / "F").read_text() == "precious\n"
    assert (workdir / "G").read_text() == "line one\nline two\n"


@pytest.mark.parametrize(
    "command",
    [
        "rm -f F",
        "mv F G",
        "cp G F",
        "tee F < G",
        "truncate -s 0 F",
        "ln -sf G F",
        "chmod 000 F",
        "touch new-file",
        "mkdir new-dir",
    ],
)
def test_even_commands_vouched_read_only_by_the_policy_change_nothing(
    tmp_path: Path, workdir: Path, scratch_base: Path, command: str
) -> None:
    # The policy's own knowledge says these are read-only: the worst misclassification.
    names = ("rm", "mv", "cp", "truncate", "ln", "chmod", "tee")
    entries = {name: "read-only" for name in names}
    entries |= {"touch": "read-only", "mkdir": "read-only"}
    policy = Policy(commands=entries)
    gate = Gate(policy, tmp_path / "shell_audit.jsonl", cwd=workdir)
    result = gate.run(command)
    assert result.ran, result.reason
    assert result.exit_code != 0
    assert sorted(path.name for path in workdir.iterdir()) == ["F", "G"]
    assert (workdir / "F").read_text() == "precious\n"
    assert stat.S_IMODE((workdir / "F").stat().st_mode) != 0


def test_the_scratch_directory_is_writable_and_removed_afterwards(
    tmp_path: Path, workdir: Path, scratch_base: Path
) -> None:
    policy = Policy(commands={"tee": "read-only"})
    gate = Gate(policy, tmp_path / "shell_audit.jsonl", cwd=workdir)
    result = gate.run('echo scratch | tee "$TMPDIR/note" >/dev/null; cat "$TMPDIR/note"; pwd')
    assert result.exit_code == 0, result.stderr
    assert result.output.splitlines() == ["scratch", str(workdir)]
    assert list(scratch_base.iterdir()) == []


def test_the_scratch_is_a_bounded_tmpfs_never_in_the_agents_tmpdir(
    tmp_path: Path, workdir: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentledger.runner.shell_gate import sandbox

    webroot = tmp_path / "webroot"
    webroot.mkdir()
    monkeypatch.setenv("TMPDIR", str(webroot))  # the agent's: round 7's B32 made it there
    monkeypatch.setattr(sandbox, "SCRATCH_BYTES", 1024 * 1024)
    policy = Policy(commands={"tee": "read-only", "head": "read-only", "stat": "read-only"})
    gate = Gate(policy, tmp_path / "shell_audit.jsonl", cwd=workdir)
    result = gate.run(
        'echo "$TMPDIR"; stat -f -c %T "$TMPDIR"; echo x | tee "$TMPDIR/shell.php" >/dev/null; '
        'ls "$TMPDIR"; head -c 2000000 /dev/zero | tee "$TMPDIR/big" >/dev/null'
    )
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{scratch_base}/agentledger-scratch-"), lines
    assert lines[1:3] == ["tmpfs", "shell.php"], lines
    assert b"No space left on device" in result.stderr and result.exit_code != 0
    assert list(webroot.iterdir()) == [] and list(scratch_base.iterdir()) == []


def test_the_sandbox_sees_no_host_process_and_cannot_signal_one(
    tmp_path: Path, workdir: Path
) -> None:
    policy = Policy(commands={"kill": "read-only"})
    gate = Gate(policy, tmp_path / "shell_audit.jsonl", cwd=workdir)
    listed = gate.run("ps -eo pid=")
    assert listed.exit_code == 0
    # Its own procfs: only the sandbox's few processes, never this one.
    assert str(os.getpid()) not in listed.output.split()
    assert len(listed.output.split()) < 5
    killed = gate.run(f"kill -0 {os.getpid()}")
    assert killed.exit_code != 0


def test_remote_parts_are_logged_as_outside_the_sandbox(tmp_path: Path, workdir: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    gate = Gate.for_run_dir(run_dir, cwd=workdir, timeout=5)
    # Nothing listens on port 9 of this host: ssh fails fast, after the gate decided.
    gate.run("ssh -o BatchMode=yes -o Port=9 localhost 'cat /etc/hostname' | grep -c .")
    (event,) = audit(run_dir)
    assert event["sandbox"] == "bwrap" and event["network"] == "ssh"
    assert event["remote_parts"] == ["cat /etc/hostname (via ssh)"]
    assert (workdir / "F").exists()


def test_without_bubblewrap_investigate_mode_refuses_and_names_the_package(
    tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "_CANDIDATES", (str(tmp_path / "no-bwrap"),))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    gate = Gate.for_run_dir(run_dir, cwd=workdir)
    with pytest.raises(SandboxUnavailableError, match="install the package bubblewrap"):
        gate.run("ls")
    assert not (run_dir / "shell_audit.jsonl").exists()
    # What is denied is still logged: the sandbox only matters for what runs.
    assert gate.run("rm -rf /").denied
    assert len(audit(run_dir)) == 1


def test_the_cli_exits_2_without_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sandbox_module, "_CANDIDATES", (str(tmp_path / "no-bwrap"),))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    code = run_exec(
        run_dir=str(run_dir), policy=None, dry_run=False, batch=False, timeout=None,
        command=["ls"],
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: investigate mode runs commands in a read-only sandbox")
    assert "apt-get install bubblewrap" in err and "sandbox: off" in err
    assert not (run_dir / "shell_audit.jsonl").exists()


def test_a_sandbox_that_cannot_be_set_up_runs_nothing(tmp_path: Path, workdir: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    gate = Gate(None, tmp_path / "shell_audit.jsonl", cwd=workdir, sandbox=Sandbox(str(fake)))
    with pytest.raises(SandboxUnavailableError) as caught:
        gate.run("ls")
    assert "Creating new namespace failed" in str(caught.value)
    assert "nothing was run" in str(caught.value)
    # Logged as refused by the sandbox (it was recorded before it was tried), not as run.
    (event,) = audit_file(tmp_path / "shell_audit.jsonl")
    assert (event["decision"], event["decided_by"], event["exit_code"]) == (
        "denied",
        "sandbox",
        None,
    )
    assert not (tmp_path / "shell_audit.jsonl.pending").exists()


def test_bwrap_is_not_taken_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\nexec "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert find_bwrap() != str(fake)


def test_sandbox_off_is_recorded_in_every_event(
    tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without bubblewrap too: off means the classifier alone decides.
    monkeypatch.setattr(sandbox_module, "_CANDIDATES", (str(tmp_path / "no-bwrap"),))
    path = tmp_path / "policy.yaml"
    path.write_text("sandbox: off\ncommands: {rm: read-only}\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    gate = Gate.for_run_dir(run_dir, path, cwd=workdir)
    assert gate.run("rm F").exit_code == 0
    assert not (workdir / "F").exists()
    assert gate.run("reboot").denied
    assert [event["sandbox"] for event in audit(run_dir)] == ["off", "off"]


def test_remediate_mode_sandboxes_read_only_commands_only(tmp_path: Path, workdir: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            mode: remediate
            on_mutating: prompt
            commands: {sort: read-only}
            """
        )
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    gate = Gate.for_run_dir(run_dir, path, cwd=workdir, approver=lambda decision: "alice", ci=False)
    gate.run("sort -oF G")
    assert (workdir / "F").read_text() == "precious\n"
    gate.run("touch approved")
    assert (workdir / "approved").exists()
    first, second = audit(run_dir)
    assert (first["decision"], first["sandbox"]) == ("allowed", "bwrap")
    assert (second["decision"], second["decided_by"], second["sandbox"]) == (
        "approved",
        "alice",
        "none",
    )


@pytest.mark.parametrize(
    ("text", "expected"), [("sandbox: off", "off"), ("sandbox: on", "on"), ("", "on")]
)
def test_the_policy_reads_sandbox_on_and_off(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text + "\n")
    assert load_policy(path).sandbox == expected


def test_a_bad_sandbox_setting_names_the_field(tmp_path: Path) -> None:
    from agentledger.errors import RecordError

    path = tmp_path / "policy.yaml"
    path.write_text("sandbox: sometimes\n")
    with pytest.raises(RecordError, match="sandbox"):
        load_policy(path)
