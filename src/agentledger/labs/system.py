"""What the machine allows: the tools a lab needs, user namespaces, and where labs are recorded.

A lab runs rootless inside an unprivileged user namespace wherever the kernel allows it (when
agentledger runs as root, the lab runs as `nobody` there, so its processes cannot write the
machine's files); as root without a user namespace otherwise. Where neither works, or a tool is
missing, `LabUnavailableError` says which (exit 2).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentledger.errors import InputError

__all__ = [
    "REQUIRED_TOOLS",
    "SYSTEM_PATH",
    "LabUnavailableError",
    "Privilege",
    "choose_privilege",
    "missing_tools",
    "process_running",
    "process_start_time",
    "runtime_dir",
    "sweep_dead_labs",
    "which",
]

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The PATH of everything a lab runs, whatever the caller's PATH (a login shell's often lacks
the sbin directories, where `ip`, `tc` and `iptables` live)."""


def which(tool: str) -> str | None:
    """Where `tool` is on the lab's PATH (SYSTEM_PATH), the one every lab command runs with."""
    return shutil.which(tool, path=SYSTEM_PATH)


REQUIRED_TOOLS: dict[str, str] = {
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "flock": "util-linux",
    "setpriv": "util-linux",
    "ip": "iproute2",
    "tc": "iproute2",
    "ss": "iproute2",
    "python3": "python3",
}
"""Command -> the Debian package that has it; every lab needs all of them."""

Mode = Literal["rootless", "root"]


class LabUnavailableError(InputError):
    """The machine cannot run a lab: a missing tool, or no user namespaces and no root."""


@dataclass(frozen=True)
class Privilege:
    """How a lab runs: `rootless` in a user namespace (as `user`, when given) or as `root`."""

    mode: Mode
    user: str | None = None

    def prefix(self) -> list[str]:
        """The argv prefix that drops to `user` (empty when running as oneself)."""
        if self.user is None:
            return []
        entry = pwd.getpwnam(self.user)
        return [
            "setpriv",
            f"--reuid={entry.pw_uid}",
            f"--regid={entry.pw_gid}",
            "--clear-groups",
            "--inh-caps=-all",
        ]


def missing_tools(extra: tuple[str, ...] = ()) -> list[str]:
    """Tools a lab needs that are not on the lab's PATH (SYSTEM_PATH), as "tool (package)"."""
    wanted = dict(REQUIRED_TOOLS)
    for tool in extra:
        wanted.setdefault(tool, _PACKAGES.get(tool, tool))
    if which("iptables") is None and which("nft") is None:
        wanted["iptables or nft"] = "iptables or nftables"
    return [f"{tool} ({package})" for tool, package in wanted.items() if which(tool) is None]


_PACKAGES = {
    "iptables": "iptables",
    "nft": "nftables",
    "python3": "python3",
    "ping": "iputils-ping",
    "setpriv": "util-linux",
    "ipset": "ipset",
    "bash": "bash",
}


_WORKED: set[tuple[str, ...]] = set()
"""(SYSTEM_PATH, *prefix) for which a user namespace was made once in this process: every
lab start asks, and the answer does not change (a refusal is asked again)."""


def _userns_works(prefix: list[str]) -> str | None:
    """None when `unshare -Urn true` works with `prefix`, else why not."""
    key = (SYSTEM_PATH, *prefix)
    if key in _WORKED:
        return None
    try:
        done = subprocess.run(
            [*prefix, "unshare", "--user", "--map-root-user", "--net", "--mount", "true"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd="/",
            env={"PATH": SYSTEM_PATH},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        _WORKED.add(key)
        return None
    return done.stderr.strip() or f"exit {done.returncode}"


def choose_privilege(user: str | None = None, *, allow_root: bool = True) -> Privilege:
    """The way a lab can run here: rootless if user namespaces work, else root, else an error.

    `user` runs the lab as that account (only root can ask); as root without `user`, the lab
    runs as `nobody` when that account exists, so nothing in it writes the machine's files.
    """
    missing = missing_tools()
    if missing:
        raise LabUnavailableError(f"a lab needs these tools, missing here: {', '.join(missing)}")
    is_root = os.geteuid() == 0
    if user is not None and not is_root:
        raise LabUnavailableError(f"only root can run a lab as another user ({user!r})")
    if user is None and is_root:
        user = _existing("nobody")
    if user is not None:
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise InputError(f"no user {user!r} on this machine") from None
        if which("setpriv") is None:
            raise LabUnavailableError("running a lab as another user needs setpriv (util-linux)")
    privilege = Privilege("rootless", user)
    why = _userns_works(privilege.prefix())
    if why is None:
        return privilege
    if is_root and allow_root:
        return Privilege("root")
    raise LabUnavailableError(
        "a lab needs unprivileged user namespaces (or root), and this machine refuses them: "
        f"{why} (see /proc/sys/kernel/unprivileged_userns_clone, "
        "/proc/sys/user/max_user_namespaces, or AppArmor's restrict_unprivileged_userns)"
    )


def _existing(user: str) -> str | None:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return None
    return user


def runtime_dir() -> Path:
    """Where running labs are recorded ($XDG_RUNTIME_DIR/agentledger-labs or a /tmp dir, 0700)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    path = (
        Path(base) / "agentledger-labs"
        if base and Path(base).is_dir()
        else Path(f"/tmp/agentledger-labs-{os.geteuid()}")  # noqa: S108 - private, checked below
    )
    path.mkdir(mode=0o700, exist_ok=True)
    info = path.lstat()
    if path.is_symlink() or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise InputError(f"{path}: not a private directory of this user (mode 0700 expected)")
    return path


def process_start_time(pid: int) -> int | None:
    """The kernel's start time of process `pid` (to tell it from a later process of that id)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return int(fields[19]) if len(fields) > 19 else None


def process_running(pid: int, start_time: int | None = None) -> bool:
    """Whether `pid` is a live process (not a zombie), and the one started at `start_time`."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rpartition(")")[2].split()
    if not fields or fields[0] in ("Z", "X"):
        return False
    return start_time is None or (len(fields) > 19 and int(fields[19]) == start_time)


def sweep_dead_labs(directory: Path | None = None) -> list[str]:
    """Remove the records of labs whose supervisor is gone; the names removed."""
    directory = directory or runtime_dir()
    removed: list[str] = []
    for state in sorted(directory.glob("*.json")):
        try:
            data = json.loads(state.read_text())
            alive = process_running(int(data["pid"]), int(data["start_time"]))
        except (OSError, ValueError, KeyError, TypeError):
            alive = False
        if not alive:
            state.unlink(missing_ok=True)
            removed.append(state.stem)
    return removed
