"""Round five of the jail (issue 33): the environment a vouched or approved command starts
with, the terminal the approver is asked on, the output that reaches it, and the requests a
network reader may make."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate
from agentledger.runner.shell_gate.environment import SYSTEM_PATH, clean_environment
from agentledger.runner.shell_gate.rules import load_policy
from jail_helpers import assert_refused, need_bwrap, over_ssh


def vouching_gate(tmp_path: Path, allowed: str, env: dict[str, str]) -> Gate:
    policy = tmp_path / "vouch.yaml"
    policy.write_text(
        textwrap.dedent(
            f"""\
            mode: remediate
            on_mutating: prompt
            on_unknown: prompt
            allow: [{json.dumps(allowed)}]
            """
        )
    )
    return Gate(load_policy(policy), tmp_path / "audit.jsonl", cwd=tmp_path, env=env, ci=False)


def test_a_vouched_command_gets_a_clean_environment(tmp_path: Path) -> None:
    # BASH_ENV runs a file before the command, PATH finds another `touch`: the agent's own
    # environment must not change what a vouched command does outside the sandbox.
    evil = tmp_path / "evil.sh"
    evil.write_text(f"echo ran > {tmp_path}/bash-env-ran\n")
    fake = tmp_path / "evilbin"
    fake.mkdir()
    (fake / "touch").write_text(f"#!/bin/sh\necho ran > {tmp_path}/fake-touch-ran\n")
    (fake / "touch").chmod(0o755)
    target = tmp_path / "allowed"
    env = {
        **os.environ,
        "BASH_ENV": str(evil),
        "ENV": str(evil),
        "PATH": f"{fake}:{os.environ.get('PATH', '')}",
        "LD_PRELOAD": "/nonexistent/lib.so",
        "GIT_CONFIG_GLOBAL": str(evil),
        "PYTHONSTARTUP": str(evil),
        "LC_TIME": "C",
    }
    gate = vouching_gate(tmp_path, f"touch {target}", env)
    result = gate.run(f"touch {target}")
    assert result.decision.decision == "allowed" and result.exit_code == 0, result
    assert target.exists()
    assert not (tmp_path / "bash-env-ran").exists()
    assert not (tmp_path / "fake-touch-ran").exists()
    assert result.event["sandbox"] == "none" and result.event["environment"] == "reset"


def test_what_the_clean_environment_keeps(tmp_path: Path) -> None:
    show = tmp_path / "show-env"
    show.write_text("#!/bin/sh\nexec /usr/bin/env\n")
    show.chmod(0o755)
    gate = vouching_gate(tmp_path, str(show), {
        "PATH": "/evil", "HOME": "/evil", "USER": "mallory", "BASH_ENV": "/evil",
        "LD_LIBRARY_PATH": "/evil", "KUBECONFIG": "/evil", "PERL5OPT": "-Mevil",
        "GCONV_PATH": "/evil", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "UTC",
        "LC_EVIL": "a\x1bb",
    })  # fmt: skip
    result = gate.run(str(show))
    assert result.decision.decision == "allowed" and result.event["sandbox"] == "none", result
    seen = dict(line.split("=", 1) for line in result.stdout.decode().splitlines())
    for set_by_bash in ("PWD", "OLDPWD", "SHLVL", "_"):
        seen.pop(set_by_bash, None)
    import pwd

    me = pwd.getpwuid(os.geteuid())
    assert seen == {
        "PATH": SYSTEM_PATH, "HOME": me.pw_dir, "USER": me.pw_name, "LOGNAME": me.pw_name,
        "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "UTC",
    }  # fmt: skip


def test_locale_and_zone_that_name_a_file_are_dropped_and_the_umask_is_reset(
    tmp_path: Path,
) -> None:
    # glibc loads a locale or zone from any path such a value names; the agent's umask 000
    # would leave whatever an approved command writes world-writable.
    kept = {"TZ": ":Europe/Paris", "LC_TIME": "C.UTF-8", "LANG": "en_US.UTF-8"}
    dropped = {"TZ": ":/tmp/evil.tz", "LC_ALL": "/tmp/locale", "LC_TIME": "../../tmp/l"}
    assert {k: v for k, v in clean_environment(kept).items() if k in kept} == kept
    assert not set(clean_environment(dropped)) & set(dropped)
    assert clean_environment({"TZ": "Europe/../../tmp/z"}).get("TZ") is None
    target = tmp_path / "written"
    old = os.umask(0)
    try:
        gate = vouching_gate(tmp_path, f"touch {target}", dict(os.environ))
        result = gate.run(f"touch {target}")
    finally:
        os.umask(old)
    assert result.decision.decision == "allowed" and result.exit_code == 0, result
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)


def test_a_sandboxed_read_keeps_the_agents_environment(tmp_path: Path) -> None:
    # Inside the sandbox nothing it does can last: the agent's variables still apply there.
    env = {**os.environ, "GATE_VALUE": "kept"}
    gate = Gate(None, tmp_path / "audit.jsonl", cwd=tmp_path, env=env)
    assert "environment" not in gate._fields(gate.decide("true"), 0.0)
    assert clean_environment({"GATE_VALUE": "x"}).get("GATE_VALUE") is None


# The approver's terminal: one question at a time across processes (BREAK 2), and command
# output that reaches it escaped and never while a question is up (BREAK 3).


def _no_echo(fd: int) -> None:
    import termios

    attrs = termios.tcgetattr(fd)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


def _read_until(master: int, end: bytes) -> bytes:
    import select

    seen = b""
    while end not in seen:
        ready, _, _ = select.select([master], [], [], 20)
        assert ready, f"nothing more on the terminal after {seen!r}"
        seen += os.read(master, 4096)
    return seen


HOLDER = """\
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOCTTY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_question_waits_for_another_process_and_drops_the_answer_typed_meanwhile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import select
    import subprocess
    import sys
    import threading

    from agentledger.runner.shell_gate import ask

    master, slave = os.openpty()
    _no_echo(slave)
    monkeypatch.setattr(ask, "TERMINAL", os.ttyname(slave))
    # Another gate process has its question up on this terminal.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, os.ttyname(slave)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        gate = Gate(load_policy(_remediate(tmp_path)), None, ci=False)
        decision = gate.decide("touch ./hidden")
        answers: list[ask.Answer] = []
        thread = threading.Thread(
            target=lambda: answers.append(ask.terminal_approver(decision, timeout=60))
        )
        thread.start()
        # Nothing is drawn over the other question while it is up...
        assert not select.select([master], [], [], 0.5)[0]
        os.write(master, b"y\n")  # ...and the person answers it: the answer is not this one's
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
    shown = _read_until(master, b"(anything else refuses): ")
    assert b"hidden" in shown  # drawn only now, after the other question ended
    os.write(master, b"n\n")
    thread.join(30)
    assert answers and not answers[0].approved, answers  # the earlier "y" was not its answer
    os.close(master), os.close(slave)


def _remediate(tmp_path: Path) -> Path:
    policy = tmp_path / "ask.yaml"
    policy.write_text("mode: remediate\non_mutating: prompt\non_unknown: prompt\n")
    return policy


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"\x1b[2J\x1b[H", b"\\x1b[2J\\x1b[H"),
        (b"line\r\nnext\n", b"line\r\nnext\n"),
        (b"over\rwrite\n", b"over\\x0dwrite\n"),
        (b"\x9b2J \xc2\x9b2J", b"\\x9b2J \\x9b2J"),
        (b"a\tb\x07\x08\x00\x7f", b"a\tb\\x07\\x08\\x00\\x7f"),
        (b"\xe2\x80\xae caf\xc3\xa9", b"\xe2\x80\xae caf\xc3\xa9"),
        (b"\x1b]0;title\x07", b"\\x1b]0;title\\x07"),
    ],
)
def test_output_to_a_terminal_shows_its_control_sequences(raw: bytes, shown: bytes) -> None:
    from agentledger.runner.shell_gate.terminal import writer_for

    master, slave = os.openpty()
    import termios

    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # what is written arrives as it is
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    write = writer_for(slave)
    for index in range(len(raw)):  # byte by byte: a sequence split across reads is still seen
        write(raw[index : index + 1])
    write.flush()  # type: ignore[attr-defined]
    assert _read_until(master, shown) == shown
    os.close(master), os.close(slave)


def test_output_to_a_pipe_is_passed_on_unchanged() -> None:
    from agentledger.runner.shell_gate.terminal import writer_for

    read, write_end = os.pipe()
    raw = b"\x1b[2J\rfake\x9b\xff\n"
    writer_for(write_end)(raw)
    os.close(write_end)
    assert os.read(read, 100) == raw
    os.close(read)


def test_output_waits_while_a_question_is_on_the_terminal() -> None:
    import select

    from agentledger.runner.shell_gate.terminal import TerminalLock, TerminalWriter

    master, slave = os.openpty()
    question = TerminalLock(slave)
    assert question.try_acquire()
    writer = TerminalWriter(slave)
    writer(b"\x1b[2Jfake question\n")
    assert not select.select([master], [], [], 0.3)[0]  # nothing drawn over the question
    question.release()
    writer.flush()
    assert b"\\x1b[2Jfake question" in _read_until(master, b"question")
    os.close(master), os.close(slave)


def test_the_gate_escapes_a_commands_output_only_on_a_terminal(tmp_path: Path) -> None:
    need_bwrap()
    master, slave = os.openpty()
    read, write_end = os.pipe()
    command = r"printf '\033[2J\033[Hfake question\n'"
    Gate(None, None, cwd=tmp_path, tee=(slave, slave)).run(command)
    assert b"\\x1b[2J\\x1b[Hfake question" in _read_until(master, b"question")
    result = Gate(None, None, cwd=tmp_path, tee=(write_end, write_end)).run(command)
    os.close(write_end)
    assert result.stdout == b"\x1b[2J\x1b[Hfake question\n"
    assert os.read(read, 100) == result.stdout
    os.close(master), os.close(slave), os.close(read)


# Knowledge per global option (BREAK 5): an option that writes or runs makes the line
# unknown or mutating whatever the subcommand, locally and over ssh (no sandbox there).

NOT_READ_ONLY = [
    "chronyc -m tracking makestep",
    "chronyc -m sources 'local stratum 1'",
    "chronyc manual on",
    "chronyc -Q tracking",
    "yum history undo 1",
    "dnf -y history rollback 4",
    "dnf history redo last",
    "dnf history replay t.json",
    "dnf repoquery x --setopt=pluginpath=/tmp",
    "dnf --setopt pluginpath=/tmp list",
    "yum list -c /tmp/evil.conf",
    "dnf info --config=/tmp/evil.conf bash",
    "dnf --installroot=/x list",
    "pip list --log /etc/x",
    "pip freeze --log=/etc/x",
    "pip show pip --log-file /etc/x",
    "pip3 check --lo /etc/x",
    "pip --python /tmp/x list",
    "apt-cache gencaches",
    "apt-cache -o Dir::Cache::pkgcache=/etc/x show bash",
    "apt-cache --option=Dir::Cache=/etc policy",
    "apt-cache -c /tmp/evil.conf policy",
    "apt-cache --config-file /tmp/evil.conf search x",
    "apt-cache -p /etc/x stats",
    "rpm -qa --eval '%{lua:os.remove(\"/etc/x\")}'",
    "rpm -qaE '%(touch /etc/x)'",
    "rpm -q --define '_dbpath /etc/x' bash",
    "rpm -qa -D '_x %(id)'",
    "rpm -qa --macros /tmp/m",
    "rpm -qa --rcfile /tmp/r",
    "rpm -qa --dbpath /tmp/db",
    "rpm -q --pipe 'touch /x' bash",
    "nft list ruleset \\; flush ruleset",
    "nft 'list ruleset; flush ruleset'",
    "iptables-save -M /tmp/x",
    "iptables-save --modprobe=/tmp/x",
    "iptables -L --modprobe=/tmp/x",
    "ip6tables -S -M /tmp/x",
    "curl -s --ssl-sessions /etc/x https://x/",
    "wget -q --hsts-file=/etc/x -O - http://x/",
    "wget -q -O - --rejected-log=/etc/x http://x/",
    "wget -q -O - --post-data=a http://x/",
    "wget -q -O - --use-askpass=/tmp/x http://x/",
    "pip list --local-log /etc/x",
    "pip3 freeze --local-log=/etc/x",
    "PIP_LOG_FILE=/etc/x pip list",
    "export PIP_LOG=/etc/x; pip list",
    "env PIP_LOG_FILE=/etc/x pip list",
    "apt show bash -o Dir::Cache::pkgcache=/etc/x",
    "apt search bash --option=Dir::Cache=/etc",
    "apt-get changelog bash -o Dir::Cache::pkgcache=/etc/x",
    "apt list --installed -c /tmp/evil.conf",
    "APT_CONFIG=/tmp/evil.conf apt-cache policy",
]
STILL_READ_ONLY = [
    "chronyc tracking",
    "chronyc -n sources",
    "chronyc manual list",
    "dnf history",
    "yum history list",
    "dnf history info 3",
    "dnf list installed",
    "pip list --format=json",
    "pip3 show requests",
    "apt-cache policy bash",
    "apt-cache show bash",
    "apt show bash",
    "apt list --installed",
    "apt-get -s install vim",
    "rpm -qa",
    "nft list ruleset",
    "iptables -L -n",
    "iptables-save -t filter",
    "wget -q -O - http://x/",
]


@pytest.fixture(scope="module")
def investigate() -> Gate:
    return Gate(None, None)


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ssh"])
@pytest.mark.parametrize("line", NOT_READ_ONLY)
def test_a_global_option_that_writes_or_runs_is_seen(
    investigate: Gate, line: str, remote: bool
) -> None:
    assert_refused(investigate, over_ssh(line, remote))


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ssh"])
@pytest.mark.parametrize("line", STILL_READ_ONLY)
def test_plain_reads_of_those_tools_still_run(investigate: Gate, line: str, remote: bool) -> None:
    line = over_ssh(line, remote)
    decision = investigate.decide(line)
    assert decision.classification.kind == "read-only", decision


# A network reader's request to a line-protocol daemon (BREAK 4): header names are tokens,
# Host is never removed or emptied, and only ports HTTP servers use are reached.

LINE_DAEMON = r"""
import json, socket, subprocess, sys, threading
from agentledger.runner.shell_gate import Gate

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
lines = {6379: [], 8080: []}

def serve(port):
    server = socket.socket()
    server.bind(("127.0.0.1", port))
    server.listen()
    while True:
        conn, _ = server.accept()
        data = b""
        conn.settimeout(2)
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        lines[port] += data.decode("latin-1").split("\r\n")
        conn.sendall(b"-ERR unknown command\r\n")
        conn.close()

for port in lines:
    threading.Thread(target=serve, args=(port,), daemon=True).start()
results = {}
for name, line in json.loads(sys.argv[1]).items():
    result = Gate(None, None).run(line)
    results[name] = [result.decision.decision, result.decision.reason]
print(json.dumps({"results": results, "lines": lines}))
"""


def test_a_reader_cannot_send_lines_to_a_line_protocol_daemon() -> None:
    import subprocess
    import sys

    from jail_helpers import need_root

    need_root()
    need_bwrap()
    lines = {
        "remove_host": "curl -s -m 2 -H 'Host:' -H 'SET pwned: by-header' http://127.0.0.1:6379/",
        "blank_name": "curl -s -m 2 -H 'SET pwned: by-header' http://127.0.0.1:8080/",
        "empty_host": "curl -s -m 2 -H 'Host;' http://127.0.0.1:8080/",
        "daemon_port": "curl -s -m 2 http://127.0.0.1:6379/",
        "v6_port": "curl -s -m 2 'http://[::1]:6379/'",
        "glob_port": "curl -s -m 2 'http://127.0.0.1:{6379,8080}/'",
        "wget_header": "wget -q -O - -T 2 --header='DEL k: v' http://127.0.0.1:8080/",
        "http_port": "curl -s -m 2 -H 'X-Probe: SET a b' http://127.0.0.1:8080/",
    }
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", LINE_DAEMON, json.dumps(lines)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no network namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    for name in lines:
        expected = "allowed" if name == "http_port" else "denied"
        assert seen["results"][name][0] == expected, (name, seen["results"][name])
    assert seen["lines"]["6379"] == []  # the daemon's port was never reached
    received = [line for line in seen["lines"]["8080"] if line]
    assert received[0].startswith("GET / HTTP/1.1")
    assert "Host: 127.0.0.1:8080" in received and "X-Probe: SET a b" in received
    assert not any(line.startswith(("SET", "DEL")) for line in received)


def test_a_login_uid_the_session_leader_does_not_share_names_nobody(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An unset login uid may be set once by a root process: an agent can set its own before
    # it starts the gate, but not that of the terminal's session leader.
    from agentledger.runner.shell_gate import ask

    master, slave = os.openpty()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: a session leader on the terminal
        os.setsid()
        import fcntl
        import termios

        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        os.read(master, 1)  # hold the session until told
        os._exit(0)
    try:
        import time

        for _ in range(200):  # until the child leads the terminal's session
            try:
                import fcntl
                import struct
                import termios

                sid = struct.unpack(
                    "i", fcntl.ioctl(master, getattr(termios, "TIOCGSID", 0x5429), b"\0" * 4)
                )[0]
                if sid == pid:
                    break
            except OSError:
                pass
            time.sleep(0.01)
        real = {"self": 1001, pid: 4294967295}
        monkeypatch.setattr(ask, "_read_loginuid", lambda who: real.get(who))
        assert sid == pid
        # (the master side answers for the terminal, as /dev/tty does in the gate)
        assert ask._login_name(master) is None  # this process's 1001 is not the session's
        real[pid] = 1001
        assert ask._login_name(master) not in (None, "")  # the same login uid: believed
    finally:
        os.write(slave, b"x")
        os.waitpid(pid, 0)
        os.close(master), os.close(slave)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("npm ls", "read-only"),
        ("busctl list", "read-only"),
        ("udevadm info /dev/sda", "read-only"),
        ("lvs", "read-only"),
        ("pvs -o+pv_used", "read-only"),
        ("vgs --noheadings", "read-only"),
        ("mdadm --detail /dev/md0", "read-only"),
        ("blockdev --getsize64 /dev/sda", "read-only"),
        ("tune2fs -l /dev/sda1", "read-only"),
        ("xfs_info /", "read-only"),
        ("dumpe2fs -h /dev/sda1", "read-only"),
        ("ipcs", "read-only"),
        ("blockdev --setrw /dev/sda", "unknown"),
        ("tune2fs -O ^has_journal /dev/sda1", "unknown"),
        ("mdadm --stop /dev/md0", "unknown"),
        ("udevadm trigger", "mutating"),
        ("busctl call org.x /x org.x M", "mutating"),
        ("npm install x", "unknown"),
        ("lvs --config 'global {locking_type=0}'", "unknown"),
    ],
)
def test_storage_and_system_readers_are_known_by_option(
    investigate: Gate, line: str, kind: str
) -> None:
    assert investigate.decide(line).classification.kind == kind


@pytest.mark.parametrize(
    ("port", "allowed"),
    [(80, True), (443, True), (5050, True), (6060, True), (3000, True), (8080, True),
     (25, False), (21, False), (110, False), (6379, False), (11211, False), (5432, False),
     (3306, False), (9092, False), (27017, False), (26379, False)],
)  # fmt: skip
def test_a_reader_url_reaches_web_ports_not_known_daemons(port: int, allowed: bool) -> None:
    from agentledger.shell.reader_options import url_problem

    problem = url_problem(f"http://127.0.0.1:{port}/")
    assert (problem == "") is allowed, problem
