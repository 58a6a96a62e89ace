"""Lines that chain network readers with other commands (issue 33): one sandbox with the
union of what the readers need, only when every other part is a local-only tool.

Nothing here touches this machine's network: the lines run inside a network namespace made
for the test (`unshare -Urn`); the rest is checked without running anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate
from agentledger.runner.shell_gate.netlines import line_grant
from agentledger.runner.shell_gate.netreaders import NetworkGrant, check_reader
from jail_helpers import need_bwrap, need_userns


def _grant(line: str, euid: int = 0) -> NetworkGrant:
    grant = line_grant(line, euid, "/bin/bash")
    assert isinstance(grant, NetworkGrant), grant
    return grant


def test_the_readers_of_a_line_get_the_union_of_what_each_needs() -> None:
    grant = _grant("sudo iptables -L -n -v || true; ping -c 1 10.0.0.1 && tail -3 /var/log/x")
    assert set(grant.capabilities) == {"CAP_NET_ADMIN", "CAP_NET_RAW"}
    assert grant.host_network and not grant.unix_sockets
    daemons = _grant('systemctl status docker && docker ps -a --filter "name=gitlab"')
    assert daemons.unix_sockets and not daemons.host_network and daemons.capabilities == ()
    assert _grant("ls; iptables -S", euid=1000).capabilities == ()


def test_what_runs_is_rebuilt_from_the_checked_words() -> None:
    grant = _grant(
        "sudo service ssh status || true; \\\nsudo grep -E '^(Port|ListenAddress)' "
        "/etc/ssh/sshd_config\nsudo iptables -L -n | grep ':22' 2>/dev/null || echo \"none\"\n"
        "curl -s http://10.0.0.5/ > /dev/null; echo $?"
    )
    assert grant.argv[:2] == ["/bin/bash", "-c"]
    assert grant.argv[2] == (
        "service ssh status || true ; grep -E '^(Port|ListenAddress)' /etc/ssh/sshd_config ; "
        "iptables -L -n | grep :22 2>/dev/null || echo none ; "
        "curl -q --globoff --proto =http,https --proto-redir =http,https --max-redirs 0 -s "
        "http://10.0.0.5/ "
        '>/dev/null ; echo "$?"'
    )
    assert grant.tool == "service+iptables+curl"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("find . -maxdepth 0; iptables -S", "find is neither"),
        ("sed -n 1p /etc/hosts; ss -tln", "sed is neither"),
        ("awk 'BEGIN{system(\"id\")}'; ss -tln", "awk is neither"),
        ("ls; env iptables -S", "env is neither"),
        ("ls; bash -c ss", "bash is neither"),
        ("X=1 ls; ss -tln", "X=1 is neither"),
        ("ls; sshd -D; ss -tln", "sshd runs here only"),
        ("sort --compress-program=sh x; ss -tln", "short options"),
        ("sort -n *; ss -tln", "no glob"),
        ("ls; iptables --ze -L", "exact options"),
        ("ls; iptables -S *", "without globs"),
        ("ls; /tmp/iptables -S", "not the system's"),
        ("ls $HOME; ss -tln", "only plain words"),
        ("ls `id`; ss -tln", "only plain words"),
        ("ls $(id); ss -tln", "only plain words"),
        ('ls "$HOME"; ss -tln', "only plain words"),
        ("ls & ss -tln", "only plain words"),
        ("ls |& ss -tln", "only plain words"),
        ("echo x >/dev/tcp/127.0.0.1/80; ss -tln", "only plain words"),
        ("ls > /tmp/out; ss -tln", "only plain words"),
        ("ss -tln < /etc/hosts", "only plain words"),
        ("ls; ss -tln # note", "only plain words"),
        ("cat <<EOF; ss -tln", "only plain words"),
        ("(ls); ss -tln", "only plain words"),
        ("test -v 'a[$(ip link del eth0)]'; ss -tln", "subscript"),
        ("[ -v 'a[$(id)]' ] || ss -tln", "subscript"),
        ("printf -v PATH /tmp; iptables -S", "printf -v"),
        ("ls && && ss -tln", "an empty command"),
        ("ls; ss -tln &&", "an empty command"),
    ],
)
def test_a_line_with_a_part_that_is_not_checked_gets_no_network(line: str, why: str) -> None:
    problem = line_grant(line, 0, "/bin/bash")
    assert isinstance(problem, str) and why in problem, problem


def test_a_line_without_a_reader_is_left_to_the_usual_sandbox() -> None:
    assert line_grant("ls; grep x /etc/hosts | wc -l", 0, "/bin/bash") is None


def test_the_gate_runs_such_lines_and_refuses_the_others() -> None:
    gate = Gate(None, None)
    allowed = gate.decide("systemctl status docker && docker ps -a --filter 'name=gitlab'")
    assert allowed.decision == "allowed" and isinstance(allowed.network, NetworkGrant)
    refused = gate.decide("find . -maxdepth 0; iptables -S")
    assert refused.decision == "denied" and "find is neither" in refused.reason


JAILED = """
import json, subprocess, sys
from agentledger.runner.shell_gate import Gate
subprocess.run(["ip", "link", "add", "jail0", "type", "bridge"], check=True)
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["iptables", "-A", "INPUT", "-i", "jail0", "-j", "DROP"], check=True)
gate = Gate(None, sys.argv[1])
out = {}
for line in sys.argv[2:]:
    result = gate.run(line)
    out[line] = [result.exit_code, result.output, result.reason]
print(json.dumps(out))
"""
CHAINED = (
    "echo start && ip -br link | grep -c jail0 && sudo iptables -S INPUT | grep -c jail0 "
    "|| echo none; ls / > /dev/null; echo $?"
)
NOT_LOCAL = "find / -maxdepth 0 -quit; ip -br link"


def test_a_chained_line_sees_the_gate_network_in_one_sandbox(tmp_path: Path) -> None:
    """In a network namespace made for the test (the gate's 'host' network there)."""
    need_bwrap()
    need_userns()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [
            "unshare",
            "-Urn",
            sys.executable,
            "-c",
            JAILED,
            str(run_dir / "audit.jsonl"),
            CHAINED,
            NOT_LOCAL,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "jail0" not in done.stdout:
        pytest.skip(f"cannot make a bridge and a rule in a namespace: {done.stderr[-300:]}")
    seen = json.loads(done.stdout)
    assert seen[CHAINED][:2] == [0, "start\n1\n1\n0\n"], seen[CHAINED]
    assert seen[NOT_LOCAL][0] is None and "find is neither" in seen[NOT_LOCAL][2]
    events = [json.loads(line) for line in (run_dir / "audit.jsonl").read_text().splitlines()]
    assert {event["command"]: event.get("network") for event in events}[CHAINED] == ("ip+iptables")


def test_readers_after_the_first_one_s_pipe_get_their_network_too() -> None:
    gate = Gate(None, None)
    both = gate.decide("iptables -S | grep -c DROP; ss -tln")
    assert isinstance(both.network, NetworkGrant) and both.network.tool == "iptables+ss"
    # With a part that is not local-only, only the first reader gets the network, as before.
    first = gate.decide("iptables -S | awk 1; ss -tln")
    assert first.decision == "allowed" and isinstance(first.network, NetworkGrant)
    assert first.network.tool == "iptables" and first.network.rest == " awk 1; ss -tln"


def test_a_bracket_test_is_a_local_part() -> None:
    assert _grant("[ -f /etc/hosts ] && ss -tln").argv[2] == "'[' -f /etc/hosts ] && ss -tln"


@pytest.mark.parametrize(
    "words",
    [
        "ping -M do -s 1472 -c 3 172.16.8.20",
        "ping -I eth0 -W 1 -i 0.5 -c 2 10.0.0.1",
        "docker --version",
        "netstat -tulpn",
        "netstat --route --numeric",
        "service ssh status",
        "service --status-all",
        "ufw status verbose",
        "ufw status numbered",
    ],
)
def test_the_read_only_forms_investigators_use_pass_their_reader(words: str) -> None:
    assert check_reader(words.split()) == ""


@pytest.mark.parametrize(
    "words",
    [
        "ping -M dont -f 10.0.0.1",
        "ping -M x 10.0.0.1",
        "docker --host tcp://10.0.0.5:2375 ps",
        "netstat -c",
        "netstat -tulpn eth0",
        "service ssh restart",
        "service ssh",
        "ufw enable",
        "ufw status verbose extra",
        "ufw --force reset",
    ],
)
def test_their_writing_forms_do_not(words: str) -> None:
    assert check_reader(words.split()) != ""
