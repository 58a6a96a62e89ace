"""`label`, `review` and `labels import|list|export`: people's and outside sources' labels.

`label` is on the path of a person labelling run after run, so this module imports only
click at the top; the store, rich and the rest load inside the commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentledger.cli.common import INTERRUPTED, handle_errors, ledger_option, open_ledger
from agentledger.cli.splitting import split_command

if TYPE_CHECKING:
    from agentledger.labels.review import RunBrief
    from agentledger.records.labels import Label
    from agentledger.store import Ledger

__all__ = ["label_command", "labels_group", "review_command"]

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
            _walk_through(ledger, full_id, who)
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


# -- the walk-through --------------------------------------------------------------------------


def _show_brief(brief: RunBrief) -> None:
    from rich.console import Console
    from rich.rule import Rule
    from rich.text import Text

    from agentledger.cli.output import terminal_safe

    console = Console(highlight=False)
    run = brief.run

    def plain(text: str, style: str = "") -> Text:
        return Text(terminal_safe(text), style=style)

    def excerpt(text: str | None, lines: int) -> None:
        if not text:
            console.print(plain("  (none)", "dim"))
            return
        shown = text.splitlines()
        for line in shown[:lines]:
            console.print(plain(f"  {line}"))
        if len(shown) > lines:
            console.print(plain(f"  ... {len(shown) - lines} more lines", "dim"))

    console.print(Rule(plain(f"run {run.run_id}")))
    console.print(
        plain(
            f"scenario {run.scenario}   model {run.model}   kind {run.kind}   "
            f"started {run.started_at or '-'}"
        )
    )
    console.print(plain("\nTask", "bold"))
    excerpt(brief.prompt, 12)
    console.print(plain("\nReport", "bold"))
    excerpt(brief.report, 40)
    console.print(plain("\nTrace", "bold"))
    if brief.trace is None:
        console.print(plain("  (no trace or shell log)", "dim"))
    else:
        kinds = ", ".join(f"{kind} {n}" for kind, n in brief.trace.kinds.items())
        console.print(plain(f"  {brief.trace.steps} steps: {kinds}"))
        for command in brief.trace.commands[:15]:
            console.print(plain(f"  $ {command}"))
        if len(brief.trace.commands) > 15:
            console.print(plain(f"  ... {len(brief.trace.commands) - 15} more commands", "dim"))
    console.print(plain("\nJudges", "bold"))
    if not brief.scores:
        console.print(plain("  no judge has scored this run", "dim"))
    words = {True: "fired", False: "did not fire", None: "cannot tell"}
    for score in brief.scores:
        who = score.judge.kind + (f" {score.judge.model}" if score.judge.model else "")
        console.print(plain(f"  {score.judge_id} ({who}): {score.verdict}"))
        if score.skipped_reason:
            console.print(plain(f"    {score.skipped_reason}", "dim"))
        for result in score.criteria:
            console.print(plain(f"    {result.criterion} {words[result.fired]}: {result.reason}"))
            for quote in result.evidence[:3]:
                where = quote.file + (f":{quote.line}" if quote.line else "")
                console.print(plain(f"      {where}: {quote.quote}", "dim"))
    if brief.labels:
        console.print(plain("\nLabels so far", "bold"))
        for label in brief.labels:
            console.print(
                plain(f"  {label.label_id} by {label.by.name}: {label.verdict or '-'}", "dim")
            )
    console.print()


def _ask_label(brief: RunBrief, who: str) -> Label | None:
    from rich.prompt import Confirm, Prompt

    from agentledger.errors import InputError
    from agentledger.labels.entry import make_label, parse_fired

    verdict = Prompt.ask("Verdict", choices=[*_VERDICT_CHOICES, "skip"], default="skip")
    criteria: list[tuple[str, bool | None]] = []
    known = brief.criteria
    if known:
        for criterion in known:
            answer = Prompt.ask(
                f"{criterion} fired?", choices=["yes", "no", "unknown", "skip"], default="skip"
            )
            if answer != "skip":
                criteria.append((criterion, parse_fired(answer)))
    else:
        while True:
            text = Prompt.ask("Criteria (C1=yes;C2=no, empty for none)", default="")
            try:
                pairs = [part.partition("=") for part in text.split(";") if part.strip()]
                criteria = [(c.strip(), parse_fired(a)) for c, _, a in pairs]
                break
            except InputError as exc:
                click.echo(str(exc), err=True)
    diagnosis = Prompt.ask("Diagnosis", choices=["correct", "incorrect", "skip"], default="skip")
    reason = Prompt.ask("Reason (optional)", default="")
    if verdict == "skip" and not criteria and diagnosis == "skip":
        return None
    label = make_label(
        brief.run.run_id,
        who,
        verdict=None if verdict == "skip" else verdict.capitalize(),
        criteria=criteria,
        diagnosis_correct=None if diagnosis == "skip" else diagnosis == "correct",
        reason=reason or None,
        known=known,
    )
    if not Confirm.ask(f"Save this label as {who}?", default=True):
        return None
    return label


def _walk_through(ledger: Ledger, run_id: str, who: str) -> None:
    from agentledger.labels import LabelStore
    from agentledger.labels.review import run_brief

    brief = run_brief(ledger, run_id)
    _show_brief(brief)
    try:
        label = _ask_label(brief, who)
    except (KeyboardInterrupt, EOFError):
        click.echo("\nInterrupted: no label saved.", err=True)
        sys.exit(INTERRUPTED)
    if label is None:
        click.echo("No label saved.")
        return
    LabelStore(ledger).write([label])
    click.echo(_saved(label))


# -- review ------------------------------------------------------------------------------------


@click.command("review")
@ledger_option
@click.option("--next", "open_next", is_flag=True, help="Open the next run for labelling.")
@click.option("--by", help="Who labels (with --next) [default: git user.name, $USER].")
@click.option(
    "--no-unlabelled",
    "unlabelled",
    flag_value=False,
    default=True,
    help="Leave out runs that wait only for a first label.",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(("agent", "fixture", "sentinel", "variant")),
    help="Run kinds to review (repeatable) [default: agent].",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Rows shown."
)
@click.option("--json", "as_json", is_flag=True, help="Output JSON (every run in the queue).")
@handle_errors
def review_command(
    ledger_path: Path | None,
    open_next: bool,
    by: str | None,
    unlabelled: bool,
    kinds: tuple[str, ...],
    limit: int,
    as_json: bool,
) -> None:
    """The review queue: runs a judge refused (self-judging), runs whose judges disagree, and
    runs nobody has labelled, each with why it is there. A person's label takes a run out."""
    import json

    from agentledger.cli.output import print_rows
    from agentledger.labels.review import review_queue, review_queue_page

    if open_next and not _on_terminal():
        raise click.UsageError("review --next asks questions: run it on a terminal")
    kinds = kinds or ("agent",)
    with open_ledger(ledger_path) as ledger:
        if open_next:
            head = review_queue_page(ledger, limit=1, unlabelled=unlabelled, kinds=kinds).items
            if not head:
                click.echo("Nothing waits for review.")
                return
            item = head[0]
            click.echo(f"Next in the queue ({', '.join(item.reasons)}): {item.run_id}")
            _walk_through(ledger, item.run_id, _labeller(by))
            return
        if as_json:
            queue = review_queue(ledger, unlabelled=unlabelled, kinds=kinds)
        else:  # the first `limit` runs only, and what the whole queue holds
            found = review_queue_page(ledger, limit=limit, unlabelled=unlabelled, kinds=kinds)
    if as_json:
        rows = [
            {
                "run_id": item.run_id,
                "model": item.model,
                "scenario": item.scenario,
                "why": list(item.reasons),
                "detail": list(item.detail),
                "skipped_reason": item.skipped_reason,
            }
            for item in queue
        ]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not found.items:
        click.echo("Nothing waits for review.")
        return
    print_rows(
        ["RUN_ID", "MODEL", "WHY", "DETAIL"],
        [
            (item.run_id, item.model, ", ".join(item.reasons), " | ".join(item.detail))
            for item in found.items
        ],
    )
    shown = f"showing {limit} of {found.total}; " if found.total > limit else ""
    click.echo(
        f"{found.total} run(s) wait ({shown}"
        + ", ".join(f"{n} {why}" for why, n in sorted(found.counts.items()))
        + "): label the next with agentledger review --next",
        err=True,
    )


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
) -> None:
    """Import labels from PATH: a CSV or JSON lines file, or a data set's own labels.

    Strict: a bad row is an error naming the file, line and field, and nothing is written.
    """
    from agentledger.labels import LabelStore
    from agentledger.labels.external import inspect_labels, openhands_labels
    from agentledger.labels.tabular import parse_key, read_label_file

    if fmt != "inspect" and path is None:
        raise click.UsageError("give the FILE (or folder) to import labels from")
    with open_ledger(ledger_path) as ledger:
        left_out: list[tuple[str, str]] = []
        already = skipped = 0
        if fmt == "inspect":
            found = inspect_labels(ledger, scorer=scorer, inverted=inverted)
            labels, left_out, already = found.labels, found.left_out, found.already
        elif fmt in ("openhands-checker", "openhands-llm-label"):
            assert path is not None
            found = openhands_labels(ledger, path, fmt, source)  # type: ignore[arg-type]
            labels, left_out, already = found.labels, found.left_out, found.already
        else:
            assert path is not None
            labels = read_label_file(
                ledger,
                path,
                source=source,
                key=parse_key(key),
                kind=kind,
                fmt=fmt,  # type: ignore[arg-type]
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
    sources = sorted({label.by.name for label in labels})
    verb = "Would import" if dry_run else "Imported"
    note = f"; {already} already there" if already else ""
    note += f"; {len(left_out)} left out" if left_out else ""
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
