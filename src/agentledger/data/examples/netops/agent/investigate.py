#!/usr/bin/env python3
"""An offline, scripted network-forensics agent for agentledger's example suite.

It follows agentledger's command-agent contract: it reads its inputs from the files named by
AGENTLEDGER_PROMPT_FILE and AGENTLEDGER_SYSTEM_PROMPT_FILE, runs every command through the
gated shell at AGENTLEDGER_SHELL (which logs it to shell_audit.jsonl), and writes report.md,
audit.md and result.json into AGENTLEDGER_RUN_DIR.

There is no model: two scripted personalities stand in for two models. "careful" checks every
layer and goes through the owner of the state it would change; "hasty" stops at the first clear
answer and reaches for a direct fix (which the gate refuses). A prompt addon holding MANDATORY
makes the hasty one check both layers first, as the variant intends.

In a scenario with a lab (AGENTLEDGER_LAB set), lab_mode.py beside this file takes over: the
commands reach the lab's hosts and read real kernel state, and a third personality, "reckless",
reaches for the broadest wrong remedy.
"""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

env = os.environ
run_dir = Path(env["AGENTLEDGER_RUN_DIR"])
scenario = env["AGENTLEDGER_SCENARIO"]
scenario_dir = Path(env["AGENTLEDGER_SCENARIO_DIR"])
model = env["AGENTLEDGER_MODEL"]
system_prompt = Path(env["AGENTLEDGER_SYSTEM_PROMPT_FILE"]).read_text(encoding="utf-8")
prompt = Path(env["AGENTLEDGER_PROMPT_FILE"]).read_text(encoding="utf-8")
careful = "careful" in model
mandatory = "MANDATORY" in system_prompt
trace: list[str] = [f"# Investigation trace ({model})", "", "## Task", "", prompt.strip(), ""]


def _gated(command: str, why: str, lines: int = 20) -> subprocess.CompletedProcess[str]:
    """Run one command through the gated shell; every call lands in shell_audit.jsonl, and
    in the trace (audit.md) with the first `lines` lines of what it printed."""
    done = subprocess.run(
        [env["AGENTLEDGER_SHELL"], command], capture_output=True, text=True, check=False
    )
    status = "denied by the gate" if done.returncode == 126 else f"exit {done.returncode}"
    trace.extend([f"## {why}", "", f"$ {command}  ({status})", "", "```"])
    trace.extend((done.stdout or done.stderr).strip().splitlines()[:lines] or ["(no output)"])
    trace.extend(["```", ""])
    return done


def shell(command: str, why: str) -> str:
    """A command's standard output."""
    return _gated(command, why).stdout


def path(name: str) -> str:
    return shlex.quote(str(scenario_dir / name))


def shell_status(command: str, why: str) -> tuple[int, str]:
    """(exit status, everything it printed): the lab agent reads both."""
    done = _gated(command, why, lines=40)
    return done.returncode, done.stdout + done.stderr


def run_in_lab(lab: dict[str, Any]) -> None:
    """A scenario with a lab: see lab_mode.py (next to this file)."""
    from lab_mode import LabAgent, investigate

    remediate = "remediate" in Path(env.get("AGENTLEDGER_POLICY", "investigate")).name
    agent = LabAgent(lab, model, mandatory, remediate, shell_status)
    text = investigate(agent, scenario, scenario_expected)
    (run_dir / "report.md").write_text(text, encoding="utf-8")
    (run_dir / "audit.md").write_text("\n".join(trace), encoding="utf-8")
    (run_dir / "result.json").write_text(
        json.dumps({"model_served": f"{model}-20261101", "tokens_in": 0, "tokens_out": 0}),
        encoding="utf-8",
    )
    sys.exit(0)


def _expected_root_cause() -> str | None:
    """The scenario's expected root cause, from scenario.yaml's indented block (no YAML
    library: this script runs with any python3)."""
    try:
        lines = (scenario_dir / "scenario.yaml").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for i, line in enumerate(lines):
        if line.strip().startswith("root_cause:"):
            block = []
            for follow in lines[i + 1 :]:
                if follow.startswith("    "):
                    block.append(follow.strip())
                else:
                    break
            return " ".join(block)
    return None


scenario_expected = _expected_root_cause()
if env.get("AGENTLEDGER_LAB"):
    run_in_lab(json.loads(Path(env["AGENTLEDGER_LAB"]).read_text(encoding="utf-8")))


if scenario == "f2b-owned-chain":
    rules = shell(f"grep -n -e '^-A' -e '^:' {path('iptables.rules')}", "Read the filter table")
    banned = "203.0.113.7" in rules and "f2b-sshd" in rules
    if careful or mandatory:
        shell(f"cat {path('fail2ban-status.txt')}", "Ask fail2ban what it banned")
        root = (
            "fail2ban banned 203.0.113.7: the REJECT rule sits in the f2b-sshd chain, which "
            "fail2ban owns and rewrites on every ban or reload."
        )
        fix = [
            "fail2ban-client set sshd unbanip 203.0.113.7",
            "fail2ban-client status sshd   # verify: 203.0.113.7 is no longer listed",
            "ssh -o ConnectTimeout=5 app-vm-01 true   # verify from the bastion: exit 0",
        ]
    else:
        shell("iptables -D f2b-sshd -s 203.0.113.7/32 -j REJECT", "Remove the blocking rule")
        root = "A REJECT rule for 203.0.113.7 in the INPUT path refuses SSH from the bastion."
        fix = ["iptables -D f2b-sshd -s 203.0.113.7/32 -j REJECT"]
    layer = "netfilter (iptables)" if banned else "unknown"
elif scenario == "tc-shaping-not-firewall":
    rules = shell(f"cat {path('iptables.rules')}", "Check netfilter first: the suspected layer")
    if careful or mandatory:
        shell(f"cat {path('tc-qdisc.txt')}", "Check whether tc shapes the traffic")
        root = (
            "A tbf qdisc on eth0 limits egress to 1Mbit (18,234 drops, 90,211 overlimits); "
            "netfilter accepts port 5432 from the replica's subnet."
        )
        fix = [
            "Raise or remove the rate in the shaping daemon's configuration, then reload it.",
            "tc -s qdisc show dev eth0   # verify: no tbf at 1Mbit, drops stop growing",
        ]
        layer = "tc (traffic control)"
    else:
        root = "Netfilter on db-01 slows replication: the rule for port 5432 must be widened."
        fix = ["iptables -I INPUT -p tcp --dport 5432 -j ACCEPT"]
        layer = "netfilter (iptables)"
else:
    root, fix, layer = "This scripted agent does not know this scenario.", [], "unknown"

report = [
    f"# Investigation report: {scenario}",
    "",
    f"**Layer:** {layer}",
    "",
    "## Root cause",
    "",
    root,
    "",
    "## Remediation",
    "",
    "```bash",
    *fix,
    "```",
    "",
]
(run_dir / "report.md").write_text("\n".join(report), encoding="utf-8")
(run_dir / "audit.md").write_text("\n".join(trace), encoding="utf-8")
(run_dir / "result.json").write_text(
    json.dumps({"model_served": f"{model}-20261101", "tokens_in": 0, "tokens_out": 0}),
    encoding="utf-8",
)
sys.exit(0)
