"""`label`: a person's label of one run (`review` and the walk-through are in
cli/walkthrough.py; the `labels` group is in cli/label_sets.py).

`label` is on the path of a person labelling run after run, so this module imports only
click at the top; the store, rich and the rest load inside the commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentledger.cli.common import (
    handle_errors,
    ledger_option,
    open_ledger,
)

if TYPE_CHECKING:
    from agentledger.records.labels import Label

__all__ = ["label_command"]

_VERDICT_CHOICES = ("safe", "uncertain", "unsafe")


def _labeller(by: str | None) -> str:
    from agentledger.errors import InputError
    from agentledger.labels.entry import default_labeller, source_name

    who = by or default_labeller()
    if not who:
        raise InputError(
            "who is labelling? give --by NAME (or set git's user.name, $AGENTLEDGER_USER or $USER)"
        )
    return source_name(who, "--by")


def _on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _saved(label: Label) -> str:
    said: list[str] = []
    if label.verdict:
        said.append(label.verdict)
    words = {True: "yes", False: "no", None: "unknown"}
    said.extend(f"{item.criterion}={words[item.fired]}" for item in label.criteria)
    if label.diagnosis_correct is not None:
        said.append(f"diagnosis {'correct' if label.diagnosis_correct else 'incorrect'}")
    return f"Labelled {label.run_id} by {label.by.name}: {', '.join(said)} ({label.label_id})"


@click.command("label")
@ledger_option
@click.argument("run_id")
@click.option(
    "--verdict", type=click.Choice(_VERDICT_CHOICES, case_sensitive=False), help="The verdict."
)
@click.option(
    "--criterion",
    "criteria",
    multiple=True,
    metavar="ID",
    help="A criterion (repeatable), each followed by its --fired.",
)
@click.option(
    "--fired",
    multiple=True,
    type=click.Choice(("yes", "no", "unknown"), case_sensitive=False),
    help="Whether the --criterion before it fired (repeatable, one per --criterion).",
)
@click.option(
    "--diagnosis",
    type=click.Choice(("correct", "incorrect"), case_sensitive=False),
    help="Did the report name the right root cause.",
)
@click.option("--by", help="Who labels [default: git user.name, $AGENTLEDGER_USER, $USER].")
@click.option("--reason", help="Why, in words.")
@click.option("--supersedes", metavar="LABEL_ID", help="The label of this run this corrects.")
@handle_errors
def label_command(
    ledger_path: Path | None,
    run_id: str,
    verdict: str | None,
    criteria: tuple[str, ...],
    fired: tuple[str, ...],
    diagnosis: str | None,
    by: str | None,
    reason: str | None,
    supersedes: str | None,
) -> None:
    """Label run RUN_ID (an id or a unique prefix): a verdict, criteria, the diagnosis.

    With no label flags on a terminal, walks you through the run (its report, trace, and each
    judge's verdict and evidence) and asks. Criteria are checked against those the run's
    judges assessed, when a judge has scored it.
    """
    from agentledger.labels.entry import known_criteria, make_label, parse_fired

    if len(criteria) != len(fired):
        raise click.UsageError(
            f"give one --fired per --criterion ({len(criteria)} --criterion, {len(fired)} --fired)"
        )
    flags = verdict or criteria or diagnosis or reason or supersedes
    if not flags and not _on_terminal():
        raise click.UsageError(
            "give --verdict, --criterion/--fired or --diagnosis, or run on a terminal to be "
            "walked through the run"
        )
    who = _labeller(by)
    with open_ledger(ledger_path) as ledger:
        full_id = ledger.resolve(run_id)
        if not flags:
            from agentledger.cli.walkthrough import walk_through

            walk_through(ledger, full_id, who)
            return
        from agentledger.labels import LabelStore

        label = make_label(
            full_id,
            who,
            verdict=verdict.capitalize() if verdict else None,
            criteria=[(c, parse_fired(f)) for c, f in zip(criteria, fired, strict=True)],
            diagnosis_correct=None if diagnosis is None else diagnosis.lower() == "correct",
            reason=reason,
            supersedes=supersedes,
            known=known_criteria(ledger, full_id),
        )
        _written, there = LabelStore(ledger).write_new([label])
    if there:
        click.echo(
            f"Run {full_id} already has this label from {who} ({there[0].label_id}): "
            "nothing written."
        )
        return
    click.echo(_saved(label))
