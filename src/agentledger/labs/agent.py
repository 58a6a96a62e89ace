"""The lab's init and agent: pid 1 of the lab's namespaces, running commands in its hosts.

Run by the machine's python3 as `python3 -I -S -c SOURCE agentledger-lab:NAME FD`, inside the
namespaces `unshare` made (perhaps as nobody), so stdlib only and no agentledger imports. FD is
its end of a SOCK_SEQPACKET socket pair whose other end the lab's starter holds:

- it mounts the lab's tmpfs on /run, makes /run/netns and /run/lab, brings lo up, says `ready`;
- each message is a request (`marshal` data) with four file descriptors (stdin, stdout,
  stderr, status): it forks a child that enters the host (`setns` on /run/netns/HOST, and for
  programs a mount namespace with the host's /sys, as `ip netns exec` does), then execs the
  argv or runs one of the functions below (the setup, a probe, an owner's cycle under its
  lock); when the child ends it writes the exit status (negative for a signal, 124 for its
  time limit) to the status pipe. A starter that stops waiting closes its end of the status
  pipe: the child's process group is killed;
- it reaps every orphan; when the starter's end closes (the starter exited or was killed) it
  exits, and the kernel kills every process of the lab. `{"op": "detach"}` (`lab up`) makes it
  live on until it is killed.

One program, forked, instead of a setpriv, nsenter, `ip netns exec`, env and sh chain per
command: on a loaded machine each program started is mostly time spent waiting for a CPU.
"""

from __future__ import annotations

import ctypes
import fcntl
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # for annotations only: importing typing would cost every lab's start CPU
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_REC, MS_SLAVE, MNT_DETACH = 1, 0x4000, 1 << 19, 2
SIOCGIFFLAGS, SIOCSIFFLAGS = 0x8913, 0x8914
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK, NLMSG_DONE, NLMSG_ERROR = 16, 17, 18, 3, 2
IFF_UP, IFF_RUNNING, IFLA_IFNAME = 0x1, 0x40, 3
NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY = 4, 20
READY_SECONDS = 10.0
TIMED_OUT = 124

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str, target: str, fstype: str, flags: int, data: str | None = None) -> None:
    encoded = [v.encode() if v is not None else None for v in (source, target, fstype, data)]
    result = _libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3])
    _check(result, f"mount {target}")


def boot() -> None:
    """The lab's own /run (gone with its mount namespace), and lo up (an ioctl, no `ip`)."""
    _mount("agentledger-lab", "/run", "tmpfs", 0, "mode=0755")
    os.makedirs("/run/netns")
    os.makedirs("/run/lab")
    _link_up("lo")


def _link_up(name: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", name.encode(), 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH22x", name.encode(), flags | IFF_UP))


def enter(host: str, mounts: bool) -> None:
    """Join `host`'s network namespace; with `mounts`, a mount namespace of one's own whose
    /sys describes that network namespace (what `ip netns exec` sets up for a program)."""
    fd = os.open(f"/run/netns/{host}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(fd, CLONE_NEWNET), f"entering host {host}")
    finally:
        os.close(fd)
    if not mounts:
        return
    _check(_libc.unshare(CLONE_NEWNS), "a mount namespace")
    _mount("", "/", "none", MS_SLAVE | MS_REC)
    flags = 0
    if _libc.umount2(b"/sys", MNT_DETACH) != 0 and os.statvfs("/sys").f_flag & os.ST_RDONLY:
        flags = MS_RDONLY
    _mount(host, "/sys", "sysfs", flags)


def _child(
    host: str | None, mounts: bool, cwd: str | None, fds: Sequence[int | None], session: bool
) -> None:
    """In a forked child: default signals, its own session, `fds` as stdin, stdout and stderr
    (None: the agent's), no other descriptor, in `host` and `cwd`."""
    signal.set_wakeup_fd(-1)
    for number in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)
    if session:
        os.setsid()
    for target, fd in enumerate(fds):
        if fd is not None:
            os.dup2(fd, target)
    os.closerange(3, 1 << 16)
    if host:
        enter(host, mounts)
    os.chdir(cwd or "/")


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _spawn(
    host: str | None,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    fds: Sequence[int | None] = (None, None, None),
    session: bool = True,
) -> int:
    """Fork and exec `argv` in `host` (None: the lab's own namespace); its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:
        _child(host, True, cwd, fds, session)
        os.execvpe(argv[0], argv, env)  # noqa: S606 - the lab's own commands
    except BaseException as exc:  # a child never returns into the agent
        os.write(2, f"{argv[0]}: {exc}\n".encode(errors="replace"))
        os._exit(127)
    return 0


# -- functions a child runs in-process ----------------------------------------------------


def call_cycle(lock: str, script: str) -> int:
    """One owner cycle under its lock (as `flock -o`: the cycle's own children do not hold
    it); the cycle's exit code."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    pid = _spawn(None, ["sh", script], dict(os.environ), os.getcwd(), session=False)
    return _exit_code(os.waitpid(pid, 0)[1])


_HELPERS: dict[str, dict[str, Any]] = {}
"""The probe helper's module (source -> its namespace), made once, in the agent: each probe's
child then finds it made, rather than compiling it again."""


def probe_helper(source: str) -> dict[str, Any]:
    """The probe helper made from `source` (our own module: see probe_helper.py)."""
    if source not in _HELPERS:
        namespace: dict[str, Any] = {"__name__": "probe_helper"}
        exec(compile(source, "probe_helper", "exec"), namespace)  # noqa: S102 - our own module
        _HELPERS[source] = namespace
        # The first getaddrinfo of a process loads the C library's resolver modules (about
        # 6 ms of CPU): done once here, not again in the child of every probe.
        socket.getaddrinfo("127.0.0.1", 80, 0, socket.SOCK_STREAM)
    return _HELPERS[source]


def call_probe(source: str, *argv: str) -> int:
    """The probe helper's check, run in this process (no python3 to start): exit 0 on pass."""
    code: int = probe_helper(source)["main"](list(argv))
    sys.stdout.flush()
    return code


def call_setup() -> int:
    """Build the lab from the plan on stdin (`marshal` data: a list of actions, in order); on
    the first that fails, its output and `the lab's setup failed at: STEP (exit N)` on stderr."""
    plan = marshal.loads(sys.stdin.buffer.read())  # noqa: S302 - from the lab's starter only
    services: dict[str, int] = {}
    for action in plan:
        try:
            code = _ACTIONS[action["do"]](action, services)
        except OSError as exc:
            sys.stderr.write(f"{exc}\n")
            code = 1
        if code:
            sys.stderr.write(f"the lab's setup failed at: {action['step']} (exit {code})\n")
            sys.stderr.flush()
            return code
    return 0


def _do_exec(action: dict[str, Any], _services: dict[str, int]) -> int:
    """Run the action's argv in its host, stdin empty, its output on ours; its exit code."""
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    argv, env, cwd = action["argv"], action["env"], action["cwd"]
    pid = _spawn(action["host"], argv, env, cwd, (null, None, None), session=False)
    os.close(null)
    return _exit_code(os.waitpid(pid, 0)[1])


def _do_files(action: dict[str, Any], _services: dict[str, int]) -> int:
    for path, content, mode in action["entries"]:
        if mode < 0:
            os.makedirs(path, 0o755, exist_ok=True)
            continue
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(content)
        os.chmod(path, mode)
    return 0


def _do_hosts(action: dict[str, Any], _services: dict[str, int]) -> int:
    """Every host's sysctls, then its `ip -batch` (addresses, routes), all hosts at once: a
    child per host enters it, writes the sysctls itself and becomes the `ip`."""
    children = {}
    for host in action["hosts"]:
        pid = os.fork()
        if pid == 0:
            _configure(host)
        children[pid] = host
    failed = None
    for pid, host in children.items():
        code = _exit_code(os.waitpid(pid, 0)[1])
        if code and failed is None:
            failed = code
            action["step"] = host["step"]
    return failed or 0


def _configure(host: dict[str, Any]) -> None:
    """In a forked child: `host`'s sysctls, then exec its `ip -batch` there."""
    code = 1
    try:
        enter(host["host"], False)
        code = 0
        for key, value in host["sysctls"]:
            try:
                with open("/proc/sys/" + key.replace(".", "/"), "w") as out:
                    out.write(value)
            except OSError as exc:
                sys.stderr.write(f"sysctl: setting key {key!r}: {exc.strerror}\n")
                code = 1
        if code == 0:
            os.execvpe("ip", ["ip", "-batch", host["batch"]], host["env"])  # noqa: S606
    except OSError as exc:
        sys.stderr.write(f"{exc}\n")
        code = 1
    sys.stderr.flush()
    os._exit(code)


def _do_service(action: dict[str, Any], services: dict[str, int]) -> int:
    log = os.open(action["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    pid = _spawn(action["host"], action["argv"], action["env"], action["cwd"], (null, log, log))
    os.close(log)
    os.close(null)
    services[action["name"]] = pid
    return 0


def _host_socket(host: str, family: int, kind: int, protocol: int) -> socket.socket:
    """A socket made in `host`'s network namespace (so it sees that namespace's sockets and
    links), this process staying in its own."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        enter(host, False)
        return socket.socket(family, kind, protocol)
    finally:
        _check(_libc.setns(home, CLONE_NEWNET), "back to the lab's namespace")
        os.close(home)


def _listening(diag: socket.socket, port: int) -> bool:
    """Whether a TCP socket listens on `port`, or a UDP one is bound to it, in the namespace of
    `diag` (a NETLINK_SOCK_DIAG socket): the kernel dumps only listening TCP sockets, where
    /proc/net/tcp would walk the machine's whole table of established connections."""
    for protocol, states in ((socket.IPPROTO_TCP, 1 << 10), (socket.IPPROTO_UDP, 1 << 7)):
        for family in (socket.AF_INET, socket.AF_INET6):
            request = struct.pack("=BBBxI", family, protocol, 0, states) + bytes(48)
            diag.send(
                struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + request
            )
            if _dumped_port(diag, port):
                return True
    return False


def _dumped_port(diag: socket.socket, port: int) -> bool:
    """Read one sock_diag dump to its end; whether a socket of it has `port` as its own."""
    found = False
    while True:
        data = diag.recv(1 << 16)
        for kind, offset, _length in _messages(data):
            if kind in (NLMSG_DONE, NLMSG_ERROR):
                return found
            if (
                kind == SOCK_DIAG_BY_FAMILY
                and struct.unpack_from(">H", data, offset + 20)[0] == port
            ):
                found = True


def _messages(data: bytes) -> Iterator[tuple[int, int, int]]:
    """The netlink messages in `data`: the type, offset and length of each."""
    offset = 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        yield kind, offset, length
        offset += (length + 3) & ~3 if length else len(data)


def _do_ready(action: dict[str, Any], services: dict[str, int]) -> int:
    """Wait until each service listens on its port, asking its host's kernel (sock_diag, no
    program per poll); a service that exits fails at once with its log, unless it exited 0 (a
    daemon that forked, whose socket is then waited for as any other)."""
    pending = {e["name"]: dict(e, pid=services.get(e["name"])) for e in action["services"]}
    diag = {
        host: _host_socket(host, socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
        for host in {e["host"] for e in pending.values()}
    }
    deadline, pause = time.monotonic() + READY_SECONDS, 0.001
    while pending:
        for name, entry in list(pending.items()):
            done, status = os.waitpid(entry["pid"], os.WNOHANG) if entry["pid"] else (0, 0)
            if done:
                entry["pid"] = None
                if code := _exit_code(status):
                    said = f"exited {code} before listening on port {entry['port']}"
                    return _not_ready(action, entry, said)
            if _listening(diag[entry["host"]], entry["port"]):
                del pending[name]
        if pending and time.monotonic() > deadline:
            entry = next(iter(pending.values()))
            said = f"not listening on port {entry['port']} after {READY_SECONDS:g}s"
            return _not_ready(action, entry, said)
        if pending:
            time.sleep(pause)
            pause = min(pause * 1.5, 0.005)
    return 0


def _not_ready(action: dict[str, Any], entry: dict[str, Any], message: str) -> int:
    """Say why `entry`'s service is not ready, with its log's end; the step is the service's."""
    try:
        with open(entry["log"], errors="replace") as text:
            log = "".join(text.readlines()[-20:])
    except OSError:
        log = ""
    sys.stderr.write(f"service {entry['name']} in {entry['host']}: {message}; its log:\n{log}")
    action["step"] = entry["step"]
    return 1


def _do_carrier(action: dict[str, Any], _services: dict[str, int]) -> int:
    """Wait until no link of the hosts is up without a carrier, woken by the kernel's link
    events (netlink) rather than polling: the kernel turns a veth's carrier on asynchronously,
    so a snapshot taken at once could see a link DOWN that traffic already uses."""
    sockets: dict[socket.socket, str] = {}
    for host in action["hosts"]:
        sock = _host_socket(host, socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        sock.bind((0, 1))  # RTMGRP_LINK: every change of a link
        sock.send(struct.pack("=IHHII", 32, RTM_GETLINK, 0x301, 1, 0) + bytes(16))
        sockets[sock] = host
    links: dict[str, dict[int, tuple[str, int]]] = {host: {} for host in action["hosts"]}
    dumping = set(action["hosts"])
    deadline = time.monotonic() + READY_SECONDS
    while True:
        waiting = [h for h, seen in links.items() if any(_no_carrier(f) for _, f in seen.values())]
        if not dumping and not waiting:
            return 0
        left = deadline - time.monotonic()
        if left <= 0:
            for host in waiting or dumping:
                names = ", ".join(n for n, f in links[host].values() if _no_carrier(f))
                late = f"a link has no carrier after {READY_SECONDS:g}s"
                sys.stderr.write(f"host {host}: {late}: {names}\n")
            return 1
        for sock in select.select(list(sockets), [], [], left)[0]:
            host = sockets[sock]
            if _read_links(sock.recv(1 << 16), links[host]):
                dumping.discard(host)


def _no_carrier(flags: int) -> bool:
    return bool(flags & IFF_UP) and not flags & IFF_RUNNING


def _read_links(data: bytes, seen: dict[int, tuple[str, int]]) -> bool:
    """Update `seen` (index -> (name, flags)) from netlink link messages; True at a dump's end."""
    done = False
    for kind, offset, length in _messages(data):
        if kind in (RTM_NEWLINK, RTM_DELLINK):
            _, _, index, flags, _ = struct.unpack_from("=BxHiII", data, offset + 16)
            if kind == RTM_DELLINK:
                seen.pop(index, None)
            else:
                seen[index] = (_attribute(data, offset + 32, offset + length, IFLA_IFNAME), flags)
        elif kind in (NLMSG_DONE, NLMSG_ERROR):
            done = True
    return done


def _attribute(data: bytes, start: int, end: int, wanted: int) -> str:
    while start + 4 <= end:
        size, kind = struct.unpack_from("=HH", data, start)
        if size < 4:
            break
        if kind == wanted:
            return data[start + 4 : start + size].rstrip(b"\0").decode(errors="replace")
        start += (size + 3) & ~3
    return "?"


_ACTIONS: dict[str, Callable[[dict[str, Any], dict[str, int]], int]] = {
    "exec": _do_exec,
    "files": _do_files,
    "hosts": _do_hosts,
    "service": _do_service,
    "ready": _do_ready,
    "carrier": _do_carrier,
}
_CALLS: dict[str, Callable[..., int]] = {
    "cycle": call_cycle,
    "probe": call_probe,
    "setup": call_setup,
}


# -- the agent's loop ---------------------------------------------------------------------


def _start(request: dict[str, Any], fds: list[int]) -> int:
    """Fork the child of one request; its pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        _child(request.get("host"), request.get("mounts", True), request.get("cwd"), fds[:3], True)
        call = request.get("call")
        if call is None:
            argv = request["argv"]
            try:
                os.execvpe(argv[0], argv, request["env"])  # noqa: S606 - the lab's commands
            except OSError as exc:
                os.write(2, f"{argv[0]}: {exc.strerror}\n".encode(errors="replace"))
                os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
        os.environ.clear()
        os.environ.update(request["env"])
        code = _CALLS[call](*request.get("args", ()))
    except BaseException as exc:  # a child never returns into the agent
        os.write(2, f"agentledger-lab: {exc}\n".encode(errors="replace"))
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class Job:
    """A request's child: where its exit status goes, its deadline, whether it was killed."""

    def __init__(self, status: int, deadline: float | None) -> None:
        self.status, self.deadline, self.killed, self.timed_out = status, deadline, False, False


class Agent:
    """The loop: requests in, children out, exit statuses back, orphans reaped."""

    def __init__(self, control: socket.socket) -> None:
        self.control: socket.socket | None = control
        self.jobs: dict[int, Job] = {}
        self.watched: dict[int, int] = {}  # status fd -> pid, while the starter waits
        self.poller = select.poll()
        wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.wake = wake_read
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.poller.register(wake_read, select.POLLIN)
        self.poller.register(control, select.POLLIN)

    def serve(self) -> None:
        while True:
            deadlines = [job.deadline for job in self.jobs.values() if job.deadline is not None]
            timeout = None
            if deadlines:
                timeout = max(0, int((min(deadlines) - time.monotonic()) * 1000) + 1)
            for fd, _events in self.poller.poll(timeout):
                if self.control is not None and fd == self.control.fileno():
                    self.receive()
                elif fd == self.wake:
                    self.drain()
                elif fd in self.watched:  # the starter stopped waiting: kill the child
                    self.kill(self.watched[fd], timed_out=False)
            now = time.monotonic()
            for pid, job in list(self.jobs.items()):
                if job.deadline is not None and now >= job.deadline:
                    self.kill(pid, timed_out=True)
            self.reap()

    def drain(self) -> None:
        try:
            while os.read(self.wake, 512):
                pass
        except BlockingIOError:
            pass

    def receive(self) -> None:
        control = self.control
        assert control is not None
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 4)
        except OSError:
            message, fds = b"", []
        if not message:
            os._exit(0)  # the starter is gone: so is the lab (nothing of this one to tidy)
        request = marshal.loads(message)  # noqa: S302 - from the lab's starter only
        if request.get("op") == "detach":
            self.poller.unregister(control)
            control.close()
            self.control = None
            return
        if request.get("call") == "probe":
            probe_helper(request["args"][0])  # made here, once, for every probe's child
        pid = _start(request, fds)
        if request.get("prepare"):  # while that child works: the probes' helper, made once
            probe_helper(request["prepare"])
        for fd in fds[:3]:
            os.close(fd)
        limit = request.get("limit")
        self.jobs[pid] = Job(fds[3], time.monotonic() + limit if limit else None)
        self.watched[fds[3]] = pid
        self.poller.register(fds[3], 0)  # POLLERR once the starter closes its end

    def unwatch(self, job: Job) -> None:
        if self.watched.pop(job.status, None) is not None:
            self.poller.unregister(job.status)

    def kill(self, pid: int, timed_out: bool) -> None:
        job = self.jobs[pid]
        job.deadline = None
        if job.killed:
            return
        job.killed, job.timed_out = True, timed_out
        if not timed_out:
            self.unwatch(job)
        for kill, target in ((os.killpg, pid), (os.kill, pid)):  # before its setsid too
            try:  # noqa: SIM105 - importing contextlib would cost every lab's start CPU
                kill(target, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            job = self.jobs.pop(pid, None)
            if job is None:
                continue  # an orphan of the lab
            self.unwatch(job)
            code = TIMED_OUT if job.timed_out else os.waitstatus_to_exitcode(status)
            try:  # noqa: SIM105 - as above
                os.write(job.status, f"{code}\n".encode())
            except OSError:
                pass  # the starter stopped waiting
            os.close(job.status)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[2]))
    control.set_inheritable(False)
    try:
        boot()
        os.setsid()  # a session of its own, as every command it starts: ^C at the starter's
        # terminal reaches the starter only, and each is its own scheduling autogroup
    except OSError as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(1)
    agent = Agent(control)
    control.send(b"ready")
    agent.serve()


if __name__ == "__main__":
    main()
