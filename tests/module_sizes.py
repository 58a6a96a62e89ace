"""`make lint`'s size rule: no module in src/ over 600 lines, no function over 100.

The modules and functions named in `OVER` are over already: each may not grow past the size
given, and leaves the list once split (the check then says so). Run as a script (exit 1 and
a line for each breach); tests/test_module_sizes.py holds it to its own rule.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MODULE_LINES = 600
FUNCTION_LINES = 100
SRC = Path(__file__).resolve().parent.parent / "src"

OVER: dict[str, int] = {}
"""Known to be over, with the most each may have (the issue of splitting them: 34)."""


def sizes(src: Path = SRC) -> dict[str, int]:
    """The length of every module over `MODULE_LINES` and function over `FUNCTION_LINES`."""
    found: dict[str, int] = {}
    for path in sorted(src.rglob("*.py")):
        name = path.relative_to(src).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            found[name] = lines
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    found[f"{name}:{node.name}"] = length
    return found


def breaches(src: Path = SRC, over: dict[str, int] = OVER) -> list[str]:
    """What breaks the rule, a line each: too long and not listed, grown, or listed but split."""
    found = sizes(src)
    problems = []
    for name, length in sorted(found.items()):
        limit = FUNCTION_LINES if ":" in name else MODULE_LINES
        if name not in over:
            problems.append(f"{name}: {length} lines, over {limit}: split it")
        elif length > over[name]:
            problems.append(f"{name}: {length} lines, grown past {over[name]}: split it")
    for name in sorted(set(over) - set(found)):
        problems.append(f"{name}: no longer over; take it out of OVER in {Path(__file__).name}")
    return problems


def main() -> int:
    problems = breaches()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
