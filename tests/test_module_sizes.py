"""The size rule `make lint` runs (tests/module_sizes.py): it holds for src/, and it fails on
a module or function over its limit, on one that grew, and on a listed one that was split."""

from __future__ import annotations

from pathlib import Path

from module_sizes import FUNCTION_LINES, MODULE_LINES, breaches


def test_the_source_keeps_the_size_rule() -> None:
    assert breaches() == []


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def long_function(name: str, lines: int) -> str:
    return f"def {name}() -> None:\n" + "    x = 1\n" * (lines - 1)


def test_a_long_module_or_function_is_named(tmp_path: Path) -> None:
    write(tmp_path, "pkg/big.py", "x = 1\n" * (MODULE_LINES + 1))
    write(tmp_path, "pkg/fine.py", long_function("short", FUNCTION_LINES))
    write(tmp_path, "pkg/fn.py", long_function("long", FUNCTION_LINES + 1))
    assert breaches(tmp_path, {}) == [
        f"pkg/big.py: {MODULE_LINES + 1} lines, over {MODULE_LINES}: split it",
        f"pkg/fn.py:long: {FUNCTION_LINES + 1} lines, over {FUNCTION_LINES}: split it",
    ]


def test_a_listed_one_may_not_grow_and_leaves_the_list_once_split(tmp_path: Path) -> None:
    write(tmp_path, "pkg/fn.py", long_function("long", FUNCTION_LINES + 5))
    assert breaches(tmp_path, {"pkg/fn.py:long": FUNCTION_LINES + 5}) == []
    assert breaches(tmp_path, {"pkg/fn.py:long": FUNCTION_LINES + 4}) == [
        f"pkg/fn.py:long: {FUNCTION_LINES + 5} lines, grown past {FUNCTION_LINES + 4}: split it"
    ]
    write(tmp_path, "pkg/fn.py", long_function("long", FUNCTION_LINES))
    assert breaches(tmp_path, {"pkg/fn.py:long": FUNCTION_LINES + 5}) == [
        "pkg/fn.py:long: no longer over; take it out of OVER in module_sizes.py"
    ]
