"""The sandbox holds against a root attacker whatever the classifier says (issue 33, causes 1
and 2): real attempts that worked before, run through the kernel half (`run_shell` with the
sandbox, classifier bypassed) as root and as an unprivileged user."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentledger.records import parse_shell_audit
from agentledger.runner.shell_gate import Gate
from agentledger.runner.shell_gate.execute import run_shell
from agentledger.runner.shell_gate.sandbox import Sandbox
from jail_helpers import NOBODY, as_user, hidden_secret, need_bwrap, need_root, shared_dir


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox(need_bwrap())


def jailed(sandbox: Sandbox, command: str, cwd: str = "/") -> tuple[int, str]:
    """Run `command` in the sandbox with no classifier in the way: (exit code, output)."""
    done = run_shell(command, timeout=20, cwd=cwd, sandbox=sandbox)
    return done.exit_code, (bytes(done.stdout.head) + bytes(done.stderr.head)).decode()


def host_process_attempts(sandbox: Sandbox, pid: int, route: Path, folder: Path) -> dict[str, str]:
    """What the sandbox gets of a host process: its files through /proc/PID/root, a file
    written through /dev/fd/../../PID/root, and who pid 1 is."""
    _, secret = jailed(sandbox, f"cat {route}; cat /proc/{pid}/root{folder}/s")
    _, wrote = jailed(sandbox, f"echo x > /dev/fd/../../{pid}/root{folder}/planted; echo done")
    _, listed = jailed(sandbox, "ls /proc")
    _, capabilities = jailed(sandbox, "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status")
    return {"secret": secret, "wrote": wrote, "listed": listed, "caps": capabilities}


def check_held(seen: dict[str, str], pid: int, route: Path) -> None:
    assert "hostsecret" not in seen["secret"]
    assert route.read_text() == "hostsecret\n"  # the route itself works from the host
    assert not route.with_name("planted").exists()
    assert str(pid) not in seen["listed"].split()
    numbers = [word for word in seen["listed"].split() if word.isdigit()]
    assert len(numbers) < 6  # only the sandbox's own few processes
    for line in seen["caps"].splitlines():
        assert line.split()[1] == "0000000000000000", line


def test_as_root_a_host_process_cannot_be_reached_through_proc(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    need_root()
    folder = tmp_path / "mnt"
    folder.mkdir()
    with hidden_secret(folder, userns=False) as (pid, route):
        seen = host_process_attempts(sandbox, pid, route, folder)
        check_held(seen, pid, route)


def test_as_an_unprivileged_user_a_host_process_cannot_be_reached_through_proc(
    sandbox: Sandbox,
) -> None:
    need_root()  # to become nobody
    with shared_dir() as base:
        folder = base / "mnt"
        folder.mkdir()
        folder.chmod(0o777)

        def attempt() -> dict[str, object]:
            with hidden_secret(folder, userns=True) as (pid, route):
                seen = host_process_attempts(sandbox, pid, route, folder)
                check_held(seen, pid, route)
                return {"uid": os.getuid(), "held": True}

        assert as_user(NOBODY, attempt) == {"uid": NOBODY, "held": True}


def test_writing_through_dev_fd_to_this_process_root_creates_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    target = tmp_path / "planted"
    line = f"echo x > /dev/fd/../../{os.getpid()}/root{target}"
    code, _ = jailed(sandbox, line)
    assert code != 0 and not target.exists()
    # And the classifier no longer calls it harmless: investigate mode refuses it.
    decision = Gate(None, None).decide(line)
    assert decision.classification.kind == "mutating" and decision.decision == "denied"
    assert not target.exists()


def test_the_sandbox_has_no_network_but_loopback(sandbox: Sandbox) -> None:
    with open("/proc/net/dev") as handle:
        host = {line.split(":")[0].strip() for line in handle.readlines()[2:]}
    _, shown = jailed(sandbox, "cat /proc/net/dev")
    inside = {line.split(":")[0].strip() for line in shown.splitlines()[2:]}
    assert inside == {"lo"}
    assert host - {"lo"} == set() or host != inside


def test_a_root_command_cannot_write_the_audit_log_even_beside_its_scratch(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # The scratch directory is made in TMPDIR: here, the run directory itself.
    monkeypatch.setenv("TMPDIR", str(run_dir))
    gate = Gate.for_run_dir(run_dir, cwd=run_dir)
    gate.run("ls")
    log = run_dir / "shell_audit.jsonl"
    before = log.read_bytes()
    forged = '{"command":"forged","decision":"allowed"}'
    attempts = [
        f"echo '{forged}' >> {log}",
        f"echo '{forged}' >> /proc/1/cwd/shell_audit.jsonl",
        f"for p in /proc/[0-9]*; do echo '{forged}' >> $p/root{log}; done",
        f"echo '{forged}' >> /dev/fd/../../{os.getpid()}/root{log}",
    ]
    for attempt in attempts:
        jailed(sandbox, attempt, cwd=str(run_dir))
    assert log.read_bytes() == before
    assert [event.command for event in parse_shell_audit(before, str(log))] == ["ls"]


def test_a_sandboxed_command_holds_no_terminal_and_no_session(sandbox: Sandbox) -> None:
    _, shown = jailed(sandbox, "tty; ls /dev/pts; echo x > /dev/tty && echo WROTE")
    assert "not a tty" in shown and "WROTE" not in shown


CONNECT = (
    "import socket, sys\n"
    "try:\n"
    "    client = socket.socket(socket.AF_UNIX)\n"
    "    client.connect(sys.argv[1]); client.sendall(b'STOP'); print('connected')\n"
    "except OSError as exc:\n"
    "    print('refused', exc.errno)\n"
)


def test_a_daemon_unix_socket_is_out_of_reach_but_for_readers(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    import socket

    from agentledger.runner.shell_gate.netreaders import NetworkGrant

    path = str(tmp_path / "daemon.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    server.settimeout(0.5)
    script = tmp_path / "connect.py"
    script.write_text(CONNECT)
    try:
        _, shown = jailed(sandbox, f"/usr/bin/python3 {script} {path}")
        assert "refused 13" in shown  # EACCES from the seccomp filter
        with pytest.raises(TimeoutError):
            server.accept()
        reader = NetworkGrant(["/usr/bin/python3", str(script), path], "daemon reader")
        reader.host_network, reader.unix_sockets = False, True
        done = run_shell("", timeout=20, cwd="/", sandbox=sandbox, grant=reader)
        assert bytes(done.stdout.head) == b"connected\n"
        client, _ = server.accept()
        assert client.recv(16) == b"STOP"
        client.close()
    finally:
        server.close()


def test_as_an_unprivileged_user_a_reader_runs_and_keeps_no_capability(sandbox: Sandbox) -> None:
    need_root()  # to become nobody
    from agentledger.runner.shell_gate.netreaders import network_grant

    def attempt() -> dict[str, object]:
        grant = network_grant("ip -br link", os.geteuid())
        assert grant is not None and not isinstance(grant, str)
        listed = run_shell("", timeout=20, cwd="/", sandbox=sandbox, grant=grant)
        _, capabilities = jailed(sandbox, "grep -E '^Cap(Prm|Eff)' /proc/self/status")
        return {
            "capabilities": list(grant.capabilities),
            "exit": listed.exit_code,
            "lo": b"lo " in bytes(listed.stdout.head),
            "caps": [line.split()[1] for line in capabilities.splitlines()],
        }

    seen = as_user(NOBODY, attempt)
    assert seen == {
        "capabilities": [],
        "exit": 0,
        "lo": True,
        "caps": ["0000000000000000", "0000000000000000"],
    }


ADD_KEY = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "add_key, keyctl = {'x86_64': (248, 250), 'aarch64': (217, 219)}[os.uname().machine]\n"
    "for name, ring in (('@s', -3), ('@u', -4)):\n"
    "    got = libc.syscall(add_key, b'user', sys.argv[1].encode(), b'k', ctypes.c_size_t(1),\n"
    "                       ctypes.c_long(ring))\n"
    "    print(name, got, ctypes.get_errno())\n"
    "got = libc.syscall(keyctl, ctypes.c_long(0), ctypes.c_long(-4), ctypes.c_long(0))\n"
    "print('keyctl', got, ctypes.get_errno())\n"
)  # fmt: skip
"""add_key into the session and the user keyring, and keyctl(GET_KEYRING_ID, @u): what
each returned and its errno."""


def _keys_named(description: str) -> list[str]:
    """The lines of /proc/keys (as this process sees it) with `description`."""
    with open("/proc/keys", encoding="utf-8") as keys:
        return [line for line in keys if description in line]


def _drop_keys(description: str) -> None:
    """Invalidate keys left by a failed attempt (KEYCTL_INVALIDATE)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
    for line in _keys_named(description):
        libc.syscall(keyctl, ctypes.c_long(21), ctypes.c_long(int(line.split()[0], 16)))


def keyring_attempt(sandbox: Sandbox, folder: Path, reader: bool) -> dict[str, object]:
    """A sandboxed command (or a network reader that keeps Unix sockets) adds a key to the
    session and user keyrings: what it got, and whether the key reached this uid's keys."""
    from agentledger.runner.shell_gate.netreaders import NetworkGrant

    description = f"agentledger-test-{os.getpid()}-{reader}"
    script = folder / "add_key.py"
    script.write_text(ADD_KEY)
    script.chmod(0o644)
    try:
        if reader:
            grant = NetworkGrant(["/usr/bin/python3", str(script), description], "reader")
            grant.host_network, grant.unix_sockets = False, True
            done = run_shell("", timeout=20, cwd="/", sandbox=sandbox, grant=grant)
            shown = (bytes(done.stdout.head) + bytes(done.stderr.head)).decode()
        else:
            _, shown = jailed(sandbox, f"/usr/bin/python3 {script} {description}")
        return {"shown": shown.splitlines(), "host": _keys_named(description)}
    finally:
        _drop_keys(description)


REFUSED = ["@s -1 13", "@u -1 13", "keyctl -1 13"]


@pytest.mark.parametrize("reader", [False, True], ids=["command", "unix-socket-reader"])
def test_as_root_a_sandboxed_command_cannot_touch_the_kernel_keyrings(
    sandbox: Sandbox, tmp_path: Path, reader: bool
) -> None:
    need_root()
    seen = keyring_attempt(sandbox, tmp_path, reader)
    assert seen == {"shown": REFUSED, "host": []}


@pytest.mark.parametrize("reader", [False, True], ids=["command", "unix-socket-reader"])
def test_as_an_unprivileged_user_a_sandboxed_command_cannot_touch_the_kernel_keyrings(
    sandbox: Sandbox, reader: bool
) -> None:
    need_root()  # to become nobody
    with shared_dir() as folder:
        seen = as_user(NOBODY, lambda: keyring_attempt(sandbox, folder, reader))
    assert seen == {"shown": REFUSED, "host": []}


def test_the_keyring_probe_adds_a_key_where_nothing_refuses_it(tmp_path: Path) -> None:
    """The attempt above is a real one: unsandboxed, the same script adds the key."""
    import subprocess

    description = f"agentledger-test-{os.getpid()}-plain"
    script = tmp_path / "add_key.py"
    script.write_text(ADD_KEY)
    try:
        done = subprocess.run(
            ["/usr/bin/python3", str(script), description], capture_output=True, check=False
        )
        assert done.stdout.decode().splitlines()[1].split()[2] == "0"  # @u: no errno
        assert _keys_named(description)
    finally:
        _drop_keys(description)


VSOCK = """import socket
try:
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()
    print("vsock made")
except OSError as exc:
    print("vsock", exc.errno)
"""


@pytest.mark.parametrize("reader", [False, True], ids=["command", "unix-socket-reader"])
def test_no_vsock_socket_from_the_sandbox(sandbox: Sandbox, tmp_path: Path, reader: bool) -> None:
    """vsock is in no namespace: on a virtual machine a sandboxed command could reach the
    hypervisor's services through it. Refused (EACCES) for commands and readers alike."""
    from agentledger.runner.shell_gate.netreaders import NetworkGrant

    script = tmp_path / "vsock.py"
    script.write_text(VSOCK)
    script.chmod(0o644)
    if reader:
        grant = NetworkGrant(["/usr/bin/python3", str(script)], "reader")
        grant.host_network, grant.unix_sockets = False, True
        done = run_shell("", timeout=20, cwd="/", sandbox=sandbox, grant=grant)
        shown = bytes(done.stdout.head).decode()
    else:
        _, shown = jailed(sandbox, f"/usr/bin/python3 {script}")
    assert shown == "vsock 13\n"
