"""A mount over the audit log or its run directory is refused, never written through (issue
33: the log out of reach). A command run as root in remediate mode, or anything root runs
beside the gate, can `mount --bind` a file of its own over the log: the gate would then write
its events into that file, and the agent's file would stand in for the log. Everything here
runs in a mount namespace the test makes (`unshare -m`, private propagation): no mount
reaches the host."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate, Policy

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="mounting, even in a mount namespace of its own, needs root and unshare",
)

INSIDE = """\
import json, os, subprocess, sys
from agentledger.errors import InputError
from agentledger.runner.shell_gate import Gate, Policy

tmp = sys.argv[1]
run = os.path.join(tmp, "run")
log = os.path.join(run, "shell_audit.jsonl")
decoy = os.path.join(tmp, "decoy.jsonl")
open(decoy, "w").close()
policy = Policy(mode="remediate", on_mutating="prompt", on_unknown="prompt", sandbox="off")
gate = Gate(policy, log, cwd=tmp, ci=False, approver=lambda decision: "alice")
seen = {}

def attempt(name, command, active=gate):
    try:
        result = active.run(command)
        seen[name] = "ran: " + str(result.exit_code)
    except InputError as exc:
        seen[name] = "refused: " + str(exc)

def mount(*args):
    subprocess.run(["mount", *args], check=True)

attempt("first", "touch first")
mount("--bind", decoy, log)  # root beside the gate
attempt("over the log", "touch second")
seen["second made"] = os.path.exists(os.path.join(tmp, "second"))
other = subprocess.run(
    [sys.executable, "-m", "agentledger", "exec", "--run-dir", run, "--", "touch third"],
    capture_output=True, text=True, cwd=tmp,
)
seen["new gate"] = [other.returncode, other.stderr]
seen["third made"] = os.path.exists(os.path.join(tmp, "third"))
mount("-o", "remount,bind,ro", log)
subprocess.run(["umount", log], check=True)
# The approved command mounts over the log itself: its event goes nowhere but the log.
attempt("command mounts", f"mount --bind {decoy} {log}")
subprocess.run(["umount", log], check=True)
attempt("after", "touch fourth")
# A file system mounted over the run directory: not the directory the gate began with.
mount("-t", "tmpfs", "tmpfs", run)
attempt("over the run directory", "touch fifth")
seen["fifth made"] = os.path.exists(os.path.join(tmp, "fifth"))
subprocess.run(["umount", run], check=True)
seen["decoy"] = open(decoy).read()
print(json.dumps(seen))
"""


def test_a_mount_over_the_log_or_its_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("CI", None)
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-c", INSIDE, str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    if done.returncode and "unshare failed" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["first"] == "ran: 0"
    over_the_log = seen["over the log"]
    assert over_the_log.startswith("refused: ") and "mounted over it" in over_the_log
    assert "nothing was run" in over_the_log and not seen["second made"]
    code, message = seen["new gate"]
    assert code == 2 and "mounted over it" in message and not seen["third made"], message
    # The command ran (it was approved), but its event did not go into the mounted file.
    assert seen["command mounts"].startswith("refused: cannot append to the audit log")
    assert seen["after"] == "ran: 0"
    assert "the one the gate began with" in seen["over the run directory"]
    assert not seen["fifth made"]
    assert seen["decoy"] == ""  # no event ever went into the agent's file
    # Its event waits beside the log, written before it ran; the next gate moves it in.
    log = tmp_path / "run/shell_audit.jsonl"
    assert list((tmp_path / "run/shell_audit.jsonl.pending").iterdir())
    Gate(Policy(mode="remediate"), log, ci=False)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    commands = [event["command"] for event in events]
    assert commands[:2] == ["touch first", "touch fourth"], commands
    (mounted,) = events[2:]  # the mounting command, in the real log as unfinished
    assert mounted["command"].startswith("mount --bind") and mounted["state"] == "unfinished"


@pytest.mark.parametrize(
    "command", ["unshare -m sh -c 'mount --bind a b'", "unshare -r id", "pivot_root . old"]
)
def test_mounting_and_new_namespaces_are_changes(command: str) -> None:
    decision = Gate(Policy(mode="remediate", on_mutating="prompt"), None, ci=False).decide(command)
    assert decision.classification.kind == "mutating" and decision.decision == "prompt"
    investigate = Gate(Policy(), None, ci=False).decide(command)
    assert investigate.decision == "denied"
