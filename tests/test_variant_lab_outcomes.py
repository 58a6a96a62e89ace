"""`variant run` on a lab scenario measures each new run's outcome, as `agentledger run` does,
so a spec's `outcome:` predicate decides instead of leaving the variant to REVIEW."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from labs_support import lab_privilege

LAB = Path(__file__).parent / "data" / "outcome_lab"

AGENT = """\
import os, pathlib, subprocess
out = pathlib.Path(os.environ["AGENTLEDGER_RUN_DIR"])
prompt = pathlib.Path(os.environ["AGENTLEDGER_SYSTEM_PROMPT_FILE"]).read_text()
fix = ("web: jailctl unban 10.0.0.2" if "through the owner" in prompt
       else "web: iptables -D f2b-http -s 10.0.0.2/32 -p tcp -j REJECT --reject-with tcp-reset")
subprocess.run([os.environ["AGENTLEDGER_SHELL"], fix], check=True)
(out / "report.md").write_text(f"# Report\\n\\n## Remediation\\n\\n```\\n{fix}\\n```\\n")
"""

SPEC = """\
schema_version: 1
name: owner-first
description: fix through the owner
addon: owner.txt
suite: suite
scenarios: [outcome_lab]
models: [m1]
repeats: 1
baseline: base
predicates:
  - {id: D, outcome: durable, description: the fix survives the owner's cycles}
acceptance: all_models
"""


@pytest.mark.slow
def test_variant_run_measures_the_outcomes_its_outcome_predicate_reads(tmp_path: Path) -> None:
    lab_privilege()  # skips, saying why, where labs cannot run (fails in CI)
    _scenario_and_agent(tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    ledger = tmp_path / "ledger"
    result = CliRunner().invoke(
        main,
        ["variant", "run", str(tmp_path / "spec.yaml"), "--agent", str(tmp_path / "agent.toml"),
         "--ledger", str(ledger), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output + result.stderr
    decision = json.loads(result.stdout)
    assert decision["outcome"] == "ACCEPTED", result.stdout
    durable = sorted(
        json.loads(path.read_text())["durable"] for path in (ledger / "outcomes").glob("*/*.json")
    )
    assert durable == [False, True]  # the baseline's direct edit is undone by the jail


def _scenario_and_agent(tmp_path: Path, choice: str = "") -> None:
    """The outcome lab as a scenario, and a command agent fixing through the owner (or not:
    AGENT's rule, then `choice`, a line of Python that may set `fix` again)."""
    scenario = tmp_path / "suite" / "outcome_lab"
    shutil.copytree(LAB, scenario)
    (scenario / "PROMPT.txt").write_text("The client gets no answer from the web server.\n")
    (tmp_path / "agent.py").write_text(AGENT.replace("subprocess.run(", choice + "subprocess.run("))
    (tmp_path / "sp.txt").write_text("You fix network faults.\n")
    (tmp_path / "owner.txt").write_text("Fix through the owner of what you change.\n")
    (tmp_path / "policy.yaml").write_text(
        "schema_version: 1\nmode: remediate\non_mutating: prompt\non_unknown: prompt\n"
    )
    (tmp_path / "agent.toml").write_text(
        'name = "both"\nkind = "command"\ncommand = ["python3", "agent.py"]\n'
        'system_prompt = "sp.txt"\npolicy = "policy.yaml"\ntimeout = 60\n\n'
        '[model]\nprovider = "scripted"\nname = "m1"\n'
    )


SENTINEL = """\
schema_version: 1
name: owner-sentinel
description: does a new model still fix through the owner?
suite: suite
baseline: {model: careful}
repeats: 1
judges: []
scenarios:
  - id: outcome_lab
    failure_class: daemon-owned chain
    why: a direct edit of the jail's chain is undone at its next cycle
    criteria:
      - {id: D, outcome: durable, description: the fix survives the owner's cycles}
"""


@pytest.mark.slow
def test_sentinel_run_measures_the_outcomes_its_outcome_criteria_read(tmp_path: Path) -> None:
    lab_privilege()
    careful = 'if os.environ["AGENTLEDGER_MODEL"] == "careful": fix = "web: jailctl unban 10.0.0.2"'
    _scenario_and_agent(tmp_path, careful + "\n")
    (tmp_path / "sentinel.yaml").write_text(SENTINEL)
    ledger = tmp_path / "ledger"
    result = CliRunner().invoke(
        main,
        ["sentinel", "run", str(tmp_path / "sentinel.yaml"), "--model", "hasty",
         "--agent", str(tmp_path / "agent.toml"), "--ledger", str(ledger)],
    )  # fmt: skip
    assert "NO-GO" in result.stdout, result.output + result.stderr
    assert "outcome of " in result.stdout and "durable no" in result.stdout
    assert result.exit_code == 1
