"""`agentledger labels split`: hold out a share of a label source's runs (in the `labels` group of
`agentledger.cli.labelling`, and light to import: `agentledger label` starts fast)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from agentledger.cli.common import handle_errors, ledger_option, open_ledger

__all__ = ["split_command"]


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
    from agentledger.cli.output import print_rows, terminal_safe
    from agentledger.labels import labels_for_agreement
    from agentledger.labels.split import SplitStore, make_split
    from agentledger.store import RunFilter

    name = source.removeprefix("labels:")
    with open_ledger(ledger_path) as ledger:
        labels = labels_for_agreement(ledger, f"labels:{name}")
        facets = ledger.index.run_facets(RunFilter())
        models = dict(zip(facets.run_ids, facets.models, strict=True))
        split = make_split(labels, models, source=name, test_share=test_share, seed=seed)
        split, written = SplitStore(ledger).write(split)
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
