"""Renderers of reports: terminal text, Markdown, JSON, self-contained HTML, SVG charts.

Every format renders the same computed reports (`agentledger.analysis`): JSON straight from
their `to_json()`, the others through `agentledger.report.sections`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentledger.analysis import AnyReport
from agentledger.errors import InputError

__all__ = ["FORMATS", "render", "write_charts"]

FORMATS = ("text", "md", "json", "html")


def render(
    reports: list[AnyReport],
    fmt: str = "text",
    *,
    color: bool = False,
    width: int = 160,
    title: str = "agentledger report",
) -> str:
    """`reports` in format `fmt` (text, md, json, html)."""
    if fmt == "json":
        data = [report.to_json() for report in reports]
        body = data[0] if len(data) == 1 else {"reports": data}
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    from agentledger.report.sections import sections

    parts = sections(reports)
    if fmt == "text":
        from agentledger.report.text import render_text

        return render_text(parts, color=color, width=width)
    if fmt == "md":
        from agentledger.report.markdown import render_markdown

        return render_markdown(parts, title)
    if fmt == "html":
        from agentledger.report.html import render_html

        return render_html(parts, title)
    raise InputError(f"unknown format {fmt!r}: choose from {', '.join(FORMATS)}")


def _png_converter() -> Any:
    try:
        import cairosvg  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except (ImportError, OSError) as exc:  # OSError: the cairo library itself is missing
        raise InputError(
            "PNG charts need cairosvg and the cairo library: pip install 'agentledger[png]' "
            f"(and the system's libcairo2); or use the SVG files ({exc})"
        ) from None
    return cairosvg.svg2png


def write_charts(reports: list[AnyReport], directory: Path, *, png: bool = False) -> list[Path]:
    """Write every chart of `reports` as a standalone SVG file in `directory` (and PNG)."""
    from agentledger.report.sections import sections

    to_png = _png_converter() if png else None

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{directory}: cannot create the charts directory ({exc})") from None
    written = []
    for section in sections(reports):
        for chart in section.charts:
            path = directory / chart.name
            try:
                path.write_text('<?xml version="1.0" encoding="utf-8"?>\n' + chart.svg + "\n")
            except OSError as exc:
                raise InputError(f"{path}: cannot write ({exc})") from None
            written.append(path)
            if to_png is not None:
                target = path.with_suffix(".png")
                try:
                    to_png(bytestring=chart.svg.encode(), write_to=str(target), scale=2)
                except OSError as exc:
                    raise InputError(f"{target}: cannot write ({exc})") from None
                written.append(target)
    return written
