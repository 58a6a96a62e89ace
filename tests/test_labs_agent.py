"""The lab's agent (pid 1 of a lab): commands in hosts without a program per hop, their limits,
and `lab check` over several labs at once. Real namespaces and processes, skipped (saying why)
where labs cannot run, failing instead in CI (AGENTLEDGER_REQUIRE_LABS=1).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.labs import LabStartError, load_lab, start_lab
from labs_support import lab_privilege, write_small_lab

SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture(autouse=True)
def private_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return runtime


def _lab_pids(pid1: int) -> set[int]:
    """Every process in the PID namespace of the lab whose init is `pid1`."""
    namespace = os.readlink(f"/proc/{pid1}/ns/pid")
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == namespace:
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


def test_commands_are_children_of_the_agent_in_their_host(tmp_path: Path) -> None:
    """No nsenter, `ip netns exec` or env between the agent and a command: its parent is the
    lab's pid 1; it sees its host's network, /sys and environment, and its stdin and status."""
    privilege = lab_privilege()
    with start_lab(load_lab(write_small_lab(tmp_path / "s")), privilege=privilege) as lab:
        assert lab.run("web", "echo $PPID").stdout == "1\n"
        assert sorted(lab.run("web", "ls /sys/class/net").stdout.split()) == ["eth0", "lo"]
        assert "inet 10.0.0.1/24" in lab.run("web", ["ip", "-o", "addr", "show", "eth0"]).stdout
        env = dict(
            line.split("=", 1) for line in lab.run("client", "env").stdout.splitlines() if line
        )
        assert env["LAB_HOST"] == "client" and env["HOME"] == "/run/lab/client"
        assert env["PATH"].startswith("/run/lab/client/bin:")
        assert lab.run("client", "pwd").stdout == "/run/lab/client\n"
        assert lab.run("web", "cat", stdin="from stdin").stdout == "from stdin"
        done = lab.run("web", "echo out; echo err >&2; exit 3")
        assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
        assert lab.run("web", "kill -9 $$").returncode == -9
        missing = lab.run("web", ["no-such-program"])
        assert missing.returncode == 127 and "no-such-program" in missing.stderr


def test_a_command_over_its_time_is_killed_with_what_it_started(tmp_path: Path) -> None:
    privilege = lab_privilege()
    with start_lab(load_lab(write_small_lab(tmp_path / "s")), privilege=privilege) as lab:
        before = _lab_pids(lab.pid1)
        started = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired):
            lab.run("web", "sleep 30 & sleep 31", timeout=0.5)
        assert time.monotonic() - started < 10
        for _ in range(500):  # the agent kills the command's process group
            if _lab_pids(lab.pid1) <= before:
                break
            time.sleep(0.01)
        assert _lab_pids(lab.pid1) <= before
        assert lab.run("web", "echo still here").stdout == "still here\n"


def test_probe_timeouts_are_named_as_timeouts(tmp_path: Path) -> None:
    """A command probe over its timeout is killed by the agent (no `timeout` program), a TCP
    probe into a DROP times out in the agent's own check: both say `timed out after`."""
    privilege = lab_privilege()
    text = (write_small_lab(tmp_path / "s") / "lab.yaml").read_text()
    text = text.replace(
        'http: "http://10.0.0.1/"}',
        'http: "http://10.0.0.1/"}\n'
        "  - {name: slow, role: keep, host: client, command: sleep 20, timeout: 0.3}\n"
        '  - {name: dropped, role: keep, host: client, tcp: "10.0.0.1:81", timeout: 0.3}',
    )
    text = text.replace(
        "services:",
        "setup:\n  - {host: web, run: iptables -A INPUT -p tcp --dport 81 -j DROP}\nservices:",
    )
    (tmp_path / "s" / "lab.yaml").write_text(text)
    loaded = load_lab(tmp_path / "s")
    with start_lab(loaded, privilege=privilege, fault=False, verify=False) as lab:
        started = time.monotonic()
        results = lab.probe()
        assert time.monotonic() - started < 5
    assert results.get("slow").detail == "timed out after 0.3s"
    assert results.get("dropped").detail == "timed out after 0.3s"
    assert results.broken() == ["slow", "dropped"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentledger", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_lab_check_takes_several_labs_and_sums_up(tmp_path: Path) -> None:
    lab_privilege()
    good = write_small_lab(tmp_path / "good")
    bad = write_small_lab(tmp_path / "bad")
    text = (bad / "lab.yaml").read_text()
    (bad / "lab.yaml").write_text(text.replace("broken: [client-http]", "broken: []"))
    done = _cli("lab", "check", str(good), str(bad), str(good / "lab.yaml"))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("ok   good: the fault reproduces") == 1  # named twice, checked once
    assert "ok   bad: the fault reproduces" in lines
    assert any(line.startswith("FAIL bad: wrong remedy delete-rule") for line in lines)
    assert lines[-1] == "5 of 6 checks passed in 2 labs; failed: bad (remedy delete-rule)"
    passing = _cli("lab", "check", str(good))
    assert passing.returncode == 0
    assert passing.stdout.splitlines()[-1] == "all 3 checks passed in 1 lab"


def test_lab_check_with_one_bad_lab_names_it_and_starts_nothing(tmp_path: Path) -> None:
    good = write_small_lab(tmp_path / "good")
    bad = write_small_lab(tmp_path / "bad")
    text = (bad / "lab.yaml").read_text()
    (bad / "lab.yaml").write_text(text.replace("role: symptom", "role: sometimes"))
    runner = CliRunner()
    result = runner.invoke(main, ["lab", "check", str(good), str(bad)])
    assert result.exit_code == 2
    assert f"{bad / 'lab.yaml'}" in result.output and "probes.0.role" in result.output
    assert "fault reproduces" not in result.output  # read before anything started
    missing = runner.invoke(main, ["lab", "check", str(good), str(tmp_path / "nowhere")])
    assert missing.exit_code == 2
    assert f"{tmp_path / 'nowhere'}: no such lab file or scenario directory" in missing.output
    several = runner.invoke(main, ["lab", "check", str(good), str(bad), "--remedy", "unban"])
    assert several.exit_code == 2
    none = runner.invoke(main, ["lab", "check"])
    assert none.exit_code == 2 and "LAB..." in none.output


def test_a_sysctl_that_does_not_exist_names_its_host(tmp_path: Path) -> None:
    privilege = lab_privilege()
    text = (write_small_lab(tmp_path / "s") / "lab.yaml").read_text()
    text = text.replace(
        "  - name: client\n", "  - name: client\n    sysctls: {net.ipv4.nope: '1'}\n"
    )
    (tmp_path / "s" / "lab.yaml").write_text(text)
    with pytest.raises(LabStartError) as caught:
        start_lab(load_lab(tmp_path / "s"), privilege=privilege)
    assert str(caught.value) == (
        "the lab's setup failed at addresses, routes and sysctls of host client (exit 1):\n"
        "sysctl: setting key 'net.ipv4.nope': No such file or directory"
    )
