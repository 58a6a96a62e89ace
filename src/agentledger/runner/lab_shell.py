"""The gated shell inside a lab: which host a command runs in, and how to get there.

A run of a scenario with a lab.yaml runs its agent's commands in the lab's hosts (network
namespaces), never on this machine: `LabTarget` holds, per host, the argv prefix that enters it
(`agentledger.labs.Lab.host_argv`), and the default host. A command names its host with a
``HOST: `` prefix (``web: iptables -S``); without one it runs in the default host. The runner
writes the target to a JSON file named by AGENTLEDGER_LAB, which `Gate.for_run_dir` (and so
the gated shell of command agents) reads.

Inside a lab nobody approves a change: the lab is the sandbox (its filesystem view keeps the
machine's files read-only), so a command the policy would ask about runs, and CI may run it.
Investigate mode stays what it is: read-only commands only, each under bubblewrap, inside the
host's namespaces.

The owners' tools a lab.yaml declares subcommands of (`read_only`, `changes`) are known to the
gate in their own host, in that lab's runs only (`LabTarget.tools`, `Gate.knowledge_for`):
`jailctl status` runs in investigate mode there, `jailctl unban` does not.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentledger.errors import InputError

__all__ = ["LAB_ENV", "LAB_TARGET", "LabTarget"]

LAB_ENV = "AGENTLEDGER_LAB"
"""The environment variable naming a run's lab target file (JSON)."""
LAB_TARGET = "lab.json"
"""The lab target file's name in a run's workspace input directory."""
_PREFIX = re.compile(r"^\s*([a-z][a-z0-9-]{0,14}):[ \t]+(\S.*)$", re.S)


@dataclass(frozen=True)
class LabTarget:
    """A running lab as the gate reaches it: its name, each host's argv prefix, the default."""

    name: str
    hosts: Mapping[str, Sequence[str]]
    default: str
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """host -> the owners' tools there, as command knowledge (`LabSpec.tool_knowledge`)."""

    def split(self, command: str) -> tuple[str, str]:
        """(host, command) of ``HOST: command``; the default host for a command without a
        host of this lab before a colon."""
        match = _PREFIX.match(command)
        if match is not None and match.group(1) in self.hosts:
            return match.group(1), match.group(2)
        return self.default, command

    def prefix(self, host: str) -> list[str]:
        """The argv prefix that runs a command in `host`."""
        return list(self.hosts[host])

    def to_json(self) -> dict[str, object]:
        hosts = {k: list(v) for k, v in self.hosts.items()}
        tools = {k: dict(v) for k, v in self.tools.items()}
        return {"name": self.name, "hosts": hosts, "default": self.default, "tools": tools}

    def write(self, path: Path, spec: Mapping[str, object] | None = None) -> Path:
        """Write the target where the gated shell finds it (AGENTLEDGER_LAB), with the lab's
        spec (`spec`, as JSON) for agents that read what their lab is made of."""
        data = self.to_json() if spec is None else {**self.to_json(), "spec": dict(spec)}
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> LabTarget:
        """The target written by `write`; InputError naming the file otherwise."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            hosts = {str(k): [str(a) for a in v] for k, v in data["hosts"].items()}
            tools = {str(k): dict(v) for k, v in data.get("tools", {}).items()}
            target = cls(str(data["name"]), hosts, str(data["default"]), tools)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{path} ({LAB_ENV}): not a lab target file: {exc}") from None
        if target.default not in target.hosts:
            raise InputError(f"{path} ({LAB_ENV}): default host {target.default!r} is no host")
        for host in target.tools:
            if host not in target.hosts:
                raise InputError(f"{path} ({LAB_ENV}): tools of {host!r}, which is no host")
        return target

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> LabTarget | None:
        """The target AGENTLEDGER_LAB names, if any."""
        value = (os.environ if environ is None else environ).get(LAB_ENV)
        return cls.read(value) if value else None
