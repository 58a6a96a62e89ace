"""Ctrl-C (SIGINT to the process group, as a terminal sends it) during `variant run` and
`sentinel run`: exit 130 with a summary, no decision written, a consistent ledger; and the next
run makes the interrupted runs again instead of counting them as done.

Ctrl-C during `run`, `import` and `judge` is tested in test_interrupts.py and
test_hanging_model.py (with a model server that hangs), SIGKILL in test_faults_kill.py.

The agent is the offline example agent behind a wrapper that, while a flag file exists,
announces it has started and then waits, so the interrupt lands while it works.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.runner.examples import examples_dir
from agentledger.store import Ledger, verify_ledger
from test_interrupts import agentledger, interrupt_when
from test_sentinel import RUN_SPEC

SLOW_AGENT = """\
import os
import time
from pathlib import Path

flag = Path({flag!r})
if flag.exists():
    Path({started!r}).touch()
    time.sleep(60)
os.execvp("python3", ["python3", "investigate.py"])
"""


def slow_example(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The example (suite and agent) with a wrapped agent; (example, agent file, flag)."""
    example = tmp_path / "netops"
    shutil.copytree(examples_dir() / "netops", example)
    agent_dir = example / "agent"
    flag, started = tmp_path / "slow", tmp_path / "started"
    (agent_dir / "slow.py").write_text(SLOW_AGENT.format(flag=str(flag), started=str(started)))
    toml = (agent_dir / "agent.toml").read_text()
    toml = toml.replace(
        'command = ["python3", "investigate.py"]', 'command = ["python3", "slow.py"]'
    )
    assert "slow.py" in toml
    (agent_dir / "agent.toml").write_text(toml)
    flag.touch()
    return example, agent_dir / "agent.toml", flag


def decisions(root: Path) -> list[str]:
    directory = root / "decisions"
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def statuses(root: Path) -> list[str | None]:
    with Ledger.open(root) as ledger:
        assert verify_ledger(ledger).ok
        return sorted(str(run.exit_status) for run in ledger.runs())


@pytest.mark.slow
def test_ctrl_c_during_variant_run(tmp_path: Path) -> None:
    example, agent, flag = slow_example(tmp_path)
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    shutil.copy(example / "agent" / "variant-a.txt", spec_dir / "variant-a.txt")
    spec: dict[str, Any] = {
        "name": "both-layers",
        "addon": "variant-a.txt",
        "suite": str(example / "suite"),
        "scenarios": ["tc-shaping-not-firewall"],
        "models": ["scripted-careful"],
        "repeats": 1,
        "predicates": [{"id": "P1", "ran": r"tc-qdisc\.txt"}],
        "acceptance": "all_models",
    }
    (spec_dir / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    root = tmp_path / "ledger"
    argv = ["variant", "run", spec_dir / "spec.yaml", "--agent", agent, "--ledger", root]

    done = interrupt_when(agentledger(*argv), lambda: (tmp_path / "started").exists())
    assert done.returncode == 130, done.stdout + done.stderr
    assert "Interrupted" in done.stderr and "no decision was written" in done.stderr
    assert "Traceback" not in done.stderr and "Aborted" not in done.stderr
    assert decisions(root) == []
    assert statuses(root) == ["interrupted"]

    flag.unlink()
    again = CliRunner().invoke(main, [str(a) for a in argv] + ["--json"])
    assert again.exit_code == 0, again.output
    decision = json.loads(again.output[again.output.index("{") :])
    assert decision["outcome"] == "ACCEPTED"
    # The interrupted run was made again, and the decision does not rest on it.
    with Ledger.open(root) as ledger:
        interrupted = [r.run_id for r in ledger.runs() if r.exit_status == "interrupted"]
    assert len(interrupted) == 1
    assert interrupted[0] not in decision["tested"]["run_ids"]
    assert len(decision["tested"]["run_ids"]) == 2  # one variant run, one baseline run
    assert len(decisions(root)) == 1


@pytest.mark.slow
def test_ctrl_c_during_sentinel_run(tmp_path: Path) -> None:
    example, agent, flag = slow_example(tmp_path)
    spec = tmp_path / "sentinel.yaml"
    spec.write_text(RUN_SPEC.replace("SUITE", str(example / "suite")), encoding="utf-8")
    root = tmp_path / "ledger"
    argv = [
        "sentinel",
        "run",
        spec,
        "--model",
        "scripted-hasty",
        "--agent",
        agent,
        "--ledger",
        root,
    ]

    done = interrupt_when(agentledger(*argv), lambda: (tmp_path / "started").exists())
    assert done.returncode == 130, done.stdout + done.stderr
    assert "Interrupted" in done.stderr and "no decision made" in done.stderr
    assert "Traceback" not in done.stderr and "Aborted" not in done.stderr
    assert decisions(root) == []
    assert "interrupted" in statuses(root)

    flag.unlink()
    again = CliRunner().invoke(main, [str(a) for a in argv])
    assert again.exit_code == 1, again.output  # NO-GO for the hasty model, as in a clean ledger
    assert "NO-GO" in again.output
    assert "missing runs:" not in again.output  # the interrupted baseline run was made again
    (decision_id,) = decisions(root)
    decision = json.loads((root / "decisions" / decision_id / "decision.json").read_text())
    with Ledger.open(root) as ledger:
        interrupted = {r.run_id for r in ledger.runs() if r.exit_status == "interrupted"}
    assert interrupted and not interrupted & set(decision["tested"]["run_ids"])
