"""An allow pattern vouches for a command, not for the environment it runs in (issue 33, cause 6;
red team F7): in remediate mode a vouched command runs outside the sandbox, so any variable the
line sets (`DBUS_SYSTEM_BUS_ADDRESS=unixexec:... systemctl restart nginx` ran a program) makes the
gate ask instead."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentledger
from agentledger.runner.shell_gate import Gate
from agentledger.runner.shell_gate.rules import load_policy

REMEDIATE = Path(agentledger.__file__).parent / "data" / "policies" / "remediate.yaml"


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate(load_policy(REMEDIATE), None, ci=False)


@pytest.mark.parametrize(
    "line",
    [
        "DBUS_SYSTEM_BUS_ADDRESS=unixexec:path=/usr/bin/touch,argv1=/tmp/p systemctl restart nginx",
        "FOO=1 systemctl restart nginx",
        "HOME=/tmp/x systemctl reload nginx",
        "env XDG_CONFIG_HOME=/tmp/x systemctl restart nginx",
        "env -i systemctl restart nginx",
        "sudo KUBECONFIG=/tmp/k systemctl restart nginx",
        "export GLIBC_TUNABLES=x; systemctl restart nginx",
        "HOME=/tmp/x; systemctl restart nginx",
        "for HOME in /tmp/x; do systemctl restart nginx; done",
        "read HOME; systemctl restart nginx",
        "sh -c 'SSLKEYLOGFILE=/tmp/k systemctl restart nginx'",
    ],
)
def test_a_line_that_sets_a_variable_is_not_vouched_for(gate: Gate, line: str) -> None:
    decision = gate.decide(line)
    assert decision.decision == "prompt", decision
    assert "does not vouch for it" in decision.reason


@pytest.mark.parametrize(
    "line",
    [
        "systemctl restart nginx",
        "sudo systemctl reload nginx",
        "systemctl reload a && systemctl reload b",
    ],
)
def test_the_vouched_command_alone_still_runs(gate: Gate, line: str) -> None:
    decision = gate.decide(line)
    assert decision.decision == "allowed", decision
    assert "matches the allow pattern" in decision.reason


def test_in_ci_such_a_line_is_denied() -> None:
    ci = Gate(load_policy(REMEDIATE), None, ci=True)
    assert ci.decide("FOO=1 systemctl restart nginx").decision == "denied"
