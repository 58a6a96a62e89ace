"""`agentledger decisions`: the decision records gates wrote (variants, sentinels, fixtures)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from agentledger.cli.common import handle_errors, ledger_option, open_ledger, stacked
from agentledger.cli.output import emit, print_rows, terminal_safe

__all__ = ["decisions_group"]

_KINDS = ("variant", "sentinel", "fixtures")


_list_options = stacked(
    ledger_option,
    click.option("--kind", type=click.Choice(_KINDS), help="Only decisions of this kind."),
    click.option("--subject", metavar="NAME", help="Only decisions about this variant or suite."),
    click.option("--json", "as_json", is_flag=True, help="Output JSON."),
)


def _list(ledger_path: Path | None, kind: str | None, subject: str | None, as_json: bool) -> None:
    from agentledger.gates.decisions import DecisionStore
    from agentledger.records.decisions import superseded_by

    with open_ledger(ledger_path) as ledger:
        store = DecisionStore(ledger)
        every = store.list()
    later = superseded_by(every)
    shown = [
        decision
        for decision in every
        if (kind is None or decision.kind == kind)
        and (subject is None or decision.subject == subject)
    ]
    if as_json:
        rows = [
            {
                "decision_id": d.decision_id,
                "kind": d.kind,
                "subject": d.subject,
                "created_at": d.created_at.isoformat(),
                "outcome": d.outcome,
                "rule": d.rule,
                "supersedes": d.supersedes,
                "superseded_by": later.get(d.decision_id),
                "path": store.location(d.decision_id),
            }
            for d in shown
        ]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not shown and every:
        wanted = " and ".join(
            f"--{name} {value}" for name, value in (("kind", kind), ("subject", subject)) if value
        )
        subjects = ", ".join(sorted({d.subject for d in every if kind is None or d.kind == kind}))
        click.echo(
            f"No decision matches {wanted} ({len(every)} in this ledger"
            + (f"; subjects: {subjects}" if subjects else "")
            + ")."
        )
        return
    if not shown:
        click.echo(
            "No decisions yet: the gates (`agentledger variant evaluate`, `sentinel check`, "
            "`suites run`) write them."
        )
        return
    print_rows(
        ["DECISION_ID", "CREATED", "KIND", "SUBJECT", "OUTCOME", "SUPERSEDED_BY"],
        [
            (
                d.decision_id,
                d.created_at.strftime("%Y-%m-%d %H:%M"),
                d.kind,
                d.subject,
                d.outcome,
                later.get(d.decision_id),
            )
            for d in shown
        ],
    )


_GROUP_LEDGER = "agentledger.decisions.ledger"


@click.group("decisions", invoke_without_command=True)
@_list_options
@click.pass_context
@handle_errors
def decisions_group(
    ctx: click.Context,
    ledger_path: Path | None,
    kind: str | None,
    subject: str | None,
    as_json: bool,
) -> None:
    """Decision records: what a gate tested, the rule, the outcome and why (oldest first).

    Without a subcommand, lists them (like `decisions list`). Each record lives in
    decisions/<id>/ as decision.json and decision.md, written once; a later decision may
    supersede an earlier one, which stays on record and is marked here.
    """
    # `decisions --ledger L show ID` means the ledger L: subcommands fall back to it.
    ctx.meta[_GROUP_LEDGER] = ledger_path
    if ctx.invoked_subcommand is None:
        _list(ledger_path, kind, subject, as_json)


def _ledger(ledger_path: Path | None) -> Path | None:
    """A subcommand's --ledger, or else the one given to the group."""
    if ledger_path is not None:
        return ledger_path
    found = click.get_current_context().meta.get(_GROUP_LEDGER)
    return found if isinstance(found, Path) else None


@decisions_group.command("list")
@_list_options
@handle_errors
def decisions_list(
    ledger_path: Path | None, kind: str | None, subject: str | None, as_json: bool
) -> None:
    """List decisions, oldest first, marking those a later decision superseded."""
    _list(_ledger(ledger_path), kind, subject, as_json)


@decisions_group.command("show")
@click.argument("decision_id")
@ledger_option
@click.option("--json", "as_json", is_flag=True, help="Output the record (decision.json).")
@handle_errors
def decisions_show(decision_id: str, ledger_path: Path | None, as_json: bool) -> None:
    """Show one decision: its decision.md, or the record with --json. ID may be a unique prefix."""
    from agentledger.gates.decision_markdown import render_markdown
    from agentledger.gates.decisions import DecisionStore
    from agentledger.records.decisions import superseded_by

    with open_ledger(_ledger(ledger_path)) as ledger:
        store = DecisionStore(ledger)
        decision = store.get(decision_id)
        replaced = superseded_by(store.list())
        later = replaced.get(decision.decision_id)
        latest = later
        seen = {decision.decision_id}
        while latest in replaced and latest not in seen:  # follow the chain to its end
            seen.add(latest)
            latest = replaced[latest]
        if as_json:
            data = decision.model_dump(mode="json")
            data["superseded_by"] = later
            click.echo(json.dumps(data, indent=2, ensure_ascii=False))
            return
        stored = store.markdown(decision.decision_id)
        text = stored if stored is not None else render_markdown(decision)
    if later:
        tail = f" (itself superseded; the latest is `{latest}`)" if latest != later else ""
        text = f"> Superseded by `{later}`{tail}.\n\n{text}"
    if sys.stdout.isatty():
        from rich.markdown import Markdown

        emit(Markdown(text))
    else:
        click.echo(terminal_safe(text), nl=False)
