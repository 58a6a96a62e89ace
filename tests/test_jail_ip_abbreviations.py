"""`ip` abbreviated as ip itself reads it (iproute2's `matches()`: a non-empty prefix of a
keyword is the keyword): `ip a s` reads and gets the host's network; `ip r a` and
`ip l s dev lo down` write and stay refused. Both directions are checked against the real
`ip`, in a network namespace of the test's own (issue 33)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from agentledger.runner.shell_gate import Gate, load_policy
from agentledger.runner.shell_gate.netreaders import network_grant
from agentledger.runner.shell_gate.reader_ip import OBJECTS, ip_object
from jail_helpers import need_userns

READS = [
    "ip a", "ip a s", "ip a sh dev lo", "ip a l", "ip a ls", "ip addr lst", "ip -br a s",
    "ip r", "ip r s", "ip r l", "ip ro sh table all", "ip r g 127.0.0.1", "ip rou li",
    "ip l", "ip l sh", "ip l l", "ip -s l sh lo", "ip li sho dev lo",
    "ip n", "ip n s", "ip neigh l", "ip ru", "ip ru s", "ip ru l",
]  # fmt: skip
WRITES = [
    "ip r a 10.9.0.0/24 dev lo",
    "ip r ap 10.9.1.0/24 dev lo",
    "ip r rep 10.9.2.0/24 dev lo",
    "ip r d 10.8.0.0/24",
    "ip ro del 10.8.0.0/24",
    "ip r f dev lo",
    "ip l s dev lo down",
    "ip l s lo mtu 1280",
    "ip li se dev lo down",
    "ip a a 10.9.9.9/32 dev lo",
    "ip a d 127.0.0.1/8 dev lo",
    "ip a f dev lo",
    "ip ru a from 10.1.0.0/16 table 5",
    "ip ru d from 10.2.0.0/16 table 6",
]
# The state `ip` can change here, dumped before and after each command.
_DUMP = "ip -d a; ip -d r show table all; ip -d l; ip ru; ip -6 r show table all"
_SETUP = "ip l set lo up; ip r add 10.8.0.0/24 dev lo; ip ru add from 10.2.0.0/16 table 6"


def _in_a_namespace(command: str) -> tuple[int, bool, str]:
    """(ip's exit status, whether the namespace's state changed, its stderr) of `command`
    run by the real `ip` in a fresh network namespace (of a user namespace: no root needed)."""
    script = f'{_SETUP}; {_DUMP}; echo @@@; {command} >/dev/null; echo "@@@$?"; {_DUMP}'
    done = subprocess.run(
        ["unshare", "-rn", "sh", "-c", script], capture_output=True, text=True, check=False
    )
    before, rest = done.stdout.split("@@@\n", 1)
    after = rest.split("@@@", 1)[1]
    status, _, after = after.partition("\n")
    return int(status), before != after, done.stderr


@pytest.fixture(scope="module", autouse=True)
def real_ip() -> None:
    if shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin") is None:
        pytest.skip("no ip (iproute2) here")
    need_userns()


@pytest.mark.parametrize("command", READS)
def test_an_abbreviated_read_gets_the_host_network_and_changes_nothing(command: str) -> None:
    grant = network_grant(command, 0)
    assert grant is not None and not isinstance(grant, str), grant
    assert Gate(load_policy(None), None, ci=True).decide(command).decision == "allowed"
    status, changed, stderr = _in_a_namespace(command)
    assert status == 0 and not changed, stderr


@pytest.mark.parametrize("command", WRITES)
def test_an_abbreviated_write_is_refused_and_really_writes(command: str) -> None:
    why = network_grant(command, 0)
    assert isinstance(why, str) and "ip" in why, why  # the reader's check, on its own
    assert Gate(load_policy(None), None, ci=True).decide(command).decision == "denied"
    status, changed, stderr = _in_a_namespace(command)
    assert status == 0 and changed, stderr  # ip read it as the write it looks like


def test_every_short_form_the_check_passes_only_reads_in_real_ip() -> None:
    """Every one- and two-letter object word with every prefix of every command word of
    those objects: what the reader check lets through, ip runs without a change."""
    verbs = [
        "list", "show", "lst", "save", "showdump", "help", "xstats", "afstats", "get", "add",
        "change", "chg", "replace", "prepend", "append", "test", "delete", "del", "flush",
        "restore", "set", "property",
    ]  # fmt: skip
    words = {verb[:n] for verb in verbs for n in range(1, len(verb) + 1)}
    objects = {name[:n] for name in OBJECTS for n in (1, 2)}
    passed = []
    for obj in sorted(objects):
        for word in sorted(words):
            command = f"ip {obj} {word}"
            grant = network_grant(command, 0)
            if grant is not None and not isinstance(grant, str):
                passed.append(command)
    assert "ip a s" in passed and "ip l s" not in passed and "ip r a" not in passed
    assert len(passed) >= 40
    for command in passed:
        _, changed, stderr = _in_a_namespace(command)
        assert not changed, (command, stderr)


def test_an_object_is_the_first_of_ips_table_the_word_starts() -> None:
    assert [ip_object(w) for w in ("a", "ad", "addrl", "r", "ru", "n", "ne", "l", "li", "")] == [
        "address", "address", "addrlabel", "route", "rule", "neighbor", "neighbor", "link",
        "link", None,
    ]  # fmt: skip
    for word in ("addrl", "ntable", "m", "net", "x"):
        assert isinstance(network_grant(f"ip {word} show", 0), str), word
