"""The gate trusts no file the agent's environment names unless the kernel says only this
user (or root) could have written it, and nothing a sandboxed command could write (red team
round 7: B33 a lab target from /dev/stdin, B34 a forged cached policy, B35 a run dir in a
scratch, B32 the scratch in the agent's TMPDIR, B37 PYTHONPATH)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.errors import InputError
from agentledger.runner.lab_shell import LAB_ENV, LabEntry, LabTarget
from jail_helpers import NOBODY, namespaced_process, need_root

SCRIPT = Path(sys.executable).with_name("agentledger")
# What round 7 handed the gate: a "lab" whose host prefix runs a shell outside the sandbox.
FORGED = '{"name":"x","hosts":{"h":["/bin/sh","-c","id > %s; exec \\"$@\\"","sh"]},"default":"h"}'


@pytest.fixture(autouse=True)
def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("AGENTLEDGER_RUN_DIR", "AGENTLEDGER_POLICY", LAB_ENV):
        monkeypatch.delenv(name, raising=False)


def gate(*args: str, env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "exec", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_lab_target_from_stdin_or_an_inherited_descriptor_runs_nothing(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    run = tmp_path / "run"
    run.mkdir()
    forged = FORGED % canary
    done = gate("--run-dir", str(run), "--", "uname", env={LAB_ENV: "/dev/stdin"}, input=forged)
    assert done.returncode == 2, done.stderr
    assert "/dev/stdin" in done.stderr and "symbolic link" in done.stderr
    read, write = os.pipe()
    os.write(write, forged.encode())
    os.close(write)
    try:
        done = gate(
            "--run-dir", str(run), "--", "uname", env={LAB_ENV: f"/dev/fd/{read}"},
            pass_fds=(read,),
        )  # fmt: skip
    finally:
        os.close(read)
    assert done.returncode == 2 and f"/dev/fd/{read}" in done.stderr
    assert not canary.exists()
    assert not (run / "shell_audit.jsonl").exists()


def test_a_lab_target_file_gives_no_argv_to_run(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    path = tmp_path / "lab.json"
    path.write_text(FORGED % canary)
    with pytest.raises(InputError, match="not a lab target file: hosts: a list of host names"):
        LabTarget.read(path)
    for enter, why in (
        ({"pid": 1}, "enter.pid: the pid"),
        ({"pid": os.getpid()}, "shares this machine's mnt namespace; it is no lab"),
        ({"pid": 12, "argv": ["sh"]}, "enter: an object of pid, rootless and user"),
        ({"pid": 12, "user": "no-such-user-here"}, "is no user of this machine"),
    ):
        path.write_text(json.dumps({"name": "x", "hosts": ["h"], "default": "h", "enter": enter}))
        with pytest.raises(InputError, match=why):
            LabTarget.read(path)
    path.write_text(json.dumps({"name": "x", "hosts": ["h; id"], "default": "h", "enter": {}}))
    with pytest.raises(InputError, match="is no lab host name"):
        LabTarget.read(path)


def test_the_prefix_is_built_from_the_checked_entry_as_the_lab_builds_it(tmp_path: Path) -> None:
    from agentledger.labs.script import LAB_ROOT, host_env
    from agentledger.labs.system import Privilege

    assert LAB_ROOT == "/run/lab"
    for rootless, user in ((False, None), (True, None), (True, "nobody")):
        entry = LabEntry(4242, rootless, user)
        lab = [*Privilege("rootless" if rootless else "root", user).prefix(), "nsenter", "-t"]
        lab += ["4242", *(["-U", "--preserve-credentials"] if rootless else [])]
        lab += ["-m", "-n", "-p", "--", "ip", "netns", "exec", "web", *host_env("web")]
        assert entry.host_argv("web") == lab
    with namespaced_process() as pid:
        path = LabTarget.entering("x", LabEntry(pid), ["web"], "web").write(tmp_path / "l.json")
        assert oct(path.stat().st_mode & 0o777) == "0o644"
        assert LabTarget.read(path).prefix("web") == LabEntry(pid).host_argv("web")


def test_a_lab_target_file_others_could_write_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "lab.json"
    path.write_text("{}")
    path.chmod(0o664)
    with pytest.raises(InputError, match="writable by its group or others"):
        LabTarget.read(path)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    with pytest.raises(InputError, match="symbolic link"):
        LabTarget.read(link)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        LabTarget.read(fifo)


def test_a_lab_target_of_another_user_is_not_read(tmp_path: Path) -> None:
    need_root()
    path = tmp_path / "lab.json"
    path.write_text("{}")
    os.chown(path, NOBODY, NOBODY)
    with pytest.raises(InputError, match=f"owned by uid {NOBODY}"):
        LabTarget.read(path)


def _forged_cache(tmp_path: Path, cache: Path) -> tuple[Path, Path]:
    """`cache` holding, under the packaged policy's key, a remediate policy with the sandbox
    off that allows every change (what round 7's B34 planted); (the run dir, that entry)."""
    from agentledger.data import policies

    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    loose = tmp_path / "loose.yaml"
    text = (Path(policies.__path__[0]) / "remediate.yaml").read_text()
    text = text.replace("on_mutating: prompt", "on_mutating: allow").replace(
        "sandbox: on", "sandbox: off"
    )
    loose.write_text(text)
    env = {"AGENTLEDGER_CACHE_DIR": str(cache), "AGENTLEDGER_HIDE_BWRAP": "1"}
    assert gate("--dry-run", "--", "true", env=env).returncode == 0
    (packaged,) = (cache / "gate").glob("policy-*.marshal")
    assert gate("--dry-run", "--", "true", env={**env, "AGENTLEDGER_POLICY": str(loose)})
    (other,) = set((cache / "gate").glob("policy-*.marshal")) - {packaged}
    packaged.write_bytes(other.read_bytes())
    return run, packaged


def _touch(run: Path, canary: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {"AGENTLEDGER_CACHE_DIR": str(cache)}
    return gate("--run-dir", str(run), "--", f"touch {canary}", env=env)


def test_a_forged_cache_entry_is_used_only_when_this_user_alone_could_have_written_it(
    tmp_path: Path,
) -> None:
    cache, canary = tmp_path / "cache", tmp_path / "pwned"
    run, entry = _forged_cache(tmp_path, cache)
    # The cache works: this user's own private entry is what the gate reads (so the forged
    # one shows it was read: it says remediate, sandbox off).
    forged = "the policy says `sandbox: off`"
    assert forged in _touch(run, canary, cache).stderr
    for loosen in (lambda: (cache / "gate").chmod(0o775), lambda: entry.chmod(0o644)):
        loosen()
        done = _touch(run, canary, cache)
        assert done.returncode == 126 and forged not in done.stderr and not canary.exists()
        (cache / "gate").chmod(0o700)
        entry.chmod(0o600)
    (cache / "gate").chmod(0o700)
    os.symlink(cache, tmp_path / "link")
    done = _touch(run, canary, tmp_path / "link")
    assert done.returncode == 126 and forged not in done.stderr and not canary.exists()


def test_a_cache_entry_of_another_user_is_not_read(tmp_path: Path) -> None:
    need_root()
    cache, canary = tmp_path / "cache", tmp_path / "pwned"
    run, entry = _forged_cache(tmp_path, cache)
    os.chown(entry, NOBODY, NOBODY)
    done = _touch(run, canary, cache)
    assert done.returncode == 126 and "sandbox: off" not in done.stderr and not canary.exists()


def test_nothing_the_gate_uses_may_lie_in_a_sandbox_scratch(tmp_path: Path) -> None:
    scratch = tmp_path / "agentledger-scratch-1-abcd"
    scratch.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    (scratch / "r").mkdir()
    policy = scratch / "p.yaml"
    policy.write_text("mode: investigate\n")
    cases = (
        ({"AGENTLEDGER_CACHE_DIR": str(scratch / "c")}, run, "cache directory"),
        ({"AGENTLEDGER_POLICY": str(policy)}, run, "policy file"),
        ({}, scratch / "r", "run directory"),
    )
    for env, where, what in cases:
        done = gate("--run-dir", str(where), "--", "true", env=env)
        assert done.returncode == 2, (what, done.stderr)
        assert f"the {what} lies in a sandbox scratch directory" in done.stderr, done.stderr
        assert not (where / "shell_audit.jsonl").exists()


def test_the_redaction_key_is_not_in_the_sandbox_nor_in_the_log(tmp_path: Path) -> None:
    from jail_helpers import need_bwrap

    need_bwrap()
    cache, run = tmp_path / "cache", tmp_path / "run"
    run.mkdir()
    env = {"AGENTLEDGER_CACHE_DIR": str(cache)}
    assert gate("--run-dir", str(run), "--", "echo password=hunter2", env=env).returncode == 0
    key = (cache / "redaction.key").read_bytes()
    done = gate(
        "--run-dir", str(run), "--", f"xxd -p {cache}/redaction.key; ls -A {cache}", env=env
    )
    assert done.stdout == "" and "No such file" in done.stderr, done.stderr
    log = (run / "shell_audit.jsonl").read_text()
    assert key.hex() not in log and key.hex()[:16] not in log


def test_the_keys_bytes_are_taken_out_of_any_text(tmp_path: Path) -> None:
    import base64

    from agentledger.runner.shell_gate import redact_key
    from agentledger.runner.shell_gate.redact import Redactor

    key = redact_key.redaction_key()
    digits = key.hex()
    folded = f"{digits[:60]}\n{digits[60:]}\n"  # xxd -p
    spaced = " ".join(digits[i : i + 4] for i in range(0, 64, 4)).upper()  # xxd, upper
    for shown in (folded, spaced, base64.b64encode(key).decode(), f"k={digits}!"):
        redacted = Redactor().redact(shown)
        assert redact_key.KEY_MARK in redacted, shown
        assert digits[:8] not in redacted.lower().replace(" ", ""), redacted
    assert Redactor().redact("a" * 64) == "a" * 64


def test_the_gated_shell_obeys_no_python_variable_of_the_agent(tmp_path: Path) -> None:
    from agentledger.runner.workspace import gate_command

    planted, canary = tmp_path / "planted", tmp_path / "pwned"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n")
    (planted / "startup.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n")
    run = tmp_path / "run"
    run.mkdir()
    env = {**os.environ, "PYTHONPATH": str(planted), "PYTHONSTARTUP": str(planted / "startup.py")}
    argv = [*gate_command(), "--run-dir", str(run), "--", "uname"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "WARNING" not in done.stderr, done.stderr
    assert not canary.exists()
    # The console script's own interpreter is not isolated: it says so.
    done = gate("--run-dir", str(run), "--", "uname", env={"PYTHONPATH": str(tmp_path / "none")})
    assert "WARNING: PYTHONPATH set and Python not isolated" in done.stderr


def _limited(soft: int, hard: int) -> object:
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_file_size_limit_cuts_no_event_line(tmp_path: Path) -> None:
    from agentledger.records import parse_shell_audit

    run = tmp_path / "run"
    run.mkdir()
    log = run / "shell_audit.jsonl"
    assert gate("--run-dir", str(run), "--", "echo first", env={}).returncode == 0
    size = log.stat().st_size
    long = "echo PARTIAL_" + "a" * 1500
    # A hard limit the gate cannot raise: nothing runs.
    done = gate(
        "--run-dir", str(run), "--", long, env={}, preexec_fn=_limited(size + 100, size + 100)
    )  # fmt: skip
    assert done.returncode == 2 and "RLIMIT_FSIZE" in done.stderr and "PARTIAL" not in done.stdout
    assert log.stat().st_size == size
    # A soft one is raised: the whole event is logged.
    done = gate("--run-dir", str(run), "--", long, env={}, preexec_fn=_limited(size + 100, -1))
    assert done.returncode == 0, done.stderr
    events = parse_shell_audit(log.read_bytes(), str(log))
    assert len(events) == 2 and "PARTIAL_" + "a" * 1500 in events[1].stdout


def test_a_cut_append_is_taken_back_and_a_torn_last_line_cut_off(tmp_path: Path) -> None:
    from agentledger.runner.shell_gate.audit import append_line

    log = tmp_path / "shell_audit.jsonl"
    log.write_bytes(b'{"whole": 1}\n{"torn": ')
    append_line(str(log), b'{"next": 2}\n')
    assert log.read_bytes() == b'{"whole": 1}\n{"next": 2}\n'
    size = log.stat().st_size
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 5, resource.RLIM_INFINITY))
        try:
            append_line(str(log), b'{"cut": "' + b"x" * 100 + b'"}\n')
            code = 0
        except OSError:
            code = 7
        os._exit(code)
    os.close(read)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7
    assert log.read_bytes() == b'{"whole": 1}\n{"next": 2}\n'


def test_stdin_opened_for_writing_reaches_the_command_read_only(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    target = tmp_path / "stdin_target"
    target.write_text("skip\nkept\n")
    policy = tmp_path / "p.yaml"  # a "read-only" tool that writes to its fd 0
    policy.write_text("mode: investigate\ncommands:\n  python3: read-only\n")
    line = 'python3 -c \'import os,sys; print(sys.stdin.read(), end=""); os.write(0, b"pwned")\''
    fd = os.open(target, os.O_RDWR)
    try:
        os.lseek(fd, 5, os.SEEK_SET)  # what the agent had read already stays read
        done = gate(
            "--run-dir", str(run), "--policy", str(policy), "--", line, env={}, stdin=fd
        )  # fmt: skip
    finally:
        os.close(fd)
    assert done.stdout == "kept\n", done.stderr
    assert "Bad file descriptor" in done.stderr
    assert target.read_text() == "skip\nkept\n"
