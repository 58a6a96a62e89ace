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


def shell(command: str, why: str) -> str:
    """Run one command through the gated shell; every call lands in shell_audit.jsonl."""
    done = subprocess.run(
        [env["AGENTLEDGER_SHELL"], command], capture_output=True, text=True, check=False
    )
    status = "denied by the gate" if done.returncode == 126 else f"exit {done.returncode}"
    trace.extend([f"## {why}", "", f"$ {command}  ({status})", "", "```"])
    trace.extend((done.stdout or done.stderr).strip().splitlines()[:20] or ["(no output)"])
    trace.extend(["```", ""])
    return done.stdout


def path(name: str) -> str:
    return shlex.quote(str(scenario_dir / name))


# -- lab mode: the scenario has a lab, and every command reaches its hosts -----------------------
#
# A run of a scenario with a lab.yaml names the lab in AGENTLEDGER_LAB (a JSON file: its hosts,
# the default one, and the lab's spec). The commands then see real kernel state. The scripted
# personalities take their fixes from the spec's remedies (their stand-in for a model's
# knowledge): "careful" reads the rules, the routes, the qdiscs, the sockets and the owner's
# client, fixes through the owner and checks the symptom from the client; "hasty" reads the
# rules and reaches for the first tempting wrong remedy (a direct edit, or replacing a list);
# "reckless" for one that flushes. Under a remediate policy they apply the fix; otherwise the
# fix is what their report recommends.

LOOKS = ["iptables -S", "ip route", "tc -s qdisc show", "ss -Hltn", "nft list ruleset"]


def _check_of(probe: dict[str, Any]) -> tuple[str, str] | None:
    """A command showing the symptom probe's check from its host, and what it prints when ok."""
    host = probe["host"]
    if probe.get("http") or probe.get("throughput"):
        url = probe.get("http") or probe.get("throughput")
        status = str(probe.get("status") or 200)
        return f"{host}: curl -s -m 5 -o /dev/null -w '%{{http_code}}' {url}", status
    if probe.get("tcp"):
        address, _, port = probe["tcp"].rpartition(":")
        return f"{host}: timeout 3 bash -c 'echo > /dev/tcp/{address}/{port}' && echo open", "open"
    if probe.get("ping"):
        return f"{host}: ping -c 1 -W 2 {probe['ping']} >/dev/null && echo reply", "reply"
    if probe.get("command"):
        return f"{host}: {probe['command']} && echo ok", "ok"
    return None


def lab_mode(lab: dict[str, Any]) -> None:
    spec = lab["spec"]
    remedies = spec.get("remedies") or []
    good = [r for r in remedies if r["kind"] == "good"]
    wrong = [r for r in remedies if r["kind"] == "wrong"]
    remediate = "remediate" in Path(env.get("AGENTLEDGER_POLICY", "investigate")).name
    reckless = "reckless" in model
    hasty = ("hasty" in model or reckless) and not mandatory
    default = lab["default"]
    for look in LOOKS if not hasty else LOOKS[:1]:
        shell(look, f"Look at {look.split()[0]} in {default}")
    if hasty:
        flushes = [r for r in wrong if "flush" in r["name"]]
        chosen = (flushes if reckless and flushes else wrong)[:1]
        root = "A rule or setting on the way blocks the traffic; removing it fixes the symptom."
    else:
        for owner in spec.get("owners") or []:
            tools = owner.get("tools") or []
            if tools:
                shell(
                    f"{owner['host']}: {tools[0]['name']} status", f"Ask the owner {owner['name']}"
                )
        chosen = good[:1]
        root = " ".join((scenario_expected or "").split()) or "See the owner's state."
    fix = [
        step["run"] if step["host"] == default else f"{step['host']}: {step['run']}"
        for remedy in chosen
        for step in remedy["steps"]
    ]
    if remediate:
        for command in fix:
            shell(command, "Apply the fix")
    checks = []
    if not hasty:
        symptom = next((p for p in spec["probes"] if p["role"] == "symptom"), None)
        check = _check_of(symptom) if symptom else None
        if check is not None:
            checks.append(check)
            if remediate:
                shell(check[0], "Verify from where the symptom was seen")
    report = [f"# Investigation report: {scenario}", "", "## Root cause", "", root, "",
              "## Remediation", "", "```bash", *fix, "```", ""]  # fmt: skip
    for command, shows in checks:
        report += ["## Verification", "", f"Then, expect {shows}:", "", "```bash", command,
                   "```", ""]  # fmt: skip
    (run_dir / "report.md").write_text("\n".join(report), encoding="utf-8")
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
    lab_mode(json.loads(Path(env["AGENTLEDGER_LAB"]).read_text(encoding="utf-8")))


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
