"""The gated shell in a lab started by an unprivileged user: a network reader keeps what it
needs to read the lab host's firewall, as it does when root started the lab (the command runs
as root of the lab's user namespace either way)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from jail_helpers import NOBODY, as_user, need_bwrap, need_root
from labs_support import lab_privilege, write_small_lab


def _read_the_lab_firewall(lab_dir: str, log: str) -> dict[str, object]:
    """As whoever runs it: start the lab, read its firewall through the investigate gate."""
    from agentledger.labs import load_lab, start_lab
    from agentledger.runner.lab_shell import LabTarget
    from agentledger.runner.shell_gate import Gate, load_policy

    with start_lab(load_lab(Path(lab_dir)), name="rootless-gate") as lab:
        target = LabTarget(lab.name, {h: lab.host_argv(h) for h in lab.spec.host_names()}, "web")
        gate = Gate(load_policy(None), Path(log), lab=target, ci=True)
        rules = gate.run("iptables -S f2b")
        flush = gate.run("iptables -F f2b")
        still = lab.run("web", "iptables -S f2b").stdout
    return {
        "code": rules.exit_code,
        "stdout": rules.stdout.decode(),
        "stderr": rules.stderr.decode(),
        "flush_denied": flush.denied,
        "after": still if isinstance(still, str) else still.decode(),
    }


@pytest.mark.slow
def test_an_unprivileged_user_reads_a_lab_hosts_firewall_through_the_gate() -> None:
    need_root()  # to become nobody
    need_bwrap()
    lab_privilege()
    with tempfile.TemporaryDirectory() as base:
        Path(base).chmod(0o777)
        lab_dir = write_small_lab(Path(base) / "lab")
        # nobody cannot read this Python's installation: what the gate loads lazily, now
        _read_the_lab_firewall(str(lab_dir), f"{base}/root.jsonl")
        seen = as_user(NOBODY, lambda: _read_the_lab_firewall(str(lab_dir), f"{base}/nobody.jsonl"))
    assert seen["code"] == 0, seen["stderr"]
    assert "-A f2b -s 10.0.0.2/32" in str(seen["stdout"])
    assert seen["flush_denied"] is True  # still read-only: investigate mode
    assert "-A f2b -s 10.0.0.2/32" in str(seen["after"])
