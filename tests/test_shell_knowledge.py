"""One command knowledge base: the gated shell, the rules judge and the fixture properties read
commands the same way, and `shell/` offers its walk to them through a public API."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentledger.errors import RecordError
from agentledger.judges.rules import load_ops_knowledge
from agentledger.judges.rules.commands import CommandPattern, parse_line
from agentledger.shell.classifier import CommandVisitor, classify, walk
from agentledger.shell.words import Word
from agentledger.suites.properties.score import score_output

KNOWLEDGE = load_ops_knowledge()
SCRIPT = Path(sys.executable).parent / "agentledger"

# A read-only form of every verification probe (verification.yaml): what a report writes to
# confirm a fix. The gate must let each one run, and the judge must count it as that probe.
PROBE_EXAMPLES = {
    "fail2ban-status": ["fail2ban-client status sshd", "fail2ban-client get sshd banip"],
    "iptables-list": ["iptables -S INPUT", "iptables -L -n", "ip6tables -C INPUT -j DROP"],
    "iptables-save": ["iptables-save", "ip6tables-save"],
    "nft-list": ["nft list ruleset"],
    "tc-show": ["tc -s qdisc show dev eth0", "tc class show dev eth1"],
    "ip": ["ip route get 10.0.0.5", "ip -br a"],
    "ss": ["ss -tlnp", "netstat -tlnp"],
    "ufw-status": ["ufw status verbose"],
    "firewall-cmd": ["firewall-cmd --list-all"],
    "ipset-list": ["ipset list blocklist"],
    "conntrack-list": ["conntrack -L"],
    "curl": ["curl -sS -o /dev/null -w '%{http_code}' https://app.internal/health"],
    "netcat": ["nc -zv db-01 5432", "nmap -p 22 bastion"],
    "ping": ["ping -c 3 10.0.0.5", "fping 10.0.0.5"],
    "trace": ["traceroute 10.0.0.5", "mtr -r 10.0.0.5", "tcptraceroute db 5432"],
    "throughput": ["iperf3 -c 10.45.0.1 -t 20", "iperf -c 10.45.0.1"],
    "dns": ["dig +short app.internal", "nslookup app.internal", "drill app.internal"],
    "tls": ["openssl s_client -connect app.internal:443 </dev/null"],
    "databases": [
        "psql -h db -c 'SELECT 1'",
        "pg_isready -h db",
        "redis-cli -h cache ping",
        "sqlcmd -S db -Q 'SELECT 1'",
    ],
    "systemctl-status": ["systemctl status nginx", "systemctl is-active nginx"],
    "service-status": ["service nginx status"],
    "journalctl": ["journalctl -u nginx --since '5 min ago'"],
    "az-read": ["az network nsg rule list -g rg --nsg-name web"],
    "az-watcher": ["az network watcher test-ip-flow --vm web --direction Inbound"],
    "aws-read": ["aws ec2 describe-security-groups --group-ids sg-1"],
    "gcloud-read": ["gcloud compute firewall-rules list"],
    "kubectl-read": ["kubectl get pods -n web", "kubectl logs deploy/web"],
    "kubectl-rollout": ["kubectl rollout status deploy/web"],
    "helm-read": ["helm status web", "helm history web"],
    "docker-read": ["docker ps", "docker inspect web"],
    "sshd-test": ["sshd -T", "sshd -t"],
    "file-read": ["cat /etc/hosts", "grep -c ERROR /var/log/app.log"],
    "routing-read": ["vtysh -c 'show ip bgp summary'", "birdc show protocols"],
    "routing-show": ["birdcl show route"],
    "powershell": ["Test-NetConnection", "tnc"],
}

# A login is a check of its own (the connection works), but an interactive session is nothing
# the gate can see into: both say unknown, so the gate asks or denies while the judge still
# counts the login as a probe.
INTERACTIVE_PROBES = {
    "ssh": ["ssh bastion", "ssh -o BatchMode=yes admin@10.0.0.5"],
    "gcloud-ssh": ["gcloud compute ssh web-1 --zone europe-west1-b"],
}

# The read and write subcommands the judge once kept apart from the gate (data/ops/tools.yaml):
# now in the one knowledge base, and both must still see them so.
FORMER_JUDGE_READS = [
    "fail2ban-client status", "fail2ban-client banned", "fail2ban-client ping",
    "wondershaper -s eth0", "puppet lookup ntp::servers", "getenforce",
    "netfilter-persistent show", "netplan get", "netplan status", "networkctl status eth0",
    "networkctl list", "sshd -T", "sshd -G", "nginx -t", "nginx -T", "apachectl configtest",
    "apachectl -S", "calicoctl get ippool", "calicoctl version", "cilium status",
    "cilium policy get", "cilium endpoint list", "virsh net-list", "virsh dumpxml web",
    "tailscale status", "tailscale ping peer", "crudini --get /etc/nova.conf DEFAULT",
    "helmfile diff", "helmfile template", "argocd app get web", "argocd app diff web",
    "argocd version", "flux get kustomizations", "flux logs", "tofu plan", "tofu show",
    "nmap -sT db", "iperf3 -c 10.0.0.1", "fping db", "hping3 -S -p 80 -c 3 web",
    "tcptraceroute db", "drill db", "Test-NetConnection", "tnc",
    "vtysh -c 'show ip route'", "birdc show protocols", "birdcl show route",
    "gobgp neighbor", "gobgp global rib", "gobgp neighbor 10.0.0.1 adj-in",
]  # fmt: skip
FORMER_JUDGE_WRITES = [
    "fail2ban-client set sshd unbanip 10.0.0.4", "fail2ban-client unban --all",
    "fail2ban-client reload", "wondershaper -c -a eth0", "wondershaper clear eth0",
    "ansible-playbook site.yml", "ansible all -m shell -a uptime", "puppet agent -t",
    "puppet apply site.pp", "salt-call state.apply", "chef-client", "setenforce 0",
    "aa-teardown", "netfilter-persistent save", "netfilter-persistent flush", "netplan apply",
    "netplan try", "networkctl reconfigure eth0", "nginx -s reload", "apachectl graceful",
    "calicoctl apply -f pool.yaml", "calicoctl delete ippool old", "cilium install",
    "cilium policy delete --all", "virsh net-destroy default", "virsh net-edit default",
    "tailscale up", "tailscale down", "crudini --set /etc/nova.conf DEFAULT debug true",
    "augtool set /files/etc/hosts/1/ipaddr 10.0.0.1", "tcset eth0 --delay 100ms",
    "tcdel eth0 --all", "helmfile apply", "helmfile destroy", "argocd app sync web",
    "argocd app delete web", "argocd login cd.internal", "flux reconcile kustomization apps",
    "flux suspend kustomization apps", "tofu apply", "tofu destroy", "salt '*' state.apply",
    "knife node delete web", "ansible-pull -U repo", "vtysh -c 'clear ip bgp *'",
    "birdc configure", "gobgp neighbor 10.0.0.1 reset", "gobgp global rib add 10.0.0.0/24",
]  # fmt: skip


def judge_kinds(line: str) -> list[str]:
    return [cmd.kind for cmd in parse_line(line, KNOWLEDGE)]


def test_the_gate_knows_what_the_judge_counts_as_verification() -> None:
    done = subprocess.run(
        [str(SCRIPT), "exec", "--dry-run", "--", "fail2ban-client status sshd"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "classification:  read-only" in done.stdout
    assert "decision:        allowed" in done.stdout


def test_every_probe_has_a_read_only_example() -> None:
    covered = [*PROBE_EXAMPLES, *INTERACTIVE_PROBES]
    assert sorted(probe.id for probe in KNOWLEDGE.probes) == sorted(covered)


@pytest.mark.parametrize(
    ("probe_id", "line"),
    [(probe_id, line) for probe_id, lines in INTERACTIVE_PROBES.items() for line in lines],
)
def test_interactive_probes_are_unknown_to_both(probe_id: str, line: str) -> None:
    probe = next(probe for probe in KNOWLEDGE.probes if probe.id == probe_id)
    pattern = CommandPattern(probe.command, KNOWLEDGE)
    cmds = parse_line(line, KNOWLEDGE)
    assert any(pattern.matches(cmd) for cmd in cmds)
    assert classify(line).kind == "unknown"
    assert [cmd.kind for cmd in cmds] == ["unknown"]


@pytest.mark.parametrize(
    ("probe_id", "line"),
    [(probe_id, line) for probe_id, lines in PROBE_EXAMPLES.items() for line in lines],
)
def test_verification_probes_are_read_only_in_the_gate(probe_id: str, line: str) -> None:
    probe = next(probe for probe in KNOWLEDGE.probes if probe.id == probe_id)
    pattern = CommandPattern(probe.command, KNOWLEDGE)
    cmds = parse_line(line, KNOWLEDGE)
    assert any(pattern.matches(cmd) for cmd in cmds), f"{line!r} is not the probe {probe_id}"
    assert classify(line).kind == "read-only", classify(line)
    assert all(cmd.kind == "read-only" and not cmd.is_write for cmd in cmds)


@pytest.mark.parametrize("line", FORMER_JUDGE_READS)
def test_reads_the_judge_knew_are_read_only_for_both(line: str) -> None:
    assert classify(line).kind == "read-only", classify(line)
    assert judge_kinds(line) == ["read-only"]


@pytest.mark.parametrize("line", FORMER_JUDGE_WRITES)
def test_writes_the_judge_knew_are_writes_for_both(line: str) -> None:
    gate = classify(line).kind
    assert gate in ("mutating", "destructive"), classify(line)
    assert judge_kinds(line) == [gate]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # What a connection sends comes from stdin or a terminal the gate cannot see.
        ("nc db 6379", "unknown"),
        ("nc -l 4444", "unknown"),
        ("nc -zv -e /bin/sh db 22", "unknown"),
        ("telnet db 25", "unknown"),
        ("iperf3 -s", "unknown"),
        ("nmap --script vuln db", "unknown"),
        ("mongosh --eval 'db.dropDatabase()'", "unknown"),
        ("nmap -oN scan.txt db", "mutating"),
        ("puppet agent -t --noop", "read-only"),
        ("sqlcmd -Q 'DROP TABLE users'", "destructive"),
    ],
)
def test_probe_tools_fail_closed_outside_their_read_only_forms(line: str, expected: str) -> None:
    assert classify(line).kind == expected
    assert judge_kinds(line) == [expected]


def test_the_judge_reads_every_corpus_command_as_the_gate_does() -> None:
    """Whatever a report holds, a command's class in the judge is the gate's class of it."""
    root = Path(__file__).parent
    lines = 0
    for report in sorted(root.glob("judge_*/*/report.md")):
        for raw in report.read_text().splitlines():
            text = raw.strip().strip("`$ ").strip()
            if not text or " " not in text:
                continue
            for cmd in parse_line(text, KNOWLEDGE):
                lines += 1
                own = classify(" ".join(_quoted(cmd.name, cmd.args)))
                if not cmd.dynamic and not cmd.writes and len(own.parts) == 1:
                    assert cmd.kind == own.kind, (report, text, cmd)
    assert lines > 500


def _quoted(name: str, args: Sequence[str]) -> list[str]:
    import shlex

    return [shlex.quote(name), *(shlex.quote(arg) for arg in args)]


def test_a_user_ops_file_extends_the_judges_command_knowledge(tmp_path: Path) -> None:
    (tmp_path / "netbox.yaml").write_text(
        "schema_version: 1\n"
        "commands:\n"
        "  netbox-sync: {default: mutating, flags: {read-only: [--dry-run]}}\n"
    )
    mine = load_ops_knowledge([tmp_path])
    assert [cmd.kind for cmd in parse_line("netbox-sync --dry-run", mine)] == ["read-only"]
    assert [cmd.kind for cmd in parse_line("netbox-sync --full", mine)] == ["mutating"]
    assert judge_kinds("netbox-sync --full") == ["unknown"]
    assert mine.digest != KNOWLEDGE.digest
    assert classify("netbox-sync --dry-run").kind == "unknown"  # the gate's policy decides


def test_a_bad_command_entry_in_an_ops_file_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\ncommands:\n  netbox-sync: {read: [--dry-run]}\n")
    with pytest.raises(RecordError) as caught:
        load_ops_knowledge([bad])
    message = str(caught.value)
    assert "bad.yaml" in message and "commands" in message and "netbox-sync.read" in message


def test_the_property_shell_commands_uses_the_same_knowledge() -> None:
    spec = {"shell_commands": True}
    ok = score_output({"commands": ["fail2ban-client status sshd"]}, spec)
    assert [result.passed for result in ok] == [True]
    denied = score_output({"commands": ["fail2ban-client set sshd unbanip 10.0.0.4"]}, spec)
    assert [result.passed for result in denied] == [False]


class _Recorder(CommandVisitor):
    def __init__(self) -> None:
        self.seen: list[tuple[list[str | None], tuple[str, ...], str | None]] = []
        self.written: list[tuple[str, tuple[str, ...]]] = []

    def command(
        self,
        words: Sequence[Word],
        via: tuple[str, ...],
        text: str,
        kind: str | None,
        reason: str | None,
    ) -> None:
        self.seen.append(([word.value for word in words], via, kind))

    def writes(self, target: str, via: tuple[str, ...]) -> None:
        self.written.append((target, via))


def test_walk_tells_a_visitor_each_command_and_each_file_written() -> None:
    recorder = _Recorder()
    line = "sudo ssh web 'iptables -S > /tmp/rules' && echo $HOME >> log.txt"
    result = walk(line, recorder)
    assert result.kind == classify(line).kind == "mutating"
    assert recorder.seen == [
        (["sudo", "ssh", "web", "iptables -S > /tmp/rules"], (), None),
        (["ssh", "web", "iptables -S > /tmp/rules"], ("sudo",), None),
        (["iptables", "-S"], ("sudo", "ssh"), "read-only"),
        (["echo", None], (), "read-only"),
    ]
    assert recorder.written == [("/tmp/rules", ("sudo", "ssh")), ("log.txt", ())]


def test_no_module_imports_a_private_name_of_another_package() -> None:
    """`from agentledger.x.y import _name` across packages couples to what is not promised."""
    import re

    source = Path(__file__).parent.parent / "src" / "agentledger"
    pattern = re.compile(r"from agentledger\.([\w.]+) import \(?([^)\n]*)")
    # Owned by the storage-seam branch, which replaces this helper with the backend interface.
    pending = {("gates/decisions.py", "store.storage", "_rename_new")}
    found = set()
    for path in source.rglob("*.py"):
        package = ".".join(path.relative_to(source).parts[:-1])
        for match in pattern.finditer(path.read_text()):
            module, names = match.group(1), match.group(2)
            for name in (n.strip().split(" as ")[0] for n in names.split(",")):
                private = name.startswith("_") and not name.startswith("__")
                if private and module.rpartition(".")[0] != package:
                    found.add((path.relative_to(source).as_posix(), module, name))
    # Only ever fewer: the pending one may go, no new one may come.
    assert found - pending == set()
