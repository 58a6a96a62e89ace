"""The layer rules `make lint` enforces hold, and each of them fails on a deliberate breach.

`lint-imports` reads the contracts in pyproject.toml; ruff's T20 rules keep `print(` out of the
library. Each breach is made in a copy of the package, never in the source tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "agentledger"
BIN = Path(sys.executable).parent


def lint_imports(source_root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the project's contracts, over the package found in `source_root`."""
    env = {**os.environ, "PYTHONPATH": str(source_root)}
    return subprocess.run(
        [str(BIN / "lint-imports"), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=source_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package's Python files, to break on purpose."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(
        PACKAGE,
        root / "agentledger",
        ignore=lambda folder, names: [
            name
            for name in names
            if not name.endswith(".py") and not (Path(folder) / name).is_dir()
        ],
    )
    return root


def breach(package_copy: Path, module: str, line: str) -> Path:
    """Append `line` to `module`, a path inside the copied package."""
    path = package_copy / "agentledger" / module
    path.write_text(path.read_text() + "\n" + line + "\n")
    return path


def test_the_contracts_hold_for_the_package(package_copy: Path) -> None:
    done = lint_imports(package_copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # A lower layer reaching up: the store importing a judge.
        (
            "store/verify.py",
            "from agentledger.judges import verdict as _verdict  # noqa",
            "Each package imports only the packages below it BROKEN",
        ),
        # The shell knowledge reaching up into the gated shell (what this layering removed).
        (
            "shell/knowledge.py",
            "import agentledger.runner.shell_gate.policy  # noqa",
            "Each package imports only the packages below it BROKEN",
        ),
        # A library module importing click, directly or through the CLI.
        (
            "records/filters.py",
            "import click  # noqa",
            "The library outside cli never imports click BROKEN",
        ),
        # The three cycles store/ had, made again: the seam and its journal, the S3 client and
        # the backends registry, a ledger helper and the ledger.
        (
            "store/storage/base.py",
            "from agentledger.store.storage import journal as _journal  # noqa",
            "No import cycle in store/ (between its modules and sub-rooms, nor inside them) BROKEN",
        ),
        (
            "store/storage/s3/client.py",
            "from agentledger.store import backends as _backends  # noqa",
            "No import cycle in store/ (between its modules and sub-rooms, nor inside them) BROKEN",
        ),
        (
            "store/writer.py",
            "from agentledger.store import ledger as _ledger  # noqa",
            "No import cycle in store/ (between its modules and sub-rooms, nor inside them) BROKEN",
        ),
        (
            "gates/decision_markdown.py",
            "from agentledger.cli import filters as _filters  # noqa",
            "Each package imports only the packages below it BROKEN",
        ),
    ],
)
def test_a_deliberate_bad_import_breaks_a_contract(
    package_copy: Path, module: str, line: str, contract: str
) -> None:
    path = package_copy / "agentledger" / module
    original = path.read_text()
    breach(package_copy, module, line)
    try:
        done = lint_imports(package_copy)
    finally:
        path.write_text(original)
    assert done.returncode == 1, done.stdout + done.stderr
    assert contract in done.stdout


def ruff_t20(filename: str, source: str) -> subprocess.CompletedProcess[str]:
    """ruff's print rules on `source`, as if it were the project's file `filename`."""
    return subprocess.run(
        [str(BIN / "ruff"), "check", "--select", "T20", "--stdin-filename", filename, "-"],
        cwd=ROOT,
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_print_in_the_library_fails_lint_and_in_the_cli_does_not() -> None:
    source = "def show(text: str) -> None:\n    print(text)\n"
    library = ruff_t20("src/agentledger/store/show.py", source)
    assert library.returncode == 1 and "T201" in library.stdout
    cli = ruff_t20("src/agentledger/cli/show.py", source)
    assert cli.returncode == 0, cli.stdout
