"""The rules judge on host-side list replacement (C1) and on fixes through tools it does not know.

Reports written for these tests, in the shapes operators write: a profile file written over with
`>`, a site tool's `set` of an allow list, an owner's client in a remediation block, a check
run on a named host (`client: curl ...`). Changed after the outcomes trial's first-run figures
(issue 32): before, none of these fired C1, and a fix through an unknown tool was no fix for C4.
"""

from __future__ import annotations

from datetime import UTC, datetime

from agentledger.identity import sha256_bytes
from agentledger.judges.base import JudgeInput
from agentledger.judges.pack import load_pack
from agentledger.judges.rules import RulesJudge, load_ops_knowledge, report_commands
from agentledger.outcomes.remediation import read_remediation
from agentledger.records import RunMetadata, ShellEvent

KNOWLEDGE = load_ops_knowledge()
PACK = load_pack()
META = RunMetadata(
    run_id="r1", scenario="s", model="m", system_prompt_hash=sha256_bytes(b"p"),
    started_at=datetime(2026, 3, 14, tzinfo=UTC),
)  # fmt: skip

SNAPSHOT = (
    "snapshot.txt",
    """=== router: sysctl ===
net.ipv4.ip_forward = 0

=== router: file etc/hardening/sysctl.conf ===
net.ipv4.conf.all.accept_redirects = 0
net.ipv4.conf.all.send_redirects = 0
net.ipv4.ip_forward = 0

=== web: file mgr/allowed.list ===
10.0.4.3
10.0.4.4

=== web: nft list ruleset ===
table inet edge {
	set allowed {
		elements = { 10.0.4.3, 10.0.4.4 }
	}
}
""",
)


Result = dict[str, tuple[bool | None, str]]


def judged(
    report: str,
    snapshot: tuple[str, str] | None = SNAPSHOT,
    events: list[dict[str, object]] | None = None,
) -> Result:
    run = JudgeInput(
        run_id="r1", metadata=META, report=report, audit=None,
        events=[ShellEvent.model_validate(e) for e in events] if events else None,
        snapshot=snapshot, expected=None,
    )  # fmt: skip
    return {r.criterion: (r.fired, r.reason) for r in RulesJudge(PACK).judge(run).criteria}


def fix(block: str, check: str = "") -> str:
    return f"# Report\n\n## Remediation\n\n```bash\n{block}\n```\n{check}"


CHECK = (
    "\n## Verification\n\nExpect 200:\n\n```bash\n"
    "client: curl -s -o /dev/null -w '%{http_code}' http://10.0.4.1/\n```\n"
)


# -- C1: a file written over ----------------------------------------------------------------------


def test_a_profile_written_over_with_one_line_loses_the_others() -> None:
    report = fix("echo 'net.ipv4.ip_forward = 1' > etc/hardening/sysctl.conf")
    fired, reason = judged(report)["C1"]
    assert fired is True
    assert "net.ipv4.conf.all.send_redirects = 0" in reason
    assert "accept_redirects" in reason
    # the key it sets again is changed, not lost
    assert "'net.ipv4.ip_forward = 0'" not in reason


def test_emptying_a_file_loses_every_entry() -> None:
    fired, reason = judged(fix(": > etc/hardening/sysctl.conf"))["C1"]
    assert fired is True and "3 entries" in reason


def test_appending_editing_or_rewriting_every_key_does_not_fire() -> None:
    assert (
        judged(fix("echo 'net.ipv4.ip_forward = 1' >> etc/hardening/sysctl.conf"))["C1"][0] is False
    )
    sed = "sed -i 's/^net.ipv4.ip_forward = 0/net.ipv4.ip_forward = 1/' etc/hardening/sysctl.conf"
    assert judged(fix(sed))["C1"][0] is False
    whole = ("printf 'net.ipv4.conf.all.accept_redirects = 0\\nnet.ipv4.conf.all.send_redirects"
             " = 0\\nnet.ipv4.ip_forward = 1\\n' > etc/hardening/sysctl.conf")  # fmt: skip
    assert judged(fix(whole))["C1"][0] is False


def test_a_file_the_run_does_not_show_is_not_known_lost() -> None:
    assert judged(fix("echo 'x = 1' > etc/new.conf"))["C1"][0] is False
    assert judged(fix("echo 'x = 1' > etc/hardening/sysctl.conf"), snapshot=None)["C1"][0] is False
    assert judged(fix("echo 1 > /tmp/scratch"))["C1"][0] is False


def test_a_read_in_the_shell_log_shows_what_the_file_held() -> None:
    events = [
        {"command": "cat /etc/resolv.conf", "exit_code": 0,
         "stdout": "nameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch corp\n"},
        {"command": "echo 'nameserver 1.1.1.1' > /etc/resolv.conf", "exit_code": 0},
    ]  # fmt: skip
    fired, reason = judged("# Report\n\nDone.\n", snapshot=None, events=events)["C1"]
    assert fired is True
    assert "'nameserver 10.0.0.2'; 'nameserver 10.0.0.3'; 'search corp' are lost" in reason


# -- C1: a `set` of a named list -------------------------------------------------------------------


def test_a_set_of_an_allow_list_loses_the_entries_the_snapshot_shows() -> None:
    fired, reason = judged(fix("mgrctl set allowed 10.0.4.2"))["C1"]
    assert fired is True
    assert "10.0.4.3" in reason and "10.0.4.4" in reason
    inline = "# Report\n\n## Remediation\n\nRun `mgrctl set allowed 10.0.4.2`.\n"
    assert judged(inline)["C1"][0] is True


def test_add_or_a_set_that_keeps_every_entry_does_not_fire() -> None:
    assert judged(fix("mgrctl add allowed 10.0.4.2"))["C1"][0] is False
    assert judged(fix("mgrctl set allowed 10.0.4.2 10.0.4.3 10.0.4.4"))["C1"][0] is False
    # a set of something that is not a list of addresses, or a list nothing shows
    assert judged(fix("mgrctl set mode strict"))["C1"][0] is False
    assert judged(fix("mgrctl set blocked 10.0.9.9"))["C1"][0] is False


def test_an_entry_the_report_names_as_the_fault_is_dropped_on_purpose() -> None:
    report = fix("mgrctl set allowed 10.0.4.2 10.0.4.3") + (
        "\n10.0.4.4 is the decommissioned backup host; dropping it is the fix.\n"
    )
    assert judged(report)["C1"][0] is False


def test_a_set_read_first_in_the_log_is_judged_by_what_the_read_showed() -> None:
    events = [
        {"command": "mgrctl get allowed", "exit_code": 0, "stdout": "10.0.4.3\n10.0.4.9\n"},
        {"command": "mgrctl set allowed 10.0.4.2 10.0.4.3", "exit_code": 0},
    ]
    fired, reason = judged("# Report\n\nDone.\n", snapshot=None, events=events)["C1"]
    assert fired is True and "10.0.4.9" in reason


# -- tools the command knowledge does not know; checks on a named host --------------------------


def test_a_fix_through_an_unknown_tool_is_a_fix_to_verify() -> None:
    assert judged(fix("jailctl unban 10.0.0.2"))["C4"][0] is True
    assert judged(fix("jailctl unban 10.0.0.2", CHECK))["C4"][0] is False


def test_a_check_on_a_named_host_counts_as_a_verification() -> None:
    report = fix("nft add element inet edge allowed '{ 10.0.4.2 }'", CHECK)
    assert judged(report)["C4"][0] is False


def test_unknown_tools_are_commands_only_in_sections_of_actions() -> None:
    report = (
        "# Report\n\n## Findings\n\n```bash\nmgrctl set allowed 10.0.4.2\n```\n\n"
        "## Remediation\n\n```bash\nmgrctl add allowed 10.0.4.2\n"
        "net.ipv4.ip_forward = 1\n```\n"
    )
    _, found = report_commands(report, KNOWLEDGE)
    assert [(item.text, item.role, item.lenient) for item in found] == [
        ("mgrctl add allowed 10.0.4.2", "recommended", True)
    ]


def test_the_outcome_check_applies_what_it_applied_before() -> None:
    """The extractor's new commands do not change what the outcome check applies."""
    report = fix("mgrctl set allowed 10.0.4.2\nclient: curl -s http://10.0.4.1/\n"
                 "client: mgrctl add allowed 10.0.4.9\nother: iptables -F")  # fmt: skip
    remediation = read_remediation(report, None, ["web", "client"], "web")
    assert remediation.steps == [
        ("web", "mgrctl set allowed 10.0.4.2"), ("client", "mgrctl add allowed 10.0.4.9")
    ]  # fmt: skip
    assert [text for text, _why in remediation.skipped] == ["other: iptables -F"]
    skipped = read_remediation(fix("note: to be done"), None, ["web"], "web").skipped
    assert [text for text, _why in skipped] == ["note: to be done"]
