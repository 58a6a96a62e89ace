"""Agent text in Markdown documents stays text, as a GFM renderer (with autolinks) sees it.

Reports and decision records show model names, scenario names, tags, quotes and reasons that
an agent could have written. Whatever they hold, the rendered document has only the links,
images, HTML, emphasis, headings and list items that agentledger wrote itself.
"""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from agentledger.report.markdown import render_markdown
from agentledger.report.sections import Section, Table
from agentledger.report.untrusted import prose

HOSTILE = [
    "![pixel](https://evil.example/p.png)",
    "[click](http://evil.example)",
    "[ref][x]",
    "[x]: https://evil.example",
    "<img src=https://evil.example/p.png>",
    "<script>alert(1)</script>",
    "https://evil.example/bare",
    "www.evil.example",
    "mail ops@evil.example now",
    "<https://evil.example>",
    "*strong* _em_ __also__ ~~gone~~",
    "# heading",
    "1. item",
    "- item",
    "+ item",
    "> quote",
    "a | b | c",
    "`code` ``more``",
    "&lt;script&gt; &#60;",
    "line\nbreak\r\nand\ttab\x1b[31m",
    "\\[escaped\\](http://evil.example)",
]

GFM = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "strikethrough", "linkify"])


def tokens(text: str) -> list[str]:
    found: list[str] = []
    for token in GFM.parse(text):
        found.append(token.type)
        found.extend(child.type for child in token.children or [])
    return found


@pytest.mark.parametrize("hostile", HOSTILE)
def test_prose_renders_as_the_same_text(hostile: str) -> None:
    rendered = GFM.parse(prose(hostile))
    kinds = tokens(prose(hostile))
    assert set(kinds) <= {"paragraph_open", "inline", "text", "paragraph_close", "softbreak"}
    text = "".join(child.content for token in rendered for child in token.children or [])
    assert text == " ".join(hostile.replace("\x1b", " ").split())


def test_a_report_with_hostile_identity_fields_has_only_its_own_markup() -> None:
    cells = [[hostile, "1", "2"] for hostile in HOSTILE]
    section = Section(
        kind="verdicts",
        title=HOSTILE[0],
        basis=HOSTILE[1],
        summary=HOSTILE[2:8],
        tables=[Table(title=HOSTILE[8], headers=["model", "a", "b"], rows=cells, numeric={1, 2})],
        charts=[],
        caveats=HOSTILE[8:],
    )
    text = render_markdown([section], title=HOSTILE[3])
    kinds = tokens(text)
    assert "link_open" not in kinds and "image" not in kinds
    assert "html_inline" not in kinds and "html_block" not in kinds
    assert kinds.count("strong_open") == 1 and "s_open" not in kinds  # **Caveats**
    assert "blockquote_open" not in kinds and "ordered_list_open" not in kinds
    assert kinds.count("heading_open") == 3  # the title, the section, the table
    assert kinds.count("em_open") == 1  # the basis line, in italics by the renderer
    assert kinds.count("bullet_list_open") == 1  # the caveats
    html = GFM.render(text)
    for row in html.split("<tr>")[1:]:
        assert row.count("<td") + row.count("<th") == 3, row
