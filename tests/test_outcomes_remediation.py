"""What an outcome check applies: a run's remediation and verification, read from its files."""

from __future__ import annotations

from agentledger.outcomes.remediation import read_remediation, split_host
from agentledger.records import ShellEvent

HOSTS = ["web", "client", "router"]


def test_a_reports_fix_is_read_with_hosts_placeholders_and_its_check() -> None:
    report = (
        "# Report\n\n## Remediation\n\n```bash\njailctl unban 10.0.0.2\n"
        "router: routectl del blackhole 10.0.8.10/32\n"
        "iptables -D f2b-http -s <CLIENT_IP> -j REJECT\nvi /etc/jail.conf\n```\n\n"
        "## Verification\nFrom the client, expect 200:\n\n```bash\n"
        "client: curl -s -o /dev/null -w '%{http_code}' http://10.0.0.1/\n```\n"
    )
    found = read_remediation(report, [], HOSTS, "web")
    assert found.source == "report"
    assert found.steps == [
        ("web", "jailctl unban 10.0.0.2"),
        ("router", "routectl del blackhole 10.0.8.10/32"),
    ]
    reasons = dict(found.skipped)
    assert "placeholder" in reasons["iptables -D f2b-http -s <CLIENT_IP> -j REJECT"]
    assert "interactive" in reasons["vi /etc/jail.conf"]
    (check,) = found.verifications
    assert (check.host, check.expected) == ("client", "200")


def test_commands_in_prose_are_applied_in_the_order_written() -> None:
    report = (
        "# Report\n\n## Remediation\n\nRun `web: iptables -F INPUT` then "
        "`router: routectl del blackhole 10.0.8.10/32`; see `resolv/servers`.\n"
    )
    found = read_remediation(report, [], HOSTS, "client")
    assert found.steps == [
        ("web", "iptables -F INPUT"),
        ("router", "routectl del blackhole 10.0.8.10/32"),
    ]


def test_executed_changes_win_over_the_report_and_warned_commands_are_not_applied() -> None:
    events = [
        ShellEvent(command=c, decision=d, exit_code=0, classification=k)
        for c, d, k in [
            ("iptables -S", "allowed", "read-only"),
            ("iptables -F INPUT", "denied", "destructive"),
            ("jailctl unban 10.0.0.2", "allowed", "unknown"),
            ("client: curl -s http://10.0.0.1/", "allowed", "read-only"),
        ]
    ]
    report = "# Report\n\n## Remediation\n\nDo not run `iptables -F INPUT`: it opens everything.\n"
    found = read_remediation(report, events, HOSTS, "web")
    assert found.source == "executed"
    assert found.steps == [("web", "jailctl unban 10.0.0.2")]  # the denied flush never ran
    assert [(v.host, v.command) for v in found.verifications] == [
        ("client", "curl -s http://10.0.0.1/")
    ]
    assert read_remediation(report, [], HOSTS, "web").source == "none"


def test_a_host_prefix_names_a_lab_host_or_is_refused() -> None:
    assert split_host("client: curl x", HOSTS, "web") == ("client", "curl x")
    assert split_host("curl x", HOSTS, "web") == ("web", "curl x")
    assert split_host("db: psql -c 1", HOSTS, "web") == (None, "psql -c 1")
    found = read_remediation("# R\n\n## Remediation\n\n```bash\ndb: systemctl restart pg\n```\n",
                             [], HOSTS, "web")  # fmt: skip
    assert found.steps == [] and "lacks" in found.skipped[0][1]


def test_executed_commands_are_applied_in_the_host_the_gate_ran_them_in() -> None:
    # The gate logs a lab command without its HOST: prefix and with the host it ran in.
    events = [
        ShellEvent.model_validate(
            {"command": c, "decision": "allowed", "exit_code": 0, "classification": k, "host": h}
        )
        for c, k, h in [
            ("jailctl unban 10.0.12.2", "unknown", "web"),
            ("routectl del blackhole 10.0.12.0/25", "unknown", "router"),
            ("curl -s http://10.0.13.10/", "read-only", "client"),
        ]
    ]
    found = read_remediation("# Report\n", events, HOSTS, "web")
    assert found.steps == [
        ("web", "jailctl unban 10.0.12.2"),
        ("router", "routectl del blackhole 10.0.12.0/25"),
    ]
    assert [(v.host, v.command) for v in found.verifications] == [
        ("client", "curl -s http://10.0.13.10/")
    ]
