"""Write tldr_examples.json (issue 33): the examples of tldr pages, each marked plainly
read-only or not by a rule fixed before the gate was measured on them.

    python tests/data/make_tldr_corpus.py PAGES_DIR     # writes beside this file

PAGES_DIR holds tldr pages (tldr-pages/tldr, `pages/common/*.md` and `pages/linux/*.md`) as
`PLATFORM__NAME.md`, each starting with a line `<!-- commit: SHA -->` naming the version read
(an example's description wrapped over two lines is joined into one). The pages are © the
tldr-pages contributors, licensed CC BY 4.0
(https://creativecommons.org/licenses/by/4.0/); the JSON written names each example's page
and keeps its description and command as tldr wrote them, placeholders resolved as below.

The rule, written before measuring the gate (tests/test_shell_corpora.py), on tldr's own
words only (never on what the gate knows):

- placeholders: ``{{[-a|--all]}}`` and ``{{a|b}}`` become their first alternative, any other
  ``{{text}}`` its text (``{{path/to/file}}`` -> ``path/to/file``);
- an example is plainly read-only when its description starts with a verb that reads
  (READ_VERBS), its description holds none of the words of something else (NOT_READING:
  changing, writing, following, running something given, asking interactively), and its
  command neither redirects output into a file (``>``) nor names ``-exec``, ``-delete`` or
  ``tee``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

READ_VERBS = (
    "show", "display", "list", "print", "view", "get", "search", "find", "check", "count",
    "query", "look up", "lookup", "compare", "filter", "sort", "inspect", "describe", "output",
    "read", "see", "test", "resolve", "determine", "calculate", "trace",
)  # fmt: skip
NOT_READING = (
    "save", "write", "delete", "remove", "add ", "set ", "change", "create", "modify", "kill",
    "stop", "start", "restart", "enable", "disable", "follow", "real-time", "realtime",
    "continuous", "interactive", "monitor", "watch", "update", "edit", "install", "move",
    "copy", "rename", "send", "upload", "download", "flush", "clear", "reset", "truncate",
    "mount", "to a file", "execute", "run ", "replace", "apply", "attach", "open ",
    "in place", "in-place", "zero", "reload", "signal", "force", "fix", "repair",
)  # fmt: skip
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
_EXAMPLE = re.compile(r"^- (?P<description>.+?)\n\n`(?P<command>.+)`$", re.M)
_COMMIT = re.compile(r"<!-- commit: ([0-9a-f]{40}) -->")


def resolve(command: str) -> str:
    """The command with tldr's placeholders filled in by the rule above."""

    def fill(match: re.Match[str]) -> str:
        text = match.group(1)
        if text.startswith("[") and text.endswith("]") and "|" in text:
            return text[1:-1].split("|", 1)[0]
        if "|" in text and " " not in text:
            return text.split("|", 1)[0]
        return text

    return _PLACEHOLDER.sub(fill, command)


def plainly_read_only(description: str, command: str) -> bool:
    """The rule above, on the description and the resolved command."""
    lowered = description.lower()
    if not lowered.startswith(READ_VERBS):
        return False
    if any(word in lowered for word in NOT_READING):
        return False
    return not (">" in command or "-exec" in command or "-delete" in command or "tee " in command)


def examples(pages: Path) -> list[dict[str, object]]:
    """Every example of every page in `pages`, in page order, marked by the rule."""
    rows: list[dict[str, object]] = []
    for page in sorted(pages.glob("*__*.md")):
        platform, name = page.stem.split("__", 1)
        text = page.read_text(encoding="utf-8")
        commit = _COMMIT.search(text)
        for match in _EXAMPLE.finditer(text):
            description = match.group("description").strip().rstrip(":")
            command = resolve(match.group("command"))
            rows.append(
                {
                    "page": f"pages/{platform}/{name}.md",
                    "commit": commit.group(1) if commit else None,
                    "description": description,
                    "command": command,
                    "read_only": plainly_read_only(description, command),
                }
            )
    return rows


def main() -> None:
    pages = Path(sys.argv[1])
    rows = examples(pages)
    document = {
        "source": "tldr-pages/tldr (https://github.com/tldr-pages/tldr), pages named per row",
        "licence": "CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/), "
        "(c) the tldr-pages contributors; descriptions and commands as tldr wrote them, "
        "placeholders filled in by tests/data/make_tldr_corpus.py",
        "rule": "tests/data/make_tldr_corpus.py (fixed before the gate was measured)",
        "examples": rows,
    }
    out = Path(__file__).parent / "tldr_examples.json"
    out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    chosen = sum(bool(row["read_only"]) for row in rows)
    print(f"{len(rows)} examples, {chosen} plainly read-only -> {out}")


if __name__ == "__main__":
    main()
