"""How many commands an investigator runs in the labs are refused in investigate mode, in the
lab's own runs (its owners' tools known as its lab.yaml declares them): at most 2% (issue 33).

The corpus, tests/data/lab_investigator_commands.jsonl (made by make_lab_investigator_corpus.py):
what the labs' scripted agents ran to read, and what an SRE types investigating each fault.
Measured when it was made, 210 commands: 30 refused before the owners' tools were declared and
ip's abbreviations read as ip reads them (14.3%); 3 after (1.4%), each for a reason that holds.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentledger.labs import resolve_labs
from agentledger.runner.lab_shell import LabTarget
from agentledger.runner.shell_gate import Gate, load_policy

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/lab_investigator_commands.jsonl")
    .read_text()
    .splitlines()
]
STILL_REFUSED = {
    # Runs a program the gate cannot read.
    "python3 resolve.py app.corp",
    # nstat writes its history file unless -s (--noupdate).
    "nstat -az",
    # A network reader gets the host's network only first in its line, not under watch.
    "watch -n 1 -g iptables -S f2b-http",
}


def _refused(rows: list[dict[str, str]], declared: bool = True) -> list[str]:
    specs = {loaded.name: loaded.spec for loaded in resolve_labs("labs")}
    gates: dict[str, Gate] = {}
    refused = []
    for row in rows:
        gate = gates.get(row["lab"])
        if gate is None:
            spec = specs[row["lab"]]
            hosts = {host: ["false"] for host in spec.host_names()}  # decided, never run
            tools = spec.tool_knowledge() if declared else {}
            target = LabTarget("m", hosts, row["host"], tools)
            gate = gates[row["lab"]] = Gate(load_policy(None), None, ci=True, lab=target)
        if gate.decide(f"{row['host']}: {row['command']}").decision != "allowed":
            refused.append(row["command"])
    return refused


def test_at_most_two_percent_of_what_investigators_run_in_the_labs_is_refused() -> None:
    assert len(ROWS) >= 200 and len({row["lab"] for row in ROWS}) == 10
    recorded = [row for row in ROWS if row["source"].startswith("recorded")]
    assert len(recorded) >= 70
    refused = _refused(ROWS)
    assert len(refused) <= 0.02 * len(ROWS), refused
    assert set(refused) == STILL_REFUSED
    assert _refused(recorded) == []


def test_without_their_declarations_the_labs_tools_are_refused() -> None:
    names = {
        tool.name
        for loaded in resolve_labs("labs")
        for owner in loaded.spec.owners
        for tool in owner.tools
    }
    tools = [row for row in ROWS if row["command"].split()[0] in names]
    assert len(tools) >= 15
    assert _refused(tools, declared=False) == [row["command"] for row in tools]
