"""The shell the lab runs: the boot of its supervisor, its setup script, and probe commands.

Everything is generated from the spec with every spec value quoted (`shlex.quote`) or carried
in base64, so a file's text never becomes shell syntax.
"""

from __future__ import annotations

import base64
import io
import re
import shlex
import tarfile
import time
from pathlib import Path

from agentledger.labs.spec import Endpoint, HostSpec, LabSpec, OwnerSpec, ProbeSpec, RouteSpec
from agentledger.labs.system import SYSTEM_PATH, which

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
exec python3 -I -S -c {shlex.quote(_INIT)} "$0"
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


def _files_archive(spec: LabSpec) -> str:
    """Every file of the lab (hosts' files, owners' desired state, tools and cycles) as one
    base64 tar, so writing them costs two processes however many there are."""
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
    buffer, now = io.BytesIO(), time.time()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        made: set[str] = set()
        for name, content, mode in entries:
            parts = name.split("/")
            for depth in range(1, len(parts) + (mode < 0)):
                directory = "/".join(parts[:depth])
                if directory not in made:
                    made.add(directory)
                    info = tarfile.TarInfo(directory)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
                    tar.addfile(info)
            if mode >= 0:
                data = content.encode()
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), mode, now
                tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


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


def _batch(lines: list[str], namespace: str | None = None) -> list[str]:
    """A here-document feeding `lines` to one `ip -batch` (in `namespace` when given)."""
    if not lines:
        return []
    prefix = f"ip -n {namespace}" if namespace else "ip"
    return [f"{prefix} -batch - <<'IP_BATCH'", *lines, "IP_BATCH"]


def _cycle_command(owner: OwnerSpec) -> str:
    base = f"{host_dir(owner.host)}/owners/{owner.name}"
    # -o: processes a cycle starts (a daemon it restarts) must not inherit the lock.
    return shlex.join(["flock", "-o", f"{base}.lock", "sh", f"{base}.cycle"])


def _service(host: str, name: str, command: str) -> str:
    log = shlex.quote(f"{host_dir(host)}/log/{name}.log")
    inner = shlex.join(["ip", "netns", "exec", host, *host_env(host), "sh", "-c", command])
    return f"setsid {inner} </dev/null >{log} 2>&1 &"


def _wait_ready(index: int, host: str, name: str, port: int) -> list[str]:
    """Poll until the service listens on `port`, without a process per poll.

    `/proc/PID/net/*` shows the sockets of PID's network namespace, so the shell reads them
    itself while the service lives. A service that exits fails at once with its log (unless it
    exited 0, as a daemon that forked does: then `ss` in the host is asked). The deadline is
    wall time (from /proc/uptime), however loaded the machine."""
    hexport = f"{port:04X}"
    check = shlex.join(["ip", "netns", "exec", host, "ss", "-Hltnu", f"sport = :{port}"])
    log = shlex.quote(f"{host_dir(host)}/log/{name}.log")
    what = shlex.quote(f"service {name} in {host}")
    return [
        f"STEP={shlex.quote(f'waiting for service {name} in {host} to listen on port {port}')}",
        f"pid=$svc_{index}; centis; deadline=$((now + {READY_SECONDS * 100})); ready=''",
        'while [ -z "$ready" ]; do',
        '  if alive "$pid"; then',
        f'    listening "$pid" {hexport}',
        "  else",
        '    if [ -n "$pid" ]; then rc=0; wait "$pid" || rc=$?; pid=""',
        f'      if [ $rc -ne 0 ]; then echo {what}": exited $rc before listening on port '
        f'{port}; its log:" >&2; tail -n 20 {log} >&2; exit 1; fi; fi',
        f"    ready=$({check})",
        "  fi",
        f'  centis; if [ -z "$ready" ] && [ $now -gt $deadline ]; then echo {what}": not '
        f'listening on port {port} after {READY_SECONDS}s; its log:" >&2; tail -n 20 {log} >&2;'
        " exit 1; fi",
        '  [ -n "$ready" ] || sleep 0.01',
        "done",
    ]


_FUNCTIONS = r"""
centis() { read -r up _ < /proc/uptime; now=$(( ${up%.*} * 100 + 1${up#*.} - 100 )); }
alive() {
  [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
  read -r stat < "/proc/$1/stat" || return 1
  case "${stat##*) }" in Z*|X*) return 1 ;; esac
}
listening() {
  for table in tcp tcp6 udp udp6; do
    [ -r "/proc/$1/net/$table" ] || continue
    while read -r _ local _ state _; do
      case "$table:${local##*:}:$state" in
        tcp*:"$2":0A|udp*:"$2":07) ready=yes; return ;;
      esac
    done < "/proc/$1/net/$table"
  done
}
failed() {
  rc=$?; [ "$rc" -eq 0 ] || echo "the lab's setup failed at: $STEP (exit $rc)" >&2
}
"""
"""Shell functions of the setup script: wall-time centiseconds, a live process, a socket
listening in a process's network namespace, and the note naming the step that failed."""


def _host_sysctls(host: HostSpec) -> str:
    # No IPv6: no link-local addresses to wait on or to vary between snapshots.
    sysctls = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
    if host.forwarding:
        sysctls["net.ipv4.ip_forward"] = "1"
    sysctls.update(host.sysctls)
    pairs = [f"{key}={value}" for key, value in sysctls.items()]
    return shlex.join(["ip", "netns", "exec", host.name, "sysctl", "-qw", *pairs])


def _ends(spec: LabSpec) -> list[Endpoint]:
    return [end for link in spec.links for end in (link.a, link.b)] + [
        port for bridge in spec.bridges for port in bridge.ports
    ]


def _wait_carrier(hosts: list[str]) -> list[str]:
    """Wait until no link of `hosts` is NO-CARRIER: the kernel turns a veth's carrier on
    asynchronously, so a snapshot taken at once may see a link DOWN that traffic already uses,
    and two snapshots of the same lab would differ. Usually one `ip` per host, once."""
    if not hosts:
        return []
    names = " ".join(shlex.quote(h) for h in hosts)
    return [
        "STEP='waiting for the links to have a carrier'",
        f"centis; deadline=$((now + {READY_SECONDS * 100}))",
        f"for h in {names}; do",
        '  until case "$(ip -n "$h" -o link show)" in *NO-CARRIER*) false ;; esac; do',
        '    centis; if [ $now -gt $deadline ]; then echo "host $h: a link has no carrier after '
        f'{READY_SECONDS}s:" >&2; ip -n "$h" -o link show >&2; exit 1; fi',
        "    sleep 0.01",
        "  done",
        "done",
    ]


def _step(what: str) -> str:
    return f"STEP={shlex.quote(what)}"


def setup_script(spec: LabSpec, *, periodic: bool = True) -> str:
    """The script that builds the lab from inside its namespaces, up to its baseline.

    Few processes: one `ip -batch` for the namespaces and links, one per host for its
    addresses and routes, one tar for every file. With `periodic`, each owner also cycles every
    `interval` seconds in the background (a lab for people and agents); without, owners cycle
    only on demand (measurements, which must not race a background cycle)."""
    lines = ["set -eu", f"export PATH={SYSTEM_PATH}", _FUNCTIONS, "trap failed EXIT"]
    lines.append("STEP='creating the namespaces, links and bridges'")
    root = [f"netns add {host.name}" for host in spec.hosts]
    per_host: dict[str, list[str]] = {host.name: ["link set lo up"] for host in spec.hosts}
    for link in spec.links:
        a, b = link.a, link.b
        root.append(
            shlex.join(
                [
                    "link",
                    "add",
                    a.dev,
                    "netns",
                    a.host,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    b.dev,
                    "netns",
                    b.host,
                ]
            )
        )
        per_host[a.host] += _endpoint(a)
        per_host[b.host] += _endpoint(b)
    for i, bridge in enumerate(spec.bridges):
        root += [f"link add {bridge.name} type bridge", f"link set {bridge.name} up"]
        for j, port in enumerate(bridge.ports):
            peer = f"b{i}p{j}"
            root.append(
                shlex.join(
                    [
                        "link",
                        "add",
                        port.dev,
                        "netns",
                        port.host,
                        "type",
                        "veth",
                        "peer",
                        "name",
                        peer,
                    ]
                )
            )
            root.append(f"link set {peer} master {bridge.name} up")
            per_host[port.host] += _endpoint(port)
    for route in spec.routes:
        per_host[route.host].append(_route(route))
    lines += _batch(root)
    lines += [
        "STEP='writing the files'",
        f"printf %s {_files_archive(spec)} | base64 -d | tar -x -C {LAB_ROOT}",
    ]
    for host in spec.hosts:
        lines.append(_step(f"addresses, routes and sysctls of host {host.name}"))
        lines += [_host_sysctls(host), *_batch(per_host[host.name], host.name)]
    for i, step in enumerate(spec.setup, 1):
        lines += [
            _step(f"setup step {i} in {step.host} ({step.run!r})"),
            _in_host(step.host, step.run),
        ]
    for owner in spec.owners:
        what = f"the first cycle of owner {owner.name} in {owner.host} (before the services start)"
        lines += [_step(what), _in_host(owner.host, _cycle_command(owner))]
    for i, service in enumerate(spec.services):
        lines += [
            _step(f"starting service {service.name} in {service.host}"),
            _service(service.host, service.name, service.run),
            f"svc_{i}=$!",
        ]
    for owner in spec.owners if periodic else []:
        loop = f"while sleep {owner.interval:g}; do {_cycle_command(owner)}; done"
        lines.append(_service(owner.host, f"owner-{owner.name}", loop))
    for i, service in enumerate(spec.services):
        if service.ready_port is not None:
            lines += _wait_ready(i, service.host, service.name, service.ready_port)
    linked = [h.name for h in spec.hosts if any(e.host == h.name for e in _ends(spec))]
    lines += _wait_carrier(linked)
    lines += ["trap - EXIT", "echo built"]
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
    helper = ["python3", "-I", "-S", "-c", _HELPER]
    url = probe.http or probe.throughput
    if url and which("curl"):
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
        if which("bash"):
            address, _, port = probe.tcp.rpartition(":")
            script = 'exec 3<>"/dev/tcp/$1/$2" && echo "connected to $1:$2"'
            return ["timeout", timeout, "bash", "-c", script, "tcp", address.strip("[]"), port]
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
    last = re.sub(r"^tcp: line \d+: /dev/tcp/([^/]+)/(\d+): ", r"\1:\2: ", last)
    passed = returncode == 0
    if passed and probe.stdout is not None and re.search(probe.stdout, output) is None:
        return False, f"output does not match {probe.stdout!r}: {last}"
    return passed, last
