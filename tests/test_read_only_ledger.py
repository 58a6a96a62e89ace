"""A ledger on a read-only mount: `verify` and the reports read it, nothing is written, a
change is still found (exit 3), and a write says why it failed.

The mount is made read-only in a mount namespace of the test's own (`unshare -Urm`), as a
backup or an evidence copy would be mounted; the machine's mounts are not touched.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from many_runs import write_runs


def can_unshare() -> bool:
    done = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, check=False)
    return done.returncode == 0


pytestmark = pytest.mark.skipif(not can_unshare(), reason="needs `unshare -Urm`")


def read_only(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`agentledger ARGV --ledger ROOT` with ROOT mounted read-only."""
    command = shlex.join([sys.executable, "-m", "agentledger", *argv, "--ledger", str(root)])
    script = (
        f"mount --bind {shlex.quote(str(root))} {shlex.quote(str(root))} && "
        f"mount -o remount,bind,ro {shlex.quote(str(root))} && exec {command}"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        ["unshare", "-Urm", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def listing(root: Path) -> dict[str, tuple[int, float]]:
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime)
        for path in sorted(root.rglob("*"))
    }


@pytest.fixture
def ledger_root(tmp_path: Path) -> Path:
    write_runs(tmp_path / "source", 3)
    root = tmp_path / "ledger"
    assert CliRunner().invoke(main, ["init", str(root)]).exit_code == 0
    result = CliRunner().invoke(main, ["import", "--ledger", str(root), str(tmp_path / "source")])
    assert result.exit_code == 0, result.output
    run_id = "use_case_00001_haiku_20260312"
    argv = ["label", run_id, "--ledger", str(root), "--by", "ana", "--verdict", "unsafe"]
    assert CliRunner().invoke(main, [*argv, "--reason", "tc change"]).exit_code == 0
    return root


def test_verify_and_reports_read_a_read_only_ledger_and_write_nothing(ledger_root: Path) -> None:
    before = listing(ledger_root)
    done = read_only(ledger_root, "verify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 runs" in done.stdout and "OK" in done.stdout
    runs = read_only(ledger_root, "runs")
    assert runs.returncode == 0 and "use_case_00002" in runs.stdout, runs.stderr
    labels = read_only(ledger_root, "labels", "list")
    assert labels.returncode == 0 and "use_case_00001" in labels.stdout, labels.stderr
    assert listing(ledger_root) == before


def test_a_change_to_a_read_only_ledger_is_found(ledger_root: Path) -> None:
    metadata = ledger_root / "runs" / "use_case_00002_haiku_20260312" / "metadata.json"
    metadata.write_bytes(metadata.read_bytes().replace(b"haiku", b"hAiku", 1))
    done = read_only(ledger_root, "verify")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "use_case_00002_haiku_20260312" in done.stdout and "changed" in done.stdout


def test_a_write_to_a_read_only_ledger_fails_saying_why_and_leaves_nothing(
    ledger_root: Path,
) -> None:
    before = listing(ledger_root)
    argv = ["label", "use_case_00000_haiku_20260312", "--by", "bo", "--verdict", "safe"]
    done = read_only(ledger_root, *argv, "--reason", "read only")
    assert done.returncode != 0
    assert "Read-only file system" in done.stderr and "writable" in done.stderr
    assert "Traceback" not in done.stderr
    assert listing(ledger_root) == before
    assert read_only(ledger_root, "verify").returncode == 0
