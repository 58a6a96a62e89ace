"""What the lab runs: its setup plan, the environment of its commands, and probe commands.

The setup is a plan of actions (JSON) that the lab's agent (`agent.py`) carries out from inside
the lab's namespaces: one `ip -batch` for the namespaces and links, one per host for its
addresses and routes, the files written and the sysctls set by the agent itself, the owners'
first cycles, the services, then waits that wake on the event. Spec values reach a shell only
as quoted words (`shlex.quote`) or files, never as shell syntax.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentledger.labs.spec import Endpoint, HostSpec, LabSpec, OwnerSpec, ProbeSpec, RouteSpec
from agentledger.labs.system import SYSTEM_PATH, which

__all__ = [
    "LAB_ROOT",
    "PROBE_HELPER",
    "SYSTEM_PATH",
    "Command",
    "cycle_command",
    "host_dir",
    "host_env",
    "host_environment",
    "lab_environment",
    "probe_command",
    "read_probe",
    "setup_plan",
]

LAB_ROOT = "/run/lab"
"""Inside the lab: a tmpfs of its own; each host's files are under LAB_ROOT/HOST."""
PLAN_ROOT = "/run/agentledger"
"""Inside the lab, beside LAB_ROOT: the setup's `ip -batch` files (in no host's directory)."""

PROBE_HELPER = (Path(__file__).parent / "probe_helper.py").read_text(encoding="utf-8")
"""The probe helper's source (run by python3 -c, or made once in the lab's agent)."""


@dataclass(frozen=True)
class Command:
    """A command run in a host, as its argv (after `Lab.host_argv`), and as the lab's agent
    runs it: perhaps a function of the agent instead of a program (`call`, `args`), perhaps
    without the `timeout` program (the agent kills it after `limit` seconds, exit 124), and
    without a mount namespace of its own when it reads nothing from /sys (`mounts`)."""

    argv: list[str]
    agent_argv: list[str] | None = None
    call: str | None = None
    args: tuple[str, ...] = ()
    limit: float | None = None
    mounts: bool = True

    def request(self, host: str | None) -> dict[str, Any]:
        """The agent's request for this command in `host` (None: the lab's own namespace)."""
        request: dict[str, Any] = {
            "host": host,
            "env": host_environment(host) if host else lab_environment(),
            "cwd": host_dir(host) if host else "/",
            "mounts": self.mounts,
        }
        if self.call:
            request.update(call=self.call, args=list(self.args))
        else:
            request["argv"] = self.agent_argv or self.argv
        if self.limit:
            request["limit"] = self.limit
        return request


def host_dir(host: str) -> str:
    """The host's directory inside the lab."""
    return f"{LAB_ROOT}/{host}"


def host_env(host: str) -> list[str]:
    """`env` arguments every command in `host` gets: its PATH (its bin first) and directory."""
    return [
        "env",
        "-C",
        host_dir(host),
        f"PATH={host_dir(host)}/bin:{SYSTEM_PATH}",
        f"LAB_HOST={host}",
        f"LAB_DIR={host_dir(host)}",
        f"HOME={host_dir(host)}",
    ]


def lab_environment() -> dict[str, str]:
    """The environment of the lab's own commands (in no host)."""
    return {"PATH": SYSTEM_PATH, "LC_ALL": "C.UTF-8"}


def host_environment(host: str) -> dict[str, str]:
    """The environment of every command in `host`: what `host_env` gives one through `env`."""
    return {
        **lab_environment(),
        "PATH": f"{host_dir(host)}/bin:{SYSTEM_PATH}",
        "LAB_HOST": host,
        "LAB_DIR": host_dir(host),
        "HOME": host_dir(host),
    }


def _files(spec: LabSpec) -> list[tuple[str, str, int]]:
    """Every file of the lab (hosts' files, owners' desired state, tools and cycles) and each
    directory (mode -1), as absolute paths in the lab, parents first."""
    entries: list[tuple[str, str, int]] = []
    for host in spec.hosts:
        for sub in ("bin", "log", "owners"):
            entries.append((f"{host.name}/{sub}", "", -1))
        entries += [(f"{host.name}/{f.path}", f.content, int(f.mode, 8)) for f in host.files]
    for owner in spec.owners:
        base = owner.host
        entries += [(f"{base}/{f.path}", f.content, int(f.mode, 8)) for f in owner.desired]
        entries += [
            (f"{base}/bin/{t.name}", "#!/bin/sh\nset -eu\n" + t.run, 0o755) for t in owner.tools
        ]
        entries.append((f"{base}/owners/{owner.name}.cycle", "set -eu\n" + owner.cycle, 0o644))
    made: set[str] = set()
    ordered: list[tuple[str, str, int]] = []
    for name, content, mode in entries:
        parts = name.split("/")
        for depth in range(1, len(parts) + (mode < 0)):
            directory = "/".join(parts[:depth])
            if directory not in made:
                made.add(directory)
                ordered.append((f"{LAB_ROOT}/{directory}", "", -1))
        if mode >= 0:
            ordered.append((f"{LAB_ROOT}/{name}", content, mode))
    return ordered


def _endpoint(end: Endpoint) -> list[str]:
    """`ip -batch` lines (run with -n HOST) that configure one end of a link."""
    lines = []
    if end.mtu is not None:
        lines.append(shlex.join(["link", "set", end.dev, "mtu", str(end.mtu)]))
    if end.address is not None:
        lines.append(shlex.join(["addr", "add", end.address, "dev", end.dev]))
    lines.append(shlex.join(["link", "set", end.dev, "up"]))
    return lines


def _route(route: RouteSpec) -> str:
    argv = ["route", "add"]
    argv += [route.to] if route.type == "unicast" else [route.type, route.to]
    if route.via:
        argv += ["via", route.via]
    if route.dev:
        argv += ["dev", route.dev]
    if route.mtu:
        argv += ["mtu", str(route.mtu)]
    return shlex.join(argv)


def _cycle_command(owner: OwnerSpec) -> str:
    base = f"{host_dir(owner.host)}/owners/{owner.name}"
    # -o: processes a cycle starts (a daemon it restarts) must not inherit the lock.
    return shlex.join(["flock", "-o", f"{base}.lock", "sh", f"{base}.cycle"])


def _ends(spec: LabSpec) -> list[Endpoint]:
    return [end for link in spec.links for end in (link.a, link.b)] + [
        port for bridge in spec.bridges for port in bridge.ports
    ]


def _host_sysctls(host: HostSpec) -> list[tuple[str, str]]:
    # No IPv6: no link-local addresses to wait on or to vary between snapshots.
    sysctls = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
    if host.forwarding:
        sysctls["net.ipv4.ip_forward"] = "1"
    sysctls.update(host.sysctls)
    return list(sysctls.items())


def _veth(a: Endpoint, b: Endpoint) -> str:
    return shlex.join(
        ["link", "add", a.dev, "netns", a.host, "type", "veth", "peer", "name", b.dev, "netns",
         b.host]
    )  # fmt: skip


def _batches(spec: LabSpec) -> tuple[list[str], dict[str, list[str]]]:
    """`ip -batch` lines: the lab's own namespace (netns, veths, bridges), and each host's."""
    root = [f"netns add {host.name}" for host in spec.hosts]
    per_host: dict[str, list[str]] = {host.name: ["link set lo up"] for host in spec.hosts}
    for link in spec.links:
        root.append(_veth(link.a, link.b))
        per_host[link.a.host] += _endpoint(link.a)
        per_host[link.b.host] += _endpoint(link.b)
    for i, bridge in enumerate(spec.bridges):
        root += [f"link add {bridge.name} type bridge", f"link set {bridge.name} up"]
        for j, port in enumerate(bridge.ports):
            peer = f"b{i}p{j}"
            root.append(
                shlex.join(["link", "add", port.dev, "netns", port.host, "type", "veth", "peer",
                            "name", peer])
            )  # fmt: skip
            root.append(f"link set {peer} master {bridge.name} up")
            per_host[port.host] += _endpoint(port)
    for route in spec.routes:
        per_host[route.host].append(_route(route))
    return root, per_host


def _in_host(host: str, step: str, argv: list[str]) -> dict[str, Any]:
    return {
        "do": "exec",
        "step": step,
        "host": host,
        "argv": argv,
        "env": host_environment(host),
        "cwd": host_dir(host),
    }


def setup_plan(spec: LabSpec, *, periodic: bool = True) -> list[dict[str, Any]]:
    """The actions that build the lab from inside its namespaces, up to its baseline.

    In order: every file; the namespaces, links and bridges; each host's sysctls, addresses and
    routes; the `setup[]` commands; one cycle of each owner (before any service starts); the
    services, all at once (with `periodic`, each owner's loop too, cycling every `interval`
    seconds: without, owners cycle only on demand, as measurements need); the wait until each
    `ready_port` listens; the wait until every link has its carrier."""
    root, per_host = _batches(spec)
    batches = [(f"{PLAN_ROOT}/lab.ip", "\n".join(root) + "\n", 0o644)]
    batches += [
        (f"{PLAN_ROOT}/{h}.ip", "\n".join(lines) + "\n", 0o644) for h, lines in per_host.items()
    ]
    plan: list[dict[str, Any]] = [
        {
            "do": "files",
            "step": "writing the files",
            "entries": [(PLAN_ROOT, "", -1), *batches, *_files(spec)],
        },
        {
            "do": "exec",
            "step": "creating the namespaces, links and bridges",
            "host": None,
            "argv": ["ip", "-batch", f"{PLAN_ROOT}/lab.ip"],
            "env": lab_environment(),
            "cwd": "/",
        },
    ]
    hosts = [
        {
            "host": host.name,
            "step": f"addresses, routes and sysctls of host {host.name}",
            "sysctls": _host_sysctls(host),
            "batch": f"{PLAN_ROOT}/{host.name}.ip",
            "env": lab_environment(),
        }
        for host in spec.hosts
    ]
    plan.append({"do": "hosts", "step": "addresses, routes and sysctls", "hosts": hosts})
    for i, command in enumerate(spec.setup, 1):
        what = f"setup step {i} in {command.host} ({command.run!r})"
        plan.append(_in_host(command.host, what, ["sh", "-c", command.run]))
    for owner in spec.owners:
        what = f"the first cycle of owner {owner.name} in {owner.host} (before the services start)"
        cycle = f"{host_dir(owner.host)}/owners/{owner.name}.cycle"
        plan.append(_in_host(owner.host, what, ["sh", cycle]))
    for service in spec.services:
        plan.append(_service(service.host, service.name, service.run))
    for owner in spec.owners if periodic else []:
        loop = f"while sleep {owner.interval:g}; do {_cycle_command(owner)}; done"
        plan.append(_service(owner.host, f"owner-{owner.name}", loop))
    waits = [
        {
            "name": service.name,
            "host": service.host,
            "port": service.ready_port,
            "log": f"{host_dir(service.host)}/log/{service.name}.log",
            "step": f"waiting for service {service.name} in {service.host} to listen on port "
            f"{service.ready_port}",
        }
        for service in spec.services
        if service.ready_port is not None
    ]
    if waits:
        plan.append({"do": "ready", "step": "waiting for the services", "services": waits})
    linked = [h.name for h in spec.hosts if any(e.host == h.name for e in _ends(spec))]
    if linked:
        plan.append(
            {"do": "carrier", "step": "waiting for the links to have a carrier", "hosts": linked}
        )
    return plan


def _service(host: str, name: str, run: str) -> dict[str, Any]:
    return {
        **_in_host(host, f"starting service {name} in {host}", ["sh", "-c", run]),
        "do": "service",
        "name": name,
        "log": f"{host_dir(host)}/log/{name}.log",
    }


def cycle_command(owner: OwnerSpec) -> Command:
    """Exactly one cycle of `owner`, under its lock (run in the owner's host)."""
    base = f"{host_dir(owner.host)}/owners/{owner.name}"
    return Command(
        ["sh", "-c", _cycle_command(owner)], call="cycle", args=(f"{base}.lock", f"{base}.cycle")
    )


def probe_command(probe: ProbeSpec) -> Command:
    """The command (run in the probe's host) whose exit status and output `read_probe` reads.

    The lab's agent runs HTTP (http:// URLs), throughput, TCP and DNS checks itself, in a child
    it forks (no program started: a curl costs more CPU than the whole check), and kills a ping
    or a command probe at its timeout. Without the agent (a detached lab), HTTP and throughput
    use curl when the machine has it (as do https:// URLs always), TCP uses bash when the
    machine has it, the stdlib helper in the machine's python3 otherwise, and `timeout` bounds
    ping and command probes.
    """
    timeout = f"{probe.timeout:g}"
    helper = ["python3", "-I", "-S", "-c", PROBE_HELPER]
    url = probe.http or probe.throughput
    curl = None
    if url and which("curl"):
        curl = ["curl", "-sS", "-o", "/dev/null", "-m", timeout, "--noproxy", "*", "-w",
                "\\n%{http_code} %{size_download} %{speed_download}\\n", url]  # fmt: skip
        if not url.lower().startswith("http://"):  # the helper speaks plain HTTP only
            return Command(curl, mounts=False)
    args: tuple[str, ...] = ()
    if probe.http:
        args = ("http", timeout, probe.http, str(probe.status))
    elif probe.throughput:
        args = ("throughput", timeout, probe.throughput, f"{probe.min_kbps:g}")
    elif probe.tcp:
        args = ("tcp", timeout, probe.tcp)
    elif probe.dns:
        args = ("dns", timeout, probe.dns, probe.server or "", probe.answer or "")
    if args:
        argv = curl or [*helper, *args]
        if probe.tcp and which("bash"):
            address, _, port = probe.tcp.rpartition(":")
            script = 'exec 3<>"/dev/tcp/$1/$2" && echo "connected to $1:$2"'
            argv = ["timeout", timeout, "bash", "-c", script, "tcp", address.strip("[]"), port]
        return Command(argv, call="probe", args=(PROBE_HELPER, *args), mounts=False)
    if probe.ping:
        wait = max(1, round(probe.timeout))
        ping = ["ping", "-n", "-c", "1", "-W", str(wait)]
        if probe.size is not None:
            ping += ["-M", "do", "-s", str(probe.size)]
        ping.append(probe.ping)
        return Command(["timeout", timeout, *ping], ping, limit=probe.timeout, mounts=False)
    assert probe.command is not None
    command = ["sh", "-c", probe.command]
    return Command(["timeout", timeout, *command], command, limit=probe.timeout)


def read_probe(probe: ProbeSpec, returncode: int, output: str) -> tuple[bool, str]:
    """Whether the probe passed, and one line saying what it saw."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else f"exit {returncode}"
    url = probe.http or probe.throughput
    curl = re.fullmatch(r"(\d{3}) (\d+) ([\d.]+)", last)
    if url and curl:
        code, size, speed = int(curl[1]), int(curl[2]), float(curl[3]) / 1000
        error = lines[-2] if len(lines) > 1 else ""
        if probe.http:
            seen = f"HTTP {code}, {size} bytes" if code else error or f"curl exit {returncode}"
            return returncode == 0 and code == probe.status, f"{url}: {seen}"
        rate = f"{size} bytes at {speed:.0f} kB/s (needs {probe.min_kbps:g})"
        passed = returncode == 0 and code == 200 and speed >= probe.min_kbps
        return passed, f"{url}: HTTP {code}, {rate}" + (f"; {error}" if error else "")
    if returncode == 124:
        return False, f"timed out after {probe.timeout:g}s"
    last = re.sub(r"^tcp: line \d+: /dev/tcp/([^/]+)/(\d+): ", r"\1:\2: ", last)
    passed = returncode == 0
    if passed and probe.stdout is not None and re.search(probe.stdout, output) is None:
        return False, f"output does not match {probe.stdout!r}: {last}"
    return passed, last
