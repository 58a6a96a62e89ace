"""The kernel's half of investigate mode: a command runs where it can change nothing.

The classifier decides from the text of a command; when it is wrong, a command it called
read-only could still delete a file, reach another process or change the network. So the
gate runs such commands under bubblewrap (``bwrap``, Debian package ``bubblewrap``), and
what holds does not depend on the classifier being right:

- ``/`` is bound read-only, with every mount under it; the only writable place is a scratch
  of the command's own (``$TMPDIR``): a tmpfs of at most SCRATCH_BYTES mounted inside the
  sandbox on an empty directory the gate makes under /tmp (never in the agent's ``$TMPDIR``),
  so nothing it writes reaches the host's disk or outlives it, and no later gate can read it;
- the gate's cache directory (the fingerprint key, the validated policies) shows empty
  (`redact_key.hidden_dirs`);
- ``/dev`` is a fresh minimal one (null, zero, random, tty, a private pts), so no disk device
  or other terminal can be opened;
- a PID namespace of its own with a procfs of its own (``--proc /proc``, its kernel
  settings ``/proc/sys`` and ``sysrq-trigger`` bound read-only over it): the host's
  processes are not there at all, so ``/proc/<pid>/root``, ``cwd`` and ``fd`` of a host
  process (which lead to writable mounts) cannot be reached, nor can a process be signalled
  or traced; IPC and UTS namespaces of its own too;
- every capability dropped: as root it is uid 0 that owns no capability (no
  ``CAP_DAC_OVERRIDE``, ``CAP_SYS_PTRACE``, ``CAP_NET_ADMIN``, ``CAP_NET_RAW``);
- a network namespace of its own (loopback only), except for a network reader whose words
  `netreaders` checked: it gets the host's network, and as root the firewall readers keep
  ``CAP_NET_ADMIN`` (reading netfilter needs it) and ``ping`` ``CAP_NET_RAW``, each run
  alone from its checked words;
- a new session (no controlling terminal: no keystrokes pushed into one), killed with the
  gate (``--die-with-parent``);
- no file opened for writing, made, removed or renamed outside the scratch and its ``/dev``
  (Landlock, `landlock_exec`, where the kernel has it): the read-only bind alone leaves the
  host's FIFOs, socket files and device nodes open to writing.

- no Unix socket (a seccomp filter, `seccomp`): the read-only filesystem does not stop a
  connection to a daemon's socket (``/run/docker.sock``, D-Bus, ``/var/run/postgresql``);
  only the readers that need one (``systemctl``, ``docker``, ``ssh``'s agent) keep them.

It does not reach what a command asks another machine to do (``ssh host CMD``: the classifier
judges CMD; the log says so in `remote_parts`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentledger.runner.shell_gate.unavailable import SandboxUnavailableError

__all__ = [
    "INSTALL_HINT",
    "READER_NAMES",
    "REMOTE_WRAPPERS",
    "Sandbox",
    "find_bwrap",
    "remote_parts",
]

INSTALL_HINT = (
    "install the package bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; "
    "Fedora: dnf install bubblewrap), or set `sandbox: off` in the policy to rely on the "
    "classifier alone"
)
"""What to do when the sandbox is missing, as error messages say it."""

REMOTE_WRAPPERS = frozenset(
    ("ssh", "mosh", "gcloud", "az", "kubectl", "oc", "docker", "podman", "nerdctl", "crictl")
)
"""Wrappers whose command runs elsewhere (another host, a container, a cloud VM): the local
sandbox does not hold it."""

READER_NAMES = (
    "iptables", "ip6tables", "iptables-save", "ip6tables-save", "nft", "tc", "ip", "ss", "ping",
    "dig", "host", "nslookup",
    "curl", "wget", "ssh", "systemctl", "docker", "netstat", "service", "ufw", "psql",
)  # fmt: skip
"""The names of `reader_checks.READERS` (a test holds the two equal), so that a line naming
none of them is known to need no network without loading the readers' checks."""

SCRATCH_BYTES = 128 * 1024 * 1024
"""The most a sandboxed command can write in its scratch (its tmpfs's size)."""
SCRATCH_BASE = "/tmp"  # noqa: S108 - a private directory of the gate's own is made in it
"""Where scratch mount points are made: the system's, not the agent's ``$TMPDIR``."""
_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")
_LANDLOCK: dict[int, list[str]] = {}


def _landlock_argv() -> list[str]:
    """How to start `landlock_exec` inside the sandbox: its C build (`make scan`) where
    there is one this user may run, else an interpreter this user may run
    (this one, else the system's: a tool installed under a directory only root reads may run
    as another user) with the module's source as `-c`, so that no file of the package has to
    be readable there. Empty when no interpreter can be run (the sandbox holds without it,
    as on a kernel without Landlock)."""
    uid = os.getuid()
    if uid not in _LANDLOCK:
        from agentledger.runner.shell_gate import landlock_exec

        built = os.path.join(os.path.dirname(landlock_exec.__file__), "_landlock_exec")
        _LANDLOCK[uid] = [built] if os.access(built, os.X_OK) else []
        for python in () if _LANDLOCK[uid] else (os.path.realpath(sys.executable), *_PYTHONS):
            if os.access(python, os.X_OK):
                with open(landlock_exec.__file__, encoding="utf-8") as source:
                    _LANDLOCK[uid] = [python, "-I", "-S", "-c", source.read()]
                break
    return _LANDLOCK[uid]


_CANDIDATES = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")


def find_bwrap(candidates: Sequence[str] | None = None) -> str | None:
    """The bubblewrap executable, from the system's own directories only.

    PATH is not searched: the agent sets the environment a gated command starts in, and a
    ``bwrap`` of its own earlier on PATH would be a sandbox that holds nothing.
    ``AGENTLEDGER_HIDE_BWRAP=1`` makes it answer None, to try what a machine without
    bubblewrap does (`make demo`, the tests): it can only refuse commands, never unsandbox one.
    """
    if candidates is None and os.environ.get("AGENTLEDGER_HIDE_BWRAP") == "1":
        return None
    for path in _CANDIDATES if candidates is None else candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


class Sandbox:
    """bubblewrap, set up to run one command with a read-only filesystem."""

    __slots__ = ("executable",)

    name = "bwrap"
    """How the log names this sandbox (ShellEvent `sandbox`)."""

    def __init__(self, executable: str) -> None:
        self.executable = executable

    @classmethod
    def find(cls) -> Sandbox:
        """The system's bubblewrap; SandboxUnavailableError naming the package without it."""
        executable = find_bwrap()
        if executable is None:
            raise _unavailable(
                "investigate mode runs commands in a read-only sandbox, and bubblewrap (bwrap) "
                f"is not installed: {INSTALL_HINT}"
            )
        return cls(executable)

    def argv(
        self,
        command: Sequence[str],
        *,
        cwd: str,
        scratch: str,
        status_fd: int,
        host_network: bool = False,
        capabilities: Sequence[str] = (),
        seccomp_fd: int = -1,
        hidden: Sequence[str] = (),
    ) -> list[str]:
        """bwrap's command line to run `command` in `cwd`, writable only in `scratch`.

        `host_network` keeps the host's network namespace (a checked network reader) and
        `capabilities` are the only ones kept (none by default; the gate grants them only to
        root, or in a lab host, to root of the lab's user namespace); `seccomp_fd`
        holds the seccomp program that refuses Unix sockets (`seccomp`). bwrap reports on
        `status_fd` (JSON lines) once the command has started, which is how a sandbox that
        could not be set up is told from a command that failed. `scratch` is an empty
        directory the command sees as a fresh tmpfs of SCRATCH_BYTES; each of `hidden` (existing
        directories) shows as an empty one.
        """
        argv = [
            self.executable,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            # bubblewrap leaves the new procfs' kernel settings writable: uid 0 without a
            # capability could still set vm.*, kernel.core_pattern or trigger sysrq.
            "--ro-bind", "/proc/sys", "/proc/sys",
            "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
            "--ro-bind-try", "/proc/irq", "/proc/irq",
            "--ro-bind-try", "/proc/bus", "/proc/bus",
            "--size", str(SCRATCH_BYTES), "--perms", "0700", "--tmpfs", scratch,
            "--setenv", "TMPDIR", scratch,
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--die-with-parent",
            "--new-session",
            "--cap-drop", "ALL",
        ]  # fmt: skip
        for place in hidden:
            argv += ["--perms", "0700", "--tmpfs", place]
        if not host_network:
            argv.append("--unshare-net")
        if seccomp_fd >= 0:
            argv += ["--seccomp", str(seccomp_fd)]
        for capability in capabilities:
            argv += ["--cap-add", capability]
        argv += ["--chdir", cwd, "--json-status-fd", str(status_fd), "--"]
        # Landlock closes FIFOs, sockets and device nodes of the read-only host to writing
        # (the read-only bind does not); only the scratch and the sandbox's /dev stay open.
        landlock = _landlock_argv()
        return (
            [*argv, *landlock, scratch, "/dev", "--", *command] if landlock else [*argv, *command]
        )

    @staticmethod
    def started(status: bytes) -> bool:
        """True when bwrap's status report says the command was started."""
        return b'"child-pid"' in status

    @staticmethod
    def failure(stderr: bytes) -> SandboxUnavailableError:
        """The error for a sandbox that bwrap could not set up (`stderr` says why)."""
        why = stderr.decode("utf-8", "replace").strip().splitlines()
        detail = why[-1] if why else "no reason given"
        return _unavailable(
            f"the read-only sandbox cannot be set up here ({detail}); nothing was run. "
            "bubblewrap needs user namespaces, or root with CAP_SYS_ADMIN; "
            f"otherwise {INSTALL_HINT.split(', or ', 1)[1]}"
        )


def make_scratch() -> str:
    """A new empty directory (only its owner's) under SCRATCH_BASE, where the sandbox mounts
    one command's scratch tmpfs; it stays empty on the host."""
    from agentledger.shell.trusted_files import SCRATCH_PREFIX

    stamp = f"{os.getpid()}-{os.urandom(4).hex()}"
    path = os.path.join(SCRATCH_BASE, f"{SCRATCH_PREFIX}{stamp}")
    os.mkdir(path, 0o700)  # never an existing one: mkdir does not follow a planted link
    return path


def remove_scratch(path: str) -> None:
    """Remove a scratch directory and what the command left in it."""
    try:
        os.rmdir(path)
    except OSError:
        import shutil

        shutil.rmtree(path, ignore_errors=True)


def remote_parts(parts: Sequence[object]) -> list[str]:
    """The parts of a command that run on another host or in a container (see
    REMOTE_WRAPPERS), as ``COMMAND (via WRAPPER)``: the local sandbox does not hold them."""
    found = []
    for part in parts:
        via = getattr(part, "via", ())
        remote = next((name for name in via if name in REMOTE_WRAPPERS), None)
        if remote is not None:
            found.append(f"{getattr(part, 'command', '')} (via {remote})")
    return found


def _unavailable(message: str) -> SandboxUnavailableError:
    from agentledger.runner.shell_gate.unavailable import SandboxUnavailableError

    return SandboxUnavailableError(message)
