"""The sandbox closes the host's FIFOs to writing (issue 33, causes 1 and 4): the read-only
bind refuses writes only to files whose content is on the mount, so without Landlock a root
command classified read-only (`git status` in a repository whose fsmonitor hook writes) could
send a line to a daemon's control FIFO. Run as root and as an unprivileged user, with a
reader on the FIFO the way a daemon reads it."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.execute import run_shell
from agentledger.runner.shell_gate.landlock_exec import abi, main
from agentledger.runner.shell_gate.sandbox import Sandbox
from jail_helpers import NOBODY, as_user, need_bwrap, need_root, shared_dir


@pytest.fixture
def sandbox() -> Sandbox:
    if abi() == 0:
        pytest.skip("this kernel has no Landlock (Linux 5.13+ with lsm=landlock)")
    return Sandbox(need_bwrap())


def daemon_hears(fifo: Path, command: str, sandbox: Sandbox | None) -> tuple[bytes, int]:
    """What a daemon reading `fifo` receives while `command` runs (in `sandbox` if given),
    and the command's exit code."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no EOF before the command writes
    try:
        done = run_shell(command, timeout=20, cwd=str(fifo.parent), sandbox=sandbox)
        heard = b""
        while select.select([reader], [], [], 0.2)[0]:
            chunk = os.read(reader, 4096)
            if not chunk:
                break
            heard += chunk
        return heard, done.exit_code
    finally:
        os.close(keep)
        os.close(reader)


def attempts(fifo: Path) -> list[str]:
    return [
        f"echo 'runlevel 0' > {fifo}",
        f"printf x | tee {fifo}",
        f"dd if=/dev/zero of={fifo} bs=1 count=3",
        f"exec 3<>{fifo}; echo x >&3",
        f"python3 -c \"open('{fifo}', 'w').write('x')\"",
    ]


def test_as_root_a_host_fifo_gets_nothing_from_the_sandbox(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    need_root()
    fifo = tmp_path / "initctl"
    os.mkfifo(fifo, 0o600)
    # The same write from outside the sandbox reaches the daemon: the test can fail.
    heard, code = daemon_hears(fifo, f"echo 'runlevel 0' > {fifo}", None)
    assert (heard, code) == (b"runlevel 0\n", 0)
    for attempt in attempts(fifo):
        heard, code = daemon_hears(fifo, attempt, sandbox)
        assert heard == b"", attempt
        assert code != 0, attempt


def test_as_an_unprivileged_user_its_own_fifo_gets_nothing(sandbox: Sandbox) -> None:
    need_root()  # to become nobody
    with shared_dir() as base:

        def attempt() -> list[str]:
            fifo = base / "control"
            os.mkfifo(fifo, 0o600)
            return [line for line in attempts(fifo) if daemon_hears(fifo, line, sandbox)[0]]

        assert as_user(NOBODY, attempt) == []


def test_the_scratch_and_dev_null_stay_writable(sandbox: Sandbox) -> None:
    line = (
        'echo kept > "$TMPDIR/f" && cat "$TMPDIR/f" && mkdir "$TMPDIR/d" && '
        'mv "$TMPDIR/f" "$TMPDIR/d/g" && echo gone > /dev/null && '
        'seq 3 | sort -r -T "$TMPDIR" && mkfifo "$TMPDIR/p" && echo fifo-ok'
    )
    done = run_shell(line, timeout=20, sandbox=sandbox)
    assert (done.exit_code, bytes(done.stdout.head).decode()) == (0, "kept\n3\n2\n1\nfifo-ok\n")


def test_the_wrapper_refuses_bad_usage_and_names_a_missing_command() -> None:
    assert main(["/tmp"]) == 2
    assert main(["/tmp", "--"]) == 2
    script = Path(sys.modules[main.__module__].__file__ or "")
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(script), "/tmp", "--", "no-such-command-here"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        127,
        "agentledger: cannot run no-such-command-here: No such file or directory\n",
    )


def test_without_landlock_it_refuses_only_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentledger.runner.shell_gate.landlock_exec as landlock

    monkeypatch.setattr(landlock, "abi", lambda: 0)
    monkeypatch.setenv("AGENTLEDGER_REQUIRE_LANDLOCK", "1")
    assert landlock.main(["/tmp", "--", "true"]) == 126


def test_kernel_settings_stay_unwritten_as_root() -> None:
    need_root()
    sandbox = Sandbox(need_bwrap())  # a read-only bind, with or without Landlock
    setting = Path("/proc/sys/vm/swappiness")
    before = setting.read_text()
    line = f"cat {setting} > {setting}; echo $?; echo 1 > /proc/sys/vm/drop_caches; echo $?"
    done = run_shell(line, timeout=20, sandbox=sandbox)
    assert bytes(done.stdout.head).decode() == "1\n1\n"
    assert "Read-only file system" in bytes(done.stderr.head).decode()
    assert setting.read_text() == before


@pytest.mark.parametrize("step", ["built", "python"])
def test_both_starts_of_the_landlock_step_close_a_fifo(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The C build (`make scan`) and the Python module it stands in for hold the same."""
    import agentledger.runner.shell_gate.sandbox as module

    built = Path(module.__file__).with_name("_landlock_exec")
    if step == "built":
        if not os.access(built, os.X_OK):
            if os.environ.get("AGENTLEDGER_REQUIRE_SCAN"):
                pytest.fail(f"{built} was not built (make scan)")
            pytest.skip("the Landlock step is not built here (make scan needs a C compiler)")
        argv = [str(built)]
    else:
        source = Path(module.__file__).with_name("landlock_exec.py").read_text()
        argv = [sys.executable, "-I", "-S", "-c", source]
    monkeypatch.setattr(module, "_LANDLOCK", {os.getuid(): argv})
    fifo = tmp_path / "control"
    os.mkfifo(fifo, 0o600)
    heard, code = daemon_hears(fifo, f"echo x > {fifo}", sandbox)
    assert (heard, code != 0) == (b"", True)
    done = run_shell('echo y > "$TMPDIR/f" && cat "$TMPDIR/f"', timeout=20, sandbox=sandbox)
    assert bytes(done.stdout.head) == b"y\n"
    missing = [*argv, "/tmp", "--", "no-such-command-here"]
    said = subprocess.run(missing, capture_output=True, text=True, check=False)
    assert (said.returncode, said.stderr) == (
        127,
        "agentledger: cannot run no-such-command-here: No such file or directory\n",
    )
