"""Snapshots of a lab's real state, per host: firewall, shaping, addresses, routes, sockets,
owned files and the owners' desired states.

The text form is sections, host by host in spec order, each headed `=== HOST: SECTION ===`;
the JSON form is {"hosts": {HOST: {SECTION: TEXT}}}. With `stable=True` live counters (packet
and byte counts, tc statistics, process ids) are zeroed, so two snapshots of the same state
are byte for byte the same; a judge's snapshot keeps them (drop counters are evidence).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentledger.labs.script import SYSTEM_PATH, host_dir

if TYPE_CHECKING:
    from agentledger.labs.runtime import Lab

__all__ = ["SECTIONS", "Snapshot", "take_snapshot"]

_MARK = "\x1esection "
SNAPSHOT_SECONDS = 60
SECTIONS: tuple[tuple[str, str], ...] = (
    ("ip addr", "ip -o addr show | sed 's/ valid_lft.*//; s/\\\\ *$//'"),
    ("ip link", "ip -o link show | sed 's/\\\\.*//'"),
    (
        "ip route",
        "ip route show table all | grep -v '^local\\|^broadcast\\|^multicast\\|fe80\\|ff00'",
    ),
    ("ip rule", "ip rule show"),
    ("iptables-save", "command -v iptables-save >/dev/null && iptables-save | grep -v '^#'"),
    ("nft list ruleset", "command -v nft >/dev/null && nft list ruleset"),
    ("ipset list", "command -v ipset >/dev/null && ipset list"),
    ("tc -s qdisc", "tc -s qdisc show"),
    (
        "tc -s class",
        'for d in $(ls /sys/class/net); do tc -s class show dev $d | sed "s/^/$d: /"; done',
    ),
    (
        "tc filter",
        'for d in $(ls /sys/class/net); do tc filter show dev $d | sed "s/^/$d: /"; done',
    ),
    ("ss -ltnup", "ss -Hltnup | sort"),
    ("sysctl", "sysctl net.ipv4.ip_forward net.ipv4.conf.all.rp_filter 2>/dev/null"),
)
"""Section name -> the shell that prints it in a host (missing tools leave it empty)."""

_STABLE = (
    (re.compile(r"\[\d+:\d+\]"), "[0:0]"),
    (re.compile(r"counter packets \d+ bytes \d+"), "counter packets 0 bytes 0"),
    (
        re.compile(r"Sent \d+ bytes \d+ pkt \(dropped \d+, overlimits \d+ requeues \d+\)"),
        "Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)",
    ),
    (re.compile(r"backlog \d+b \d+p requeues \d+"), "backlog 0b 0p requeues 0"),
    (re.compile(r"pid=\d+,fd=\d+"), "pid=0,fd=0"),
    (re.compile(r"(?m)^\s*(rate \d+\w*bit \d+pps )?backlog.*$"), "  backlog 0b 0p requeues 0"),
    (re.compile(r"(?m)^ *(lended|tokens|maxpacket|rate \d).*\n"), ""),
)


@dataclass(frozen=True)
class Snapshot:
    """Sections of real state per host, in spec order."""

    hosts: dict[str, dict[str, str]]

    def to_text(self) -> str:
        """The sectioned text form (what a run keeps as snapshot.txt)."""
        parts: list[str] = []
        for host, sections in self.hosts.items():
            for name, text in sections.items():
                parts.append(
                    f"=== {host}: {name} ===\n{text.rstrip()}\n"
                    if text.strip()
                    else f"=== {host}: {name} ===\n"
                )
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        return {"schema_version": 1, "hosts": self.hosts}


def _host_script(lab: Lab, host: str) -> str:
    lines = [f"echo '{_MARK}{name}'; ( {command} ) 2>&1 || true" for name, command in SECTIONS]
    files = [f.path for h in lab.spec.hosts if h.name == host for f in h.files]
    for owner in lab.spec.owners:
        if owner.host == host:
            files += [f.path for f in owner.desired]
    for path in files:
        full = shlex.quote(f"{host_dir(host)}/{path}")
        lines.append(f"echo '{_MARK}file {path}'; cat {full} 2>&1 || true")
    return "\n".join(lines)


def take_snapshot(lab: Lab, *, stable: bool = False) -> Snapshot:
    """Read every host's state from the running `lab` (read-only commands; hosts at once)."""
    running = {
        host: subprocess.Popen(
            [*lab.host_argv(host), "sh", "-c", _host_script(lab, host)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd="/",
            env={"PATH": SYSTEM_PATH, "LC_ALL": "C.UTF-8"},
        )
        for host in lab.spec.host_names()
    }
    hosts: dict[str, dict[str, str]] = {}
    for host, proc in running.items():
        out, _ = proc.communicate(timeout=SNAPSHOT_SECONDS)
        sections: dict[str, str] = {}
        for chunk in out.split(_MARK)[1:]:
            name, _, text = chunk.partition("\n")
            if stable:
                for pattern, replacement in _STABLE:
                    text = pattern.sub(replacement, text)
            sections[name] = text
        owned = [o for o in lab.spec.owners if o.host == host]
        if owned:
            sections["owners"] = "".join(f"{o.name}: owns {o.owns}\n" for o in owned)
        hosts[host] = sections
    return Snapshot(hosts)
