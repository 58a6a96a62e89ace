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

__all__ = ["LAB_ENV", "LAB_TARGET", "LabEntry", "LabTarget"]

LAB_ENV = "AGENTLEDGER_LAB"
"""The environment variable naming a run's lab target file (JSON)."""
LAB_TARGET = "lab.json"
"""The lab target file's name in a run's workspace input directory."""
_PREFIX = re.compile(r"^\s*([a-z][a-z0-9-]{0,14}):[ \t]+(\S.*)$", re.S)
_HOST = re.compile(r"[a-z][a-z0-9-]{0,14}")
_LAB_ROOT = "/run/lab"  # agentledger.labs.script.LAB_ROOT (a test holds them equal)
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class LabEntry:
    """How the gate enters a running lab, as fields it checks, never as an argv to trust:
    the pid of the lab's first process (whose namespaces `nsenter` joins), whether the lab is
    rootless (its user namespace joined too) and the user it runs as (None: as oneself).
    The argv prefix is built here (as `agentledger.labs.Lab.host_argv` does), so a target
    file can name a lab but not a program to run outside the sandbox."""

    pid: int
    rootless: bool = False
    user: str | None = None

    def host_argv(self, host: str) -> list[str]:
        """The argv prefix that runs a command in lab host `host`."""
        argv: list[str] = []
        if self.user is not None:
            import pwd

            entry = pwd.getpwnam(self.user)
            argv += [
                "setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                "--clear-groups", "--inh-caps=-all",
            ]  # fmt: skip
        argv += ["nsenter", "-t", str(self.pid)]
        if self.rootless:
            argv += ["-U", "--preserve-credentials"]
        place = f"{_LAB_ROOT}/{host}"
        return [
            *argv, "-m", "-n", "-p", "--", "ip", "netns", "exec", host,
            "env", "-C", place, f"PATH={place}/bin:{_SYSTEM_PATH}", f"LAB_HOST={host}",
            f"LAB_DIR={place}", f"HOME={place}",
        ]  # fmt: skip

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "rootless": self.rootless, "user": self.user}

    @classmethod
    def from_json(cls, data: object, where: str) -> LabEntry:
        """The entry of a target file, each field checked; InputError naming it otherwise."""
        if not isinstance(data, dict) or set(data) - {"pid", "rootless", "user"}:
            raise InputError(f"{where}: enter: an object of pid, rootless and user")
        pid, rootless, user = data.get("pid"), data.get("rootless", False), data.get("user")
        if type(pid) is not int or pid <= 1:
            raise InputError(f"{where}: enter.pid: the pid of the lab's first process")
        if type(rootless) is not bool:
            raise InputError(f"{where}: enter.rootless: true or false")
        if user is not None and not (isinstance(user, str) and _user_exists(user)):
            raise InputError(f"{where}: enter.user: {user!r} is no user of this machine")
        _own_namespaces(pid, where)
        return cls(pid, rootless, user)


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _own_namespaces(pid: int, where: str) -> None:
    """A lab's process has a mount and a network namespace that are not the gate's: entering
    the gate's own would run a command on this machine, with no lab around it."""
    for kind in ("mnt", "net"):
        try:
            theirs = os.stat(f"/proc/{pid}/ns/{kind}")
            ours = os.stat(f"/proc/self/ns/{kind}")
        except OSError as exc:
            raise InputError(f"{where}: enter.pid: no lab process {pid} ({exc.strerror})") from None
        if (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino):
            raise InputError(
                f"{where}: enter.pid: process {pid} shares this machine's {kind} namespace; "
                "it is no lab"
            )


@dataclass(frozen=True)
class LabTarget:
    """A running lab as the gate reaches it: its name, each host's argv prefix, the default."""

    name: str
    hosts: Mapping[str, Sequence[str]]
    default: str
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """host -> the owners' tools there, as command knowledge (`LabSpec.tool_knowledge`)."""
    entry: LabEntry | None = None
    """How the lab is entered; what a target file carries instead of `hosts`' argvs (a
    target made in this process with no entry, e.g. one only deciding, cannot be written)."""

    @classmethod
    def entering(
        cls,
        name: str,
        entry: LabEntry,
        hosts: Sequence[str],
        default: str,
        tools: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> LabTarget:
        """The target of a running lab entered by `entry`, each host's prefix built from it."""
        prefixes = {host: entry.host_argv(host) for host in hosts}
        return cls(name, prefixes, default, dict(tools or {}), entry)

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
        if self.entry is None:
            raise ValueError("a lab target without an entry (LabEntry) cannot be written")
        tools = {k: dict(v) for k, v in self.tools.items()}
        return {
            "name": self.name,
            "hosts": list(self.hosts),
            "default": self.default,
            "tools": tools,
            "enter": self.entry.to_json(),
        }

    def write(self, path: Path, spec: Mapping[str, object] | None = None) -> Path:
        """Write the target where the gated shell finds it (AGENTLEDGER_LAB), with the lab's
        spec (`spec`, as JSON) for agents that read what their lab is made of."""
        data = self.to_json() if spec is None else {**self.to_json(), "spec": dict(spec)}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(fd, 0o644)  # whatever the umask: `read` trusts no file others may write
            out.write(json.dumps(data))
        return path

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> LabTarget:
        """The target written by `write`; InputError naming the file otherwise.

        Only a regular file this user (or root) owns and only they may write is read (never a
        device, a pipe, ``/dev/stdin`` or an inherited descriptor, which the agent that sets
        AGENTLEDGER_LAB could fill), and no argv is taken from it: each host's prefix is
        built from its checked `enter` fields and host names (`LabEntry`)."""
        where = f"{path} ({LAB_ENV})"
        from agentledger.shell.trusted_files import read_trusted

        try:
            data = json.loads(read_trusted(path, what=f"lab target file ({LAB_ENV})"))
            names = data["hosts"]
            if not isinstance(names, list) or not all(isinstance(h, str) for h in names):
                raise TypeError("hosts: a list of host names")
            for host in names:
                if not _HOST.fullmatch(host):
                    raise ValueError(f"hosts: {host!r} is no lab host name")
            tools = {str(k): dict(v) for k, v in data.get("tools", {}).items()}
            name, default, enter = str(data["name"]), str(data["default"]), data["enter"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{where}: not a lab target file: {exc}") from None
        if default not in names:
            raise InputError(f"{where}: default host {default!r} is no host")
        for host in tools:
            if host not in names:
                raise InputError(f"{where}: tools of {host!r}, which is no host")
        return cls.entering(name, LabEntry.from_json(enter, where), names, default, tools)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> LabTarget | None:
        """The target AGENTLEDGER_LAB names, if any."""
        value = (os.environ if environ is None else environ).get(LAB_ENV)
        return cls.read(value) if value else None
