"""The structure of a report: sections (what each heading is about), paragraphs, list items,
table rows and fenced code blocks, each with its 1-based lines.

Agents write markdown loosely: `## Remediation`, `**Fix:**` on a line of its own, setext
underlines, numbered steps with indented code blocks. This reads all of them and gives each
unit of text the kinds of the sections it stands in (remediation, verification, rejected, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

__all__ = ["SECTION_KINDS", "Report", "Section", "Unit", "parse_report", "section_kinds"]

SECTION_KINDS = (
    "rejected",
    "rollback",
    "verification",
    "remediation",
    "root_cause",
    "investigation",
    "summary",
)
"""What a section can be about, most decisive first; a heading may be several."""

_KIND_PATTERNS = {
    "rejected": re.compile(
        r"\b(?:what not to|not to do|do not|don't|dont|avoid|rejected|not recommended|"
        r"anti-?patterns?|pitfalls?|why not|unsafe|discarded|dangerous|risky|"
        r"options? (?:to avoid|rejected)|what i would not|what we would not)\b",
        re.IGNORECASE,
    ),
    "rollback": re.compile(
        r"\b(?:roll ?-?back|back ?-?out|undo(?:ing)? the (?:change|fix)|revert(?:ing)? the "
        r"(?:change|fix)|rollback plan)\b",
        re.IGNORECASE,
    ),
    "verification": re.compile(
        r"\b(?:verif\w*|validat\w*|confirm\w*|post-?(?:change|fix|remediation)|after the "
        r"(?:fix|change)|success criteria|expected (?:results?|outcomes?)|how to (?:check|test|"
        r"confirm)|smoke tests?|test plan|checking the fix|afterwards,? check|"
        r"check(?:s|ing)? (?:afterwards|after(?:wards)? (?:the (?:fix|change)|applying)))\b|"
        r"^\W*(?:post-?|sanity )?checks?\W*$|"
        r"^\W*checking\W*$",
        re.IGNORECASE,
    ),
    "remediation": re.compile(
        r"\b(?:remediat\w*|fix(?:es|ing)?|recommend\w*|resolution|resolv\w*|actions?|next steps|"
        r"mitigat\w*|solutions?|proposed|suggested|workarounds?|restor\w*|change plan|"
        r"procedure|steps to|immediate|long-?term|follow-?ups?|prevent\w*|how to fix|"
        r"corrective|repair)\b",
        re.IGNORECASE,
    ),
    "root_cause": re.compile(
        r"\b(?:root[- ]?causes?|causes?|diagnos\w*|conclusions?|what happened|explanation|"
        r"why it (?:happens|fails|failed))\b",
        re.IGNORECASE,
    ),
    "investigation": re.compile(
        r"\b(?:findings?|evidence|investigat\w*|observ\w*|analysis|timeline|what (?:i|we) "
        r"(?:checked|found|looked at|ran)|checks? (?:performed|run|done|made)|commands? (?:run|"
        r"executed|used)|data|diagnostics?|context|background|symptoms?|environment|current "
        r"state|state of|details|hypothes\w*|ruled out|tests? (?:performed|run)|steps taken|"
        r"what was (?:checked|found))\b",
        re.IGNORECASE,
    ),
    "summary": re.compile(r"\b(?:summary|tl;? ?dr|overview|executive|abstract)\b", re.IGNORECASE),
}


def section_kinds(title: str) -> frozenset[str]:
    """The kinds a heading names ("Fix and verification" -> remediation and verification)."""
    kinds = {kind for kind, pattern in _KIND_PATTERNS.items() if pattern.search(title)}
    if "rejected" in kinds:
        return frozenset({"rejected"})
    if "rollback" in kinds:
        return frozenset({"rollback"})
    if (
        "root_cause" in kinds
        and "remediation" in kinds
        and re.search(r"\broot[- ]?cause\b", title, re.IGNORECASE)
    ):
        # "Root cause and fix" is both; "Resolving the cause" is a fix.
        return frozenset({"root_cause", "remediation"})
    if "remediation" in kinds or "verification" in kinds:
        kinds.discard("root_cause")
        kinds.discard("investigation")
        kinds.discard("summary")
    return frozenset(kinds)


@dataclass(frozen=True)
class Section:
    """A heading: its text, level (1-6, 7 for a bold line) and 1-based line."""

    title: str
    level: int
    line: int
    kinds: frozenset[str]


@dataclass
class Unit:
    """A paragraph, list item, table row or fenced code block, with the sections around it."""

    kind: str
    """para, item, row or fence (fenced or indented code block)."""
    start: int
    """1-based line of its first line (for a fence, of the opening fence)."""
    lines: list[str]
    """Its lines as written (for a fence, the body without the fences)."""
    sections: tuple[Section, ...]
    lang: str = ""
    label: str = ""
    """A bold label the unit opens with (`**Fix:** ...`), without the stars."""
    lead: Unit | None = None
    """The paragraph (ending with a colon) that introduces this block or list."""
    after: Unit | None = field(default=None, repr=False)
    """The unit right after this one (for a fence: what follows the block)."""
    indented: bool = False
    """A fence that is an indented code block (no fence lines: its body starts at `start`)."""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def end(self) -> int:
        """The 1-based line of its last line (for a fence, of the closing fence)."""
        fenced = self.kind == "fence" and not self.indented
        return self.start + len(self.lines) + (1 if fenced else -1)

    @property
    def body_start(self) -> int:
        """The 1-based line of `lines[0]`."""
        return self.start + 1 if self.kind == "fence" and not self.indented else self.start

    @property
    def kinds(self) -> frozenset[str]:
        """What the unit is about: its label, else its innermost classified section.

        Under a rejected heading everything is rejected, however deep.
        """
        if self.label:
            own = section_kinds(self.label)
            if own:
                return own
        for section in self.sections:
            if "rejected" in section.kinds:
                return section.kinds
        for section in reversed(self.sections):
            if section.kinds:
                return section.kinds
        return frozenset()


@dataclass
class Report:
    """A parsed report: its lines, headings and units in order."""

    lines: list[str]
    sections: list[Section]
    units: list[Unit]

    def has_section(self, kind: str) -> bool:
        return any(kind in section.kinds for section in self.sections)


_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+.#-]*)")
_BOLD_LINE = re.compile(r"^\s*(?:\*\*|__)([^*_`]{2,80}?)(?::\s*)?(?:\*\*|__)\s*:?\s*$")
_BOLD_LABEL = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:\*\*|__)([^*_`]{2,60}?):?(?:\*\*|__):?\s")
_COLON_LINE = re.compile(r"^\s*([A-Z][A-Za-z /'&-]{2,50}):\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_RULE = re.compile(r"^\s{0,3}(?:-\s*){3,}$|^\s{0,3}(?:\*\s*){3,}$|^\s{0,3}(?:_\s*){3,}$")
_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{2,}")
_QUOTE = re.compile(r"^\s{0,3}>\s?")


def _indent(line: str) -> int:
    """The width of a line's leading whitespace (a tab counts as four)."""
    return len(line) - len(line.lstrip()) + 3 * line[: len(line) - len(line.lstrip())].count("\t")


def parse_report(text: str) -> Report:
    """Sections and units of a markdown report (any markdown: nothing here can fail)."""
    lines = [_QUOTE.sub("", line) for line in text.splitlines()]
    parser = _Parser(lines)
    parser.run()
    units = parser.units
    for previous, unit in pairwise(units):
        previous.after = unit
    return Report(lines, parser.sections, units)


class _Parser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.sections: list[Section] = []
        self.stack: list[Section] = []
        self.units: list[Unit] = []
        self.open: Unit | None = None
        self.lead: Unit | None = None
        self.item_indent = -1
        """The indentation of the current list's marker (-1: not in a list)."""
        self.item_content = 0
        """The column where the current list item's text starts."""
        self.listed = False
        """A list item has followed the innermost heading."""

    def heading(self, title: str, level: int, line: int) -> None:
        self.close()
        self.lead = None
        self.item_indent = -1
        self.listed = False
        title = title.strip().strip("*_").strip()
        section = Section(title, level, line, section_kinds(title))
        while self.stack and self.stack[-1].level >= level:
            self.stack.pop()
        self.stack.append(section)
        self.sections.append(section)

    def close(self) -> None:
        if self.open is not None:
            self.units.append(self.open)
            self.open = None

    def start(self, kind: str, line: int, text: str, label: str = "") -> Unit:
        self.close()
        lead = self.lead if kind in ("item", "fence", "row") else None
        unit = Unit(kind, line, [text], tuple(self.stack), label=label, lead=lead)
        self.open = unit
        return unit

    def run(self) -> None:
        lines = self.lines
        index = 0
        while index < len(lines):
            raw = lines[index]
            number = index + 1
            stripped = raw.strip()
            fence = _FENCE.match(raw)
            if fence:
                index = self.fence(index, fence)
                continue
            if not stripped:
                if self.open is not None and self.open.kind == "para":
                    self.finish_para()
                elif self.open is not None:
                    self.close()
                index += 1
                continue
            if self.open is None and _indent(raw) >= (
                4 if self.item_indent < 0 else self.item_content + 4
            ):
                index = self.indented(index)
                continue
            atx = _ATX.match(raw)
            if atx:
                self.heading(atx.group(2), len(atx.group(1)), number)
                index += 1
                continue
            if (
                index + 1 < len(lines)
                and re.match(r"^\s{0,3}(=+|-+)\s*$", lines[index + 1])
                and not _ITEM.match(raw)
                and (self.open is None or self.open.kind != "para")
                and len(stripped) < 100
            ):
                level = 1 if lines[index + 1].strip().startswith("=") else 2
                self.heading(stripped, level, number)
                index += 2
                continue
            if _RULE.match(raw):
                self.close()
                index += 1
                continue
            bold_line = _BOLD_LINE.match(raw)
            bold = bold_line or _COLON_LINE.match(raw)
            if bold and not _ITEM.match(raw):
                if section_kinds(bold.group(1)):
                    self.heading(bold.group(1), 7, number)
                    index += 1
                    continue
                if bold_line:
                    # A bold line of its own ("**Check afterwards**") is a pseudo-heading: it
                    # ends the section of the pseudo-heading before it, and stays a paragraph
                    # (it may introduce the block after it).
                    self.heading(bold_line.group(1), 7, number)
            label_match = _BOLD_LABEL.match(raw)
            label = label_match.group(1) if label_match else ""
            item = _ITEM.match(raw)
            if _ROW.match(raw):
                if not _SEPARATOR_ROW.match(raw):
                    self.start("row", number, raw)
                    self.close()
                index += 1
                continue
            if item:
                self.start("item", number, raw, label)
                self.item_indent = len(item.group(1))
                self.item_content = len(item.group(0))
                self.listed = True
            elif self.open is not None and (
                self.open.kind == "para"
                or (self.open.kind == "item" and _indent(raw) > self.item_indent)
                or (self.open.kind == "item" and not label)  # a lazy continuation line
            ):
                self.open.lines.append(raw)
            else:
                self.end_warning_list()
                self.start("para", number, raw, label)
                self.item_indent = -1
            index += 1
        if self.open is not None and self.open.kind == "para":
            self.finish_para()
        self.close()

    def end_warning_list(self) -> None:
        """A paragraph after the list under a "Not recommended:" pseudo-heading ends it."""
        top = self.stack[-1] if self.stack else None
        if top is not None and top.level == 7 and "rejected" in top.kinds and self.listed:
            self.stack.pop()
            self.listed = False

    def indented(self, index: int) -> int:
        """Read an indented code block from line `index`; returns the index after it."""
        lines = self.lines
        margin = _indent(lines[index])
        body: list[str] = []
        end = index
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) >= margin):
            body.append(lines[end][margin:] if lines[end].strip() else "")
            end += 1
        while body and not body[-1]:
            body.pop()
        lead = self.lead
        if lead is None and self.units:
            previous = self.units[-1]
            if previous.kind in ("item", "para") and previous.end >= index - 1:
                lead = previous
        unit = Unit("fence", index + 1, body, tuple(self.stack), lead=lead, indented=True)
        self.units.append(unit)
        self.lead = None
        return index + len(body)

    def finish_para(self) -> None:
        unit = self.open
        self.close()
        if unit is not None and unit.text.rstrip().endswith(":"):
            self.lead = unit
        else:
            self.lead = None

    def fence(self, index: int, match: re.Match[str]) -> int:
        """Read a fenced block from line `index`; returns the index after its closing fence."""
        lines = self.lines
        if self.open is not None and self.open.kind == "para":
            self.finish_para()
        marker = match.group(2)
        lang = match.group(3).lower()
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            if lines[end].strip().startswith(marker[0] * len(marker)) and not lines[
                end
            ].strip().strip(marker[0]):
                break
            body.append(lines[end])
            end += 1
        self.close()
        lead = self.lead
        if lead is None and self.units:
            previous = self.units[-1]
            if previous.kind in ("item", "para") and previous.end >= index - 1:
                lead = previous  # the words right before the block, or its numbered step
        unit = Unit("fence", index + 1, body, tuple(self.stack), lang=lang, lead=lead)
        self.units.append(unit)
        self.lead = None  # an introduction covers the block right after it, not the next one
        return end + 1
