"""The audit log goes to no other file whatever a command left in the run directory (issue 33,
cause 8): a symlink in its place is not followed, a FIFO does not hang the gate, a directory, a
device or a hard link is refused; the gate says which file and why (exit 2) and runs nothing,
as root and as an unprivileged user. The run directory itself is reached without following a
link anyone but root could have made."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentledger.errors import InputError
from agentledger.runner.shell_gate import Gate, Policy
from agentledger.runner.shell_gate.audit import INTENT_SUFFIX
from jail_helpers import NOBODY, as_user, need_root, shared_dir

SCRIPT = Path(sys.executable).parent / "agentledger"
LOG = "shell_audit.jsonl"
# The marker is touched from inside the command, outside any sandbox: it shows it ran.
POLICY = Policy(sandbox="off", commands={"touch": "read-only"})


def exec_cli(run_dir: Path, marker: Path) -> subprocess.CompletedProcess[str]:
    policy = run_dir.parent / "policy.yaml"
    policy.write_text("sandbox: off\ncommands:\n  touch: read-only\n")
    return subprocess.run(
        [str(SCRIPT), "exec", "--run-dir", str(run_dir), "--policy", str(policy), "--",
         f"touch {marker}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _symlink(outside: Path) -> Callable[[Path], None]:
    return lambda log: log.symlink_to(outside)


def _fifo(log: Path) -> None:
    os.mkfifo(log)


def _directory(log: Path) -> None:
    log.mkdir()


def _hard_link(outside: Path) -> Callable[[Path], None]:
    return lambda log: os.link(outside, log)


PLANTED = {
    "symlink to a file": (lambda outside: _symlink(outside), "is a symbolic link"),
    "dangling symlink": (lambda outside: _symlink(outside.with_name("absent")), "symbolic link"),
    "fifo": (lambda outside: _fifo, "is a FIFO"),
    "directory": (lambda outside: _directory, "is a directory"),
    "hard link": (lambda outside: _hard_link(outside), "has 2 hard links"),
}


def planted_run(folder: Path, kind: str) -> tuple[Path, Path, str]:
    """A run directory in `folder` whose log is the planted `kind`, a file outside it (what a
    link would lead to); (run directory, outside file, the error's words)."""
    run_dir = folder / "run"
    run_dir.mkdir()
    outside = folder / "outside.txt"
    outside.write_text("precious\n")
    plant, words = PLANTED[kind]
    plant(outside)(run_dir / LOG)
    return run_dir, outside, words


@pytest.mark.parametrize("kind", list(PLANTED))
def test_as_root_a_planted_log_is_refused_and_nothing_runs(tmp_path: Path, kind: str) -> None:
    run_dir, outside, words = planted_run(tmp_path, kind)
    marker = tmp_path / "ran"
    done = exec_cli(run_dir, marker)  # a FIFO would hang here: the timeout fails the test
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and LOG in done.stderr
    assert not marker.exists()
    assert outside.read_text() == "precious\n"
    assert not outside.with_name("absent").exists()
    assert not Path(f"{run_dir / LOG}{INTENT_SUFFIX}").exists()


def test_as_root_a_device_in_place_of_the_log_is_refused(tmp_path: Path) -> None:
    need_root()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.mknod(run_dir / LOG, 0o600 | 0o020000, os.makedev(1, 3))  # a /dev/null of its own
    marker = tmp_path / "ran"
    done = exec_cli(run_dir, marker)
    assert done.returncode == 2 and "is a device" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("kind", list(PLANTED))
def test_as_an_unprivileged_user_a_planted_log_is_refused(kind: str) -> None:
    need_root()  # to become nobody
    with shared_dir() as folder:

        def attempt() -> dict[str, object]:
            run_dir, outside, words = planted_run(folder, kind)
            try:
                Gate(POLICY, run_dir / LOG).run(f"touch {folder / 'ran'}")
            except InputError as exc:
                refused = words in str(exc) and "nothing was run" in str(exc)
            else:
                refused = False
            return {
                "refused": refused,
                "ran": (folder / "ran").exists(),
                "outside": outside.read_text(),
            }

        seen = as_user(NOBODY, attempt)
    assert seen == {"refused": True, "ran": False, "outside": "precious\n"}


def test_a_log_swapped_for_a_link_after_the_gate_started_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    gate = Gate(POLICY, run_dir / LOG)
    gate.run("true")
    (run_dir / LOG).unlink()
    (run_dir / LOG).symlink_to(outside)
    with pytest.raises(InputError, match="symbolic link"):
        gate.run(f"touch {tmp_path / 'ran'}")
    assert not (tmp_path / "ran").exists()
    assert outside.read_text() == "precious\n"


def test_a_pending_folder_planted_as_a_link_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    Path(f"{run_dir / LOG}{INTENT_SUFFIX}").symlink_to(elsewhere)
    with pytest.raises(InputError, match="not a directory"):
        Gate(POLICY, run_dir / LOG).run(f"touch {tmp_path / 'ran'}")
    assert not (tmp_path / "ran").exists() and list(elsewhere.iterdir()) == []


def test_a_fifo_among_the_pending_intents_does_not_hang_the_next_gate(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    pending = Path(f"{run_dir / LOG}{INTENT_SUFFIX}")
    pending.mkdir(parents=True)
    os.mkfifo(pending / "abc.json")
    done = exec_cli(run_dir, tmp_path / "ran")  # hanging would fail on the timeout
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran").exists()


def test_a_run_directory_reached_through_a_link_others_could_make_is_refused() -> None:
    need_root()  # the link and its folder are nobody's, or in a folder everyone may write
    with shared_dir() as folder:  # mode 0777, as /tmp without its sticky bit
        real = folder / "real"
        real.mkdir()
        (folder / "link").symlink_to(real)
        marker = folder / "ran"
        done = exec_cli(folder / "link", marker)
        assert done.returncode == 2, done.stderr
        assert "'link' on the path of the run directory" in done.stderr
        assert not marker.exists() and not (real / LOG).exists()

        def attempt() -> bool:
            own = folder / "own"
            own.mkdir()
            (folder / "nobodys").symlink_to(own)
            try:
                Gate(POLICY, folder / "nobodys" / LOG)
            except InputError as exc:
                return "is a symbolic link that is not the system's" in str(exc)
            return False

        assert as_user(NOBODY, attempt) is True


def test_a_system_link_on_the_run_directory_path_is_followed(tmp_path: Path) -> None:
    need_root()  # a link owned by root in a folder only root may write, like /var/run
    system = tmp_path / "system"
    system.mkdir(mode=0o755)
    real = tmp_path / "real"
    real.mkdir()
    (system / "run").symlink_to(real)
    done = exec_cli(system / "run", tmp_path / "ran")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran").exists() and (real / LOG).read_text().count("\n") == 1
