"""The clean environment of a command that runs outside the sandbox.

A command the policy vouches for (remediate mode's allow patterns) or a person approved runs
on the host as it is; the environment `agentledger exec` was started with is the agent's,
and it can change what that command does without a word of the line showing it: ``BASH_ENV``
runs a file before the command, ``PATH`` finds another program, ``LD_PRELOAD`` loads a
library, ``GIT_*``, ``KUBECONFIG``, ``PYTHON*`` or ``PERL5*`` turn a tool elsewhere. Such a
command therefore starts with only what is listed here (an allowlist, so that no variable
nobody thought of gets through): the system ``PATH``, the user's own ``HOME``, ``USER`` and
``LOGNAME`` from the password database, the locale (``LANG``, ``LC_*``), ``TERM`` and ``TZ``
(the last two kinds only when they name the system's own locale or zone, not a file), and
the shell that starts the command sets umask 022 (`execute`).
Network readers get the same, and what their daemons' sockets need (`netreaders`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["KEPT_VARIABLES", "SYSTEM_DIRECTORIES", "SYSTEM_PATH", "clean_environment"]

SYSTEM_DIRECTORIES = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Where programs are looked for outside the sandbox (PATH is the agent's; it is not used)."""
SYSTEM_PATH = ":".join(SYSTEM_DIRECTORIES)
KEPT_VARIABLES = ("LANG", "TERM", "TZ")
"""Kept from the agent's environment, with every ``LC_*`` (a printable value only)."""


def clean_environment(environ: Mapping[str, str], also: Iterable[str] = ()) -> dict[str, str]:
    """The system PATH, HOME, USER and LOGNAME of the effective user from the password
    database, and the variables of `KEPT_VARIABLES`, ``LC_*`` and `also` that `environ` has
    with a printable value; nothing else."""
    import pwd

    env = {"PATH": SYSTEM_PATH}
    try:
        entry = pwd.getpwuid(os.geteuid())
        env.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name)
    except KeyError:
        env["HOME"] = "/"
    kept = {*KEPT_VARIABLES, *also}
    for name, value in environ.items():
        if (name in kept or name.startswith("LC_")) and value.isprintable():
            if name in _NAMED_FILES and not _names_a_system_file(name, value):
                continue
            env[name] = value
    return env


_NAMED_FILES = frozenset(("LANG", "TZ")) | {f"LC_{part}" for part in (
    "ALL", "CTYPE", "NUMERIC", "TIME", "COLLATE", "MONETARY", "MESSAGES", "PAPER", "NAME",
    "ADDRESS", "TELEPHONE", "MEASUREMENT", "IDENTIFICATION")}  # fmt: skip


def _names_a_system_file(name: str, value: str) -> bool:
    """glibc reads a locale or time zone from any path such a value names (``TZ=:/tmp/z``,
    ``LC_ALL=/tmp/l``): only names of the system's own are kept (``Europe/Paris``, ``C.UTF-8``)."""
    if name == "TZ":
        zone = value.removeprefix(":")
        return not zone.startswith("/") and ".." not in zone.split("/")
    return "/" not in value
