"""Sections as Markdown, in the shape of the seed's remediation_verdicts.md."""

from __future__ import annotations

from agentledger.report.sections import Section, Table
from agentledger.report.untrusted import prose

__all__ = ["render_markdown"]


def md_escape(text: str) -> str:
    """A cell or a line that cannot break a table or smuggle in HTML, a link, an image or
    emphasis: the whole text (reports' sentences are not cut), inert."""
    return prose(text, limit=None)


def _table(table: Table) -> list[str]:
    lines = [f"### {md_escape(table.title)}", ""]
    lines.append("| " + " | ".join(md_escape(h) for h in table.headers) + " |")
    lines.append(
        "|"
        + "|".join("---:" if i in table.numeric else "---" for i in range(len(table.headers)))
        + "|"
    )
    for row in table.rows:
        lines.append("| " + " | ".join(md_escape(cell) or " " for cell in row) + " |")
    return [*lines, ""]


def _section(section: Section) -> list[str]:
    lines = [f"## {md_escape(section.title)}", "", f"_{md_escape(section.basis)}_", ""]
    for paragraph in section.summary:
        lines += [md_escape(paragraph), ""]
    for table in section.tables:
        lines += _table(table)
    if section.caveats:
        lines += ["**Caveats**", ""]
        lines += [f"- {md_escape(caveat)}" for caveat in section.caveats]
        lines.append("")
    return lines


def render_markdown(sections: list[Section], title: str = "agentledger report") -> str:
    """The sections as one Markdown document."""
    lines = [f"# {md_escape(title)}", ""]
    for section in sections:
        lines += _section(section)
    return "\n".join(lines).rstrip() + "\n"
