"""Snapshots of a lab's real state, per host: firewall, shaping, addresses, routes, sockets,
owned files and the owners' desired states.

The text form is sections, host by host in spec order, each headed `=== HOST: SECTION ===`;
the JSON form is {"hosts": {HOST: {SECTION: TEXT}}}. With `stable=True` live counters (packet
and byte counts, tc statistics, process ids) are zeroed and kernel-chosen qdisc handles made
8000:, so two snapshots of the same state (even of two labs) are byte for byte the same; a
judge's snapshot keeps them (drop counters are evidence).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentledger.labs.script import Command, host_dir

if TYPE_CHECKING:
    from agentledger.labs.runtime import Lab

__all__ = ["SECTIONS", "Snapshot", "take_snapshot"]

_MARK = "\x1esection "
SNAPSHOT_SECONDS = 60
SECTIONS: tuple[tuple[str, str], ...] = (
    ("ip addr", "ip -o addr show"),
    ("ip link", "ip -o link show"),
    ("ip route", "ip route show table all"),
    ("ip rule", "ip rule show"),
    ("iptables-save", "command -v iptables-save >/dev/null && iptables-save"),
    ("nft list ruleset", "command -v nft >/dev/null && nft list ruleset"),
    ("ipset list", "command -v ipset >/dev/null && ipset list"),
    ("tc -s qdisc", "tc -s qdisc show"),
    ("tc -s class", 'for d in $DEVS; do echo "# $d"; tc -s class show dev $d; done'),
    ("tc filter", 'for d in $DEVS; do echo "# $d"; tc filter show dev $d; done'),
    ("ss -ltnup", "ss -Hltnup"),
    (  # read by the shell itself: /proc/sys/net is the reader's network namespace's
        "sysctl",
        "read -r f < /proc/sys/net/ipv4/ip_forward; "
        "read -r r < /proc/sys/net/ipv4/conf/all/rp_filter; "
        'echo "net.ipv4.ip_forward = $f"; echo "net.ipv4.conf.all.rp_filter = $r"',
    ),
)
"""Section name -> the shell that prints it in a host (missing tools leave it empty). Few
processes: the trimming is done here, in `_tidy`, not by sed and grep in every host."""

_SKIP_ROUTES = re.compile(r"^(local|broadcast|multicast)\b|fe80|ff00")


def _tidy(section: str, text: str) -> str:
    """A section's raw output without what says nothing (comments, kernel routes, lft)."""
    lines = text.splitlines()
    if section == "ip addr":
        lines = [re.sub(r"\s*\\?\s*valid_lft.*|\s*\\\s*$", "", line) for line in lines]
    elif section == "ip link":
        lines = [line.split("\\")[0].rstrip() for line in lines]
    elif section == "ip route":
        lines = [line for line in lines if not _SKIP_ROUTES.search(line)]
    elif section == "iptables-save":
        lines = [line for line in lines if not line.startswith("#")]
    elif section == "ss -ltnup":
        lines = sorted(lines)
    elif section in ("tc -s class", "tc filter"):
        device, tagged = "", []
        for line in lines:
            if line.startswith("# "):
                device = line[2:]
            elif line.strip():
                tagged.append(f"{device}: {line}")
        lines = tagged
    return "".join(line + "\n" for line in lines)


_STABLE = (
    (re.compile(r"\[\d+:\d+\]"), "[0:0]"),
    (re.compile(r"counter packets \d+ bytes \d+"), "counter packets 0 bytes 0"),
    (
        re.compile(r"Sent \d+ bytes \d+ pkt \(dropped \d+, overlimits \d+ requeues \d+\)"),
        "Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)",
    ),
    (re.compile(r"backlog \d+b \d+p requeues \d+"), "backlog 0b 0p requeues 0"),
    (re.compile(r"pid=\d+,fd=\d+"), "pid=0,fd=0"),
    # handles the kernel picks for qdiscs given none (8000: and up) differ from lab to lab
    (re.compile(r"\b[89a-f][0-9a-f]{3}:"), "8000:"),
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


SPLIT = 7
"""Each host's sections are read by two shells at once, SECTIONS[:SPLIT] (iproute2's and the
firewall's) and the rest (tc's, sockets, sysctls, files), so that on a busy machine a snapshot
waits for about half a host's programs, for two more forks per host."""


def _host_scripts(lab: Lab, host: str) -> list[str]:
    devices = [e.dev for link in lab.spec.links for e in (link.a, link.b) if e.host == host]
    devices += [p.dev for bridge in lab.spec.bridges for p in bridge.ports if p.host == host]
    lines = [f"echo '{_MARK}{name}'; {{ {command} ; }} 2>&1" for name, command in SECTIONS]
    files = [f.path for h in lab.spec.hosts if h.name == host for f in h.files]
    for owner in lab.spec.owners:
        if owner.host == host:
            files += [f.path for f in owner.desired]
    for path in files:
        full = shlex.quote(f"{host_dir(host)}/{path}")
        lines.append(f"echo '{_MARK}file {path}'; cat {full} 2>&1")
    devs = f"DEVS={shlex.quote(' '.join(devices))}"
    return ["\n".join(lines[:SPLIT]), "\n".join([devs, *lines[SPLIT:]])]


def take_snapshot(lab: Lab, *, stable: bool = False) -> Snapshot:
    """Read every host's state from the running `lab` (read-only commands; hosts at once)."""
    running = {
        host: [
            lab.start(host, Command(["sh", "-c", script], mounts=False))
            for script in _host_scripts(lab, host)
        ]
        for host in lab.spec.host_names()
    }
    hosts: dict[str, dict[str, str]] = {}
    for host, procs in running.items():
        out = ""
        for proc in procs:
            try:
                out += proc.communicate(timeout=SNAPSHOT_SECONDS)[0]
            except subprocess.TimeoutExpired:
                for each in procs:
                    each.kill()
                raise
        sections: dict[str, str] = {}
        for chunk in out.split(_MARK)[1:]:
            name, _, text = chunk.partition("\n")
            text = _tidy(name, text)
            if stable:
                for pattern, replacement in _STABLE:
                    text = pattern.sub(replacement, text)
            sections[name] = text
        owned = [o for o in lab.spec.owners if o.host == host]
        if owned:
            sections["owners"] = "".join(f"{o.name}: owns {o.owns}\n" for o in owned)
        hosts[host] = sections
    return Snapshot(hosts)
