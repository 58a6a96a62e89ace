"""Every `--ledger NAME` the docs show is a ledger that exists when the line is copied."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The docs' shared set-up: the ledger `make demo` makes (docs/checked.py's `demo`).
DEMO = "agentledger-demo"
# Commands that make the ledger they are given.
MAKERS = ("import", "run", "init", "demo", "collect", "suites run", "variant run", "migrate")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*\]?$|^\.agentledger$|^\$")


def _command_lines(text: str) -> list[str]:
    """The agentledger command lines of a document (continuations joined)."""
    lines, joined = [], ""
    for raw in text.splitlines():
        line = raw.strip().removeprefix("$ ")
        joined = f"{joined} {line}" if joined else line
        if joined.endswith("\\"):
            joined = joined[:-1]
            continue
        for part in re.split(r"\s(?:&&|&|;|\|)\s", joined):
            if re.search(r"\bagentledger\s", part) and (
                "--ledger" in part or re.search(r"\bagentledger demo\s", part)
            ):
                lines.append(part[part.index("agentledger") :])
        joined = ""
    return lines


def _ledger_and_subcommand(line: str) -> tuple[str, str] | None:
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    if words[1:2] == ["demo"]:  # `agentledger demo [--labs] PATH` makes the ledger PATH
        places = [word for word in words[2:] if not word.startswith("-")]
        return (places[-1].strip("`"), "demo") if places else None
    for at, word in enumerate(words):
        name = word.split("=", 1)[1] if word.startswith("--ledger=") else None
        if word == "--ledger" and at + 1 < len(words):
            name = words[at + 1]
        if name is not None:
            return name.strip("`"), " ".join(words[1:3])
    return None


def test_make_demo_makes_the_ledger_the_docs_use() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert f"agentledger demo {DEMO}" in makefile
    assert "demo-ledger" not in (ROOT / "README.md").read_text()


def test_every_documented_ledger_is_made_by_the_demo_or_earlier_in_its_document() -> None:
    unknown = []
    for doc in DOCS:
        if doc.name == "cli.md":  # generated --help text: `--ledger PATH`
            continue
        made = {DEMO}
        for line in _command_lines(doc.read_text()):
            found = _ledger_and_subcommand(line)
            if found is None or PLACEHOLDER.match(found[0]):
                continue
            name, subcommand = found
            if subcommand.startswith(MAKERS):
                made.add(name)
            elif name not in made:
                unknown.append(f"{doc.name}: {line}")
    assert unknown == []
