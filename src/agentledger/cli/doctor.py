"""`agentledger doctor`: what this machine has of what each feature needs."""

from __future__ import annotations

import json
import sys

import click

from agentledger.cli.output import print_columns
from agentledger.runner.preflight import core_ok, run_checks

__all__ = ["doctor_command"]


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per check.")
def doctor_command(as_json: bool) -> None:
    """Check what each feature needs: the gate's sandbox, labs, screenshots, extras.

    Nothing is installed or changed: executables are looked for, packages found without
    importing them, and two things tried in throwaway processes (a command in the gate's
    sandbox; `unshare -Urn true`). A missing need says how to get it (Debian package or pip
    extra). Exit 0 when the default features work (Python 3.11+ and the gated shell's
    read-only sandbox, which `run` and `exec` use under the packaged policy); 1 when one of
    them is missing. Labs, screenshots, backends and providers are optional.
    """
    checks = run_checks()
    if as_json:
        for check in checks:
            click.echo(json.dumps(check.__dict__, ensure_ascii=False))
    else:
        rows = [
            [
                check.feature + ("" if check.default else " (optional)"),
                check.need,
                "ok" if check.ok else "MISSING",
                check.detail if check.ok else f"{check.detail}; {check.how}",
            ]
            for check in checks
        ]
        print_columns(["FEATURE", "NEEDS", "STATUS", "DETAIL"], rows)
        missing = [check for check in checks if not check.ok]
        if core_ok(checks):
            click.echo(
                f"\nThe default features work here; {len(missing)} optional need(s) missing."
            )
        else:
            needs = ", ".join(check.need for check in missing if check.default)
            click.echo(f"\nA default feature cannot work here: missing {needs}.")
    sys.exit(0 if core_ok(checks) else 1)
