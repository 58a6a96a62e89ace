"""`agentledger import`: backfill runs kept as directories (the seed's layout, or any other)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentledger.cli.common import (
    INTERRUPTED,
    announce_journal,
    handle_errors,
    ledger_location,
    ledger_option,
    parse_pairs,
    parse_tags,
    progress_bar,
)
from agentledger.errors import LedgerNotFoundError
from agentledger.importers import workers as import_workers

if TYPE_CHECKING:
    from agentledger.importers import ImportOptions, ImportReport, PreparedImport
    from agentledger.store import Ledger

# The library is imported inside the command, once its worker processes are starting (they
# load it too, on the other CPUs): what this module imports is light.

__all__ = ["import_command"]


def _size(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from agentledger.store.sizes import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _plural(count: int, word: str = "run") -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _list_runs(prepared: PreparedImport, dry_run: bool) -> None:
    from agentledger.cli.output import terminal_safe

    for run in prepared.runs:
        if run.identical:
            click.echo(f"{run.run_id}: already imported, identical")
        else:
            verb = "would import" if dry_run else "imported"
            click.echo(f"{run.run_id}: {verb} from {terminal_safe(str(run.directory))}")


def _echo_skipped(prepared: PreparedImport) -> None:
    """List the runs --skip-invalid left out, and why, on stderr."""
    from agentledger.cli.output import terminal_safe

    for _path, why in prepared.skipped:
        click.echo(f"skipped {terminal_safe(why)}", err=True)


def _refuse_doubles(ledger: Ledger, prepared: PreparedImport) -> None:
    """Exit 2 naming the runs the import would double, unless there are none."""
    from agentledger.cli.common import fail
    from agentledger.importers.duplicates import doubled_runs

    doubled = doubled_runs(ledger, prepared)
    if not doubled:
        return
    shown = "\n".join(
        f"  {new} (from the same file as {', '.join(held)})" for new, held in doubled[:10]
    )
    more = f"\n  ... and {len(doubled) - 10} more" if len(doubled) > 10 else ""
    fail(
        f"{len(doubled)} run(s) would double runs already in the ledger: their trace files "
        f"were imported before under another identity. Nothing was written.\n{shown}{more}\n"
        "Import under the same identity (a no-op), or pass --allow-duplicates to keep both."
    )


def _interrupted(root: Path, before: int, new: int) -> None:
    """Say what an import stopped by Ctrl-C left, and exit 130."""
    from agentledger.store import Ledger

    ledger = Ledger.open(root)
    try:
        imported = ledger.count() - before
    finally:
        ledger.close()
    click.echo(
        f"Interrupted: {_plural(imported)} of {new} imported before the interrupt. A run is "
        "sealed whole or not at all; run the same import again to add the rest (runs already "
        "imported are skipped).",
        err=True,
    )
    sys.exit(INTERRUPTED)


@click.command("import")
@click.argument(
    "paths",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@ledger_option
@click.option(
    "--format",
    "import_format",
    type=click.Choice(["directory", "openhands", "jsonl", "otel", "inspect", "promptfoo"]),
    default=None,
    help="What PATH holds: run directories, OpenHands trajectories (traj_*.json, one run "
    "per file), plain traces (*.jsonl, one step per line), OTLP JSON spans (otel, one run per "
    "trace id), Inspect AI logs (inspect, one run per sample and epoch) or promptfoo results "
    "(promptfoo, one run per output, grades and ratings as labels) [default: detected from "
    "the files].",
)
@click.option(
    "--map",
    "mappings",
    multiple=True,
    metavar="KEY=GLOB",
    help=(
        "Which file is which artifact, replacing the default pattern of KEY (repeatable). "
        "Keys: prompt, system_prompt, report, audit, shell_audit, snapshot, metadata, summary. "
        "A GLOB with '/' matches paths inside the run."
    ),
)
@click.option(
    "--sidecar",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CSV or JSON file of identity fields per run directory name (column 'directory').",
)
@click.option(
    "--model",
    help="Model asked for: of run directories that do not say; of trace files, the run's "
    "(a model the trace names is kept beside it, in the metadata's source).",
)
@click.option(
    "--scenario",
    help="Scenario (use case): of run directories that do not say; of trace files, the run's "
    "(instead of the file name's or the trace's).",
)
@click.option("--provider", help="Model provider (anthropic, google, openai, ...).")
@click.option("--agent-name", help="Name of the agent that made the runs.")
@click.option("--agent-commit", help="Commit of the agent's code.")
@click.option("--variant", help="Prompt variant name (omit for baseline runs).")
@click.option(
    "--system-prompt-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The exact system prompt the runs used: stored, hashed, checked against their hash.",
)
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag (repeatable).")
@click.option(
    "--name-pattern",
    metavar="REGEX",
    help=(
        "Regex matched against each run directory's name; named groups scenario, model, date "
        "and variant fill fields nothing else gives. Default reads use_case_m_haiku_20260312."
    ),
)
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Leave matching files out (repeatable)."
)
@click.option(
    "--max-artifact-size",
    metavar="SIZE",
    callback=_size,
    help="Largest file accepted in this import (100MB, 1.5GB, bytes) [default: the ledger's].",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    metavar="N",
    default=200,
    show_default=True,
    help="Runs sealed per disk flush and index transaction.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    metavar="N",
    default=None,
    help="Processes that check and seal runs [default: one more than the CPUs, up to 8, from "
    "1000 runs, or 300 trace files].",
)
@click.option(
    "--timezone",
    metavar="ZONE",
    help="The time zone of trace times written without one (an IANA name: Europe/Berlin, "
    "UTC); recorded in each run's metadata [default: such times give no start time].",
)
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Import every run that reads and list the ones left out and why (without it, one "
    "bad run imports nothing, every problem listed).",
)
@click.option(
    "--allow-duplicates",
    is_flag=True,
    help="Import trace files the ledger already holds as runs of another identity (another "
    "--model, --scenario...): every such run is then in the ledger twice.",
)
@click.option("--dry-run", is_flag=True, help="Check every run and report; write nothing.")
@click.option("-v", "--verbose", is_flag=True, help="List every run and what happened to it.")
@handle_errors
def import_command(
    paths: tuple[Path, ...],
    ledger_path: Path | None,
    import_format: str | None,
    mappings: tuple[str, ...],
    sidecar: Path | None,
    model: str | None,
    scenario: str | None,
    provider: str | None,
    agent_name: str | None,
    agent_commit: str | None,
    variant: str | None,
    system_prompt_file: Path | None,
    tags: tuple[str, ...],
    name_pattern: str | None,
    exclude: tuple[str, ...],
    max_artifact_size: int | None,
    batch_size: int,
    workers: int | None,
    timezone: str | None,
    skip_invalid: bool,
    allow_duplicates: bool,
    dry_run: bool,
    verbose: bool,
) -> None:
    """Import existing runs: run directories, or trace files of other tools (--format).

    PATH is a run directory or a directory of run directories; or trace files, or a
    directory of them: OpenHands trajectories (traj_*.json, one run per file, the files
    beside each kept with it), plain traces (*.jsonl, one run per file), OTLP JSON spans
    (*.json, one run per trace id), Inspect AI logs (*.eval, one run per sample and epoch),
    promptfoo results (results.json of `promptfoo eval -o`: one run per output, except those
    of agentledger's own promptfoo provider, which are runs already; grades, ratings and
    comments become labels).

    Every run is checked before anything is written: one bad run and nothing is imported,
    every bad run named; --skip-invalid imports the rest and lists those it left out.
    Imported runs are marked backfilled. A run already in the ledger with identical content is
    skipped; the same run id with different content is an error.
    """
    try:
        import_workers.start_early(paths, workers, import_format=import_format)
        from agentledger.importers import ARTIFACT_KEYS, ImportOptions

        mapping: dict[str, list[str]] = {}
        for key, pattern in parse_pairs("--map", mappings):
            if key not in ARTIFACT_KEYS:
                raise click.BadParameter(
                    f"unknown key {key!r}; use one of {', '.join(ARTIFACT_KEYS)}",
                    param_hint="--map",
                )
            mapping.setdefault(key, []).append(pattern)
        options = ImportOptions(
            mapping=mapping,
            sidecar=sidecar,
            model=model,
            scenario=scenario,
            provider=provider,
            agent_name=agent_name,
            agent_commit=agent_commit,
            variant=variant,
            system_prompt_file=system_prompt_file,
            tags=parse_tags(tags),
            name_pattern=name_pattern,
            exclude=exclude,
            max_artifact_bytes=max_artifact_size,
            batch_size=batch_size,
            workers=workers,
            format=import_format,
            timezone=timezone,
            skip_invalid=skip_invalid,
        )
        if timezone is not None:
            from agentledger.importers.trace_runs import time_zone

            time_zone(timezone)  # an unknown zone is refused before any file is read
        root = ledger_location(ledger_path)
        done = _import(list(paths), options, root, allow_duplicates, dry_run, verbose)
        if done is not None:
            _echo_imported(*done, root, verbose)
            _echo_untimed(*done, root)
    except KeyboardInterrupt:  # before any run was sealed (after, _interrupted says what was)
        click.echo("Interrupted while checking runs: nothing was written.", err=True)
        sys.exit(INTERRUPTED)
    finally:
        import_workers.close_early()  # those the import did not take (it stopped before)


def _import(
    paths: list[Path],
    options: ImportOptions,
    root: Path,
    allow_duplicates: bool,
    dry_run: bool,
    verbose: bool,
) -> tuple[ImportReport, PreparedImport] | None:
    """Check every run, then import them into the ledger at `root` (made once they all
    passed); None after a dry run, which writes nothing."""
    from agentledger.cli.output import terminal_safe
    from agentledger.importers import prepare_import
    from agentledger.store import Ledger

    try:
        ledger: Ledger | None = Ledger.open(root)
    except LedgerNotFoundError:
        if root.exists() and not root.is_dir():
            raise
        ledger = None  # created once every run has been checked
    if ledger is not None:
        announce_journal(ledger)
    before = ledger.count() if ledger is not None else 0
    try:
        with progress_bar("Checking runs") as progress:
            prepared = prepare_import(paths, options, ledger=ledger, progress=progress)
        with prepared:
            _echo_skipped(prepared)
            if ledger is not None and not allow_duplicates:
                _refuse_doubles(ledger, prepared)
            new = len(prepared.new_runs)
            identical = len(prepared.runs) - new
            if dry_run:
                if verbose:
                    _list_runs(prepared, dry_run=True)
                click.echo(
                    f"Dry run: would import {_plural(new)} into {terminal_safe(str(root))}; "
                    f"{identical} already imported, identical. Nothing was written."
                )
                return None
            created = False
            if ledger is None:
                ledger, created = Ledger.open_or_init(root)
            with progress_bar("Importing runs") as progress:
                try:
                    report = prepared.commit(ledger, progress=progress)
                except KeyboardInterrupt:
                    _interrupted(root, before, new)
                except Exception:
                    # A ledger this import created and could not write into goes again.
                    if created and ledger.remove_if_unused():
                        ledger = None
                    raise
            if created:
                click.echo(f"Created a new ledger at {terminal_safe(str(root))}", err=True)
                announce_journal(ledger)
            chosen = prepared.format
            if chosen == "promptfoo":
                _promptfoo_labels(ledger, paths)
            if chosen != "directory" and report.imported:
                imported = set(report.imported)
                report.untimed = sum(
                    1 for run in ledger.runs() if run.run_id in imported and not run.started_at
                )
    finally:
        if ledger is not None:
            ledger.close()
    return report, prepared


def _echo_imported(
    report: ImportReport, prepared: PreparedImport, root: Path, verbose: bool
) -> None:
    """What the import did: the runs imported, already there, indexed late, skipped."""
    from agentledger.cli.output import terminal_safe

    if verbose:
        _list_runs(prepared, dry_run=False)
    message = f"Imported {_plural(len(report.imported))} into {terminal_safe(str(root))}"
    if report.identical:
        message += f"; {len(report.identical)} already imported, identical"
        if not report.imported and not report.indexed:
            message += " (nothing to do)"
    if report.indexed:
        message += (
            f"; {len(report.indexed)} of those were sealed but not indexed (an earlier import "
            "was stopped in between): indexed now"
        )
    if prepared.skipped:
        message += f"; {len(prepared.skipped)} skipped as invalid"
    click.echo(message + ".")


def _echo_untimed(report: ImportReport, prepared: PreparedImport, root: Path) -> None:
    """Say when imported traces gave runs no start time, before --since or drift by week
    leave them out silently."""
    if report.untimed:
        click.echo(
            f"{report.untimed} of them have no start time (no times, or times without a zone: "
            "--timezone ZONE gives one); --since, --until and drift by week leave them out.",
            err=True,
        )


def _promptfoo_labels(ledger: Ledger, paths: list[Path]) -> None:
    """promptfoo's grades, ratings and comments as labels of the runs of its results."""
    from agentledger.importers.promptfoo_labels import promptfoo_labels
    from agentledger.labels import LabelStore

    found = promptfoo_labels(ledger, paths)
    _written, there = LabelStore(ledger).write_new(found.labels)
    for what, why in found.left_out:
        click.echo(f"left out {what}: {why}", err=True)
    note = f"; {len(there)} already there" if there else ""
    click.echo(f"Labelled from promptfoo: {len(found.labels) - len(there)} label(s){note}.")
