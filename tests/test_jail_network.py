"""The network in the sandbox (issue 33, cause 4): a namespace of its own, except for the
network readers, whose words are checked option by option before they get the host's.

Nothing here touches this machine's network: readers run inside a network namespace made
for the test (`unshare -Urn`), and refusals are checked without running anything."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate
from agentledger.runner.shell_gate.execute import run_shell
from agentledger.runner.shell_gate.netreaders import check_reader, network_grant
from agentledger.runner.shell_gate.sandbox import Sandbox
from jail_helpers import need_bwrap, need_userns

READ = [
    "iptables -S",
    "iptables -nvL",
    "iptables -L INPUT -n -v --line-numbers",
    "iptables -t nat -L -n",
    "sudo iptables -S | grep DROP",
    "iptables-save -c",
    "ip6tables -S",
    "nft list ruleset",
    "nft -a list table inet filter",
    "tc -s qdisc show dev eth0",
    "tc class show dev eth0",
    "ip -br a",
    "ip route show table all",
    "ip r get 10.0.0.4",
    "ip -s link show eth0",
    "ss -tlnp",
    "ss -s",
    "ping -c 3 -W 1 10.0.0.1",
    "dig +short example.com @10.0.0.53",
    "host example.com",
    "nslookup -vc -type=ANY example.com",
    "nslookup -port=5353 -type=TXT example.com 10.0.0.53",
    "curl -fsS https://example.com/health",
    "curl -s -o /dev/null -w '%{http_code}' http://10.0.0.5:8080/",
    "wget -qO- http://10.0.0.5/status",
    "ssh -o ConnectTimeout=5 -o BatchMode=yes web-01 'iptables -S'",
    "timeout 5 curl -sI https://example.com/",
    'ssh web-01 "sudo iptables -S" | grep -c f2b',
    'curl -s -H "Authorization: Bearer abc" https://10.0.0.5/api',
]
REFUSED = {
    "iptables --ze -L": "--ze",
    "iptables -L -Z": "-Z",
    "iptables -nvLZ": "-Z",
    "iptables -L --zero": "--zero",
    "iptables --list-rule": "--list-rule",
    "iptables -S -M /tmp/x": "-M",
    "iptables-save -M /tmp/modprobe": "-M",
    "nft flush ruleset": "nft list",
    "nft 'list ruleset; flush ruleset'": "nft list",
    "nft -f /tmp/rules": "-f",
    "tc qdisc del dev eth0 root": "show",
    "tc -b /tmp/batch": "-b",
    "ip -b /tmp/batch": "-b",
    "ip link set eth0 down": "show",
    "ip -n other a": "-n",
    "ss -K dst 10.0.0.1": "-K",
    "ss --kill": "--kill",
    "ping -f 10.0.0.1": "-f",
    "ping -i 0.01 10.0.0.1": "-i",
    "dig -p 6379 @127.0.0.1 x": "-p",
    "nslookup -port=redis example.com 127.0.0.1": "-port=redis",
    "nslookup -port=6379 -vc FLUSHALL 127.0.0.1": "-port=6379",
    "nslookup -port=514 x 127.0.0.1": "-port=514",
    "nslookup -vcx example.com": "-vcx",
    "curl gopher://127.0.0.1:6379/_FLUSHALL": "gopher",
    "curl dict://127.0.0.1:11211/stats": "dict",
    "curl telnet://127.0.0.1:25": "telnet",
    "curl file:///etc/shadow": "file",
    "curl 127.0.0.1:6379": "only http",
    "curl -d x http://10.0.0.5/": "-d",
    "curl --data-binary @f http://10.0.0.5/": "--data-binary",
    "curl -X POST http://10.0.0.5/": "POST",
    "curl -XDELETE http://10.0.0.5/": "DELETE",
    "curl -T f http://10.0.0.5/": "-T",
    "curl --unix-socket /run/docker.sock http://x/containers/json": "--unix-socket",
    "curl --upload-file f http://10.0.0.5/": "--upload-file",
    "curl -H 'X-HTTP-Method-Override: DELETE' http://10.0.0.5/": "-H",
    "curl -K /tmp/config http://10.0.0.5/": "-K",
    "curl -o /etc/x http://10.0.0.5/": "-o",
    "wget --post-data=x http://10.0.0.5/": "--post-data",
    "wget --method=DELETE http://10.0.0.5/": "--method",
    "wget -e robots=off http://10.0.0.5/": "-e",
    "ssh -o ProxyCommand='sh -c id' host ls": "ProxyCommand",
    "ssh host -o LocalCommand=id ls": "LocalCommand",
    "ssh -L 8080:localhost:80 host ls": "-L",
    "ssh -I /tmp/lib.so host ls": "-I",
    "ssh -F /tmp/config host ls": "-F",
    "ssh host": "remote command",
    "/tmp/x/curl http://10.0.0.5/": "not the system's",
}


@pytest.mark.parametrize("line", READ)
def test_network_readers_get_the_host_network(line: str) -> None:
    grant = network_grant(line, 0)
    assert grant is not None and not isinstance(grant, str), grant


@pytest.mark.parametrize(("line", "named"), REFUSED.items())
def test_anything_else_a_reader_is_given_is_refused_with_the_reason(line: str, named: str) -> None:
    why = network_grant(line, 0)
    assert isinstance(why, str) and named in why, why
    decision = Gate(None, None).decide(line)
    assert decision.decision == "denied", (line, decision.reason)


def test_only_firewall_readers_keep_a_capability_and_only_as_root() -> None:
    iptables = network_grant("iptables -S", 0)
    ip = network_grant("ip -br a", 0)
    assert not isinstance(iptables, str) and iptables is not None
    assert iptables.capabilities == ("CAP_NET_ADMIN", "CAP_NET_RAW")
    ping = network_grant("ping -c 1 10.0.0.1", 0)
    assert not isinstance(ping, str) and ping is not None
    assert ping.capabilities == ("CAP_NET_RAW",)
    assert not isinstance(ip, str) and ip is not None and ip.capabilities == ()
    unprivileged = network_grant("iptables -S", 1000)
    assert not isinstance(unprivileged, str) and unprivileged is not None
    assert unprivileged.capabilities == ()


def test_curl_and_wget_are_told_to_follow_nothing_but_http() -> None:
    curl = network_grant("curl -s http://10.0.0.5/", 0)
    wget = network_grant("wget -qO- http://10.0.0.5/", 0)
    assert not isinstance(curl, str) and curl is not None
    assert curl.argv[:6] == ["curl", "-q", "--globoff", "--proto", "=http,https", "--proto-redir"]
    assert not isinstance(wget, str) and wget is not None and "--no-config" in wget.argv


def test_a_reader_hidden_in_a_line_is_refused_not_run_without_its_network() -> None:
    # A line of readers and local-only tools runs in one sandbox (test_jail_lines.py);
    # with any other part, or words bash would expand, it is refused.
    hidden = (
        "find . -maxdepth 0; iptables -S",
        "awk 1 /etc/hostname | curl -s http://10.0.0.5/",
        "$(iptables -S)",
        'ssh web "echo $(id)"',
        'curl -H "X: \\$HOME" http://10.0.0.5/',
    )
    for line in hidden:
        decision = Gate(None, None).decide(line)
        assert decision.decision == "denied", line


def test_check_reader_names_no_reader() -> None:
    assert "not a network reader" in check_reader(["ls", "-l"])


class Listener:
    """A TCP server on 127.0.0.1 that records whether anything connected."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.received = b""
        self.connected = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.server.accept()
            except TimeoutError:
                continue
            self.connected = True
            client.settimeout(1)
            with contextlib.suppress(OSError):
                self.received += client.recv(4096)
            client.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


def test_curl_gopher_to_a_local_daemon_delivers_nothing() -> None:
    sandbox = Sandbox(need_bwrap())
    listener = Listener()
    try:
        line = f"curl -s gopher://127.0.0.1:{listener.port}/_FLUSHALL"
        decision = Gate(None, None).decide(line)
        assert decision.decision == "denied" and "gopher" in decision.reason
        # And if the classifier had let it through: its own network has no such daemon.
        run_shell(line, timeout=10, sandbox=sandbox)
        run_shell(
            f"echo FLUSHALL > /dev/tcp/127.0.0.1/{listener.port}", timeout=10, sandbox=sandbox
        )
    finally:
        listener.close()
    assert not listener.connected and listener.received == b""


JAILED = """
import json, subprocess, sys
from agentledger.runner.shell_gate import Gate
subprocess.run(["ip", "link", "add", "jail0", "type", "bridge"], check=True)
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["iptables", "-A", "INPUT", "-i", "jail0", "-j", "DROP"], check=True)
gate = Gate(None, sys.argv[1])
out = {}
for line in ["ip -br link", "cat /proc/net/dev", "iptables -S | grep -c jail0",
             "iptables --ze -L", "ping -c 1 -W 2 127.0.0.1"]:
    result = gate.run(line)
    out[line] = [result.exit_code, result.output, result.reason]
print(json.dumps(out))
"""


def test_readers_see_the_gate_network_and_other_commands_do_not(tmp_path: Path) -> None:
    """In a network namespace made for the test (the gate's 'host' network there)."""
    need_bwrap()
    need_userns()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        ["unshare", "-Urn", sys.executable, "-c", JAILED, str(run_dir / "shell_audit.jsonl")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "jail0" not in done.stdout:
        pytest.skip(f"cannot make a bridge and a rule in a namespace: {done.stderr[-300:]}")
    seen = json.loads(done.stdout)
    assert "jail0" in seen["ip -br link"][1]
    assert "jail0" not in seen["cat /proc/net/dev"][1]
    assert seen["iptables -S | grep -c jail0"][:2] == [0, "1\n"]
    assert seen["iptables --ze -L"][0] is None and "--ze" in seen["iptables --ze -L"][2]
    assert seen["ping -c 1 -W 2 127.0.0.1"][0] == 0, seen["ping -c 1 -W 2 127.0.0.1"]
    events = [json.loads(line) for line in (run_dir / "shell_audit.jsonl").read_text().splitlines()]
    networks = {event["command"]: event.get("network") for event in events}
    assert networks["ip -br link"] == "ip" and networks["cat /proc/net/dev"] == "none"


@pytest.mark.parametrize(
    "line",
    [
        "systemctl status nginx --no-pager",
        "systemctl",
        "systemctl list-units --failed --no-legend",
        "systemctl show -p ActiveState nginx.service",
        "systemctl is-active nginx | grep -c active",
        "docker ps -a --format '{{.Names}}'",
        "docker inspect -f '{{.State.Status}}' api",
        "docker logs --tail 50 api",
        "docker container ls -q",
        "docker stats --no-stream",
    ],
)
def test_daemon_readers_get_their_socket_but_no_network(line: str) -> None:
    grant = network_grant(line, 0)
    assert grant is not None and not isinstance(grant, str), grant
    assert grant.unix_sockets and not grant.host_network and grant.capabilities == ()


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("systemctl stop nginx", "systemctl stop"),
        ("systemctl -H other status nginx", "-H"),
        ("systemctl --machine=c1 status", "--machine"),
        ("systemctl daemon-reload", "daemon-reload"),
        ("docker rm -f api", "docker rm"),
        ("docker -H tcp://10.0.0.5:2375 ps", "global"),
        ("docker exec api sh", "docker exec"),
        ("docker stats", "--no-stream"),
        ("docker container rm api", "only ls"),
    ],
)
def test_daemon_readers_refuse_everything_else(line: str, named: str) -> None:
    why = network_grant(line, 0)
    assert isinstance(why, str) and named in why, why


def test_the_investigators_commands_still_run_in_investigate_mode() -> None:
    """Readers are checked strictly, but not at the cost of what investigators really run."""
    from test_shell_corpora import INVESTIGATIONS

    gate = Gate(None, None)
    refused = {}
    for line in INVESTIGATIONS:
        decision = gate.decide(line)
        if decision.decision == "denied":
            refused[line] = decision.reason
    # The one cost: curl -L follows no redirect, which may lead to any port (a daemon's);
    # 1 of 259 lines, and the same read without -L runs.
    following = "curl -sSL https://example.com/status | jq ."
    assert list(refused) == [following], refused
    assert "a redirect may lead to any port" in refused[following]
    assert gate.decide("curl -sS https://example.com/status | jq .").decision == "allowed"


def test_the_sandbox_knows_every_network_reader_by_name() -> None:
    # The gate skips loading the readers' checks for a line naming none of READER_NAMES.
    from agentledger.runner.shell_gate.reader_checks import READERS
    from agentledger.runner.shell_gate.sandbox import READER_NAMES

    assert sorted(READER_NAMES) == sorted(READERS)
