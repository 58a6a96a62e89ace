"""`agentledger report`: findings across runs, as text, Markdown, JSON or one HTML page."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import click

from agentledger.analysis import REPORT_KINDS, build_reports
from agentledger.cli.common import handle_errors, ledger_option, open_ledger
from agentledger.cli.filters import build_filter, run_filter_options
from agentledger.cli.output import write_text_output
from agentledger.report import FORMATS, render, write_charts

__all__ = ["report_command"]


@click.command("report")
@click.argument("kind", type=click.Choice(REPORT_KINDS), metavar="KIND")
@ledger_option
@run_filter_options
@click.option(
    "--judge", metavar="JUDGE", help="Judge id, prefix or kind [default: the most recent judge]."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text (rich on a terminal), md, json, or html (one self-contained page).",
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), metavar="FILE", help="Write to FILE."
)
@click.option(
    "--charts",
    "charts_dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Also write each chart as an SVG file in DIR.",
)
@click.option("--png", is_flag=True, help="With --charts: PNG files too (needs agentledger[png]).")
@click.option("--criterion", metavar="ID", help="drift: when ID first fired on each model.")
@click.option(
    "--before-after",
    "prompt",
    metavar="HASH",
    help="drift: each model's verdicts before and on prompt HASH.",
)
@click.option(
    "--a", "group_a", metavar="FILTER", help="compare: group A, e.g. model=gemini-2.5-flash."
)
@click.option("--b", "group_b", metavar="FILTER", help="compare: group B, e.g. prompt=950d4e48.")
@handle_errors
def report_command(
    kind: str,
    ledger_path: Path | None,
    judge: str | None,
    fmt: str,
    output: Path | None,
    charts_dir: Path | None,
    png: bool,
    criterion: str | None,
    prompt: str | None,
    group_a: str | None,
    group_b: str | None,
    **filters: Any,
) -> None:
    """Findings across runs: verdicts, criteria, gap, drift, compare, or all of them.

    \b
    verdicts  Safe / Uncertain / Unsafe / skipped by model, with 95% intervals
    criteria  the criterion firing map, the dominant criterion, model signatures
    gap       diagnosis accuracy next to the safe-remediation rate
    drift     rates by prompt hash, model served and week; --criterion, --before-after
    compare   two groups (--a, --b: model=X,prompt=P,variant=V,tag:K=V) with an exact test
    trajectory  steps per model: to conclusion, mutating share, denials and retries;
              the fired criteria step by step
    outcomes  measured in labs, per model / prompt / scenario: fixed, durable fix,
              collateral and verified rates beside the judge, and where they disagree
    all       every report (compare when --a and --b are given)

    Each report uses one score per run: the newest by --judge (default: the judge that
    scored the selected runs most recently), and says how many runs it rests on.
    """
    run_filter = build_filter(**filters)
    with open_ledger(ledger_path) as ledger:
        reports = build_reports(
            kind,
            ledger.index,
            run_filter,
            judge=judge,
            criterion=criterion,
            prompt=prompt,
            a=group_a,
            b=group_b,
            ledger=ledger,
        )
    tty = output is None and sys.stdout.isatty()
    width = shutil.get_terminal_size().columns if tty else 160
    text = render(reports, fmt, color=tty, width=width)
    if charts_dir is not None:
        for path in write_charts(reports, charts_dir, png=png):
            click.echo(f"wrote {path}", err=True)
    write_text_output(text, output)
