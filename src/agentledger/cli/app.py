"""The click application: one lazy group over the command modules, each imported when run.

Commands are imported only when they are run (or listed with their help), so a command pays
only for the parts of the library it uses.
"""

from __future__ import annotations

import importlib

import click

from agentledger import __version__

__all__ = ["COMMANDS", "main"]

COMMANDS: dict[str, str] = {
    "init": "agentledger.cli.ledger:init_command",
    "import": "agentledger.cli.importing:import_command",
    "run": "agentledger.cli.run:run_command",
    "judge": "agentledger.cli.judging:judge_command",
    "review": "agentledger.cli.walkthrough:review_command",
    "label": "agentledger.cli.labelling:label_command",
    "labels": "agentledger.cli.label_sets:labels_group",
    "criteria": "agentledger.cli.judging:criteria_group",
    "runs": "agentledger.cli.query:runs_command",
    "show": "agentledger.cli.query:show_command",
    "sql": "agentledger.cli.query:sql_command",
    "export": "agentledger.cli.query:export_command",
    "verify": "agentledger.cli.integrity:verify_command",
    "gc": "agentledger.cli.integrity:gc_command",
    "lab": "agentledger.cli.labs:lab_group",
    "outcome": "agentledger.cli.outcome:outcome_command",
    "reindex": "agentledger.cli.integrity:reindex_command",
    "checkpoint": "agentledger.cli.integrity:checkpoint_command",
    "schema": "agentledger.cli.ledger:schema_command",
    "demo": "agentledger.cli.demo:demo_command",
    "doctor": "agentledger.cli.doctor:doctor_command",
    "exec": "agentledger.cli.shell:exec_command",
    "report": "agentledger.cli.report:report_command",
    "fixtures": "agentledger.cli.fixtures:fixtures_group",
    "guard": "agentledger.cli.guard:guard_command",
    "decisions": "agentledger.cli.decisions:decisions_group",
    "sentinel": "agentledger.cli.sentinel:sentinel_group",
    "variant": "agentledger.cli.variant:variant_group",
    "agreement": "agentledger.cli.agreement:agreement_command",
    "migrate-backend": "agentledger.cli.migrate:migrate_backend_command",
    "serve": "agentledger.cli.serve:serve_command",
    "collect": "agentledger.cli.collect:collect_command",
}
"""Command name -> "module:attribute" of its click command."""


class LazyGroup(click.Group):
    """A group whose subcommands are imported when first needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="agentledger")
def main() -> None:
    """Turn runs of infrastructure agents into evidence, findings and decisions.

    Every run is sealed into an append-only ledger with its identity (system prompt hash,
    model asked for and served, agent commit) and indexed for queries.
    """
