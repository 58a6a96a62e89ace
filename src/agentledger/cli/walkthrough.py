"""`review` and the labelling walk-through: a person labels run after run on a terminal.

The walk-through shows a run (task, report, trace, each judge's verdict and evidence) and asks
for a label, with one-letter answers; `review --next` goes through the queue with it until the
person answers q, presses Ctrl-C or the queue ends.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from agentledger.cli.answers import TerminalAnswers
from agentledger.cli.common import INTERRUPTED, handle_errors, ledger_option, open_ledger
from agentledger.cli.filters import build_filter, run_filter_options
from agentledger.cli.labelling import _labeller, _on_terminal, _saved

if TYPE_CHECKING:
    from agentledger.labels.review import RunBrief
    from agentledger.records.labels import Label
    from agentledger.store import Ledger, RunFilter

__all__ = ["review_command", "walk_through"]


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


class _Quit(Exception):
    """The person answered q: stop asking (the review loop ends)."""


_VERDICT_ANSWERS = {
    "s": "Safe", "safe": "Safe", "u": "Unsafe", "unsafe": "Unsafe",
    "x": "Uncertain", "uncertain": "Uncertain", "": None, "skip": None,
}  # fmt: skip
_FIRED_ANSWERS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "?": "unknown",
                  "unknown": "unknown", "": None, "skip": None}  # fmt: skip
_DIAGNOSIS_ANSWERS = {"c": True, "correct": True, "i": False, "incorrect": False,
                      "": None, "skip": None}  # fmt: skip


def _ask(question: str, answers: dict[str, Any], hint: str, lines: TerminalAnswers) -> Any:
    """Ask until the answer is one of `answers` (a letter or the word, any case); q quits."""
    from rich.prompt import Prompt

    while True:
        text = Prompt.ask(
            f"{question} ({hint}, q quit)", default="", show_default=False, stream=lines.stream
        )
        key = text.strip().lower()
        if key in ("q", "quit"):
            raise _Quit
        if key in answers:
            return answers[key]
        click.echo(f"Please answer with one of: {hint}, q quit.", err=True)


def _ask_label(
    brief: RunBrief, who: str, only: tuple[str, ...], lines: TerminalAnswers
) -> Label | None:
    """Ask for a verdict, the criteria (`only` these, when given) and the diagnosis; one
    letter answers each (the words work too), Enter skips, q raises _Quit. The answers are
    read from `lines`, where a Ctrl-C is acted on however early it comes."""
    from rich.prompt import Confirm, Prompt

    from agentledger.errors import InputError
    from agentledger.labels.entry import make_label, parse_fired

    verdict = _ask("Verdict", _VERDICT_ANSWERS, "s safe, u unsafe, x uncertain, Enter skip", lines)
    criteria: list[tuple[str, bool | None]] = []
    known = brief.criteria
    asked = [c for c in known if c in only] if only else known
    if asked:
        for criterion in asked:
            answer = _ask(
                f"{criterion} fired?", _FIRED_ANSWERS, "y yes, n no, ? unknown, Enter skip", lines
            )
            if answer is not None:
                criteria.append((criterion, parse_fired(answer)))
    elif not only:
        while True:
            text = Prompt.ask(
                "Criteria (C1=yes;C2=no, empty for none)",
                default="",
                show_default=False,  # not "()"
                stream=lines.stream,
            )
            try:
                pairs = [part.partition("=") for part in text.split(";") if part.strip()]
                criteria = [(c.strip(), parse_fired(a)) for c, _, a in pairs]
                break
            except InputError as exc:
                click.echo(str(exc), err=True)
    diagnosis = _ask("Diagnosis", _DIAGNOSIS_ANSWERS, "c correct, i incorrect, Enter skip", lines)
    reason = Prompt.ask("Reason (optional)", default="", show_default=False, stream=lines.stream)
    if verdict is None and not criteria and diagnosis is None:
        return None
    label = make_label(
        brief.run.run_id,
        who,
        verdict=verdict,
        criteria=criteria,
        diagnosis_correct=diagnosis,
        reason=reason or None,
        known=known,
    )
    if not Confirm.ask(f"Save this label as {who}?", default=True, stream=lines.stream):
        return None
    return label


def walk_through(
    ledger: Ledger,
    run_id: str,
    who: str,
    only: tuple[str, ...] = (),
    lines: TerminalAnswers | None = None,
) -> Literal["saved", "passed", "quit"]:
    """Show the run and ask for its label: saved, passed (no label), or quit (q). The answers
    come from `lines` (the review loop's, so that lines typed ahead carry over), else from a
    reader of its own."""
    from agentledger.labels import LabelStore
    from agentledger.labels.review import run_brief

    brief = run_brief(ledger, run_id)
    _show_brief(brief)
    try:
        if lines is None:
            with TerminalAnswers() as own:
                label = _ask_label(brief, who, only, own)
        else:
            label = _ask_label(brief, who, only, lines)
    except (KeyboardInterrupt, EOFError):
        click.echo("\nInterrupted: no label saved.", err=True)
        sys.exit(INTERRUPTED)
    except _Quit:
        click.echo("No label saved.")
        return "quit"
    if label is None:
        click.echo("No label saved.")
        return "passed"
    LabelStore(ledger).write([label])
    click.echo(_saved(label))
    return "saved"


# -- review ------------------------------------------------------------------------------------


@click.command("review")
@ledger_option
@click.option(
    "--next",
    "open_next",
    is_flag=True,
    help="Label the runs of the queue one after another, until q (or Ctrl-C) or the end.",
)
@click.option("--by", help="Who labels (with --next) [default: git user.name, $USER].")
@click.option(
    "--criteria",
    "only",
    metavar="C1,C3",
    help="With --next: ask only these criteria (comma-separated) [default: every criterion "
    "the run's judges assessed].",
)
@click.option(
    "--no-unlabelled",
    "unlabelled",
    flag_value=False,
    default=True,
    help="Leave out runs that wait only for a first label.",
)
@run_filter_options
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Rows shown."
)
@click.option("--json", "as_json", is_flag=True, help="Output JSON (every run in the queue).")
@handle_errors
def review_command(
    ledger_path: Path | None,
    open_next: bool,
    by: str | None,
    only: str | None,
    unlabelled: bool,
    limit: int,
    as_json: bool,
    **filters: Any,
) -> None:
    """The review queue: runs whose judges of one pack disagree, runs a judge refused
    (self-judging), runs nobody has labelled, and last the runs in which nothing ran, each
    with why it is there. A person's label takes a run out. The run filters (--model,
    --scenario, --tag, ...) narrow it; --kind defaults to agent runs.

    --next walks through the queue, one run after another: answer with one letter (s safe,
    u unsafe, x uncertain; y / n / ? for a criterion; Enter skips; q stops).
    """
    import json

    from agentledger.cli.output import print_rows
    from agentledger.labels.review import review_queue, review_queue_page

    if open_next and not _on_terminal():
        raise click.UsageError("review --next asks questions: run it on a terminal")
    kinds = tuple(filters.pop("kinds", None) or ("agent",))
    chosen = build_filter(**filters) if any(filters.values()) else None
    criteria = tuple(c.strip() for c in (only or "").split(",") if c.strip())
    with open_ledger(ledger_path) as ledger:
        if open_next:
            # One reader for every run, so that lines typed ahead carry over from run to run.
            with TerminalAnswers() as lines:
                _review_loop(ledger, _labeller(by), unlabelled, kinds, chosen, criteria, lines)
            return
        if as_json:
            queue = review_queue(ledger, unlabelled=unlabelled, kinds=kinds, run_filter=chosen)
        else:  # the first `limit` runs only, and what the whole queue holds
            found = review_queue_page(
                ledger, limit=limit, unlabelled=unlabelled, kinds=kinds, run_filter=chosen
            )
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


def _review_loop(
    ledger: Ledger,
    who: str,
    unlabelled: bool,
    kinds: tuple[str, ...],
    chosen: RunFilter | None,
    only: tuple[str, ...],
    lines: TerminalAnswers,
) -> None:
    """Label the queue's runs in turn until q, Ctrl-C or the end, the answers read from
    `lines`; a run passed without a label is not offered again in this session."""
    from agentledger.labels.review import review_queue_page

    passed: set[str] = set()
    left_unlabelled = 0  # runs passed without a label: still in the queue
    labelled = 0
    while True:
        page = review_queue_page(
            ledger, limit=len(passed) + 1, unlabelled=unlabelled, kinds=kinds, run_filter=chosen
        )
        item = next((entry for entry in page.items if entry.run_id not in passed), None)
        if item is None:
            click.echo(f"Nothing more waits for review ({labelled} labelled in this session).")
            return
        left = page.total - left_unlabelled
        click.echo(f"Next in the queue ({', '.join(item.reasons)}; {left} waiting): {item.run_id}")
        done = walk_through(ledger, item.run_id, who, only, lines)
        if done == "quit":
            click.echo(f"Stopped: {labelled} labelled in this session.")
            return
        labelled += done == "saved"
        left_unlabelled += done == "passed"
        passed.add(item.run_id)
