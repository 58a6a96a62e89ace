"""A full disk during import, judge and reindex: a clear message, no traceback, and a ledger
that stays consistent (and complete once there is room again).

The ledger lives on a 2 MB tmpfs mounted for the test (we run as root; without the right to
mount, the tests are skipped and say why), filled up with a filler file before the command.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.store import Ledger, verify_ledger
from many_runs import write_runs

ALLOWED = {"leftover", "not-indexed", "unaccepted"}


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB filesystem of its own, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill `disk` up, then free `leave` bytes; the filler file (remove it to make room)."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    # Unbuffered: nothing is left to flush (and fail) when the file is closed.
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))
    return filler


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def consistent(root: Path) -> None:
    """Only what gc repairs, and after gc nothing at all."""
    with Ledger.open(root) as ledger:
        report = verify_ledger(ledger)
        assert {problem.kind for problem in report.problems} <= ALLOWED, report.problems
        assert ledger.gc().ok
        assert verify_ledger(ledger).ok


def test_import_on_a_full_disk(disk: Path, tmp_path: Path) -> None:
    source = tmp_path / "source"
    write_runs(source, 40)
    root = disk / "ledger"
    Ledger.init(root).close()
    filler = fill(disk, leave=300_000)
    code, output = invoke(
        "import", "--ledger", str(root), "--workers", "1", "--batch-size", "10", str(source)
    )
    assert code == 1, output
    assert "No space left on device" in output or "disk refused the write" in output
    assert "Traceback" not in output
    assert "nothing half-written is visible" in output or "was not changed" in output
    filler.unlink()
    consistent(root)
    code, output = invoke("import", "--ledger", str(root), "--workers", "1", str(source))
    assert code == 0, output
    with Ledger.open(root) as ledger:
        assert ledger.count() == 40
        assert verify_ledger(ledger).ok


def test_judge_on_a_full_disk(disk: Path, tmp_path: Path) -> None:
    source = tmp_path / "source"
    write_runs(source, 20)
    root = disk / "ledger"
    Ledger.init(root).close()
    assert invoke("import", "--ledger", str(root), "--workers", "1", str(source))[0] == 0
    filler = fill(disk, leave=40_000)
    code, output = invoke("judge", "--ledger", str(root))
    assert code == 1, output
    assert "No space left on device" in output or "disk refused the write" in output
    assert "Traceback" not in output
    filler.unlink()
    consistent(root)
    code, output = invoke("judge", "--ledger", str(root))
    assert code == 0, output
    with Ledger.open(root) as ledger:
        assert ledger.sql("SELECT count(*) FROM scores").rows == [(20,)]
        assert verify_ledger(ledger).ok


def test_reindex_on_a_full_disk_keeps_the_old_index(disk: Path, tmp_path: Path) -> None:
    source = tmp_path / "source"
    write_runs(source, 20)
    root = disk / "ledger"
    Ledger.init(root).close()
    assert invoke("import", "--ledger", str(root), "--workers", "1", str(source))[0] == 0
    assert invoke("judge", "--ledger", str(root))[0] == 0
    # Not a byte left: even opening the index (its shared-memory file) is refused.
    filler = fill(disk)
    code, output = invoke("reindex", "--ledger", str(root))
    assert code == 1, output
    assert "Traceback" not in output
    assert "disk refused" in output and "run the command again" in output
    filler.unlink()
    with Ledger.open(root) as ledger:  # the old index still answers, whole
        assert ledger.count() == 20
        assert ledger.sql("SELECT count(*) FROM scores").rows == [(20,)]
    # Room to open the index, not to build a new one beside it.
    filler = fill(disk, leave=20_000)
    code, output = invoke("reindex", "--ledger", str(root))
    assert code == 1, output
    assert "reindex failed" in output and "was left as it was" in output, output
    assert "Traceback" not in output
    assert not (root / "index.sqlite.new").exists()
    filler.unlink()
    with Ledger.open(root) as ledger:
        assert ledger.count() == 20
        assert ledger.sql("SELECT count(*) FROM scores").rows == [(20,)]
    code, output = invoke("reindex", "--ledger", str(root))
    assert code == 0, output
    assert "Indexed 20 runs and 20 scores" in output
    with Ledger.open(root) as ledger:
        assert ledger.count() == 20
        assert verify_ledger(ledger).ok
