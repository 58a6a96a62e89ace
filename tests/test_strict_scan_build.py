"""How strict JSON's C scan gets built and what happens without it: the Makefile's `scan` target
builds it with the machine's compiler, or says in one line that the check runs in Python and
succeeds anyway; without the built module the Python check is used silently, with the same
answers."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def make_scan(target: Path, cc: str) -> subprocess.CompletedProcess[str]:
    """`make scan` of this checkout, building into `target` with compiler `cc`."""
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "scan", f"CC={cc}",
         f"SCAN_LIB={target}", f"PYTHON={sys.executable}"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_without_a_compiler_the_build_says_so_and_succeeds(tmp_path: Path) -> None:
    target = tmp_path / "_strict_scan.so"
    done = make_scan(target, "no-such-cc")
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    assert "strict JSON is checked in Python" in done.stdout
    assert done.stderr == ""


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_with_a_compiler_the_scan_is_built_and_checks(tmp_path: Path) -> None:
    include = Path(sysconfig.get_paths()["include"], "Python.h")
    if shutil.which("cc") is None or not include.exists():
        if os.environ.get("AGENTLEDGER_REQUIRE_SCAN") == "1":
            pytest.fail("CI requires a C compiler and Python.h (.ci/run installs them)")
        pytest.skip("no C compiler or no Python.h")
    target = tmp_path / f"_strict_scan{sysconfig.get_config_var('EXT_SUFFIX')}"
    done = make_scan(target, "cc")
    assert done.returncode == 0 and target.exists(), done.stdout + done.stderr
    loader = importlib.machinery.ExtensionFileLoader("_strict_scan", str(target))
    spec = importlib.util.spec_from_file_location("_strict_scan", target, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    assert module.certain(b'{"a": 1, "b": [2]}', 64) is True
    assert module.certain(b'{"a": 1, "a": 2}', 64) is False
    assert module.certain(b'{"n": 18446744073709551616}', 64) is False
    assert module.certain(b"[" * 65 + b"]" * 65, 64) is False


def test_without_the_built_scan_the_python_check_is_used_silently() -> None:
    """The module made unimportable: decoding still refuses a duplicate key, reads a real
    trajectory to the same value, and writes nothing to stdout or stderr."""
    program = """
import sys
sys.modules["agentledger.records._strict_scan"] = None  # as if never built
import json
from agentledger.records import decode_json
from agentledger.records import fast_json
from agentledger.errors import RecordError
assert fast_json._certain is None
raw = (sys.argv[1]).encode()
assert decode_json(raw, "x") == json.loads(raw)
try:
    decode_json(b'{"a": 1, "a": 2}', "x")
except RecordError as exc:
    assert "duplicate" in str(exc), exc
else:
    raise SystemExit("a duplicate key was accepted")
"""
    sample = '{"events": [{"id": 1, "action": "run", "args": {"command": "ls -la"}}], "n": 3}'
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", program, sample],
        capture_output=True, text=True, check=False, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")
