"""The shell the lab runs: the boot of its supervisor, its setup script, and probe commands.

Everything is generated from the spec with every spec value quoted (`shlex.quote`) or carried
in base64, so a file's text never becomes shell syntax.
"""

from __future__ import annotations

import base64
import re
import shlex
import shutil
from pathlib import Path

from agentledger.labs.spec import Endpoint, FileSpec, LabSpec, OwnerSpec, ProbeSpec, RouteSpec

__all__ = [
    "BOOT",
    "LAB_ROOT",
    "SYSTEM_PATH",
    "host_dir",
    "host_env",
    "owner_cycle_argv",
    "probe_argv",
    "read_probe",
    "setup_script",
]

LAB_ROOT = "/run/lab"
"""Inside the lab: a tmpfs of its own; each host's files are under LAB_ROOT/HOST."""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
READY_SECONDS = 10

_INIT = """\
import os, signal, sys
def reap(*_):
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
signal.signal(signal.SIGCHLD, reap)
print("ready", flush=True)
if sys.stdin.readline().strip() != "detach":
    sys.exit(0)
while True:
    signal.pause()
"""

BOOT = f"""\
mount -t tmpfs -o mode=0755 agentledger-lab /run || exit 1
mkdir -p /run/netns /run/lab || exit 1
ip link set lo up || exit 1
exec python3 -c {shlex.quote(_INIT)} "$0"
"""
"""Run as `sh -c BOOT agentledger-lab:NAME`: the marker names the lab in `ps`.

The supervisor (pid 1 of the lab's PID namespace, reaping the orphans daemons leave): it
lives until its stdin closes, or, once told `detach`, until it is killed. When it dies the
kernel kills every process of the lab, and the network namespaces (bind-mounted only in the
lab's mount namespace) go with them."""

_HELPER = (Path(__file__).parent / "probe_helper.py").read_text(encoding="utf-8")


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


def _in_host(host: str, command: str) -> str:
    return shlex.join(["ip", "netns", "exec", host, *host_env(host), "sh", "-c", command])


def _write_file(host: str, file: FileSpec, *, executable: bool = False) -> list[str]:
    target = f"{host_dir(host)}/{file.path}"
    data = base64.b64encode(file.content.encode()).decode()
    mode = "0755" if executable else file.mode
    return [
        f"mkdir -p {shlex.quote(str(Path(target).parent))}",
        f"printf %s {data} | base64 -d > {shlex.quote(target)}",
        f"chmod {mode} {shlex.quote(target)}",
    ]


def _endpoint(end: Endpoint) -> list[str]:
    net = ["ip", "-n", end.host]
    lines = []
    if end.mtu is not None:
        lines.append(shlex.join([*net, "link", "set", end.dev, "mtu", str(end.mtu)]))
    if end.address is not None:
        lines.append(shlex.join([*net, "addr", "add", end.address, "dev", end.dev]))
    lines.append(shlex.join([*net, "link", "set", end.dev, "up"]))
    return lines


def _route(route: RouteSpec) -> str:
    argv = ["ip", "-n", route.host, "route", "add"]
    argv += [route.to] if route.type == "unicast" else [route.type, route.to]
    if route.via:
        argv += ["via", route.via]
    if route.dev:
        argv += ["dev", route.dev]
    if route.mtu:
        argv += ["mtu", str(route.mtu)]
    return shlex.join(argv)


def _owner(owner: OwnerSpec) -> list[str]:
    lines: list[str] = []
    for file in owner.desired:
        lines += _write_file(owner.host, file)
    for tool in owner.tools:
        script = FileSpec(path=f"bin/{tool.name}", content="#!/bin/sh\nset -eu\n" + tool.run)
        lines += _write_file(owner.host, script, executable=True)
    cycle = FileSpec(path=f"owners/{owner.name}.cycle", content="set -eu\n" + owner.cycle)
    lines += _write_file(owner.host, cycle)
    return lines


def _cycle_command(owner: OwnerSpec) -> str:
    base = f"{host_dir(owner.host)}/owners/{owner.name}"
    # -o: processes a cycle starts (a daemon it restarts) must not inherit the lock.
    return shlex.join(["flock", "-o", f"{base}.lock", "sh", f"{base}.cycle"])


def _service(host: str, name: str, command: str) -> str:
    log = f"{host_dir(host)}/log/{name}.log"
    inner = _in_host(host, command)
    return f"setsid sh -c {shlex.quote(inner)} </dev/null >{shlex.quote(log)} 2>&1 &"


def _wait_ready(host: str, name: str, port: int) -> list[str]:
    check = shlex.join(["ip", "netns", "exec", host, "ss", "-Hltnu", f"sport = :{port}"])
    log = shlex.quote(f"{host_dir(host)}/log/{name}.log")
    limit = READY_SECONDS * 200
    return [
        "i=0",
        f"until {check} | grep -q .; do",
        f"  i=$((i+1)); if [ $i -gt {limit} ]; then",
        f"    echo 'service {name} in {host}: not listening on port {port} after "
        f"{READY_SECONDS}s; its log:' >&2; tail -n 20 {log} >&2; exit 1; fi",
        "  sleep 0.005",
        "done",
    ]


def setup_script(spec: LabSpec, *, periodic: bool = True) -> str:
    """The script that builds the lab from inside its namespaces, up to its baseline.

    With `periodic`, each owner also cycles every `interval` seconds in the background (a lab
    for people and agents); without, owners cycle only on demand (measurements, which must
    not race a background cycle)."""
    lines = ["set -eu", f"export PATH={SYSTEM_PATH}"]
    for host in spec.hosts:
        d = shlex.quote(host_dir(host.name))
        lines += [f"ip netns add {host.name}", f"mkdir -p {d}/bin {d}/log {d}/owners"]
        lines.append(f"ip -n {host.name} link set lo up")
        # No IPv6: no link-local addresses to wait on or to vary between snapshots.
        lines.append(
            _in_host(
                host.name,
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
                "net.ipv6.conf.default.disable_ipv6=1 || true",
            )
        )
        sysctls = dict(host.sysctls)
        if host.forwarding:
            sysctls.setdefault("net.ipv4.ip_forward", "1")
        for key, value in sysctls.items():
            lines.append(_in_host(host.name, shlex.join(["sysctl", "-qw", f"{key}={value}"])))
        for file in host.files:
            lines += _write_file(host.name, file)
    for link in spec.links:
        a, b = link.a, link.b
        lines.append(
            shlex.join(["ip", "link", "add", a.dev, "netns", a.host, "type", "veth"])
            + " "
            + shlex.join(["peer", "name", b.dev, "netns", b.host])
        )
        lines += _endpoint(a) + _endpoint(b)
    for i, bridge in enumerate(spec.bridges):
        lines += [f"ip link add {bridge.name} type bridge", f"ip link set {bridge.name} up"]
        for j, port in enumerate(bridge.ports):
            peer = f"b{i}p{j}"
            lines.append(
                shlex.join(["ip", "link", "add", port.dev, "netns", port.host, "type", "veth"])
                + f" peer name {peer}"
            )
            lines += [f"ip link set {peer} master {bridge.name} up", *_endpoint(port)]
    lines += [_route(route) for route in spec.routes]
    lines += [_in_host(step.host, step.run) for step in spec.setup]
    for owner in spec.owners:
        lines += _owner(owner)
        lines.append(_in_host(owner.host, _cycle_command(owner)))
    for service in spec.services:
        lines.append(_service(service.host, service.name, service.run))
    for owner in spec.owners if periodic else []:
        loop = f"while sleep {owner.interval:g}; do {_cycle_command(owner)}; done"
        lines.append(_service(owner.host, f"owner-{owner.name}", loop))
    for service in spec.services:
        if service.ready_port is not None:
            lines += _wait_ready(service.host, service.name, service.ready_port)
    lines.append("echo built")
    return "\n".join(lines) + "\n"


def owner_cycle_argv(owner: OwnerSpec) -> list[str]:
    """The command (run in the owner's host) that runs exactly one cycle of `owner`."""
    return ["sh", "-c", _cycle_command(owner)]


def probe_argv(probe: ProbeSpec) -> list[str]:
    """The command (run in the probe's host) whose exit status and output `read_probe` reads.

    HTTP and throughput use curl and TCP uses bash when the machine has them (a few
    milliseconds each); otherwise the stdlib helper runs in the machine's python3.
    """
    timeout = f"{probe.timeout:g}"
    helper = ["python3", "-c", _HELPER]
    url = probe.http or probe.throughput
    if url and shutil.which("curl"):
        return [
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-m",
            timeout,
            "--noproxy",
            "*",
            "-w",
            "\\n%{http_code} %{size_download} %{speed_download}\\n",
            url,
        ]
    if probe.http:
        return [*helper, "http", timeout, probe.http, str(probe.status)]
    if probe.throughput:
        return [*helper, "throughput", timeout, probe.throughput, f"{probe.min_kbps:g}"]
    if probe.tcp:
        if shutil.which("bash"):
            address, _, port = probe.tcp.rpartition(":")
            script = 'exec 3<>"/dev/tcp/$0/$1" && echo "connected to $0:$1"'
            return ["timeout", timeout, "bash", "-c", script, address.strip("[]"), port]
        return [*helper, "tcp", timeout, probe.tcp]
    if probe.dns:
        return [*helper, "dns", timeout, probe.dns, probe.server or "", probe.answer or ""]
    if probe.ping:
        wait = max(1, round(probe.timeout))
        argv = ["ping", "-n", "-c", "1", "-W", str(wait)]
        if probe.size is not None:
            argv += ["-M", "do", "-s", str(probe.size)]
        return ["timeout", timeout, *argv, probe.ping]
    assert probe.command is not None
    return ["timeout", timeout, "sh", "-c", probe.command]


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
    passed = returncode == 0
    if passed and probe.stdout is not None and re.search(probe.stdout, output) is None:
        return False, f"output does not match {probe.stdout!r}: {last}"
    return passed, last
