"""`agentledger agreement`: how far two sources (judges, label sets) agree on the same runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import click

from agentledger.cli.common import handle_errors, ledger_option, open_ledger
from agentledger.cli.filters import build_filter, run_filter_options
from agentledger.cli.output import write_text_output

__all__ = ["agreement_command"]


@click.command("agreement")
@click.option("--a", "a_spec", required=True, metavar="SOURCE", help="Source A (rated).")
@click.option("--b", "b_spec", required=True, metavar="SOURCE", help="Source B (the reference).")
@ledger_option
@run_filter_options
@click.option(
    "--positive",
    default="Unsafe",
    show_default=True,
    metavar="VERDICT",
    help="The verdict of the binary collapse (VERDICT against the rest).",
)
@click.option("--by", type=click.Choice(("model", "scenario")), help="Also per model or scenario.")
@click.option(
    "--split",
    "split_part",
    type=click.Choice(("dev", "test")),
    help="Only the runs of this part of the label source's newest split.",
)
@click.option(
    "--allow-dev",
    is_flag=True,
    help="Report a judge on labels it was developed against, flagging every such run.",
)
@click.option(
    "--bootstrap",
    type=int,
    metavar="N",
    help="Interval from N seeded bootstrap resamples [default: analytic].",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --bootstrap.")
@click.option(
    "--target-width",
    type=float,
    metavar="W",
    help="Say how many runs would bring the 95%% interval under W wide (e.g. 0.1).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "md", "html", "json")),
    default="text",
    show_default=True,
    help="text (rich on a terminal), md, html (one self-contained page) or json.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), metavar="FILE", help="Write to FILE."
)
@handle_errors
def agreement_command(
    a_spec: str,
    b_spec: str,
    ledger_path: Path | None,
    positive: str,
    by: str | None,
    split_part: str | None,
    allow_dev: bool,
    bootstrap: int | None,
    seed: int,
    target_width: float | None,
    fmt: str,
    as_json: bool,
    output: Path | None,
    **filters: Any,
) -> None:
    """How far source A agrees with source B (the reference) on the runs both rated.

    \b
    SOURCE  judge:ID (or an unambiguous prefix)   judge:rules / judge:llm (the newest)
            labels:NAME (one label source)        labels:human (every person)

    Per criterion and for the verdict (three-way, and POSITIVE against the rest): n, observed
    agreement, Cohen's kappa with a 95% interval, precision / recall / F1 of A against B, the
    confusion matrix, and the runs where they disagree. Nulls (skipped, cannot assess,
    cannot tell) are counted apart. Agent runs only unless --kind says otherwise.

    A judge is refused (exit 2) on labels it declares it was developed against; grade it on
    held-out labels with --split test (see `agentledger labels split`).
    """
    from agentledger.analysis.agreement import agreement_report
    from agentledger.report import render

    run_filter = build_filter(**filters)
    with open_ledger(ledger_path) as ledger:
        report = agreement_report(
            ledger,
            a_spec,
            b_spec,
            run_filter,
            positive=positive,
            by=by,
            bootstrap=bootstrap,
            seed=seed,
            split=split_part,
            allow_dev=allow_dev,
            target_width=target_width,
        )
    tty = output is None and sys.stdout.isatty()
    width = shutil.get_terminal_size().columns if tty else 160
    fmt = "json" if as_json else fmt
    text = render([report], fmt, color=tty, width=width, title="agentledger agreement")
    write_text_output(text, output)
