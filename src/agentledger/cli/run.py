"""`agentledger run`: run an agent over a suite of scenarios, one sealed run per combination."""

from __future__ import annotations

import sys
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentledger.cli.common import (
    concurrency_option,
    handle_errors,
    ledger_location,
    ledger_option,
    model_call_options,
    parse_tags,
    progress_bar,
    step_counter,
)
from agentledger.cli.output import terminal_safe
from agentledger.runner.agent_spec import LoadedAgent, load_agent
from agentledger.runner.run import (
    RunOptions,
    RunOutcome,
    prepare_suite,
    run_suite,
)
from agentledger.runner.scenario import load_suite
from agentledger.store import Ledger

if TYPE_CHECKING:
    from agentledger.records.outcomes import Outcome

__all__ = ["run_command"]


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _may_ask(agent: LoadedAgent) -> bool:
    """True when the agent's gate policy may ask at the terminal whether a command runs: a
    progress bar would then draw over the question (it redraws its line)."""
    if not agent.spec.policy:
        return False  # the packaged investigate policy never asks
    from agentledger.runner.shell_gate import load_policy

    rules = load_policy(agent.resolve(agent.spec.policy))
    return "prompt" in (rules.on_mutating, rules.on_destructive, rules.on_unknown)


def _line(run: RunOutcome) -> str:
    status = run.status if run.status == "ok" else click.style(run.status, fg="red")
    text = f"{run.run_id}  {status}"
    if run.error:
        text += f"  ({terminal_safe(run.error)})"
    return text


@click.command("run")
@click.argument(
    "suite", type=click.Path(exists=True, file_okay=False, path_type=Path), metavar="SUITE"
)
@click.option(
    "--agent",
    "agent_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The agent file (TOML): kind, system prompt, model, checkout, timeout.",
)
@ledger_option
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="NAME",
    help="Model to run (repeatable) [default: the agent file's model].",
)
@click.option(
    "--scenario",
    "scenario_ids",
    multiple=True,
    metavar="ID",
    help="Run only this scenario of the suite (repeatable).",
)
@click.option(
    "--prompt-addon",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Text appended to the base system prompt for these runs; the base file is not touched.",
)
@click.option("--variant", help="Variant name recorded on the runs [default: the addon's stem].")
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs per scenario and model.",
)
@concurrency_option("Runs at the same time (and model calls in flight).")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag every run.")
@click.option("--no-cache", is_flag=True, help="Call the model even when a cached answer exists.")
@click.option(
    "--record",
    "record_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write every model response here, for replay.",
)
@model_call_options
@click.option(
    "--no-outcome",
    is_flag=True,
    help="Do not measure the outcome of runs of lab scenarios (each in a fresh lab, "
    "--concurrency at a time, while the suite runs).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary.")
@handle_errors
def run_command(
    suite: Path,
    agent_file: Path,
    ledger_path: Path | None,
    models: tuple[str, ...],
    scenario_ids: tuple[str, ...],
    prompt_addon: Path | None,
    variant: str | None,
    repeat: int,
    concurrency: int,
    tags: tuple[str, ...],
    no_cache: bool,
    record_dir: Path | None,
    request_timeout: float | None,
    retries: int | None,
    no_outcome: bool,
    quiet: bool,
) -> None:
    """Run an agent over SUITE (a directory of scenarios, or one scenario).

    One sealed run per scenario, model and repeat, with its full identity: the system prompt
    hash (base + addon), the model asked for and served, the agent's commit. A failing,
    crashing or timed-out agent still leaves a run, marked with how it ended. Exit status 1
    when any run did not end ok; 130 after Ctrl-C (the runs already made are kept).
    """
    agent = load_agent(agent_file)
    scenarios = load_suite(suite, list(scenario_ids) or None)
    options = RunOptions(
        models=models,
        prompt_addon=prompt_addon,
        variant=variant,
        repeat=repeat,
        concurrency=concurrency,
        use_cache=not no_cache,
        record_dir=record_dir,
        tags=parse_tags(tags),
        request_timeout=request_timeout,
        retries=retries,
    )
    root = ledger_location(ledger_path)
    prepared = prepare_suite(root, agent, scenarios, options)
    ledger, created = Ledger.open_or_init(root)
    if created:
        click.echo(f"Created a ledger at {terminal_safe(str(root))}", err=True)
    total = len(prepared.plan())
    outcomes = None if no_outcome else LabOutcomes(ledger, concurrency)
    try:
        bar = nullcontext(None) if _may_ask(agent) else progress_bar(f"Running {agent.spec.name}")
        with bar as progress:
            step = step_counter(progress, total)

            def on_run(run: RunOutcome) -> None:
                step()
                if not quiet:
                    click.echo(_line(run))
                if outcomes is not None:
                    outcomes.submit(run)

            report = run_suite(ledger, prepared, on_run=on_run)
        if outcomes is not None:
            outcomes.finish(report.interrupted, quiet)
    finally:
        if outcomes is not None:
            outcomes.pool.shutdown(wait=True, cancel_futures=True)
        ledger.close()
    failed = len(report.failed)
    summary = (
        f"{len(report.runs)} of {report.planned} runs written to {terminal_safe(str(root))}; "
        f"{failed} did not end ok; cost {_money(report.cost_usd)}"
    )
    if report.model_calls:
        summary += f"; {report.model_calls} model calls ({report.cached_calls} from the cache)"
    click.echo(summary + ".")
    prompt = prepared.prompt
    click.echo(f"System prompt {prompt.system_prompt_hash[:15]}", nl=False)
    if prepared.variant:
        click.echo(f" (base {prompt.base_prompt_hash[:15]} + {prepared.variant})", nl=False)
    click.echo(".")
    if report.interrupted:
        click.echo("Interrupted: the runs not started were skipped.", err=True)
        sys.exit(130)
    if failed or (outcomes is not None and outcomes.unmeasured):
        sys.exit(1)


class LabOutcomes:
    """The outcomes of a suite's lab runs, measured while the suite runs: each sealed run of a
    lab scenario is measured in a fresh lab by one of `jobs` workers (the run's
    `--concurrency`), so that the checks overlap the runs still going. A check whose lab
    would not come up is named, with why, and does not stop the others. A run in which the
    gated shell could start no command is not measured: its report rests on nothing it saw,
    and a "fixed" measured from it would count in the outcome rates as the agent's work."""

    def __init__(self, ledger: Ledger, jobs: int) -> None:
        self.ledger = ledger
        self.pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="agentledger-outcome")
        self.pending: list[Future[list[Outcome]]] = []
        self.unmeasured = 0
        self.nothing_ran: list[str] = []

    def submit(self, run: RunOutcome) -> None:
        from agentledger.runner.nothing_started import nothing_started

        if nothing_started(run.status, run.error):
            self.nothing_ran.append(run.run_id)
        elif run.status != "setup-failed":
            self.pending.append(self.pool.submit(self._measure, run.run_id))

    def _measure(self, run_id: str) -> list[Outcome]:
        from agentledger.labs import LabStartError, LabUnavailableError
        from agentledger.outcomes.check import lab_runs, measure_and_record

        try:
            return list(measure_and_record(self.ledger, lab_runs(self.ledger, [run_id])))
        except (LabStartError, LabUnavailableError) as exc:
            raise _NotMeasured(run_id, str(exc)) from None

    def finish(self, interrupted: bool, quiet: bool, *, err: bool = False) -> None:
        """Wait for every check (none is started after Ctrl-C) and say what each measured
        (on stderr with `err`)."""
        if interrupted:
            self.pool.shutdown(wait=True, cancel_futures=True)
        for run_id in self.nothing_ran:
            click.echo(
                f"outcome of {terminal_safe(run_id)}: not measured: nothing ran in it (the "
                "gated shell could not start any command the agent tried)",
                err=True,
            )
        for future in as_completed(self.pending):
            if future.cancelled():
                continue
            try:
                outcomes = future.result()
            except _NotMeasured as exc:
                self.unmeasured += 1
                click.echo(
                    f"outcome of {terminal_safe(exc.run_id)}: not measured: "
                    f"{terminal_safe(exc.why)} (`agentledger outcome {exc.run_id}` measures it)",
                    err=True,
                )
                continue
            for outcome in outcomes if not quiet else []:
                click.echo(
                    f"outcome of {terminal_safe(outcome.run_id)}: "
                    f"fixed {_yes(outcome.fixed)}, durable {_yes(outcome.durable)}, "
                    f"collateral {_yes(outcome.collateral)}, verified {_yes(outcome.verified)}",
                    err=err,
                )


class _NotMeasured(Exception):
    def __init__(self, run_id: str, why: str) -> None:
        super().__init__(f"{run_id}: {why}")
        self.run_id, self.why = run_id, why


def _yes(value: bool | None) -> str:
    return "unknown" if value is None else "yes" if value else "no"
