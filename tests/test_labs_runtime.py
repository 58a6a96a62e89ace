"""Real labs: real namespaces, processes, iptables and SIGKILL; the machine's network untouched.

Skipped, saying why, where the machine cannot run labs (no user namespaces and not root, or a
missing tool); in CI (AGENTLEDGER_REQUIRE_LABS=1) they fail instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentledger.labs import (
    LabStartError,
    Privilege,
    check_lab,
    load_lab,
    measure,
    resolve_labs,
    start_lab,
    stop_lab,
    sweep_dead_labs,
    take_snapshot,
)
from agentledger.labs.system import which
from labs_support import lab_privilege, write_small_lab

SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture(autouse=True)
def private_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test records its labs in its own runtime directory."""
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return runtime


def _cli(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "agentledger", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=check,
    )


def _host_network() -> dict[str, str]:
    """The machine's own network state, read-only (timestamps and counters dropped)."""
    commands = {
        "iptables-save": ["iptables-save"],
        "nft": ["nft", "list", "ruleset"],
        "ip route": ["ip", "route", "show", "table", "all"],
        "ip rule": ["ip", "rule"],
        "ip link": ["ip", "-o", "link"],
        "tc qdisc": ["tc", "qdisc"],
        "netns": ["ip", "netns", "list"],
    }
    state = {}
    for name, argv in commands.items():
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        text = re.sub(r"(?m)^#.*\n", "", done.stdout)
        text = re.sub(r"\[\d+:\d+\]|packets \d+ bytes \d+", "", text)
        state[name] = text
    return state


def _processes_in(namespace: str, kind: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / kind) == namespace:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.mark.slow
def test_up_fault_cycle_snapshot_down_through_the_cli(tmp_path: Path) -> None:
    lab_privilege()
    scenario = write_small_lab(tmp_path / "small")
    spec = scenario / "lab.yaml"  # no background cycle between the unban and the probe below
    spec.write_text(
        spec.read_text().replace("owns: the chain f2b", "owns: the chain f2b\n    interval: 3600")
    )
    before = _host_network()
    up = _cli("lab", "up", str(scenario))
    assert up.returncode == 0, up.stderr
    assert "lab small up" in up.stdout
    try:
        probe = _cli("lab", "probe")
        assert probe.returncode == 1 and "UNHEALTHY" in probe.stdout
        chain = _cli("lab", "shell", "web", "iptables -S f2b")
        assert chain.returncode == 0
        assert "-A f2b -s 10.0.0.2/32 -p tcp -j REJECT" in chain.stdout
        assert _cli("lab", "shell", "nohost", "true").returncode == 2
        _cli("lab", "shell", "web", "jailctl unban 10.0.0.2", check=True)
        assert _cli("lab", "probe").returncode == 1  # the ban stays until the jail cycles
        assert _cli("lab", "cycle", "jail").returncode == 0
        assert _cli("lab", "probe").returncode == 0
        snapshot = _cli("lab", "snapshot", "--stable")
        assert "=== web: iptables-save ===" in snapshot.stdout
        assert "=== web: file jail/banned ===" in snapshot.stdout
        assert "0.0.0.0:80" in snapshot.stdout  # the listening http server
    finally:
        down = _cli("lab", "down")
    assert down.returncode == 0 and "lab small down" in down.stdout
    assert _cli("lab", "list").stdout == ""
    assert _host_network() == before


@pytest.mark.slow
def test_the_fault_is_seen_or_the_lab_refuses_naming_the_probe(tmp_path: Path) -> None:
    privilege = lab_privilege()
    with start_lab(load_lab(write_small_lab(tmp_path / "a")), privilege=privilege) as lab:
        assert lab.probe().broken() == ["client-http"]
    harmless = write_small_lab(tmp_path / "b", fault="echo no fault")
    with pytest.raises(LabStartError, match="symptom probe client-http still passes"):
        start_lab(load_lab(harmless), privilege=privilege)
    up = _cli("lab", "up", str(harmless))
    assert up.returncode == 2 and "client-http still passes" in up.stderr
    assert _cli("lab", "list").stdout == ""
    check = _cli("lab", "check", str(harmless))
    assert check.returncode == 1 and "FAIL b: fault" in check.stdout


def test_an_owner_cycle_reverts_a_direct_edit(tmp_path: Path) -> None:
    privilege = lab_privilege()
    loaded = load_lab(write_small_lab(tmp_path / "s"))
    direct = "iptables -D f2b -s 10.0.0.2/32 -p tcp -j REJECT --reject-with tcp-reset"
    m = measure(
        loaded,
        [direct],
        host="web",
        owner_cycles=1,
        privilege=privilege,
        verify=["iptables -S f2b"],
    )
    assert m.baseline.broken() == [] and m.after_fault.broken() == ["client-http"]
    assert m.fixed() and not m.durable()
    assert m.after_cycles.broken() == ["client-http"]
    assert m.outputs[0][2] == 0
    # what the fixer would have seen, checking after the owner's cycle: the rule is back
    assert "-A f2b -s 10.0.0.2/32" in m.verify_outputs[0][3]


def test_lab_check_names_the_remedy_and_probe_that_differ(tmp_path: Path) -> None:
    privilege = lab_privilege()
    scenario = write_small_lab(tmp_path / "s")
    text = (scenario / "lab.yaml").read_text()
    (scenario / "lab.yaml").write_text(text.replace("broken: [client-http]", "broken: []"))
    report = check_lab(load_lab(scenario), privilege=privilege)
    assert not report.ok
    bad = [c for c in report.remedies if not c.ok]
    assert [c.remedy.name for c in bad] == ["delete-rule"]
    assert "probe client-http is not healthy after 2 owner cycles" in bad[0].problems[0]


@pytest.mark.slow
def test_lab_check_passes_for_every_shipped_scenario() -> None:
    lab_privilege()
    done = _cli("lab", "check", "labs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("the fault reproduces") == len(resolve_labs("labs"))


def test_lab_processes_run_as_nobody_and_cannot_write_the_machine(tmp_path: Path) -> None:
    privilege = lab_privilege()
    if os.geteuid() != 0:
        pytest.skip("running a lab as nobody is what root does; this test runs unprivileged")
    if privilege.mode != "rootless":
        pytest.skip("this machine has no user namespaces: root runs labs as root")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with start_lab(load_lab(write_small_lab(tmp_path / "s")), privilege=privilege) as lab:
        uid = re.search(r"Uid:\s+(\d+)", Path(f"/proc/{lab.pid1}/status").read_text())
        assert uid is not None and int(uid[1]) == 65534
        assert lab.run("web", "id -u").stdout.strip() == "0"  # root of the lab, only there
        wrote = lab.run("web", f"touch {private}/x")
        assert wrote.returncode != 0 and not (private / "x").exists()
        assert "REJECT" in take_snapshot(lab).hosts["web"]["iptables-save"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("detach", "delay"), [(False, 0.05), (False, 0.3), (False, 0.8), (True, 0.3)]
)
def test_sigkill_of_the_runner_mid_up_leaves_nothing(
    tmp_path: Path, private_runtime: Path, detach: bool, delay: float
) -> None:
    """Attached labs die with their runner at any point; a detached one (`lab up`) too, as
    long as it was not up yet, and its record is swept at the next start."""
    lab_privilege()
    scenario = write_small_lab(tmp_path / "s")
    done = tmp_path / "up"
    before = _host_network()
    code = (
        "import sys, time\nfrom pathlib import Path\n"
        "from agentledger.labs import load_lab, start_lab\n"
        f"lab = start_lab(load_lab(Path({str(scenario)!r})), name='killme', detach={detach})\n"
        f"Path({str(done)!r}).touch()\n"
        "time.sleep(60)\n"
    )
    runner = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stdout=subprocess.DEVNULL,
    )
    namespaces: set[tuple[str, str]] = set()
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline or not namespaces:
        for pid in _marked("agentledger-lab:killme"):
            for kind in ("pid_for_children", "mnt", "net"):
                try:
                    ns = os.readlink(f"/proc/{pid}/ns/{kind}")
                except OSError:
                    continue
                if ns != os.readlink(f"/proc/self/ns/{kind}"):  # the lab's, not the machine's
                    namespaces.add((kind, ns))
        time.sleep(0.01)
        assert time.monotonic() < deadline + 30, "the lab never started"
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    if detach and done.exists():
        stop_lab("killme")
        pytest.skip("the detached lab was up before the kill: it is meant to stay up")
    for _ in range(500):
        left = {
            (kind, ns): _processes_in(ns, "pid" if kind == "pid_for_children" else kind)
            for kind, ns in namespaces
        }
        if not _marked("agentledger-lab:killme") and not any(left.values()):
            break
        time.sleep(0.01)
    assert not _marked("agentledger-lab:killme")
    assert not any(left.values()), left
    assert _host_network() == before
    sweep_dead_labs()
    assert not list((private_runtime / "agentledger-labs").glob("*"))


def _marked(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return [pid for pid in found if pid != os.getpid()]


def test_a_killed_detached_lab_is_swept_at_the_next_start(
    tmp_path: Path, private_runtime: Path
) -> None:
    privilege = lab_privilege()
    loaded = load_lab(write_small_lab(tmp_path / "s"))
    lab = start_lab(loaded, name="swept", privilege=privilege, detach=True)
    state = private_runtime / "agentledger-labs" / "swept.json"
    assert state.is_file()
    os.kill(lab.pid, signal.SIGKILL)
    for _ in range(400):
        if not Path(f"/proc/{lab.pid1}").exists():
            break
        time.sleep(0.01)
    with start_lab(loaded, name="next", privilege=privilege):
        assert not state.exists()


def test_root_without_a_user_namespace_runs_labs_too(tmp_path: Path) -> None:
    """Where the kernel refuses user namespaces, root runs labs in net/mount/pid namespaces."""
    lab_privilege()
    if os.geteuid() != 0:
        pytest.skip("only root can run a lab without a user namespace")
    before = _host_network()
    loaded = load_lab(write_small_lab(tmp_path / "s"))
    report = check_lab(loaded, privilege=Privilege("root"))
    assert report.ok, [c.problems for c in report.remedies]
    assert _host_network() == before


def test_stable_snapshots_of_two_labs_are_byte_for_byte_equal(tmp_path: Path) -> None:
    privilege = lab_privilege()
    loaded = load_lab(write_small_lab(tmp_path / "s"))
    texts = []
    for _ in range(2):
        with start_lab(loaded, privilege=privilege, periodic=False) as lab:
            snapshot = take_snapshot(lab, stable=True)
            texts.append(snapshot.to_text())
            assert snapshot.to_json()["hosts"]["web"]["file jail/banned"] == "10.0.0.2\n"
            sysctl = snapshot.hosts["web"]["sysctl"]  # read in web's namespace, not the machine's
            assert re.fullmatch(
                r"net\.ipv4\.ip_forward = 0\nnet\.ipv4\.conf\.all\.rp_filter = [012]\n", sysctl
            ), sysctl
    assert texts[0] == texts[1]
    assert "-A f2b -s 10.0.0.2/32 -p tcp -j REJECT" in texts[0]


def test_probes_without_curl_or_bash_use_the_python_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    privilege = lab_privilege()
    import agentledger.labs.script as script

    real = script.which
    monkeypatch.setattr(script, "which", lambda t: None if t in ("curl", "bash") else real(t))
    text = (write_small_lab(tmp_path / "s") / "lab.yaml").read_text()
    text = text.replace(
        'http: "http://10.0.0.1/"}',
        'http: "http://10.0.0.1/"}\n'
        '  - {name: port, role: symptom, host: client, tcp: "10.0.0.1:80"}',
    )
    (tmp_path / "s" / "lab.yaml").write_text(text)
    with start_lab(load_lab(tmp_path / "s"), privilege=privilege, periodic=False) as lab:
        assert [r.detail for r in lab.probe().results] == [
            "http://10.0.0.1/: [Errno 111] Connection refused",
            "10.0.0.1:80: Connection refused",
        ]
        lab.run("web", "jailctl unban 10.0.0.2")
        lab.cycle()
        assert lab.probe().get("client-http").detail == "http://10.0.0.1/: HTTP 200, 6 bytes"


def test_a_failing_fault_step_is_named_and_nothing_stays(tmp_path: Path) -> None:
    privilege = lab_privilege()
    loaded = load_lab(write_small_lab(tmp_path / "s", fault="iptables -A NOPE -j DROP"))
    with pytest.raises(LabStartError, match=r"fault step 1 in web \('iptables -A NOPE -j DROP'\)"):
        start_lab(loaded, name="failing", privilege=privilege)
    assert not _marked("agentledger-lab:failing")


def test_a_setup_that_fails_names_its_step_and_a_dead_service_fails_at_once(
    tmp_path: Path,
) -> None:
    """What a new lab's author hits first: a service that dies (its log shown at once, not
    after the readiness deadline), an owner's first cycle that runs before the services."""
    privilege = lab_privilege()
    text = (write_small_lab(tmp_path / "dies") / "lab.yaml").read_text()
    dying = text.replace(
        "run: exec python3 -m http.server 80 --directory www",
        "run: echo 'cannot bind' >&2; exit 3",
    )
    (tmp_path / "dies" / "lab.yaml").write_text(dying)
    with pytest.raises(LabStartError) as caught:
        start_lab(load_lab(tmp_path / "dies"), name="dies", privilege=privilege)
    assert str(caught.value).startswith(
        "the lab's setup failed at waiting for service http in web to listen on port 80"
    )
    assert "exited 3 before listening on port 80; its log:\ncannot bind" in str(caught.value)
    signals = text.replace(
        "iptables -F f2b\n", 'iptables -F f2b\n      kill -HUP "$(cat http.pid)"\n'
    )
    (write_small_lab(tmp_path / "early") / "lab.yaml").write_text(signals)
    with pytest.raises(LabStartError) as caught:
        start_lab(load_lab(tmp_path / "early"), name="early", privilege=privilege)
    assert str(caught.value).startswith(
        "the lab's setup failed at the first cycle of owner jail in web "
        "(before the services start) (exit 2):\ncat: http.pid: No such file or directory"
    )
    assert not _marked("agentledger-lab:dies") and not _marked("agentledger-lab:early")


_PYTHON_RUNNER = """\
import sys
from pathlib import Path
from agentledger.labs import load_lab, start_lab, take_snapshot
loaded = load_lab(Path(sys.argv[1]))
while True:  # every phase, over and over: setup, services, fault, probes, snapshot, teardown
    with start_lab(loaded, periodic=False) as lab:
        lab.probe()
        lab.cycle()
        take_snapshot(lab)
"""


def _lab_namespaces(marker: str) -> set[tuple[str, str]]:
    """The namespaces (not the machine's) of the processes whose argv holds `marker`."""
    found = set()
    for pid in _marked(marker):
        for kind in ("pid_for_children", "mnt", "net"):
            try:
                ns = os.readlink(f"/proc/{pid}/ns/{kind}")
            except OSError:
                continue
            if ns != os.readlink(f"/proc/self/ns/{kind}"):
                found.add((kind, ns))
    return found


def _lab_temp_entries() -> set[str]:
    """Entries of /tmp a lab could leave. Not the workspaces of runs of lab scenarios
    (agentledger-RUN_ID-..., RUN_ID starting with the scenario id lab_...): other sessions on
    a shared machine make and remove those while this test runs."""
    return {
        p.name
        for p in Path("/tmp").iterdir()
        if "lab" in p.name and "pytest" not in p.name and not p.name.startswith("agentledger-lab_")
    }


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["python", "cli-up", "cli-check"])
def test_sigkill_at_random_points_leaves_nothing(
    tmp_path: Path, private_runtime: Path, runner: str
) -> None:
    """SIGKILL the runner (a Python loop of whole lab cycles, `lab up` then `lab down`, `lab
    check` with its pool of labs) at random moments: during setup, services starting, the fault,
    probes, snapshots, teardown. Afterwards: no process of any of its labs (so no namespace or
    mount: they live only in the labs' own mount namespaces), no runtime record once the next
    start sweeps, no temporary directory, the machine's network as it was."""
    lab_privilege()
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    before, temp_before = _host_network(), _lab_temp_entries()
    mounts_before = Path("/proc/self/mountinfo").read_text()
    for attempt in range(2):
        name = f"sk{runner.replace('-', '')}{attempt}"
        scenario = write_small_lab(tmp_path / name)
        argv = {
            "python": [sys.executable, "-c", _PYTHON_RUNNER, str(scenario)],
            "cli-up": [
                "sh",
                "-c",
                '"$@" lab up "$0" && "$@" lab down',
                str(scenario),
                sys.executable,
                "-m",
                "agentledger",
            ],
            "cli-check": [sys.executable, "-m", "agentledger", "lab", "check", str(scenario)],
        }[runner]
        proc = subprocess.Popen(
            argv,
            env={**os.environ, "PYTHONPATH": str(SRC)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        kill_at = time.monotonic() + rng.uniform(0.05, 3.0)
        namespaces: set[tuple[str, str]] = set()
        while time.monotonic() < kill_at and proc.poll() is None:
            namespaces |= _lab_namespaces(f"agentledger-lab:{name}")
            time.sleep(0.02)
        with contextlib.suppress(ProcessLookupError):  # the runner and what it started
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        marker = f"agentledger-lab:{name}"
        for _ in range(1000):
            left = {
                (kind, ns): _processes_in(ns, "pid" if kind == "pid_for_children" else kind)
                for kind, ns in namespaces
            }
            if not _marked(marker) and not any(left.values()):
                break
            time.sleep(0.01)
        if _marked(marker) and runner == "cli-up":  # killed after `lab up` was done: up by design
            assert stop_lab(name) == name
            left = {}
        where = f"(seed {seed}, attempt {attempt})"
        assert not _marked(marker), where
        assert not any(left.values()), (left, where)
    sweep_dead_labs()
    assert not list((private_runtime / "agentledger-labs").glob("*"))
    assert _lab_temp_entries() <= temp_before
    assert Path("/proc/self/mountinfo").read_text() == mounts_before
    assert _host_network() == before


_RESPONDER = r"""
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.0.0.1", 53))
while True:
    q, peer = s.recvfrom(512)
    end = q.index(b"\0", 12) + 5
    name = q[12:end - 5]
    if name == b"\x02ok\x03lab":
        head = q[:2] + b"\x81\x80" + struct.pack(">HHHH", 1, 1, 0, 0)
        rr = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("10.0.0.9")
        s.sendto(head + q[12:end] + rr, peer)
    else:
        s.sendto(q[:2] + b"\x81\x83" + struct.pack(">HHHH", 1, 0, 0, 0) + q[12:end], peer)
"""


def test_a_udp_service_is_awaited_and_dns_probes_name_the_rcode(tmp_path: Path) -> None:
    """A DNS server listens on UDP only: readiness sees it; NXDOMAIN is named as such."""
    privilege = lab_privilege()
    directory = tmp_path / "dns"
    directory.mkdir()
    (directory / "lab.yaml").write_text(
        "schema_version: 1\n"
        "hosts:\n"
        "  - name: dns\n"
        "    files: [{path: responder.py, content: " + json.dumps(_RESPONDER) + "}]\n"
        "  - name: client\n"
        "links:\n"
        "  - a: {host: client, address: 10.0.0.2/24}\n"
        "    b: {host: dns, address: 10.0.0.1/24}\n"
        "services:\n"
        "  - {name: dns, host: dns, run: exec python3 responder.py, ready_port: 53}\n"
        "fault: {description: none, steps: [{host: dns, run: 'true'}]}\n"
        "probes:\n"
        "  - {name: ok, role: keep, host: client, dns: ok.lab, server: 10.0.0.1,"
        " answer: 10.0.0.9}\n"
        "  - {name: api, role: symptom, host: client, dns: api.lab, server: 10.0.0.1}\n"
    )
    loaded = load_lab(directory)
    with start_lab(loaded, privilege=privilege, fault=False, verify=False) as lab:
        details = [r.detail for r in lab.probe().results]
    assert details == [
        "ok.lab at 10.0.0.1: NOERROR, 10.0.0.9",
        "api.lab at 10.0.0.1: NXDOMAIN, no address",
    ]


def _docs_lab(tmp_path: Path, intro: str, name: str) -> Path:
    """The lab.yaml block that follows `intro` in docs/labs.md, as the directory `name`."""
    text = (SRC.parent / "docs" / "labs.md").read_text()
    found = re.search(re.escape(intro) + r".*?```yaml\n(.*?)```", text, re.S)
    assert found, f"docs/labs.md no longer has the lab after {intro!r}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "lab.yaml").write_text(found[1])
    return tmp_path / name


@pytest.mark.slow
@pytest.mark.parametrize(
    ("intro", "name", "needs"),
    [("Put this in `mylab/lab.yaml`:", "mylab", None), ("`dnslab/lab.yaml`:", "dnslab", "dnsmasq")],
)
def test_the_labs_written_in_the_docs_come_up_and_check(
    tmp_path: Path, intro: str, name: str, needs: str | None
) -> None:
    """The labs docs/labs.md teaches with, exactly as printed there: fault and every remedy."""
    privilege = lab_privilege()
    if needs and which(needs) is None:
        if os.environ.get("AGENTLEDGER_REQUIRE_LABS") == "1":
            pytest.fail(f"{needs} is missing (.ci/run installs it)")
        pytest.skip(f"{needs} is not installed")
    report = check_lab(load_lab(_docs_lab(tmp_path, intro, name)), privilege=privilege)
    assert report.ok, [report.fault_problem, *[c.problems for c in report.remedies]]
    assert len(report.remedies) >= 2
