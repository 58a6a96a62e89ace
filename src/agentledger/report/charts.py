"""Charts as standalone SVG text: no scripts, no fonts to fetch, every label escaped.

Each function returns a complete ``<svg>`` element that works inline in the HTML report and as a
file of its own. Labels come from runs (model names, scenario ids) and are agent-controlled, so
every piece of text goes through `esc`.
"""

from __future__ import annotations

from html import escape
from typing import NamedTuple

from agentledger.analysis.stats import Rate

__all__ = [
    "VERDICT_COLOURS",
    "Bar",
    "esc",
    "heatmap",
    "interval_bars",
    "line_chart",
    "stacked_bars",
]

VERDICT_COLOURS = {
    "Safe": "#2e7d32",
    "Uncertain": "#f9a825",
    "Unsafe": "#c62828",
    "skipped": "#9e9e9e",
}
SERIES_COLOURS = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037")
# Presentation attributes, not a style attribute: a page whose Content-Security-Policy allows
# no inline style (the viewer's) shows the chart inline as it is.
FONT = 'font-family="system-ui,-apple-system,\'Segoe UI\',sans-serif" font-size="12"'


def esc(text: object) -> str:
    """Text safe inside SVG/HTML, attributes included."""
    return escape(str(text), quote=True)


def _clip(text: str, length: int = 28) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" {FONT}>'
        f"<title>{esc(title)}</title>" + "".join(body) + "</svg>"
    )


class Bar(NamedTuple):
    """One row of a stacked bar chart: a label and its segments (name, count)."""

    label: str
    segments: list[tuple[str, int]]


def stacked_bars(title: str, bars: list[Bar], colours: dict[str, str]) -> str:
    """A horizontal 100% stacked bar per row, counts written in the segments, a legend."""
    left, width, row_h = 190, 420, 26
    height = 40 + row_h * len(bars) + 30
    body = [f'<text x="10" y="20" font-weight="bold">{esc(title)}</text>']
    for i, bar in enumerate(bars):
        y = 34 + i * row_h
        total = sum(count for _, count in bar.segments)
        body.append(
            f'<text x="{left - 8}" y="{y + 14}" text-anchor="end">{esc(_clip(bar.label))}'
            f"<title>{esc(bar.label)}</title></text>"
        )
        x = float(left)
        for name, count in bar.segments:
            if not count or not total:
                continue
            w = width * count / total
            body.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 6}" '
                f'fill="{colours.get(name, "#777")}"><title>{esc(name)}: {count}</title></rect>'
            )
            if w >= 16:
                body.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + 14}" text-anchor="middle" '
                    f'fill="{"#222" if name == "Uncertain" else "#fff"}">{count}</text>'
                )
            x += w
        body.append(f'<text x="{left + width + 8}" y="{y + 14}">n={total}</text>')
    y = 34 + len(bars) * row_h + 8
    x = left
    for name, colour in colours.items():
        body.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/>')
        body.append(f'<text x="{x + 16}" y="{y + 10}">{esc(name)}</text>')
        x += 26 + 8 * len(name)
    return _svg(left + width + 60, height, title, body)


def interval_bars(title: str, groups: list[tuple[str, list[tuple[str, Rate]]]]) -> str:
    """Bars of shares with their 95% intervals as whiskers; one colour per series."""
    left, width, bar_h = 190, 400, 14
    series = sorted({name for _, rates in groups for name, _ in rates}, key=str)
    colour = {name: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, name in enumerate(series)}
    rows = sum(len(rates) for _, rates in groups)
    height = 44 + rows * (bar_h + 4) + len(groups) * 10 + 46
    body = [f'<text x="10" y="20" font-weight="bold">{esc(title)}</text>']
    y = 36
    for label, rates in groups:
        body.append(
            f'<text x="{left - 8}" y="{y + 11}" text-anchor="end">{esc(_clip(label))}</text>'
        )
        for name, rate in rates:
            share = rate.share or 0.0
            low, high = rate.interval
            body.append(
                f'<rect x="{left}" y="{y}" width="{width * share:.1f}" height="{bar_h}" '
                f'fill="{colour[name]}" opacity="0.85"><title>{esc(name)}: {rate.k}/{rate.n}'
                f"</title></rect>"
            )
            if rate.n:
                cy = y + bar_h / 2
                body.append(
                    f'<line x1="{left + width * low:.1f}" x2="{left + width * high:.1f}" '
                    f'y1="{cy}" y2="{cy}" stroke="#222" stroke-width="1.5"/>'
                )
            body.append(f'<text x="{left + width + 8}" y="{y + 11}">{esc(rate.percent())}</text>')
            y += bar_h + 4
        y += 10
    body.extend(_axis(left, width, 34, y - 6))
    body.extend(_legend(series, colour, left, y + 18))
    legend_w = sum(30 + 7 * min(len(name), 40) for name in series)
    return _svg(left + max(width + 110, legend_w), height, title, body)


def _axis(left: int, width: int, top: float, bottom: float) -> list[str]:
    out = []
    for tick in (0, 25, 50, 75, 100):
        x = left + width * tick / 100
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="#ccc" '
            'stroke-dasharray="2,3"/>'
        )
        out.append(f'<text x="{x:.1f}" y="{bottom + 12}" text-anchor="middle">{tick}%</text>')
    return out


def _legend(names: list[str], colour: dict[str, str], x: int, y: float) -> list[str]:
    out = []
    for name in names:
        out.append(f'<rect x="{x}" y="{y + 8}" width="12" height="12" fill="{colour[name]}"/>')
        out.append(f'<text x="{x + 16}" y="{y + 18}">{esc(_clip(name, 40))}</text>')
        x += 30 + 7 * min(len(name), 40)
    return out


def heatmap(
    title: str, rows: list[str], columns: list[str], cells: dict[str, dict[str, Rate]]
) -> str:
    """Rows x columns, each cell shaded by its rate and labelled k/n."""
    left, cell_w, cell_h, top = 60, 86, 26, 110
    width = left + cell_w * len(columns) + 120  # room for the last slanted label
    height = top + cell_h * len(rows) + 20
    body = [f'<text x="10" y="20" font-weight="bold">{esc(title)}</text>']
    for j, column in enumerate(columns):
        x = left + j * cell_w + cell_w / 2
        body.append(
            f'<text transform="translate({x:.1f},{top - 6}) rotate(-35)">'
            f"{esc(_clip(column, 22))}<title>{esc(column)}</title></text>"
        )
    for i, row in enumerate(rows):
        y = top + i * cell_h
        body.append(f'<text x="{left - 8}" y="{y + 17}" text-anchor="end">{esc(row)}</text>')
        for j, column in enumerate(columns):
            rate = cells.get(row, {}).get(column)
            x = left + j * cell_w
            if rate is None or not rate.n:
                fill, label = "#f4f4f4", ""
            else:
                share = rate.share or 0.0
                fill = f"rgba(198,40,40,{0.08 + 0.8 * share:.2f})"
                label = f"{rate.k}/{rate.n}"
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" fill="{fill}">'
                f"<title>{esc(row)} on {esc(column)}: {esc(label or 'no run')}</title></rect>"
            )
            if label:
                body.append(
                    f'<text x="{x + cell_w / 2 - 1:.1f}" y="{y + 17}" '
                    f'text-anchor="middle">{esc(label)}</text>'
                )
    return _svg(width, height, title, body)


def line_chart(title: str, x_labels: list[str], series: dict[str, list[Rate | None]]) -> str:
    """Shares over ordered groups (weeks), one line per series, intervals as whiskers."""
    left, top, plot_w, plot_h = 50, 34, max(300, 46 * len(x_labels)), 200
    names = list(series)
    colour = {name: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, name in enumerate(names)}
    step = plot_w / max(1, len(x_labels))
    body = [f'<text x="10" y="20" font-weight="bold">{esc(title)}</text>']
    for tick in (0, 25, 50, 75, 100):
        y = top + plot_h * (1 - tick / 100)
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        body.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}%</text>')
    for j, label in enumerate(x_labels):
        x = left + step * (j + 0.5)
        body.append(
            f'<text transform="translate({x:.1f},{top + plot_h + 14}) rotate(30)">'
            f"{esc(_clip(label, 12))}</text>"
        )
    for i, (name, rates) in enumerate(series.items()):
        points = []
        nudge = min(4.0, step / (2 * len(names))) * (i - (len(names) - 1) / 2)
        for j, rate in enumerate(rates):
            if rate is None or not rate.n:
                continue
            x = left + step * (j + 0.5) + nudge
            low, high = rate.interval
            y = top + plot_h * (1 - (rate.share or 0.0))
            points.append(f"{x:.1f},{y:.1f}")
            body.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + plot_h * (1 - low):.1f}" '
                f'y2="{top + plot_h * (1 - high):.1f}" stroke="{colour[name]}" opacity="0.4"/>'
            )
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour[name]}">'
                f"<title>{esc(name)} {esc(x_labels[j])}: {esc(rate.percent())} "
                f"({rate.k}/{rate.n})</title></circle>"
            )
        if len(points) > 1:
            body.append(
                f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour[name]}"/>'
            )
    height = top + plot_h + 84
    body.extend(_legend(names, colour, left, top + plot_h + 50))
    legend_w = sum(30 + 7 * min(len(name), 40) for name in names)
    return _svg(left + max(plot_w, legend_w) + 20, height, title, body)
