"""The approver named from sudo is the person who ran the system's sudo (issue 33, cause 7):
the real uid of a sudo process above the gate whose program is the system's set-user-ID,
root-only-writable sudo, never SUDO_USER nor a program that is only called sudo."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.ask import approver_identity
from agentledger.runner.shell_gate.sudo import sudo_user

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="a set-user-ID root program and a real uid to set need root"
)

# Run below the "sudo" under test: what the gate would conclude there. `trusted` stands for
# the system's sudo paths (SYSTEM_SUDO), which a test cannot install into.
CHECKER = """\
import json, sys
from agentledger.runner.shell_gate import sudo
from agentledger.runner.shell_gate.ask import approver_identity
sudo.SYSTEM_SUDO = tuple(sys.argv[1:])
found = sudo.sudo_user()
print(json.dumps({"sudo_user": found and found[0], "who": approver_identity()}))
"""


def _setuid_shell(folder: Path, mode: int = 0o4755) -> Path:
    """A set-user-ID root copy of dash named sudo: it runs the checker as a sudo would."""
    folder.mkdir(mode=0o755, exist_ok=True)
    program = folder / "sudo"
    shutil.copyfile("/bin/dash", program)
    os.chown(program, 0, 0)
    program.chmod(mode)
    return program


def _below(program: Path, trusted: list[str], ruid: int = 65534, **env: str) -> dict[str, str]:
    """The checker run by `program` (a shell: -p keeps its effective uid) started with real
    uid `ruid`, as a person's shell runs sudo."""
    environment = {key: value for key, value in os.environ.items() if key != "SUDO_USER"}
    environment |= {"PYTHONPATH": os.pathsep.join(sys.path)} | env
    script = " ".join([sys.executable, "-c", _quoted(CHECKER), *trusted])
    done = subprocess.run(
        [str(program), "-p", "-c", f"{script}; true"],
        capture_output=True, text=True, timeout=60, env=environment,
        preexec_fn=lambda: os.setresuid(ruid, 0, 0),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, str] = json.loads(done.stdout)
    return result


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def test_the_system_sudo_names_the_person_who_ran_it_not_sudo_user(tmp_path: Path) -> None:
    program = _setuid_shell(tmp_path / "bin")
    seen = _below(program, [str(program)], SUDO_USER="daemon")
    assert seen["sudo_user"] == "nobody"  # its real uid: what the kernel says, not the variable
    assert seen["who"] == "nobody (ran sudo)"


def test_a_setuid_program_called_sudo_elsewhere_names_nobody(tmp_path: Path) -> None:
    program = _setuid_shell(tmp_path / "bin")
    seen = _below(program, ["/usr/bin/sudo", "/usr/local/bin/sudo"], SUDO_USER="daemon")
    assert seen["sudo_user"] is None
    assert "(ran sudo)" not in seen["who"] and not seen["who"].startswith("daemon")
    assert "SUDO_USER=daemon set without sudo" in seen["who"]


def test_a_script_called_sudo_on_path_names_nobody(tmp_path: Path) -> None:
    folder = tmp_path / "fake"
    folder.mkdir(mode=0o755)
    script = folder / "sudo"
    script.write_text('#!/bin/sh -p\n"$@"; true\n')
    script.chmod(0o755)
    environment = {key: value for key, value in os.environ.items()}
    environment |= {
        "PATH": f"{folder}:{environment['PATH']}",
        "SUDO_USER": "daemon",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    done = subprocess.run(
        ["sudo", sys.executable, "-c", CHECKER, str(script)],
        capture_output=True, text=True, timeout=60, env=environment,
        preexec_fn=lambda: os.setresuid(65534, 0, 0),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["sudo_user"] is None and "(ran sudo)" not in seen["who"], seen


@pytest.mark.parametrize("mode", [0o4775, 0o4757])
def test_a_sudo_others_can_write_names_nobody(tmp_path: Path, mode: int) -> None:
    program = _setuid_shell(tmp_path / "bin", mode)  # group- or world-writable
    seen = _below(program, [str(program)])
    assert seen["sudo_user"] is None


def test_a_sudo_in_a_directory_others_can_write_names_nobody(tmp_path: Path) -> None:
    program = _setuid_shell(tmp_path / "bin")
    (tmp_path / "bin").chmod(0o777)  # anyone could have put it there
    seen = _below(program, [str(program)])
    assert seen["sudo_user"] is None


def test_root_running_sudo_is_no_person(tmp_path: Path) -> None:
    program = _setuid_shell(tmp_path / "bin")
    seen = _below(program, [str(program)], ruid=0)
    assert seen["sudo_user"] is None and "(ran sudo)" not in seen["who"]


def test_here_nothing_above_is_sudo() -> None:
    assert sudo_user() is None
    assert "(ran sudo)" not in approver_identity()
