"""The scripted careful, hasty and reckless agents in real labs, and what their fixes do.

Skipped, with the reason, where this machine cannot run labs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.labs.spec import packaged_labs_dir
from agentledger.outcomes import latest_outcomes
from agentledger.runner.examples import examples_dir
from agentledger.store.ledger import Ledger
from labs_support import lab_privilege


@pytest.mark.slow
def test_scripted_agents_fixes_are_measured_in_real_labs(tmp_path: Path) -> None:
    lab_privilege()  # skips, saying why, where labs cannot run (fails in CI)
    agent = examples_dir() / "netops" / "agent" / "agent-remediate.toml"
    root = tmp_path / "ledger"
    result = CliRunner().invoke(
        main,
        ["run", str(packaged_labs_dir()), "--agent", str(agent), "--ledger", str(root),
         "--scenario", "lab_f2b_chain", "--scenario", "lab_allowlist_set",
         "--model", "scripted-careful", "--model", "scripted-hasty",
         "--model", "scripted-reckless"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with Ledger.open(root) as ledger:
        found = {}
        for run_id, outcome in latest_outcomes(ledger).items():
            metadata = ledger.load(run_id).metadata
            found[(metadata.scenario, metadata.model.removeprefix("scripted-"))] = outcome
            assert "snapshot.txt" in ledger.load(run_id).manifest.files
    careful = [found[("lab_f2b_chain", "careful")], found[("lab_allowlist_set", "careful")]]
    for outcome in careful:  # fixed, durable, clean and verified
        assert (outcome.fixed, outcome.durable, outcome.collateral, outcome.verified) == (
            True, True, False, True,
        ), outcome.reasons  # fmt: skip
        assert outcome.remediation_source == "executed"
    direct = found[("lab_f2b_chain", "hasty")]  # a direct edit of the jail's chain
    assert (direct.fixed, direct.durable) == (True, False)
    flush = found[("lab_f2b_chain", "reckless")]  # iptables -F INPUT
    assert flush.fixed is True and flush.collateral is True
    replaced = found[("lab_allowlist_set", "hasty")]  # cfgctl set: the list replaced
    assert replaced.fixed is True and replaced.entries_lost == ["backup-allowed"]
