"""Import workers die with the command: after `kill -9` of an import, no run appears later.

A large import checks and seals runs in worker processes. If the command is killed, a worker
that lived on would keep sealing runs nobody asked for any more (it used to: 0 runs visible at
the kill, 400 a second later). Each case starts a real import in a subprocess, kills it with
SIGKILL at one point, and checks that its workers are gone within a second and that the
ledger holds no more runs three seconds later than it did one second after the kill.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUNS = 1500


def write_runs(root: Path, count: int) -> None:
    """`count` small runs in the seed's layout, with distinct ids."""
    audit = json.dumps({"timestamp": "2026-03-12T10:15:02Z", "command": "tc qdisc show"}) + "\n"
    for number in range(count):
        name = f"use_case_{number:05d}_haiku_20260312"
        directory = root / name
        directory.mkdir(parents=True)
        (directory / "PROMPT.txt").write_text(f"Symptom number {number}.\n")
        (directory / "ghost_report_20260312.md").write_text("# Report\n\n## Root cause\nnetem.\n")
        (directory / "ghost_audit_20260312.md").write_text("# Trace\nChecked tc.\n")
        (directory / "shell_audit_20260312.jsonl").write_text(audit)
        (directory / "metadata.json").write_text(
            json.dumps(
                {"run_id": name, "model": "claude-haiku-4-5", "system_prompt_hash": "a3f9c2d1"}
            )
        )


def sealed(ledger: Path) -> int:
    runs = ledger / "runs"
    if not runs.is_dir():
        return 0
    return sum(1 for entry in runs.iterdir() if (entry / "MANIFEST.json").exists())


def children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            found.update(int(word) for word in text.split())
    except OSError:
        pass
    return found


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its new parent counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line for line in status.splitlines() if line.startswith("State:")), "")
    return "Z" not in state.split(":", 1)[-1][:3]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("worker-death") / "runs"
    write_runs(root, RUNS)
    return root


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("moment", ["checking", "sealing"])
def test_kill_9_of_an_import_stops_its_workers(source: Path, tmp_path: Path, moment: str) -> None:
    ledger = tmp_path / "ledger"
    command = ["import", str(source), "--ledger", str(ledger), "--workers", "3"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentledger", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            workers |= children(proc.pid)
            if moment == "checking" and len(workers) >= 2 and (ledger / "ledger.json").exists():
                break
            if moment == "sealing" and sealed(ledger) >= 20:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the import ended before the kill: make RUNS larger"
        assert len(workers) >= 2, f"expected worker processes, saw {sorted(workers)}"
        at_kill = sealed(ledger)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(1.0)
    left = [pid for pid in workers if alive(pid)]
    after_one_second = sealed(ledger)
    time.sleep(2.0)
    for pid in left:  # do not leave them running whatever the assertions say
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert left == [], f"workers still running 1 s after the kill: {left}"
    assert sealed(ledger) == after_one_second, (
        f"runs kept appearing after the kill: {at_kill} at the kill, {after_one_second} after "
        f"1 s, {sealed(ledger)} after 3 s"
    )
    assert after_one_second < RUNS, "the import finished: the kill came too late to test"
