"""The docs match the code: generated reference pages, and every shown command output."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATE = ROOT / "docs" / "generate.py"


@functools.cache
def _checked() -> ModuleType:
    spec = importlib.util.spec_from_file_location("checked", ROOT / "docs" / "checked.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["checked"] = module
    spec.loader.exec_module(module)
    return module


def _generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATE), *args], capture_output=True, text=True, cwd=ROOT
    )


def _check_page(page: Path, capsys: pytest.CaptureFixture[str], *, check: bool = True) -> Result:
    """Run the generator on one page in this process: its exit code, stdout and stderr."""
    code = _checked().generate([page], check=check)
    out, err = capsys.readouterr()
    return Result(code, out, err)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def test_generated_docs_are_up_to_date() -> None:
    """The reference pages and every checked block of README.md and docs/*.md."""
    done = _generate("--check")
    assert done.returncode == 0, done.stderr + " (run `make docs` and commit the result)"
    # the blocks nobody can check here are named, so they are not mistaken for checked output
    assert "illustrative, not checked: docs/rules-judge.md:" in done.stdout
    assert "illustrative, not checked: docs/guard.md:" in done.stdout


def test_every_command_block_in_the_docs_is_marked() -> None:
    checked = _checked()
    for path in checked.checked_files():
        _, blocks = checked.parse(path, path.read_text(encoding="utf-8"))  # raises if unmarked
        for _start, _end, block in blocks:
            if block is not None and block.kind == "check":
                assert block.argument.split()[0] in checked.SETUPS, block.label


DRIFTED = """# Page

Some prose.

<!-- check: empty -->
```
$ agentledger exec --dry-run -- 'ls /srv'
command:         ls /srv
classification:  destructive
$ echo $?
0
```

<!-- illustrative: needs a model key -->
```
$ agentledger judge --judge llm:anthropic/claude-sonnet-4-5
Judge llm-0000 ...
```
"""


def test_a_drifted_output_fails_the_check_naming_file_and_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(DRIFTED)
    done = _check_page(page, capsys)
    assert done.returncode == 1
    assert f"out of date: {page}:6 `agentledger exec --dry-run -- 'ls /srv'`" in done.stderr
    assert page.read_text() == DRIFTED  # --check writes nothing
    assert f"illustrative, not checked: {page}:15" in done.stdout


def test_regenerating_writes_the_real_output_and_then_the_check_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(DRIFTED)
    assert _check_page(page, capsys, check=False).returncode == 0
    text = page.read_text()
    assert "classification:  read-only\n  read-only      ls /srv\n" in text
    assert "decision:        allowed (by policy)\n" in text
    assert "$ echo $?\n0\n```" in text
    assert "Judge llm-0000 ...\n" in text  # an illustrative block is left as written
    assert text.startswith("# Page\n\nSome prose.\n\n<!-- check: empty -->\n```\n$ agentledger")
    assert _check_page(page, capsys).returncode == 0


def test_an_unmarked_command_block_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n```\n$ agentledger runs\nnothing\n```\n")
    done = _check_page(page, capsys)
    assert done.returncode == 2
    assert f"{page}:3: a block shows commands but has no marker" in done.stderr


def test_an_unknown_setup_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- check: production -->\n```\n$ agentledger runs\n```\n")
    done = _check_page(page, capsys)
    assert done.returncode == 2
    assert f"{page}:2: unknown set-up 'production'; choose from empty, samples" in done.stderr


def test_a_file_block_is_written_for_the_blocks_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- check: empty file=conf/p.yaml -->\n```yaml\nschema_version: 1\nmode: yolo\n```\n\n"
        "<!-- check: empty -->\n```\n$ agentledger exec --policy conf/p.yaml --dry-run -- ls\n```\n"
    )
    assert _check_page(page, capsys, check=False).returncode == 0
    assert "Error: conf/p.yaml, field 'mode':" in page.read_text()


def test_what_varies_between_runs_is_normalised_and_typed_back(tmp_path: Path) -> None:
    checked = _checked()
    normaliser = checked.Normaliser(tmp_path)
    today = checked.datetime.now(checked.UTC).date()
    stamp = today.strftime("%Y%m%d") + "T214512Z"
    week = f"{today.isocalendar()[0]}-W{today.isocalendar()[1]:02d}"
    output = (
        f"run f2b_scripted-hasty_{stamp}_9fc98c ok\n"
        f"run f2b_scripted-hasty_{stamp}_00aa11 ok   \n"
        f"again f2b_scripted-hasty_{stamp}_9fc98c\n"
        f"started {today.isoformat()} 21:45  at {today.isoformat()}T21:45:12.123456Z\n"
        f"written to {tmp_path}/ledger in 1.37s\n"
        f'{{"duration_ms": 12.5, "week": "{week}"}}\n'
        "kept: use_case_m_haiku_20260312 on 2026-03-12 00:00\n"
    )
    assert normaliser.text(output) == (
        "run f2b_scripted-hasty_20260501T120000Z_000001 ok\n"
        "run f2b_scripted-hasty_20260501T120000Z_000002 ok\n"
        "again f2b_scripted-hasty_20260501T120000Z_000001\n"
        "started 2026-05-01 12:00  at 2026-05-01T12:00:00.000000Z\n"
        "written to /home/ops/work/ledger in 0.00s\n"
        '{"duration_ms": 0.0, "week": "2026-W18"}\n'
        "kept: use_case_m_haiku_20260312 on 2026-03-12 00:00\n"
    )
    # a shown id typed into a later command is the real one again
    assert normaliser.command("show f2b_scripted-hasty_20260501T120000Z_000002") == (
        f"show f2b_scripted-hasty_{stamp}_00aa11"
    )


def test_only_plain_agentledger_lines_run_in_process() -> None:
    checked = _checked()
    plain = checked._plain_agentledger
    assert plain("agentledger runs --model 'a b'") == ["runs", "--model", "a b"]
    assert plain("agentledger run suite \\\n    --model m") == ["run", "suite", "--model", "m"]
    assert plain("agentledger runs | head -3") is None
    assert plain("agentledger runs > out.txt") is None
    assert plain("echo $?") is None
    assert plain("agentledger exec --dry-run -- ls") is None  # its own fast entry point
    assert plain("agentledger guard --expect e.json") is None
