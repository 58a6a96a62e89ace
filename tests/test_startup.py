"""Commands run once per run or per file start with only what they use (issue 38): a whole
process each, as an agent's harness or a person's loop runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TRAJECTORIES = Path(__file__).resolve().parent / "data" / "openhands"


def _modules_after(argv: list[str], cwd: Path) -> tuple[int, set[str]]:
    """The exit code of `agentledger ARGV` and the modules it had imported by then."""
    code = (
        "import sys\n"
        f"sys.argv = ['agentledger', *{argv!r}]\n"
        "from agentledger._entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print(exc.code, file=sys.stderr)\n"
        "    print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    )
    status, modules = done.stderr.strip().splitlines()[-2:]
    return int(status or 0), set(modules.split())


@pytest.mark.slow
def test_an_import_loads_no_rich(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    status, _ = _modules_after(["init", str(ledger)], tmp_path)
    assert status == 0
    status, modules = _modules_after(
        ["import", "--ledger", str(ledger), "--format", "openhands", str(TRAJECTORIES)],
        tmp_path,
    )
    assert status == 0
    assert not {name for name in modules if name.split(".")[0] == "rich"}


def test_records_first_used_from_many_threads_at_once_validate_as_themselves() -> None:
    """The records build their validators when first used (defer_build); an import's sealing
    threads may first use one together, and each must get the record's own validator."""
    code = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from agentledger.records import RunMetadata, parse_shell_audit\n"
        "data = {'run_id': 'r', 'scenario': 's', 'model': 'm',\n"
        "        'system_prompt_hash': 'sha256:' + '0' * 64,\n"
        "        'started_at': '2026-03-01T00:00:00Z'}\n"
        'line = b\'{"command": "ls", "exit_code": 0}\'\n'
        "def use(_: int) -> tuple[str, str]:\n"
        "    return (RunMetadata.model_validate(data).run_id,\n"
        "            parse_shell_audit(line, 'x')[0].command)\n"
        "with ThreadPoolExecutor(16) as pool:\n"
        "    print(sorted(set(pool.map(use, range(64)))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[('r', 'ls')]", done.stderr


@pytest.mark.slow
def test_a_label_given_by_a_named_person_starts_no_subprocess(tmp_path: Path) -> None:
    """A person labelling run after run with --by: no git to ask, so subprocess is not loaded
    (nor rich); the label is written."""
    from datetime import UTC, datetime

    from agentledger import Ledger, RunMetadata
    from agentledger.identity import sha256_bytes

    root = tmp_path / "ledger"
    with Ledger.init(root) as ledger:
        writer = ledger.new_run(
            RunMetadata(
                run_id="use_case_m_model0_00001",
                scenario="use_case_m",
                model="model0",
                system_prompt_hash=sha256_bytes(b"prompt"),
                started_at=datetime(2026, 3, 1, tzinfo=UTC),
            )
        )
        writer.add_text("report.md", "# Report\n")
        writer.seal()
    argv = ["label", "use_case_m_model0_00001", "--ledger", str(root), "--verdict", "unsafe"]
    status, modules = _modules_after([*argv, "--by", "ada"], tmp_path)
    assert status == 0
    assert "subprocess" not in modules
    assert not {name for name in modules if name.split(".")[0] == "rich"}
    assert len(list((root / "labels" / "use_case_m_model0_00001").glob("*.json"))) == 1


@pytest.mark.slow
def test_a_label_given_by_flags_loads_neither_click_nor_importlib_metadata(
    tmp_path: Path,
) -> None:
    """`label` with its flags is parsed by hand (cli/label_fast.py), and pydantic's plugin
    loader is imported without importlib.metadata when no plugin is installed: neither is
    loaded, and the label is written."""
    root = tmp_path / "ledger"
    _labelled_ledger(root, "use_case_m_model0_00001")
    argv = ["label", "use_case_m_model0_00001", "--ledger", str(root), "--verdict", "unsafe"]
    status, modules = _modules_after([*argv, "--by", "ada"], tmp_path)
    assert status == 0
    assert not {name for name in modules if name.split(".")[0] == "click"}
    assert "importlib.metadata" not in modules
    assert len(list((root / "labels" / "use_case_m_model0_00001").glob("*.json"))) == 1


def test_pydantic_plugin_loader_imported_without_importlib_metadata_searches_as_before() -> None:
    """The loader's importlib.metadata is deferred, not replaced: a search it makes (its
    cache emptied) imports the real one and finds what importlib.metadata finds."""
    code = (
        "import sys\n"
        "from agentledger.records.plugin_search import skip_empty_plugin_search\n"
        "print(skip_empty_plugin_search(), 'importlib.metadata' in sys.modules)\n"
        "from pydantic.plugin import _loader\n"
        "_loader._plugins = None\n"
        "print(list(_loader.get_plugins()))\n"
        "print('importlib.metadata' in sys.modules)\n"
        "import importlib.metadata\n"
        "print(list(importlib.metadata.entry_points(group='pydantic')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n") == ["True False", "[]", "True", "[]", ""], done.stderr


def _labelled_ledger(root: Path, run_id: str) -> None:
    from datetime import UTC, datetime

    from agentledger import Ledger, RunMetadata
    from agentledger.identity import sha256_bytes

    with Ledger.init(root) as ledger:
        writer = ledger.new_run(
            RunMetadata(
                run_id=run_id,
                scenario="use_case_m",
                model="model0",
                system_prompt_hash=sha256_bytes(b"prompt"),
                started_at=datetime(2026, 3, 1, tzinfo=UTC),
            )
        )
        writer.add_text("report.md", "# Report\n")
        writer.seal()


def test_with_no_pydantic_plugin_installed_pydantic_is_told_so() -> None:
    """The cheap search says what importlib.metadata says (no plugin here), pydantic is given
    the empty answer, and models validate as before."""
    code = (
        "import importlib.metadata\n"
        "from agentledger.records.plugin_search import skip_empty_plugin_search\n"
        "print(skip_empty_plugin_search())\n"
        "from pydantic.plugin import _loader\n"
        "from agentledger.records.labels import LabelSource\n"
        "print(LabelSource(kind='person', name='ada').name, _loader._plugins)\n"
        "print(list(importlib.metadata.entry_points(group='pydantic')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n") == ["True", "ada {}", "[]", ""]


def test_pydantic_plugin_search_left_alone_when_disabled_by_the_user() -> None:
    code = (
        "from agentledger.records.plugin_search import skip_empty_plugin_search\n"
        "from pydantic.plugin import _loader\n"
        "print(skip_empty_plugin_search(), _loader._plugins)\n"
    )
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.strip() == "False None"


PLUGIN = """
import os


class Seen:
    def new_schema_validator(self, schema, schema_type, path, kind, config, settings):
        with open(os.environ["PLUGIN_SAW"], "a") as file:
            file.write(path.name + "\\n")
        return None, None, None


plugin = Seen()
"""


@pytest.mark.slow
def test_a_users_pydantic_plugin_still_sees_what_label_validates(tmp_path: Path) -> None:
    """A pydantic plugin installed beside agentledger (a distribution with a `pydantic` entry
    point) is loaded by `agentledger label` and sees the records it validates."""
    site = tmp_path / "site"
    (site / "seen_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "seen_plugin.py").write_text(PLUGIN)
    (site / "seen_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: seen-plugin\nVersion: 1.0\n"
    )
    (site / "seen_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[pydantic]\nseen = seen_plugin:plugin\n"
    )
    root = tmp_path / "ledger"
    _labelled_ledger(root, "use_case_m_model0_00001")
    saw = tmp_path / "saw.txt"
    code = (
        "import sys\n"
        "sys.argv = ['agentledger', 'label', 'use_case_m_model0_00001', '--ledger', "
        f"{str(root)!r}, '--verdict', 'safe', '--by', 'ada']\n"
        "from agentledger._entry import main\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site), "PLUGIN_SAW": str(saw)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Labelled use_case_m_model0_00001 by ada: Safe" in done.stdout
    assert {"LedgerConfig", "Label"} <= set(saw.read_text().split())
