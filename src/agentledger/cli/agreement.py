"""`agentledger agreement` and `agentledger labels split` (in the `labels` group of
`agentledger.cli.labelling`): judge validity from the CLI."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from agentledger.cli.common import handle_errors, ledger_option, open_ledger
from agentledger.cli.filters import build_filter, run_filter_options
from agentledger.cli.output import print_rows, terminal_safe, write_text_output

__all__ = ["agreement_command", "split_command"]


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


@click.command("split")
@click.option(
    "--source", required=True, metavar="NAME", help="The label source (human: every person)."
)
@click.option(
    "--test-share",
    type=float,
    default=0.3,
    show_default=True,
    help="The share of runs held out in test (between 0 and 1).",
)
@click.option("--seed", required=True, metavar="S", help="Orders runs within each stratum.")
@ledger_option
@click.option("--json", "as_json", is_flag=True, help="Print the split record as JSON.")
@handle_errors
def split_command(
    source: str, test_share: float, seed: str, ledger_path: Path | None, as_json: bool
) -> None:
    """Hold out a share of a label source's runs for grading judges (dev / test).

    Stratified by model and verdict, ordered within each stratum by a hash of the seed and the
    run id: the same labels, share and seed give the same split. The split is recorded once
    (splits/<split_id>.json); `agreement --split test` grades on its test part, and a judge
    may take few-shot examples from its dev part only.
    """
    from agentledger.labels import labels_for_agreement
    from agentledger.labels.split import SplitStore, make_split
    from agentledger.store import RunFilter

    name = source.removeprefix("labels:")
    with open_ledger(ledger_path) as ledger:
        labels = labels_for_agreement(ledger, f"labels:{name}")
        models = {facet.run_id: facet.model for facet in ledger.index.run_facets(RunFilter())}
        split = make_split(labels, models, source=name, test_share=test_share, seed=seed)
        split, written = SplitStore(ledger.storage).write(split)
    if as_json:
        click.echo(json.dumps(split.model_dump(mode="json"), indent=2))
        return
    how = "recorded" if written else "already on record (same labels, share and seed)"
    click.echo(
        f"split {split.split_id} of labels:{terminal_safe(name)}: {len(split.dev)} dev, "
        f"{len(split.test)} test; {how}"
    )
    strata: dict[tuple[str, str], list[int]] = {}
    for part, runs in (("dev", split.dev), ("test", split.test)):
        for run_id in runs:
            key = (models.get(run_id, "?"), labels[run_id].verdict or "-")
            counts = strata.setdefault(key, [0, 0])
            counts[0 if part == "dev" else 1] += 1
    print_rows(
        ["model", "verdict", "dev", "test"],
        [[model, verdict, dev, test] for (model, verdict), (dev, test) in sorted(strata.items())],
    )
