"""Running a lab: its supervisor, commands in its hosts, owner cycles, probes, and teardown.

One supervisor process per lab (`unshare --user --map-root-user --net --mount --pid --fork
--kill-child --mount-proc`) starts the lab's agent (`agent.py`, pid 1 of the lab), which holds
the lab's namespaces and runs every command the starter asks for, in the host it names, over a
socket pair (`channel.py`): no program is started to enter the lab. A lab started by a Python
caller dies with it (the agent exits when the starter's end of the socket closes, and the
supervisor has PR_SET_PDEATHSIG); a lab started with `detach=True` (`agentledger lab up`)
lives until `stop_lab` (`lab down`), and is recorded in the runtime directory so later
commands can find it: they enter it with `nsenter` and `ip netns exec HOST` (`Lab.host_argv`,
also what the gated shell wraps).
"""

from __future__ import annotations

import json
import marshal
import os
import select
import signal
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from agentledger.errors import InputError
from agentledger.labs.channel import AGENT_SOURCE, MARSHAL, Channel
from agentledger.labs.script import (
    PROBE_HELPER,
    SYSTEM_PATH,
    Command,
    cycle_command,
    host_env,
    probe_command,
    read_probe,
    setup_plan,
)
from agentledger.labs.spec import LabSpec, LoadedLab, ProbeSpec, Step
from agentledger.labs.supervisor import close_pipes, reap, stop_supervisor, wait_gone
from agentledger.labs.system import (
    LabUnavailableError,
    Privilege,
    choose_privilege,
    process_start_time,
    runtime_dir,
    sweep_dead_labs,
)

__all__ = [
    "Lab",
    "LabStartError",
    "ProbeResult",
    "ProbeResults",
    "attach_lab",
    "lab",
    "running_labs",
    "start_lab",
    "stop_lab",
]

_DETACHED: list[subprocess.Popen[bytes]] = []
BOOT_SECONDS = 15
SETUP_SECONDS = 60
COMMAND_SECONDS = 60


class LabStartError(InputError):
    """The lab did not come up as its spec says: setup failed, a probe failed before the fault,
    or the fault did not break its symptom probe (each named in the message, with what a
    kernel's error there means: `kernel.kernel_hint`)."""

    def __init__(self, message: str) -> None:
        from agentledger.labs.kernel import kernel_hint

        super().__init__(message + kernel_hint(message))


@dataclass(frozen=True)
class ProbeResult:
    """One probe, run once: did its check pass, and is that healthy for its role."""

    name: str
    role: str
    passed: bool
    detail: str

    @property
    def healthy(self) -> bool:
        """Blocked probes are healthy when they fail; every other role when it passes."""
        return self.passed != (self.role == "blocked")


@dataclass(frozen=True)
class ProbeResults:
    """Every probe of a lab at one moment, in spec order."""

    results: tuple[ProbeResult, ...]

    def broken(self) -> list[str]:
        """The probes that are not healthy."""
        return [r.name for r in self.results if not r.healthy]

    def get(self, name: str) -> ProbeResult:
        """The result of the probe `name`."""
        for result in self.results:
            if result.name == name:
                return result
        raise KeyError(name)

    def to_json(self) -> list[dict[str, Any]]:
        """A JSON-ready list, one object per probe."""
        return [
            {
                "name": r.name,
                "role": r.role,
                "passed": r.passed,
                "healthy": r.healthy,
                "detail": r.detail,
            }
            for r in self.results
        ]


def _clean_env() -> dict[str, str]:
    env = {"PATH": SYSTEM_PATH, "LC_ALL": "C.UTF-8"}
    if "TERM" in os.environ:
        env["TERM"] = os.environ["TERM"]
    return env


class Running(Protocol):
    """A command started in a lab (by its agent, or entered with nsenter)."""

    @property
    def returncode(self) -> int | None: ...

    def communicate(self, timeout: float | None = None) -> tuple[str, str]: ...

    def kill(self) -> None: ...


class _Entered:
    """A command that entered the lab with nsenter (a detached lab has no agent here)."""

    def __init__(self, argv: list[str], stdin: str | None, merge: bool) -> None:
        self.input = stdin
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge else subprocess.PIPE,
            text=True,
            env=_clean_env(),
            cwd="/",
        )

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        given, self.input = self.input, None
        out, err = self.proc.communicate(given, timeout)
        return out or "", err or ""

    def kill(self) -> None:
        self.proc.kill()
        self.proc.communicate()


@dataclass
class Lab:
    """A running lab: the spec it was built from and the supervisor that holds it."""

    name: str
    spec: LabSpec
    privilege: Privilege
    pid: int
    pid1: int
    start_time: int
    started_at: str
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    baseline: ProbeResults | None = field(default=None, repr=False)
    """The probes before the fault (set by `start_lab`)."""
    channel: Channel | None = field(default=None, repr=False)
    """The lab's agent, held by the process that started the lab (None in others)."""
    init_fd: int | None = field(default=None, repr=False)
    """A pidfd of the lab's init, held by the process that started the lab (None in others)."""

    # -- entering the lab -------------------------------------------------------------------

    def lab_argv(self) -> list[str]:
        """The argv prefix that runs a command inside the lab's namespaces (in no host)."""
        argv = [*self.privilege.prefix(), "nsenter", "-t", str(self.pid1)]
        if self.privilege.mode == "rootless":
            argv += ["-U", "--preserve-credentials"]
        return [*argv, "-m", "-n", "-p", "--"]

    def host_argv(self, host: str) -> list[str]:
        """The argv prefix that runs a command in `host`: append the command's argv to it.

        The command runs as root of the lab in the host's network namespace, with the host's
        directory as working directory, its bin first on PATH and a clean environment.
        """
        self._known(host)
        return [*self.lab_argv(), "ip", "netns", "exec", host, *host_env(host)]

    def _known(self, host: str) -> None:
        if host not in self.spec.host_names():
            raise InputError(
                f"lab {self.name!r} has no host {host!r}; its hosts: "
                + ", ".join(self.spec.host_names())
            )

    def start(
        self, host: str, command: Command, *, stdin: str | None = None, merge: bool = False
    ) -> Running:
        """Start `command` in `host`: through the lab's agent when this process holds it (no
        program started to get there), else entering with `host_argv`. With `merge`, stderr
        goes to stdout."""
        self._known(host)
        if self.channel is not None:
            return self.channel.start(command.request(host), stdin=stdin, merge=merge)
        return _Entered([*self.host_argv(host), *command.argv], stdin, merge)

    def run(
        self,
        host: str,
        command: str | Sequence[str],
        *,
        timeout: float = COMMAND_SECONDS,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `command` (a shell string, or an argv) in `host`; its output, never raising on
        a non-zero exit (a TimeoutExpired when it outlives `timeout`)."""
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        running = self.start(host, Command(argv), stdin=stdin)
        try:
            out, err = running.communicate(timeout)
        except subprocess.TimeoutExpired:
            running.kill()
            raise
        assert running.returncode is not None
        return subprocess.CompletedProcess(argv, running.returncode, out, err)

    def alive(self) -> bool:
        """Whether the supervisor still runs."""
        return process_start_time(self.pid) == self.start_time

    # -- the spec's parts -------------------------------------------------------------------

    def run_steps(self, steps: Sequence[Step], *, what: str) -> None:
        """Run each step in its host, in order; a LabStartError naming the first that fails."""
        for i, step in enumerate(steps):
            try:
                done = self.run(step.host, step.run)
            except subprocess.TimeoutExpired:
                raise LabStartError(
                    f"{what} step {i + 1} in {step.host} ({step.run.strip()!r}) did not end "
                    f"within {COMMAND_SECONDS}s"
                ) from None
            if done.returncode != 0:
                raise LabStartError(
                    f"{what} step {i + 1} in {step.host} ({step.run.strip()!r}) exited "
                    f"{done.returncode}: {(done.stderr or done.stdout).strip()[-500:]}"
                )

    def cycle(self, owner: str | None = None, *, times: int = 1) -> None:
        """Run exactly `times` cycles of `owner` (of every owner, in spec order, when None)."""
        owners = [self.spec.owner(owner)] if owner else list(self.spec.owners)
        for _ in range(times):
            for spec in owners:
                running = self.start(spec.host, cycle_command(spec))
                try:
                    out, err = running.communicate(COMMAND_SECONDS)
                except subprocess.TimeoutExpired:
                    running.kill()
                    raise LabStartError(
                        f"owner {spec.name} in {spec.host}: its cycle did not end within "
                        f"{COMMAND_SECONDS}s"
                    ) from None
                if running.returncode != 0:
                    raise LabStartError(
                        f"owner {spec.name} in {spec.host}: its cycle exited "
                        f"{running.returncode}: {(err or out).strip()[-500:]}"
                    )

    def probe(self, names: Sequence[str] | None = None) -> ProbeResults:
        """Run the probes (all, or those named) at once; each result, in spec order."""
        probes = [p for p in self.spec.probes if names is None or p.name in names]
        unknown = set(names or ()) - {p.name for p in probes}
        if unknown:
            raise InputError(f"no probe {', '.join(sorted(unknown))} in lab {self.name!r}")
        running = [(p, self.start(p.host, probe_command(p), merge=True)) for p in probes]
        return ProbeResults(tuple(_finish_probe(p, proc) for p, proc in running))

    def inject_fault(self, *, verify: bool = True) -> ProbeResults:
        """Inject the fault, run one cycle of every owner, and (with `verify`) refuse, naming
        the probe, when a symptom probe still passes."""
        self.run_steps(self.spec.fault.steps, what="fault")
        self.cycle()
        after = self.probe()
        if verify:
            still = [r for r in after.results if r.role == "symptom" and r.healthy]
            if still:
                raise LabStartError(
                    "the fault does not show: symptom probe "
                    + ", ".join(f"{r.name} still passes ({r.detail})" for r in still)
                )
        return after

    # -- the end ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Kill the lab: its init (the kernel then kills every process of it and its namespaces
        go), then its supervisor, and wait until both have ended."""
        ending = self.channel is not None
        if self.channel is not None:
            self.channel.close()  # without the SIGKILL below, the agent exits when it sees this
            self.channel = None
        if self.init_fd is not None:
            # at once, rather than when a busy machine next runs the agent to see its socket
            # closed; a pidfd names the very process, whatever became of its pid
            with suppress(OSError):
                signal.pidfd_send_signal(self.init_fd, signal.SIGKILL)
            os.close(self.init_fd)
            self.init_fd = None
        if self.process is not None:
            reap(self.process, ending=ending)
        stop_supervisor(self.pid, self.start_time, self.pid1)
        if self._recorded():
            _state_file(self.name).unlink(missing_ok=True)

    def _recorded(self) -> bool:
        try:
            data = json.loads(_state_file(self.name).read_text())
        except (OSError, ValueError):
            return False
        return bool(data.get("pid") == self.pid)

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def state(self) -> dict[str, Any]:
        """What the runtime directory records of a detached lab."""
        return {
            "name": self.name,
            "pid": self.pid,
            "pid1": self.pid1,
            "start_time": self.start_time,
            "started_at": self.started_at,
            "mode": self.privilege.mode,
            "user": self.privilege.user,
            "spec": self.spec.model_dump(mode="json"),
        }


def _finish_probe(probe: ProbeSpec, proc: Running) -> ProbeResult:
    try:
        out, _ = proc.communicate(timeout=probe.timeout + 10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return ProbeResult(probe.name, probe.role, False, "the probe itself hung; killed")
    assert proc.returncode is not None
    passed, detail = read_probe(probe, proc.returncode, out)
    return ProbeResult(probe.name, probe.role, passed, detail[:300])


def _spawn(
    privilege: Privilege, name: str, agent: socket.socket, *, detach: bool
) -> subprocess.Popen[bytes]:
    prefix = privilege.prefix()
    if not detach:
        # PR_SET_PDEATHSIG: the supervisor is SIGKILLed when its starter dies, at the latest.
        prefix = [*(prefix or ["setpriv"]), "--pdeathsig", "KILL"]
    argv = [*prefix, "unshare"]
    if privilege.mode == "rootless":
        argv += ["--user", "--map-root-user"]
    argv += ["--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
    fd = agent.fileno()
    return subprocess.Popen(
        [*argv, "python3", "-I", "-S", "-c", AGENT_SOURCE, f"agentledger-lab:{name}", str(fd)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd="/",
        env=_clean_env(),
        start_new_session=detach,
        pass_fds=(fd,),
    )


def _await_boot(proc: subprocess.Popen[bytes], control: socket.socket) -> int:
    """The lab's init's pid once its agent says `ready` (a LabUnavailableError with its words
    else)."""
    ready, _, _ = select.select([control], [], [], BOOT_SECONDS)
    said = b""
    if ready:
        with suppress(OSError):
            said = control.recv(64)
    if said != b"ready":
        proc.kill()
        proc.wait()
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        close_pipes(proc)
        raise LabUnavailableError(
            f"the lab's namespaces could not be made: {err or 'no reason given'}"
        )
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return int(children[0])


def start_lab(
    loaded: LoadedLab | LabSpec,
    *,
    name: str | None = None,
    fault: bool = True,
    verify: bool = True,
    privilege: Privilege | None = None,
    detach: bool = False,
    periodic: bool = True,
) -> Lab:
    """Build the lab, check its baseline, inject its fault and check the symptom shows.

    `fault=False` stops at the baseline; `periodic=False` leaves owners to cycle on demand only
    (`Lab.cycle`), as measurements need. With `detach`, the lab outlives this process and is
    recorded under `name` for `attach_lab`; otherwise it dies with this process at the latest,
    and with the thread that started it (PR_SET_PDEATHSIG follows the starting thread): start
    a lab in the thread that will use it, or keep that thread alive as long as the lab.
    """
    spec = loaded.spec if isinstance(loaded, LoadedLab) else loaded
    name = name or (loaded.name if isinstance(loaded, LoadedLab) else "lab")
    privilege = privilege or choose_privilege()
    sweep_dead_labs(runtime_dir())
    if detach and _state_file(name).exists():
        raise InputError(f"a lab named {name!r} is already up (agentledger lab down {name})")
    control, agent = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        proc = _spawn(privilege, name, agent, detach=detach)
    finally:
        agent.close()
    pid1, init_fd = 0, -1
    channel = Channel(control)
    try:
        pid1 = _await_boot(proc, control)
        init_fd = os.pidfd_open(pid1)  # its supervisor waits for it: not reaped before this
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        lab = Lab(
            name,
            spec,
            privilege,
            proc.pid,
            pid1,
            process_start_time(proc.pid) or 0,
            started,
            process=proc,
            channel=channel,
            init_fd=init_fd,
        )
        if detach:
            _write_state(lab)
        _build(lab, fault=fault, verify=verify, periodic=periodic)
    except BaseException:
        channel.close()
        reap(proc)
        if init_fd >= 0:
            os.close(init_fd)
        if pid1:  # the init dies with the supervisor; wait until it has
            wait_gone(pid1)
        if detach:
            _state_file(name).unlink(missing_ok=True)
        raise
    if detach:
        channel.detach()
        lab.channel = None
        os.close(init_fd)
        lab.init_fd = None
        close_pipes(proc)
        lab.process = None
        _DETACHED.append(proc)  # outlives us by design: never waited for, never warned about
    return lab


def _build(lab: Lab, *, fault: bool, verify: bool, periodic: bool) -> None:
    assert lab.channel is not None
    # `prepare`: the agent makes the probe helper while the setup runs, not at the first probe
    request = {**Command([], call="setup").request(None), "prepare": PROBE_HELPER}
    plan = marshal.dumps(setup_plan(lab.spec, periodic=periodic), MARSHAL)
    running = lab.channel.start(request, stdin=plan)
    try:
        out, err = running.communicate(SETUP_SECONDS)
    except subprocess.TimeoutExpired:
        raise LabStartError(f"the lab's setup did not end within {SETUP_SECONDS}s") from None
    if running.returncode != 0:
        raise LabStartError(_setup_failure(err or out))
    baseline = lab.baseline = lab.probe()
    if verify and baseline.broken():
        failing = [r for r in baseline.results if not r.healthy]
        raise LabStartError(
            "before the fault, probe "
            + ", ".join(f"{r.name} is already unhealthy ({r.detail})" for r in failing)
        )
    if fault:
        lab.inject_fault(verify=verify)


def _setup_failure(output: str) -> str:
    """The setup script's error: the step it failed at first, then what that step said."""
    lines = output.strip().splitlines()
    marker = "the lab's setup failed at: "
    if lines and lines[-1].startswith(marker):
        said = "\n".join(lines[:-1]).strip()[-800:]
        return f"the lab's setup failed at {lines[-1][len(marker) :]}" + (
            f":\n{said}" if said else ""
        )
    return f"the lab's setup failed: {output.strip()[-800:]}"


@contextmanager
def lab(loaded: LoadedLab | LabSpec, **options: Any) -> Iterator[Lab]:
    """`with lab(spec) as running:` a lab up for the block, down after it, whatever happens."""
    running = start_lab(loaded, **options)
    try:
        yield running
    finally:
        running.stop()


def _state_file(name: str) -> Path:
    return runtime_dir() / f"{name}.json"


def _write_state(lab: Lab) -> None:
    path = _state_file(lab.name)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(lab.state(), indent=1))
    temporary.replace(path)


def running_labs() -> list[Lab]:
    """The detached labs still up (the records of dead ones are swept first)."""
    directory = runtime_dir()
    sweep_dead_labs(directory)
    return [attach_lab(p.stem) for p in sorted(directory.glob("*.json"))]


def attach_lab(name: str | None = None) -> Lab:
    """The detached lab `name` (or the only one up, when None)."""
    directory = runtime_dir()
    sweep_dead_labs(directory)
    if name is None:
        names = sorted(p.stem for p in directory.glob("*.json"))
        if len(names) != 1:
            raise InputError(
                "no lab is up (agentledger lab up SCENARIO)"
                if not names
                else f"several labs are up ({', '.join(names)}): name one with --lab"
            )
        name = names[0]
    try:
        data = json.loads(_state_file(name).read_text())
    except FileNotFoundError:
        raise InputError(f"no lab named {name!r} is up") from None
    return Lab(
        name=data["name"],
        spec=LabSpec.model_validate(data["spec"]),
        privilege=Privilege(data["mode"], data["user"]),
        pid=data["pid"],
        pid1=data["pid1"],
        start_time=data["start_time"],
        started_at=data["started_at"],
    )


def stop_lab(name: str | None = None) -> str:
    """Take the detached lab `name` down (the only one, when None); its name."""
    running = attach_lab(name)
    running.stop()
    _state_file(running.name).unlink(missing_ok=True)
    return running.name
