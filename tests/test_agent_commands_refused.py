"""How many commands real agents ran to read are refused in investigate mode (issue 33: at
most 2%). The corpus, tests/data/agent_commands.jsonl, is every distinct command of the
OpenHands sample trajectories (/work/shared/samples: `run` actions, a keystroke `C-c` left
out) and of 213 shell audits of the labs' scripted agents (careful, hasty, reckless), each
labelled by hand `reads` (meant to read: a status, a listing, a help text, a syntax check)
or not (an install, a fix, a server started).

Measured when it was made: of 117 commands meant to read, 17 refused (14.5%); 14 of them
are the labs' own tools (`jailctl status`, `routectl show`, ...), unknown to the packaged
knowledge as any site's own tool is (each lab's lab.yaml declares its tools' subcommands,
known in that lab's runs only: test_lab_investigator_commands.py measures them there); of the
other 103, 3 refused
(2.9%): `ssh-keygen -lf KEY` (now read as `-l -f KEY`), `bash -n SCRIPT` and
`python3 -m http.server --help` (a program the gate cannot read) remain: 2 of 103 (1.9%).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentledger.runner.shell_gate import Gate, load_policy

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/agent_commands.jsonl").read_text().splitlines()
]
LAB_TOOLS = {"poolctl", "cfgctl", "jailctl", "resolvctl", "hardenctl", "netcfg", "routectl",
             "shaperctl"}  # fmt: skip


def refused(commands: list[str]) -> list[str]:
    gate = Gate(load_policy(None), None, ci=True)
    return [command for command in commands if gate.decide(command).decision != "allowed"]


def test_at_most_two_percent_of_what_agents_ran_to_read_is_refused() -> None:
    reads = [row["command"] for row in ROWS if row["reads"]]
    standard = [command for command in reads if command.split()[0] not in LAB_TOOLS]
    assert len(reads) >= 110 and len(standard) >= 100
    assert len(refused(standard)) <= 0.02 * len(standard), refused(standard)
    # Outside their lab the labs' own tools are unknown: refused, and said so.
    assert len(refused(reads)) - len(refused(standard)) <= 14


def test_what_agents_ran_to_change_things_is_refused() -> None:
    changes = [row["command"] for row in ROWS if not row["reads"]]
    assert len(changes) >= 60
    assert refused(changes) == changes
