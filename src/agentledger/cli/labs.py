"""`agentledger lab`: real fault labs in network namespaces (up, down, check, shell, snapshot)."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

import click

from agentledger.cli.common import handle_errors
from agentledger.cli.output import terminal_safe

if TYPE_CHECKING:
    from agentledger.labs import CheckReport, LoadedLab

__all__ = ["lab_group"]

_LAB_HELP = "The lab's name (default: the only lab up)."


@click.group("lab")
def lab_group() -> None:
    """Real fault labs: hosts as network namespaces, services, owners, a fault and probes.

    A lab runs rootless in a user namespace where the kernel allows it (as root without one
    otherwise) and never touches this machine's network. LAB is a lab.yaml, a scenario
    directory holding one, a suite directory, or the id of a scenario of the packaged `labs`
    suite. Exit status: 0 ok, 1 a check failed, 2 bad input or a machine that cannot run labs.
    """


@lab_group.command("up")
@click.argument("target", metavar="LAB")
@click.option("--name", help="Name the lab (default: the scenario's directory name).")
@click.option("--no-fault", is_flag=True, help="Stop at the healthy baseline; inject nothing.")
@handle_errors
def up_command(target: str, name: str | None, no_fault: bool) -> None:
    """Bring a lab up and leave it running: baseline checked, fault injected and seen."""
    from agentledger.labs import resolve_labs, start_lab

    loaded = _one(resolve_labs(target), target)
    running = start_lab(loaded, name=name, fault=not no_fault, detach=True)
    who = f"as {running.privilege.user}, " if running.privilege.user else ""
    click.echo(
        f"lab {running.name} up ({running.privilege.mode}, {who}supervisor {running.pid}); "
        f"hosts: {', '.join(running.spec.host_names())}"
    )
    if not no_fault:
        click.echo(f"fault: {running.spec.fault.description.strip()}")


@lab_group.command("down")
@click.argument("name", required=False)
@handle_errors
def down_command(name: str | None) -> None:
    """Take a lab down: every process, namespace and mount of it goes."""
    from agentledger.labs import stop_lab

    click.echo(f"lab {stop_lab(name)} down")


@lab_group.command("list")
@handle_errors
def list_command() -> None:
    """The labs that are up."""
    from agentledger.labs import running_labs

    for running in running_labs():
        click.echo(
            f"{running.name}\t{running.privilege.mode}\tsupervisor {running.pid}\t"
            f"since {running.started_at}\thosts {','.join(running.spec.host_names())}"
        )


@lab_group.command("shell", context_settings={"allow_interspersed_args": False})
@click.argument("host")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--lab", "name", help=_LAB_HELP)
@handle_errors
def shell_command(host: str, command: tuple[str, ...], name: str | None) -> None:
    """A shell in HOST of a running lab, or one COMMAND there (exit status passed through)."""
    from agentledger.labs import attach_lab

    running = attach_lab(name)
    argv = running.host_argv(host)
    argv += ["sh", "-c", " ".join(command)] if command else ["sh", "-i"]
    os.execvpe(argv[0], argv, {**_lab_env(), "PS1": f"{running.name}:{host}# "})  # noqa: S606


def _lab_env() -> dict[str, str]:
    from agentledger.labs.script import SYSTEM_PATH

    return {"PATH": SYSTEM_PATH, "TERM": os.environ.get("TERM", "dumb"), "LC_ALL": "C.UTF-8"}


@lab_group.command("snapshot")
@click.option("--lab", "name", help=_LAB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print {hosts: {HOST: {SECTION: TEXT}}}.")
@click.option("--stable", is_flag=True, help="Zero live counters and process ids.")
@handle_errors
def snapshot_command(name: str | None, as_json: bool, stable: bool) -> None:
    """The real state of every host of a running lab: firewall, tc, routes, sockets, files."""
    from agentledger.labs import attach_lab, take_snapshot

    snapshot = take_snapshot(attach_lab(name), stable=stable)
    if as_json:
        click.echo(json.dumps(snapshot.to_json(), indent=2))
    else:
        click.echo(snapshot.to_text(), nl=False)


@lab_group.command("cycle")
@click.argument("owner", required=False)
@click.option("--lab", "name", help=_LAB_HELP)
@click.option("--times", type=click.IntRange(1, 100), default=1, help="Cycles to run.")
@handle_errors
def cycle_command(owner: str | None, name: str | None, times: int) -> None:
    """Run exactly one cycle (or --times) of OWNER (of every owner when none is named)."""
    from agentledger.labs import attach_lab

    running = attach_lab(name)
    running.cycle(owner, times=times)
    owners = [owner] if owner else [o.name for o in running.spec.owners]
    click.echo(f"{times} cycle{'s' if times > 1 else ''} of {', '.join(owners) or 'no owner'}")


@lab_group.command("probe")
@click.argument("probes", nargs=-1)
@click.option("--lab", "name", help=_LAB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@handle_errors
def probe_command(probes: tuple[str, ...], name: str | None, as_json: bool) -> None:
    """Run the probes (all, or those named) of a running lab; exit 1 when one is unhealthy."""
    from agentledger.labs import attach_lab

    results = attach_lab(name).probe(list(probes) or None)
    if as_json:
        click.echo(json.dumps(results.to_json(), indent=2))
    else:
        for r in results.results:
            state = "healthy" if r.healthy else "UNHEALTHY"
            click.echo(f"{r.name:<24} {r.role:<8} {state:<10} {terminal_safe(r.detail)}")
    sys.exit(1 if results.broken() else 0)


@lab_group.command("check")
@click.argument("targets", metavar="LAB...", nargs=-1, required=True)
@click.option("--remedy", "remedies", multiple=True, help="Check only this remedy (repeatable).")
@click.option(
    "--jobs",
    type=click.IntRange(1, 32),
    default=6,
    show_default=True,
    help="Labs at a time (most of a check is waiting on probe timeouts).",
)
@handle_errors
def check_command(targets: tuple[str, ...], remedies: tuple[str, ...], jobs: int) -> None:
    """Prove in fresh labs that the fault reproduces and each remedy does what the spec says.

    Each LAB is read as `lab up` reads it (a suite checks every lab in it); several may be
    given, and each lab is checked once. Each remedy runs in a fresh lab with its fault: its
    commands, then its owner cycles; the probes unhealthy afterwards must be exactly those the
    spec lists. The last line sums up; exit 1 when a check fails (its remedy and probe named).
    """
    from agentledger.labs import check_labs, resolve_targets

    found = resolve_targets(targets)
    if remedies and len(found) != 1:
        raise click.UsageError(f"--remedy needs a single lab; {len(found)} are named")
    chosen = [found[0].spec.remedy(n) for n in remedies] if remedies else None
    reports = check_labs(found, remedies=chosen, jobs=jobs)
    for report in reports:
        _print_report(report)
    click.echo(_summary(reports))
    sys.exit(0 if all(r.ok for r in reports) else 1)


def _summary(reports: list[CheckReport]) -> str:
    """`N of M checks passed in K labs`, naming what failed (a fault, or a lab's remedies)."""
    total = passed = 0
    failed: list[str] = []
    for report in reports:
        total += 1 + len(report.remedies)
        if report.fault_problem is not None:
            failed.append(f"{report.name} (fault)")
            continue
        passed += 1 + sum(check.ok for check in report.remedies)
        bad = [check.remedy.name for check in report.remedies if not check.ok]
        if bad:
            failed.append(f"{report.name} (remedy {', '.join(bad)})")
    labs = f"{len(reports)} lab{'s' if len(reports) != 1 else ''}"
    if not failed:
        return f"all {total} checks passed in {labs}"
    return f"{passed} of {total} checks passed in {labs}; failed: {'; '.join(failed)}"


def _print_report(report: CheckReport) -> None:
    if report.fault_problem is not None:
        click.echo(f"FAIL {report.name}: fault: {terminal_safe(report.fault_problem)}")
        return
    click.echo(f"ok   {report.name}: the fault reproduces")
    for check in report.remedies:
        m = check.measurement
        seen = ", ".join(m.after_cycles.broken()) if m else "?"
        mark = "ok  " if check.ok else "FAIL"
        click.echo(
            f"{mark} {report.name}: {check.remedy.kind} remedy {check.remedy.name}: "
            f"unhealthy after {check.remedy.cycles} cycles: {seen or 'none'}"
        )
        for problem in check.problems:
            click.echo(f"       {terminal_safe(problem)}")


def _one(found: list[LoadedLab], target: str) -> LoadedLab:
    if len(found) != 1:
        from agentledger.errors import InputError

        raise InputError(f"{target}: names {len(found)} labs; bring one up at a time")
    return found[0]
