"""`labels import|list|export|split`: labels of runs by people and outside sources.

Apart from `label` (cli/labelling.py), which is on the path of a person labelling run after run
and must start fast: these commands' run filters need the records at import time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentledger.cli.common import (
    handle_errors,
    ledger_option,
    open_ledger,
    progress_bar,
)
from agentledger.cli.splitting import split_command

if TYPE_CHECKING:
    from agentledger.records.labels import Label
    from agentledger.store import Ledger

__all__ = ["labels_group"]

# -- labels import | list | export -------------------------------------------------------------


@click.group("labels")
def labels_group() -> None:
    """Labels of runs by people and outside sources: import, list, export, split."""


_FORMATS = ("csv", "jsonl", "openhands-checker", "openhands-llm-label", "inspect")


@labels_group.command("import")
@ledger_option
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--source", help="Who gave the labels (a name); a `source` column may say so.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(_FORMATS),
    help="csv or jsonl [default: by the file's name]; openhands-checker / openhands-llm-label "
    "read an OpenAgentSafety folder (or one of its files); inspect reads the scores of runs "
    "imported from Inspect.",
)
@click.option(
    "--key",
    default="run_id",
    show_default=True,
    help="How rows name their run: run_id, scenario,model, or tag:NAME.",
)
@click.option(
    "--kind",
    type=click.Choice(("external", "person")),
    default="external",
    show_default=True,
    help="Whether the source is an outside source or a person.",
)
@click.option("--scorer", help="With --format inspect: only this scorer's scores.")
@click.option(
    "--inverted",
    is_flag=True,
    help="With --format inspect: the scorer's CORRECT means the unsafe thing happened.",
)
@click.option("--dry-run", is_flag=True, help="Check every row; write nothing.")
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Import every label that reads, and list the rows, files and tasks skipped and why "
    "(without it, any problem imports nothing, every problem listed).",
)
@handle_errors
def labels_import(
    ledger_path: Path | None,
    path: Path | None,
    source: str | None,
    fmt: str | None,
    key: str,
    kind: str,
    scorer: str | None,
    inverted: bool,
    dry_run: bool,
    skip_invalid: bool,
) -> None:
    """Import labels from PATH: a CSV or JSON lines file, or a data set's own labels.

    Strict: every row (or data set file and task) is checked first, and every problem is listed
    at once, naming the file, line and field: exit 2, nothing written. --skip-invalid imports
    the rest and lists what it skipped and why (exit 0).
    """
    from agentledger.labels import LabelStore
    from agentledger.labels.external import inspect_labels, openhands_labels
    from agentledger.labels.tabular import parse_key, read_label_file

    if fmt != "inspect" and path is None:
        raise click.UsageError("give the FILE (or folder) to import labels from")
    with open_ledger(ledger_path) as ledger:
        left_out: list[tuple[str, str]] = []
        skipped_problems: list[tuple[str, str]] = []
        already = skipped = 0
        if skip_invalid and fmt == "inspect":
            raise click.UsageError(
                "--skip-invalid reads a file: it does not go with --format inspect"
            )
        if fmt == "inspect":
            found = inspect_labels(ledger, scorer=scorer, inverted=inverted)
            labels, left_out, already = found.labels, found.left_out, found.already
        elif fmt in ("openhands-checker", "openhands-llm-label"):
            assert path is not None
            with progress_bar("Reading labels") as progress:
                found = openhands_labels(
                    ledger,
                    path,
                    fmt,  # type: ignore[arg-type]
                    source,
                    skip_invalid=skip_invalid,
                    progress=progress,
                )
            labels, left_out, already = found.labels, found.left_out, found.already
            skipped_problems = found.skipped
        else:
            assert path is not None
            labels = read_label_file(
                ledger,
                path,
                source=source,
                key=parse_key(key),
                kind=kind,
                fmt=fmt,  # type: ignore[arg-type]
                skipped=skipped_problems if skip_invalid else None,
            )
        store = LabelStore(ledger)
        if dry_run:
            store.check(labels)
        else:
            # Labels already there (the same file imported again, or an import killed
            # midway run again) are not written twice.
            _written, there = store.write_new(labels)
            already += len(there)
            skipped = len(there)
    for what, why in left_out:
        click.echo(f"left out {what}: {why}", err=True)
    if skipped_problems:
        from agentledger.cli.output import terminal_safe

        for _where, why in skipped_problems:
            click.echo(f"skipped {terminal_safe(why)}", err=True)
    sources = sorted({label.by.name for label in labels})
    verb = "Would import" if dry_run else "Imported"
    note = f"; {already} already there" if already else ""
    note += f"; {len(left_out)} left out" if left_out else ""
    note += f"; {len(skipped_problems)} skipped as invalid" if skipped_problems else ""
    named = f" from {', '.join(sources)}" if sources else ""
    click.echo(f"{verb} {len(labels) - skipped} label(s){named}{note}.")


def _selected(
    ledger: Ledger, source: str | None, history: bool, filters: dict[str, Any]
) -> list[Label]:
    from agentledger.cli.filters import build_filter
    from agentledger.labels import HUMAN, current_labels
    from agentledger.records.labels import Label

    if history:
        texts = []
        for run in ledger.runs(build_filter(**filters)):
            texts.extend(ledger.index.labels_of(run.run_id))
        labels = [Label.model_validate_json(text) for text in texts]
        if source == HUMAN:
            labels = [label for label in labels if label.by.kind == "person"]
        elif source:
            labels = [label for label in labels if label.by.name == source]
    else:
        chosen = {run.run_id for run in ledger.runs(build_filter(**filters))}
        labels = [label for label in current_labels(ledger, source) if label.run_id in chosen]
    return sorted(labels, key=lambda label: (label.created_at, label.label_id))


def _list_options(func: Any) -> Any:
    from agentledger.cli.filters import run_filter_options

    func = click.option(
        "--all",
        "history",
        is_flag=True,
        help="Every label, superseded and older ones too [default: the current ones].",
    )(func)
    func = click.option("--source", help="One source's labels (human: every person's).")(func)
    return run_filter_options(func)


@labels_group.command("list")
@ledger_option
@_list_options
@click.option("--json", "as_json", is_flag=True, help="Output JSON (the label records).")
@handle_errors
def labels_list(
    ledger_path: Path | None, source: str | None, history: bool, as_json: bool, **filters: Any
) -> None:
    """List labels: each run's current label per source (or --all), filtered like `runs`."""
    import json

    from agentledger.cli.output import print_rows

    with open_ledger(ledger_path) as ledger:
        labels = _selected(ledger, source, history, filters)
    if as_json:
        records = [label.model_dump(mode="json") for label in labels]
        click.echo(json.dumps(records, indent=2, ensure_ascii=False))
        return
    if not labels:
        click.echo("No labels.")
        return
    words = {True: "yes", False: "no", None: "?"}
    print_rows(
        ["LABEL_ID", "RUN_ID", "BY", "VERDICT", "CRITERIA", "DIAGNOSIS", "SUPERSEDES"],
        [
            (
                label.label_id,
                label.run_id,
                f"{label.by.name}" + (" (ext)" if label.by.kind == "external" else ""),
                label.verdict,
                " ".join(f"{c.criterion}={words[c.fired]}" for c in label.criteria) or None,
                label.diagnosis_correct,
                label.supersedes,
            )
            for label in labels
        ],
    )


@labels_group.command("export")
@ledger_option
@_list_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("csv", "jsonl")),
    default="csv",
    show_default=True,
    help="CSV or JSON lines; `labels import` reads both back.",
)
@click.option("--output", "-o", type=click.Path(path_type=Path), help="Write to FILE.")
@handle_errors
def labels_export(
    ledger_path: Path | None,
    source: str | None,
    history: bool,
    fmt: str,
    output: Path | None,
    **filters: Any,
) -> None:
    """Export labels as CSV or JSON lines, in the columns `labels import` reads."""
    import io

    from agentledger.cli.output import write_text_output
    from agentledger.labels.tabular import export_labels

    with open_ledger(ledger_path) as ledger:
        labels = _selected(ledger, source, history, filters)
        if not history:
            # The superseded labels are not exported: their ids would name nothing on import.
            labels = [label.model_copy(update={"supersedes": None}) for label in labels]
        buffer = io.StringIO()
        count = export_labels(ledger, labels, fmt, buffer)  # type: ignore[arg-type]
    write_text_output(buffer.getvalue(), output)
    if output is not None:
        click.echo(f"exported {count} label(s)", err=True)


labels_group.add_command(split_command)
