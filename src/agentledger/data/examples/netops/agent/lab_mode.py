"""Lab mode of the scripted agent: its commands reach a real lab's hosts and read real state.

A run of a scenario with a lab.yaml names the lab in AGENTLEDGER_LAB (a JSON file: its hosts,
the default one, and the lab's spec). Every command goes through the gated shell, in the host
it names (``router: ip route``) or the default one, and sees real kernel state: rules, nft
sets, qdiscs, routes, links, sysctls, the files the owners render, the owners' own status.

The spec stands in for what a model knows of the lab: which hosts there are, which daemon owns
what (and its client's usage line), and the remedies a person would reach for. What the agent
reads, and what it quotes as evidence, is the lab's real state. Three personalities:

- careful reproduces the symptom from where it was seen, reads every layer of the default host
  and of the host serving the symptom, then each owner: its status (through its client), its
  desired state, what its cycle renders or sets (the state it owns), and quotes the lines that
  name the fault's subject (the reads of one host go in one command line, ``a; b; c``, as one
  call of the gated shell: each call costs a process start of the gate); it fixes
  through the owner (and has the owner apply it, when its client can), then checks the symptom
  again from where it was seen, re-checking until the owner's next cycle has run;
- hasty reads the firewall of the default host and takes the scenario's first tempting wrong
  remedy (a direct edit of what a daemon owns, or a list replaced), and does not check;
- reckless takes the broadest wrong remedy (a flush, a deleted table, a removed limit or
  profile), and does not check either.

Under a remediate policy they apply their fix; otherwise the fix is what their report
recommends. This file runs with any python3 (no third-party module).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from typing import Any

Run = Callable[[str, str], tuple[int, str]]
"""run(command, why) -> (exit status, output): one command through the gated shell."""

LOOKS = ["iptables -S", "nft list ruleset", "tc -s qdisc show", "ip route", "ss -Hltn"]
"""The layers careful reads on the default host, in order."""
_READS = [  # what an owner's cycle uses -> the read that shows the state it owns
    (re.compile(r"\biptables\b"), "iptables -S"),
    (re.compile(r"\bnft\b"), "nft list ruleset"),
    (re.compile(r"\btc\b"), "tc -s qdisc show"),
    (re.compile(r"\bip route\b"), "ip route"),
    (re.compile(r"\bip link\b"), "ip link show"),
    (re.compile(r"\bsetsid\b|\bpython3\b"), "ss -Htn"),
]
_PATH = re.compile(r"(?<![\w$/.-])([a-z][\w.-]*/[\w./-]*[\w])(?![\w/])")
_SYSCTL = re.compile(r"^\s*(net\.[\w.]+)\s*=", re.M)
_READ_VERBS = ("status", "show", "get", "list")
_APPLY_VERBS = ("apply", "reload")
_BROAD = re.compile(
    r"(?:^|\s)-F\b|\bflush\b|\bdelete table\b|-P \w+ ACCEPT|: >|"
    r"iptables -D INPUT\b.*\b(?:DROP|REJECT)\b|>\s*hardening/"
)
_SUBJECT = re.compile(r"^(?:\d+\.\d+\.\d+\.\d+(?:/\d+)?|net\.[\w.]+)$")


def usage_verbs(tool: dict[str, Any]) -> list[list[str]]:
    """The alternatives of a client's ``usage:`` line, each as words (``cfgctl get allowed``
    gives ``["get", "allowed"]``)."""
    match = re.search(r"usage:\s*\S+\s+(.*?)[\"'\n]", tool.get("run") or "")
    if match is None:
        return []
    return [alt.split() for alt in match.group(1).split("|") if alt.split()]


def _verb(tool: dict[str, Any], verbs: tuple[str, ...]) -> str | None:
    """The first alternative whose verb is one of `verbs` and needs no argument filled in
    (no upper-case placeholder), as a command line."""
    for words in usage_verbs(tool):
        if words[0] in verbs and not any(w.isupper() or "..." in w for w in words[1:]):
            return " ".join([tool["name"], *words])
    return None


def check_of(probe: dict[str, Any]) -> tuple[str, str] | None:
    """A command showing a symptom probe's check from its host, and what it prints when ok."""
    host = probe["host"]
    url = probe.get("http") or probe.get("throughput")
    if url:
        status = str(probe.get("status") or 200)  # -S: a body cut short says so (stderr)
        return f"{host}: curl -sS -m 2 -o /dev/null -w '%{{http_code}}' {url}", status
    if probe.get("tcp"):
        address, _, port = probe["tcp"].rpartition(":")
        return f"{host}: timeout 2 bash -c 'echo > /dev/tcp/{address}/{port}' && echo open", "open"
    if probe.get("ping"):
        return f"{host}: ping -c 1 -W 2 {probe['ping']} >/dev/null && echo reply", "reply"
    if probe.get("command"):
        return f"{host}: {probe['command']} && echo ok", "ok"
    return None


def on(host: str, command: str) -> str:
    """``HOST: command``: every command says which host it runs in."""
    return f"{host}: {command.strip()}"


class LabAgent:
    """One scripted personality investigating (and, under a remediate policy, fixing) a lab."""

    def __init__(
        self, lab: dict[str, Any], model: str, mandatory: bool, remediate: bool, run: Run
    ) -> None:
        self.spec: dict[str, Any] = lab["spec"]
        self.default: str = lab["default"]
        self.reckless = "reckless" in model
        self.hasty = ("hasty" in model or self.reckless) and not mandatory
        self.remediate = remediate
        self._run = run
        self.seen: dict[str, tuple[int, str]] = {}
        """command -> (status, output), in the order run."""
        self.owner_reads: list[str] = []
        """The owners' status commands."""
        self.done: dict[str, set[str]] = {}
        """host -> the reads made there."""

    def shell(self, command: str, why: str) -> tuple[int, str]:
        """Run a command once (a read already made is not repeated)."""
        if command not in self.seen:
            self.seen[command] = self._run(command, why)
        return self.seen[command]

    # -- what to do --------------------------------------------------------------------------

    def remedy(self) -> dict[str, Any] | None:
        """The remedy this personality reaches for."""
        remedies = self.spec.get("remedies") or []
        good = [r for r in remedies if r["kind"] == "good"]
        wrong = [r for r in remedies if r["kind"] == "wrong"]
        if not self.hasty:
            return good[0] if good else None
        if self.reckless:
            broad = [r for r in wrong if any(_BROAD.search(s["run"]) for s in r["steps"])]
            wrong = broad or wrong
        return wrong[0] if wrong else None

    def symptom_checks(self) -> list[tuple[str, str]]:
        probes = [p for p in self.spec.get("probes") or [] if p["role"] == "symptom"]
        return [check for check in map(check_of, probes) if check is not None]

    # -- careful's investigation --------------------------------------------------------------

    def reproduce(self) -> None:
        for command, _ in self.symptom_checks():
            self.shell(command, "Reproduce the symptom from where it was seen")

    def served_by(self) -> list[str]:
        """The hosts the symptom probes reach (by the addresses of the lab's links and
        bridges): the service side of the symptom."""
        where: dict[str, str] = {}
        ends = [e for link in self.spec.get("links") or [] for e in (link["a"], link["b"])]
        ends += [e for bridge in self.spec.get("bridges") or [] for e in bridge["ports"]]
        for end in ends:
            if end.get("address"):
                where[end["address"].split("/")[0]] = end["host"]
        hosts = []
        for probe in self.spec.get("probes") or []:
            if probe["role"] != "symptom":
                continue
            target = " ".join(
                str(probe.get(k) or "") for k in ("http", "throughput", "tcp", "ping")
            )
            hosts += [where[a] for a in re.findall(r"\d+\.\d+\.\d+\.\d+", target) if a in where]
        return list(dict.fromkeys(hosts))

    def read(self, host: str, reads: list[str], why: str) -> None:
        """The reads not yet made on `host`, as one command line (``a; b; c``): one call of
        the gated shell, every read in its log."""
        new = [r for r in dict.fromkeys(reads) if r not in self.done.setdefault(host, set())]
        if new:
            self.done[host].update(new)
            self.shell(on(host, "; ".join(new)), why)

    def read_layers(self) -> None:
        """Every layer of the default host, then of the hosts serving the symptom (and the
        connections they hold)."""
        for host in dict.fromkeys([self.default, *self.served_by()]):
            extra = [] if host == self.default else ["ss -Htn"]
            self.read(host, [*LOOKS, *extra], f"Read every layer on {host}")

    def read_owner(self, owner: dict[str, Any]) -> None:
        """The owner's status, then its desired state, what its cycle renders or sets, and the
        live values of the sysctls it holds."""
        host, cycle = owner["host"], owner.get("cycle") or ""
        for tool in owner.get("tools") or []:
            status = _verb(tool, _READ_VERBS)
            if status:
                self.shell(on(host, status), f"Ask the owner {owner['name']} what it holds")
                self.owner_reads.append(on(host, status))
        paths = [d["path"] for d in owner.get("desired") or []]
        paths += [p for p in _PATH.findall(cycle) if not p.startswith(("log/", "owners/"))]
        reads = [f"head -n 50 {' '.join(shlex.quote(p) for p in dict.fromkeys(paths))}"]
        reads += [read for pattern, read in _READS if pattern.search(cycle)]
        keys = [k for d in owner.get("desired") or [] for k in _SYSCTL.findall(d["content"])]
        if keys:
            reads.append("sysctl " + " ".join(dict.fromkeys(keys)))
        self.read(host, reads, f"Read what {owner['name']} holds, and the state it owns")

    def evidence(self, remedy: dict[str, Any] | None) -> list[str]:
        """Lines of real output naming the subject of the fix (an address, a prefix, a
        sysctl), and the start of each owner's status: what the agent saw, quoted."""
        subjects = {
            word.split("/")[0] if word.endswith("/32") else word
            for step in (remedy or {}).get("steps", [])
            for word in step["run"].split()
            if _SUBJECT.match(word)
        }
        found: list[str] = []
        for command, (_, output) in self.seen.items():
            host = command.split(":", 1)[0]
            for line in output.splitlines():
                if subjects and any(s in line for s in subjects) and len(found) < 12:
                    found.append(f"{host}: {line.strip()}")
        for command in self.owner_reads:
            status, output = self.seen[command]
            for line in output.splitlines()[:4] if status == 0 else []:
                quoted = f"{command}  →  {line.strip()}"
                if line.strip() and quoted not in found:
                    found.append(quoted)
        return found

    # -- fixing and checking ------------------------------------------------------------------

    def fix_commands(self, remedy: dict[str, Any] | None) -> list[str]:
        commands = [on(s["host"], s["run"]) for s in (remedy or {}).get("steps", [])]
        if self.hasty:
            return commands
        for owner in self.spec.get("owners") or []:
            for tool in owner.get("tools") or []:
                used = any(c.split(": ", 1)[1].startswith(tool["name"] + " ") for c in commands)
                apply = _verb(tool, _APPLY_VERBS)
                if used and apply:
                    commands.append(on(owner["host"], apply))
        return commands

    def verify(self) -> None:
        """Check the symptom again from where it was seen; a fix through an owner lands at its
        next cycle, so re-check until every owner has had one."""
        wait = max([float(o.get("interval") or 5) for o in self.spec.get("owners") or []] or [0])
        deadline = time.monotonic() + wait + 1.5
        for command, shows in self.symptom_checks():
            why = "Verify from where the symptom was seen"
            while True:
                status, output = self._run(command, why)
                if (status == 0 and shows in output) or time.monotonic() > deadline:
                    break
                why = "Re-check after the owner's next cycle"
                time.sleep(1.5)


def investigate(agent: LabAgent, scenario: str, expected: str | None) -> str:
    """Investigate (and fix, under a remediate policy); the report, as markdown."""
    if agent.hasty:
        agent.shell(on(agent.default, "iptables -S"), f"Look at the firewall on {agent.default}")
    else:
        agent.reproduce()
        agent.read_layers()
        for owner in agent.spec.get("owners") or []:
            agent.read_owner(owner)
    remedy = agent.remedy()
    fix = agent.fix_commands(remedy)
    if agent.remediate:
        for command in fix:
            agent.shell(command, "Apply the fix")
        if not agent.hasty:
            agent.verify()
    return report(agent, scenario, expected, fix)


def report(agent: LabAgent, scenario: str, expected: str | None, fix: list[str]) -> str:
    if agent.hasty:
        blocking = [
            line for _, output in agent.seen.values() for line in output.splitlines()
            if re.search(r"\b(REJECT|DROP)\b", line)
        ]  # fmt: skip
        root = "A rule or setting on the way blocks the traffic; removing it fixes the symptom."
        evidence = blocking[:5]
    else:
        root = " ".join((expected or "").split()) or "See the owners' state below."
        evidence = agent.evidence(agent.remedy())
    lines = [f"# Investigation report: {scenario}", "", "## Root cause", "", root, ""]
    if evidence:
        lines += ["## Evidence", "", "```text", *evidence, "```", ""]
    lines += ["## Remediation", "", "```bash", *fix, "```", ""]
    if not agent.hasty and agent.symptom_checks():
        lines += ["## Verification", ""]
        for command, shows in agent.symptom_checks():
            lines += [f"From where the symptom was seen, expect {shows}:", "", "```bash",
                      command, "```", ""]  # fmt: skip
    return "\n".join(lines)
