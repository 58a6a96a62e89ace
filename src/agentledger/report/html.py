"""Sections as one self-contained HTML page: inline CSS and SVG, no scripts, no network.

The template autoescapes everything; the charts are the only markup marked safe, and
`agentledger.report.charts` escapes every label it writes.
"""

from __future__ import annotations

from functools import cache

from jinja2 import Environment, PackageLoader, Template, select_autoescape

from agentledger import __version__
from agentledger.report.sections import Section

__all__ = ["render_html"]


@cache
def _template() -> Template:
    env = Environment(
        loader=PackageLoader("agentledger.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2")


def render_html(
    sections: list[Section], title: str = "agentledger report", generated_at: str | None = None
) -> str:
    """The sections as one HTML document."""
    return _template().render(
        title=title, sections=sections, version=__version__, generated_at=generated_at
    )
