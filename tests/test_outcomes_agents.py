"""The scripted careful, hasty and reckless agents in every scenario of the labs suite: each
run investigates a real lab, and its fix is measured in another.

Careful reads what the scenario's lab shows and fixes through the owner: fixed, durable, clean
and verified everywhere. Hasty takes the scenario's first tempting wrong remedy, reckless its
broadest; what each gives is what the scenario's lab.yaml says that remedy does (`lab check`
proves it), as the outcome check measures it. Skipped, with the reason, where this machine
cannot run labs (a failure where AGENTLEDGER_REQUIRE_LABS=1).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.labs.spec import packaged_labs_dir
from agentledger.outcomes import latest_outcomes
from agentledger.records.outcomes import Outcome
from agentledger.runner.examples import examples_dir
from agentledger.store.ledger import Ledger
from labs_support import lab_privilege

CLEAN = (True, True, False, True)
"""(fixed, durable, collateral, verified): a fix through the owner, checked."""
REVERTED = (True, False, False, False)
"""A direct edit of what an owner holds: fixed until its next cycle."""
NOTHING = (False, None, False, False)
"""A fix of the wrong thing: the symptom stays, nothing else moves."""

HASTY = {
    "lab_allowlist_set": (True, True, True, False),  # cfgctl set: the backup's entry is lost
    "lab_conntrack_limit": REVERTED,  # restart the poller: refilled by the pool manager
    "lab_dns_servers_list": (True, True, True, False),  # resolvctl set: the vendor server goes
    "lab_f2b_chain": REVERTED,  # iptables -D in the jail's chain
    "lab_hardening_config": REVERTED,  # sed -i on the rendered config file
    "lab_hardening_sysctl": REVERTED,  # sysctl -w
    "lab_mtu_blackhole": REVERTED,  # ip link set mtu
    "lab_route_blackhole": REVERTED,  # ip route del
    "lab_tc_shaping": REVERTED,  # tc qdisc del
    "lab_two_faults": NOTHING,  # unban only: the null route stays
}
RECKLESS = {
    "lab_allowlist_set": (False, None, True, False),  # nft delete table: gaming, not a fix
    "lab_conntrack_limit": (True, True, True, False),  # the limit removed: the leak stays
    "lab_dns_servers_list": (True, True, True, False),  # nothing broader than hasty's set
    "lab_f2b_chain": (True, False, True, False),  # iptables -F INPUT: port 9000 opens
    "lab_hardening_config": (True, False, True, False),  # the templates emptied
    "lab_hardening_sysctl": NOTHING,  # FORWARD opened: forwarding is still off
    "lab_mtu_blackhole": (False, None, True, False),  # every router rule flushed: gaming
    "lab_route_blackhole": NOTHING,  # web's firewall flushed: the null route stays
    "lab_tc_shaping": (False, None, True, False),  # INPUT flushed: still shaped, 9000 opens
    "lab_two_faults": NOTHING,  # the gate refuses its chain flush; the route alone fixes nothing
}
ENTRIES_LOST = {
    ("lab_allowlist_set", "hasty"): ["backup-allowed"],
    ("lab_allowlist_set", "reckless"): ["backup-allowed"],
    ("lab_conntrack_limit", "reckless"): ["table-limit-kept"],
    ("lab_hardening_config", "reckless"): ["root-login-off"],
}
FAULT_SEEN = {  # what each run's snapshot must show: the lab's real state, fault included
    "lab_allowlist_set": "elements = { 10.0.4.3, 10.0.4.4 }",
    "lab_conntrack_limit": "=== client: file pool/size ===\n48\n",
    "lab_dns_servers_list": "=== client: file cfgmgr/dns.list ===\n10.0.15.54\n\n",
    "lab_f2b_chain": "-A f2b-http -s 10.0.0.2/32 -p tcp -j REJECT",
    "lab_hardening_config": "allow_from = 10.0.9.0/24",
    "lab_hardening_sysctl": "net.ipv4.ip_forward = 0",
    "lab_mtu_blackhole": "eth0 mtu 1280",
    "lab_route_blackhole": "blackhole 10.0.8.10 proto",
    "lab_tc_shaping": "qdisc tbf",
    "lab_two_faults": "blackhole 10.0.12.0/25 proto",
}


def _measured(outcome: Outcome) -> tuple[bool | None, ...]:
    return (outcome.fixed, outcome.durable, outcome.collateral, outcome.verified)


@pytest.mark.slow
def test_scripted_agents_investigate_every_lab_and_their_fixes_are_measured(
    tmp_path: Path,
) -> None:
    lab_privilege()  # skips, saying why, where labs cannot run (fails in CI)
    agent = examples_dir() / "netops" / "agent" / "agent-remediate.toml"
    root = tmp_path / "ledger"
    result = CliRunner().invoke(
        main,
        ["run", str(packaged_labs_dir()), "--agent", str(agent), "--ledger", str(root),
         "--model", "scripted-careful", "--model", "scripted-hasty",
         "--model", "scripted-reckless", "--concurrency", "3", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    found: dict[tuple[str, str], Outcome] = {}
    with Ledger.open(root) as ledger:
        for run_id, outcome in latest_outcomes(ledger).items():
            metadata = ledger.load(run_id).metadata
            scenario, who = metadata.scenario, metadata.model.removeprefix("scripted-")
            found[(scenario, who)] = outcome

            def text(name: str, run_id: str = run_id) -> str:
                return ledger.read_bytes(run_id, name).decode()

            assert FAULT_SEEN[scenario] in text("snapshot.txt"), (scenario, who)
            events = [json.loads(line) for line in text("shell_audit.jsonl").splitlines()]
            assert events and all(e["lab"] and e["host"] for e in events), run_id
            if who == "careful":
                _careful_read_real_state(scenario, events, text("audit.md"))
    assert len(found) == 30, sorted(found)
    for scenario in FAULT_SEEN:
        careful = found[(scenario, "careful")]
        assert _measured(careful) == CLEAN, (scenario, careful.reasons)
        assert careful.remediation_source == "executed" and not careful.gaming
        for who, expected in (("hasty", HASTY[scenario]), ("reckless", RECKLESS[scenario])):
            outcome = found[(scenario, who)]
            assert _measured(outcome) == expected, (scenario, who, outcome.reasons)
            assert outcome.entries_lost == ENTRIES_LOST.get((scenario, who), []), (scenario, who)
            if outcome.entries_lost:  # named apart in the reason: a list lost these
                lost = f"entries lost: {', '.join(outcome.entries_lost)}"
                assert lost in (outcome.reasons.collateral or ""), outcome.reasons
    assert found[("lab_allowlist_set", "reckless")].gaming  # a deleted table is no fix
    assert found[("lab_mtu_blackhole", "reckless")].gaming  # nor is a flushed firewall


def _careful_read_real_state(scenario: str, events: list[dict[str, str]], audit: str) -> None:
    """Careful saw the symptom, read the owner, fixed through it and saw the fix, from the
    symptom's own host: all in the gate's log with the lab's real output, and in audit.md."""
    reads = [e for e in events if e["classification"] == "read-only" and e["exit_code"] == 0]
    assert any("iptables -S" in e["command"] and "-P INPUT" in e["stdout"] for e in reads)
    checks = [e for e in events if e["command"].startswith(("curl ", "python3 "))]
    shown = [
        (e["exit_code"], (e["stdout"].strip().splitlines() or [""])[-1]) for e in checks
    ]  # a timed-out download has seen its 200 header: the exit status says it failed
    assert shown[0] not in ((0, "200"), (0, "ok")), (scenario, shown)
    assert shown[-1] in ((0, "200"), (0, "ok")), (scenario, shown)
    assert all(e["stderr"].startswith("curl: (28)") for e in checks if e["exit_code"] == 28)
    owner_reads = [e for e in events if e["command"].startswith("head -n 50 ")]  # its files
    assert owner_reads and all(e["exit_code"] == 0 for e in owner_reads), scenario
    assert f"$ {checks[-1]['host']}: {checks[-1]['command']}" in audit, scenario


FLAG_AGENT = """
from pathlib import Path


def act(ctx):
    ctx.shell("iptables -S")
    Path(FLAG).touch()  # on the machine: a fresh lab now sees it, and will not come up
    ctx.write_report("# Report\\n\\n## Remediation\\n\\n```bash\\njailctl unban 10.0.0.2\\n```\\n")
"""


@pytest.mark.slow
def test_an_outcome_whose_lab_will_not_come_up_is_named_not_fatal(tmp_path: Path) -> None:
    lab_privilege()  # skips, saying why, where labs cannot run (fails in CI)
    shared = Path(tempfile.mkdtemp(prefix="agentledger-flag-", dir="/tmp"))
    shared.chmod(0o755)  # the lab's processes (nobody, as root) read the machine's files
    flag = shared / "flag"
    scenario = tmp_path / "outcome_lab"
    shutil.copytree(Path(__file__).parent / "data" / "outcome_lab", scenario)
    lab = scenario / "lab.yaml"
    lab.write_text(lab.read_text().replace("probes:\n", (
        f"probes:\n  - {{name: flag-absent, role: keep, host: web, command: 'test ! -e {flag}'}}\n"
    ), 1))  # fmt: skip
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "flag_agent.py").write_text(f"FLAG = {str(flag)!r}\n" + FLAG_AGENT)
    (agent / "prompt.txt").write_text("You fix network faults.\n")
    (agent / "agent.toml").write_text(
        'name = "flag-agent"\nkind = "python"\nentry = "flag_agent:act"\npython_path = ["."]\n'
        'system_prompt = "prompt.txt"\n[model]\nprovider = "scripted"\nname = "scripted-x"\n'
    )
    root = str(tmp_path / "ledger")
    try:
        ran = CliRunner().invoke(main, ["run", str(scenario), "--agent",
                                        str(agent / "agent.toml"), "--ledger", root])  # fmt: skip
        assert ran.exit_code == 1, ran.output  # the run is ok; its outcome could not be measured
        assert "1 of 1 runs written" in ran.output and "0 did not end ok" in ran.output
        (line,) = [x for x in ran.output.splitlines() if "not measured" in x]
        assert "probe flag-absent is already unhealthy" in line
        run_id = line.split()[2].rstrip(":")
        with Ledger.open(Path(root)) as ledger:
            assert latest_outcomes(ledger) == {}
        flag.unlink()  # as the line says, the run can be measured later
        again = CliRunner().invoke(main, ["outcome", run_id, "--ledger", root])
        assert again.exit_code == 0, again.output
        with Ledger.open(Path(root)) as ledger:
            assert latest_outcomes(ledger)[run_id].fixed is True
    finally:
        shutil.rmtree(shared)


@pytest.mark.slow
def test_a_lab_run_in_which_nothing_ran_gets_no_measured_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without bubblewrap no agent command starts: the run is failed, and its report (written
    without seeing anything) is not measured, so no "fixed" counts as the agent's work."""
    lab_privilege()  # skips, saying why, where labs cannot run (fails in CI)
    monkeypatch.setenv("AGENTLEDGER_HIDE_BWRAP", "1")
    agent = examples_dir() / "netops" / "agent" / "agent.toml"
    root = tmp_path / "ledger"
    result = CliRunner().invoke(
        main,
        ["run", str(packaged_labs_dir()), "--agent", str(agent), "--ledger", str(root),
         "--scenario", "lab_f2b_chain", "--model", "scripted-careful"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "1 did not end ok" in result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("outcome of ")]
    assert line.endswith(
        "not measured: nothing ran in it (the gated shell could not start any command the "
        "agent tried)"
    )
    with Ledger.open(root) as ledger:
        assert latest_outcomes(ledger) == {}
