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
