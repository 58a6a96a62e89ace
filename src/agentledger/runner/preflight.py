"""What this machine has of what each feature needs (`agentledger doctor`).

Every check looks, it never installs or changes anything: an executable in the system's
directories, a Python package importable (``importlib.util.find_spec``, nothing imported), and
two that try for real, each in a throwaway process: the gate's sandbox running ``true`` and an
unprivileged user and network namespace (``unshare -Urn true``). A check names the Debian
package or the pip extra that brings what is missing.

`default` checks are what the default features need: Python itself and the gated shell's
read-only sandbox, without which `agentledger run` and `agentledger exec` under the packaged
policy start no command. The rest (labs, screenshots, backends, providers) are optional.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

__all__ = ["Check", "core_ok", "run_checks", "sandbox_problem"]

_SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
_TIMEOUT_S = 10.0
_MIN_PYTHON = (3, 11)


@dataclass(frozen=True)
class Check:
    """One need of one feature, and whether this machine meets it."""

    feature: str
    need: str
    ok: bool
    detail: str
    how: str
    """How to get it when it is missing (a Debian package, a pip extra)."""
    default: bool = False
    """True when a default feature needs it: missing, `doctor` exits 1."""


def core_ok(checks: list[Check]) -> bool:
    """True when every check a default feature needs passed."""
    return all(check.ok for check in checks if check.default)


def run_checks() -> list[Check]:
    """Every check, in the order `doctor` prints them."""
    return [
        _python(),
        *_sandbox(),
        _landlock(),
        _userns(),
        *_labs(),
        _chromium(),
        *_extras(),
    ]


def sandbox_problem() -> str | None:
    """Why the gate's read-only sandbox cannot run a command here, or None when it can."""
    for check in _sandbox():
        if not check.ok:
            return f"{check.detail}: {check.how}"
    return None


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info[:2] >= _MIN_PYTHON
    return Check(
        "core",
        "Python 3.11+",
        ok,
        f"Python {version}",
        "install python3 (3.11 or newer)",
        default=True,
    )


def _sandbox() -> list[Check]:
    """bubblewrap found, and a command really started in the sandbox."""
    from agentledger.runner.shell_gate.sandbox import Sandbox, find_bwrap

    feature = "gated shell (run, exec)"
    how = "apt-get install bubblewrap"
    path = find_bwrap()
    if path is None:
        return [
            Check(feature, "bubblewrap", False, "bubblewrap (bwrap) is not installed", how, True)
        ]
    found = Check(feature, "bubblewrap", True, path, how, True)
    from agentledger.runner.shell_gate.execute import run_shell

    try:
        completed = run_shell("true", timeout=_TIMEOUT_S, sandbox=Sandbox(path))
    except Exception as exc:  # SandboxUnavailableError: bwrap could not set up
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        how = (
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "or kernel.apparmor_restrict_unprivileged_userns=0), or set `sandbox: off` in "
            "the policy"
        )
        return [found, Check(feature, "sandbox starts a command", False, detail, how, True)]
    ok = completed.exit_code == 0
    detail = "`true` ran read-only" if ok else f"`true` exited {completed.exit_code}"
    return [found, Check(feature, "sandbox starts a command", ok, detail, how, True)]


def _landlock() -> Check:
    """Landlock in the kernel: what closes the host's FIFOs and device nodes to the sandbox."""
    from agentledger.runner.shell_gate.landlock_exec import abi

    version = abi()
    detail = (
        f"Landlock ABI {version}: the host's FIFOs, sockets and device nodes are closed to "
        "sandboxed writes"
        if version
        else "no Landlock in this kernel: a sandboxed command can still write to a FIFO or "
        "device node of the host (the read-only bind covers only files with content)"
    )
    how = "a Linux 5.13+ kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK, lsm=landlock)"
    return Check("sandbox", "Landlock", version > 0, detail, how)


def _userns() -> Check:
    """An unprivileged user and network namespace, as labs make them."""
    how = "apt-get install util-linux; allow unprivileged user namespaces"
    unshare = _executable("unshare")
    if unshare is None:
        return Check("labs", "user namespaces", False, "unshare is not installed", how)
    try:
        done = subprocess.run(
            [unshare, "-Urn", "true"], capture_output=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("labs", "user namespaces", False, f"unshare -Urn true: {exc}", how)
    if done.returncode:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return Check("labs", "user namespaces", False, said[-1] if said else "refused", how)
    return Check("labs", "user namespaces", True, "`unshare -Urn true` works", how)


def _labs() -> list[Check]:
    checks = []
    for need, names, package in (
        ("ip (iproute2)", ("ip",), "iproute2"),
        ("tc (iproute2)", ("tc",), "iproute2"),
        ("iptables or nft", ("iptables", "nft"), "iptables nftables"),
    ):
        found = next((path for name in names if (path := _executable(name))), None)
        detail = found if found else f"{' / '.join(names)} not found"
        checks.append(Check("labs", need, found is not None, detail, f"apt-get install {package}"))
    return checks


def _chromium() -> Check:
    names = ("chromium", "chromium-browser", "google-chrome")
    found = next((path for name in names if (path := _executable(name))), None)
    return Check(
        "viewer screenshots",
        "chromium",
        found is not None,
        found or "chromium not found",
        "apt-get install chromium",
    )


_EXTRAS = (
    ("viewer (serve)", "starlette, uvicorn", ("starlette", "uvicorn", "multipart"), "serve"),
    ("PostgreSQL index", "psycopg", ("psycopg",), "postgres"),
    ("S3 storage", "boto3", ("boto3",), "s3"),
    ("Parquet export", "pyarrow", ("pyarrow",), "parquet"),
    ("Inspect import", "inspect-ai", ("inspect_ai",), "inspect"),
    ("PNG charts", "cairosvg", ("cairosvg",), "png"),
    ("provider: anthropic", "anthropic", ("anthropic",), "anthropic"),
    ("provider: openai", "openai", ("openai",), "openai"),
    ("provider: google", "google-genai", ("google.genai",), "google"),
)


def _extras() -> list[Check]:
    checks = []
    for feature, need, modules, extra in _EXTRAS:
        missing = [module for module in modules if not _importable(module)]
        detail = "installed" if not missing else f"{', '.join(missing)} not installed"
        how = f"pip install 'agentledger[{extra}]'"
        checks.append(Check(feature, need, not missing, detail, how))
    return checks


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing
        return False


def _executable(name: str) -> str | None:
    """`name` in the system's directories or on PATH."""
    found = shutil.which(name, path=os.pathsep.join(_SYSTEM_DIRS))
    return found or shutil.which(name)
