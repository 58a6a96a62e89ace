"""`agentledger suites run | freeze | list`: fixture suites for CI, replayed or live.

`agentledger fixtures`, the group's old name, still runs it (cli/app.py's ALIASES).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from agentledger.cli.common import (
    concurrency_option,
    handle_errors,
    ledger_location,
    ledger_option,
    parse_tags,
    progress_bar,
    step_counter,
)
from agentledger.cli.output import emit, render_value, terminal_safe
from agentledger.errors import InputError

__all__ = ["suites_group"]


@click.group("suites")
def suites_group() -> None:
    """Fixture suites: frozen inputs and properties that must hold, run on every change.

    A suite is a directory per agent: suite.yaml (prompt, pinned model file, must-pass,
    frozen files, custom scorers), fixtures/<id>/input.json and expect.json, and
    fixtures.lock (hashes of the frozen files, written by `suites freeze`).
    `agentledger fixtures`, the old name, still works.
    """


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _check_output_file(path: Path | None, option: str) -> None:
    if path is None:
        return
    if path.is_dir():
        raise InputError(f"{option} {path}: is a directory, expected a file name")
    if not path.parent.is_dir():
        raise InputError(f"{option} {path}: the directory {path.parent} does not exist")


def _failed_text(outcome: Any) -> Text:
    text = Text()
    if outcome.problem not in (None, "properties") and outcome.reason:
        text.append(terminal_safe(outcome.reason))
        return text
    for index, result in enumerate(outcome.failed_properties):
        if index:
            text.append("\n")
        text.append(terminal_safe(result.property), style="bold")
        if result.must_pass and not outcome.must_pass:
            text.append(" (must-pass property)")
        reason = result.reason.removeprefix(f"{result.property}: ")
        text.append(f": {terminal_safe(reason)}")
    return text


def _must_pass_text(outcome: Any) -> str:
    """yes / no, and 'property' for a fixture that blocks through must_pass_properties."""
    if outcome.must_pass:
        return "yes"
    if outcome.blocking:
        return "property"
    return "no"


def _summary(report: Any, quiet: bool) -> None:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in ("AGENT", "FIXTURE", "MUST-PASS", "RESULT", "FAILED PROPERTIES"):
        table.add_column(name, overflow="fold")
    for suite in report.suites:
        for outcome in suite.fixtures:
            if quiet and outcome.passed:
                continue
            result = Text("pass", style="green") if outcome.passed else Text("FAIL", style="red")
            table.add_row(
                Text(suite.agent),
                Text(terminal_safe(outcome.fixture)),
                Text(_must_pass_text(outcome)),
                result,
                _failed_text(outcome),
            )
    if table.row_count:
        emit(table)
    for suite in report.suites:
        for note in suite.notes:
            click.echo(f"note: {suite.agent}: {terminal_safe(note)}")
        for outcome in suite.fixtures:
            for note in outcome.notes:
                click.echo(f"note: {suite.agent}/{outcome.fixture}: {terminal_safe(note)}")
    totals = report.totals
    line = (
        f"{totals.fixtures} fixtures in {len(report.suites)} suites ({report.mode}): "
        f"{totals.passed} passed, {totals.failed} failed, "
        f"{totals.must_pass_failed} must-pass failed"
    )
    if report.mode == "live":
        line += f"; cost {_money(totals.cost_usd)}"
        if totals.tokens_in is not None:
            line += f" ({totals.tokens_in} tokens in, {totals.tokens_out or 0} out)"
    click.echo(line + ".")
    if report.ledger:
        click.echo(
            f"Stored in {terminal_safe(report.ledger)}: "
            "agentledger runs --judge fixtures --verdict unsafe --tag fixtures=AGENT"
        )
        for suite in report.suites:
            if suite.decision_id:
                click.echo(f"Decision {suite.decision_id}: {suite.decision}")
    verdict = "FAILED" if report.exit_code else "OK"
    rule = "any fixture" if report.fail_on == "any" else "must-pass fixtures"
    click.echo(f"{verdict} (--fail-on {report.fail_on}: {rule}).")


@suites_group.command("run")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--replay",
    "recordings",
    metavar="RECORDINGS",
    type=click.Path(file_okay=False, path_type=Path),
    help="Score recorded outputs from RECORDINGS/<agent>/<fixture>.json; offline.",
)
@click.option("--live", is_flag=True, help="Call each suite's pinned model.")
@click.option(
    "--record",
    "record_dir",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="Live: write each answer as a recording under DIR, for --replay.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["mustpass", "any"]),
    default="mustpass",
    show_default=True,
    help="Exit 1 when a must-pass fixture fails, or when any fixture fails.",
)
@click.option(
    "--junit",
    "junit_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write JUnit XML here (one testsuite per agent).",
)
@click.option(
    "--json",
    "json_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the results as JSON here.",
)
@ledger_option
@click.option("--no-store", is_flag=True, help="Do not store the executions in the ledger.")
@click.option("--base-url", help="Live: endpoint of an OpenAI-compatible server (or a proxy).")
@click.option("--api-key-env", metavar="VAR", help="Live: variable holding the API key.")
@click.option(
    "--responses",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Live with a 'scripted/...' pinned model: its answers file (tests, demos).",
)
@click.option(
    "--only",
    multiple=True,
    metavar="AGENT[/FIXTURE]",
    help="Run only this suite or fixture (repeatable), e.g. to re-record one.",
)
@concurrency_option("Live: model calls in flight at once.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag every stored run.")
@click.option("-q", "--quiet", is_flag=True, help="List only the failed fixtures.")
@handle_errors
def run_command(
    directory: Path,
    recordings: Path | None,
    live: bool,
    record_dir: Path | None,
    fail_on: str,
    junit_file: Path | None,
    json_file: Path | None,
    ledger_path: Path | None,
    no_store: bool,
    base_url: str | None,
    api_key_env: str | None,
    responses: Path | None,
    only: tuple[str, ...],
    concurrency: int,
    tags: tuple[str, ...],
    quiet: bool,
) -> None:
    """Run the fixture suites in DIRECTORY (one suite, or a root holding several).

    With --replay, score recorded outputs (no network, no provider); with --live, call the
    pinned model of each suite, never from a cache, so a drifted model shows (--record keeps
    the answers for replay). Every input is checked
    first: bad input exits 2 and writes nothing. A frozen file that differs from
    fixtures.lock fails the run (exit 1) before anything is scored. Each execution is stored
    in the ledger as a run (scenario <agent>.<fixture>) with a score of the `fixtures` judge,
    and each suite leaves a GO / NO-GO decision record. Exit 1 when a must-pass fixture fails
    (--fail-on any: when any fails).
    """
    from agentledger.records import check_tags
    from agentledger.store import Ledger
    from agentledger.suites import (
        FixtureSettings,
        check_frozen,
        junit_xml,
        prepare_fixtures,
        run_fixtures,
    )
    from agentledger.suites.files import write_atomically

    if live == (recordings is not None):
        raise click.UsageError("choose one mode: --replay RECORDINGS or --live")
    if record_dir is not None and not live:
        raise click.UsageError("--record writes live answers; use it with --live")
    for value, option in ((base_url, "--base-url"), (api_key_env, "--api-key-env")):
        if value is not None and not live:
            raise click.UsageError(f"{option} is for --live runs")
    _check_output_file(junit_file, "--junit")
    _check_output_file(json_file, "--json")
    tag_map = parse_tags(tags)
    try:
        check_tags(tag_map)
    except ValueError as exc:
        raise InputError(f"--tag: {exc}") from None
    settings = FixtureSettings(
        mode="live" if live else "replay",
        recordings=recordings,
        record_dir=record_dir,
        fail_on="any" if fail_on == "any" else "mustpass",
        base_url=base_url,
        api_key_env=api_key_env,
        responses=responses,
        tags=tag_map,
        concurrency=concurrency,
        only=only,
    )
    prepared = prepare_fixtures(directory, settings)
    check_frozen(prepared)
    ledger = None
    if not no_store:
        root = ledger_location(ledger_path)
        ledger, created = Ledger.open_or_init(root)
        if created:
            click.echo(f"Created a ledger at {terminal_safe(str(root))}", err=True)
    total = sum(len(suite.fixtures) for suite in prepared.suites)
    try:
        with progress_bar(f"Fixtures ({settings.mode})") as progress:
            step = step_counter(progress, total)
            report = run_fixtures(prepared, ledger, on_fixture=lambda _outcome: step())
    finally:
        if ledger is not None:
            ledger.close()
        for client in prepared.clients.values():
            client.close()
    if junit_file is not None:
        write_atomically(junit_file, junit_xml(report))
    if json_file is not None:
        write_atomically(json_file, report.model_dump_json(indent=2).encode() + b"\n")
    _summary(report, quiet)
    sys.exit(report.exit_code or 0)


@suites_group.command("freeze")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 when a lock is missing or out of date.",
)
@handle_errors
def freeze_command(directory: Path, check: bool) -> None:
    """Write or update fixtures.lock of the suites in DIRECTORY.

    The lock holds the sha256 of each frozen file (checked by `suites run`), and of the
    prompt and model file (recorded for the reader). Commit it in the same change as the
    frozen files it locks. A suite that freezes nothing needs no lock.
    """
    from agentledger.suites import discover_suites, freeze

    results = [freeze(suite_dir, dry_run=check) for suite_dir in discover_suites(directory)]
    stale = False
    for result in results:
        if result.nothing_frozen:
            click.echo(f"{result.agent}: nothing frozen, no lock needed")
            continue
        if result.written:
            state = "written"
        elif check and result.changes:
            state, stale = "out of date", True
        elif check and not result.path.is_file():
            state, stale = "missing", True
        else:
            state = "up to date"
        click.echo(f"{result.agent}: {terminal_safe(str(result.path))} {state}")
        for change in result.changes:
            click.echo(f"  {terminal_safe(change)}")
    if stale:
        sys.exit(1)


@suites_group.command("list")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@handle_errors
def list_command(directory: Path, as_json: bool) -> None:
    """List the suites and fixtures in DIRECTORY: pinned model, must-pass, frozen status.

    Every suite is fully checked, as `suites run` would: bad input exits 2.
    """
    from agentledger.suites.execute import load_for_listing

    listing = load_for_listing(directory)
    if as_json:
        data = [
            {
                "agent": suite.agent,
                "directory": str(suite.directory),
                "model": suite.model.ref,
                "prompt": suite.spec.prompt,
                "prompt_sha256": suite.prompt_sha256,
                "frozen": list(suite.spec.frozen),
                "lock": check.status,
                "lock_problems": [problem.message for problem in check.problems],
                "notes": check.notes,
                "fixtures": [
                    {
                        "fixture": fixture.id,
                        "must_pass": suite.is_must_pass(fixture.id),
                        "properties": fixture.properties,
                        "files": [blob.name for blob in fixture.blobs],
                        "description": fixture.description,
                    }
                    for fixture in suite.fixtures
                ],
            }
            for suite, check in listing
        ]
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    suites = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in ("AGENT", "MODEL", "FIXTURES", "MUST-PASS", "FROZEN", "PROMPT"):
        suites.add_column(name, overflow="fold")
    fixtures = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in ("AGENT", "FIXTURE", "MUST-PASS", "PROPERTIES", "FILES"):
        fixtures.add_column(name, overflow="fold")
    for suite, check in listing:
        must = sum(1 for fixture in suite.fixtures if suite.is_must_pass(fixture.id))
        frozen = (
            check.status if not suite.spec.frozen else f"{len(suite.spec.frozen)} {check.status}"
        )
        suites.add_row(
            Text(suite.agent),
            Text(terminal_safe(suite.model.ref)),
            Text(str(len(suite.fixtures))),
            Text(str(must)),
            Text(frozen, style="red" if check.problems else ""),
            Text(f"{suite.spec.prompt} {suite.prompt_sha256[7:15]}"),
        )
        for fixture in suite.fixtures:
            fixtures.add_row(
                Text(suite.agent),
                Text(fixture.id),
                Text(render_value(suite.is_must_pass(fixture.id))),
                Text(terminal_safe(", ".join(fixture.properties))),
                Text(", ".join(blob.name for blob in fixture.blobs) or "-"),
            )
    emit(suites, Text(""), fixtures)
    for suite, check in listing:
        for problem in check.problems:
            click.echo(f"frozen: {terminal_safe(problem.message)}")
        for note in check.notes:
            click.echo(f"note: {suite.agent}: {terminal_safe(note)}")
