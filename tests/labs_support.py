"""Shared by the lab tests: a small lab spec, and the check that labs can run here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentledger.labs import LabUnavailableError, Privilege, choose_privilege

SMALL_LAB = """\
schema_version: 1
hosts:
  - name: web
    files:
      - {path: www/index.html, content: "hello\\n"}
  - name: client
links:
  - a: {host: client, address: 10.0.0.2/24}
    b: {host: web, address: 10.0.0.1/24}
services:
  - {name: http, host: web, run: exec python3 -m http.server 80 --directory www, ready_port: 80}
owners:
  - name: jail
    host: web
    owns: the chain f2b
    desired:
      - {path: jail/banned, content: ""}
    tools:
      - name: jailctl
        run: |
          case "$1" in
            ban) echo "$2" >> "$LAB_DIR/jail/banned" ;;
            unban) grep -vx "$2" "$LAB_DIR/jail/banned" > "$LAB_DIR/jail/n" || true
                   mv "$LAB_DIR/jail/n" "$LAB_DIR/jail/banned" ;;
          esac
    cycle: |
      iptables -N f2b 2>/dev/null || true
      iptables -C INPUT -j f2b 2>/dev/null || iptables -I INPUT -j f2b
      iptables -F f2b
      while read -r ip; do
        [ -z "$ip" ] || iptables -A f2b -s "$ip" -p tcp -j REJECT --reject-with tcp-reset
      done < jail/banned
fault:
  description: the jail bans the client
  steps:
    - {host: web, run: FAULT}
probes:
  - {name: client-http, role: symptom, host: client, http: "http://10.0.0.1/"}
remedies:
  - name: unban
    kind: good
    why: through the jail
    steps: [{host: web, run: jailctl unban 10.0.0.2}]
  - name: delete-rule
    kind: wrong
    why: reverted by the jail
    steps:
      - host: web
        run: iptables -D f2b -s 10.0.0.2/32 -p tcp -j REJECT --reject-with tcp-reset
    broken_before_cycles: []
    broken: [client-http]
"""


def write_small_lab(directory: Path, fault: str = "jailctl ban 10.0.0.2") -> Path:
    """A scenario directory holding the small lab, with `fault` as its fault command."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "lab.yaml").write_text(SMALL_LAB.replace("FAULT", fault))
    return directory


def lab_privilege() -> Privilege:
    """How labs run here, or a skip saying why they cannot (a failure in CI, where they must)."""
    try:
        return choose_privilege()
    except LabUnavailableError as exc:
        if os.environ.get("AGENTLEDGER_REQUIRE_LABS") == "1":
            raise
        pytest.skip(f"labs need unprivileged user namespaces (or root) and their tools: {exc}")
