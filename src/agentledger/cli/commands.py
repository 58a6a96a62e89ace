"""The application's table of commands and its own help, without click: `agentledger --help`
is written from here (cli/quick_help.py) without importing click or any command module, and
cli/app.py builds the click application from the same table.
"""

from __future__ import annotations

__all__ = ["ALIASES", "COMMANDS", "HELP", "MAX_WIDTH", "Command"]

HELP = """Turn runs of infrastructure agents into evidence, findings and decisions.

Every run is sealed into an append-only ledger with its identity (system prompt hash,
model asked for and served, agent commit) and indexed for queries.
"""
"""The application's help (the text under the usage line of `agentledger --help`)."""

MAX_WIDTH = 100
"""The widest help click writes (its `max_content_width`); a narrower terminal narrows it."""


class Command:
    """A command of the application, before it is imported. (A plain class, not a NamedTuple:
    importing typing would cost `--help` a tenth of its time.)"""

    __slots__ = ("summary", "target")

    def __init__(self, target: str, summary: str) -> None:
        self.target = target
        """Its click command, as ``"module:attribute"``."""
        self.summary = summary
        """What `agentledger --help` says of it: the command's short help."""


COMMANDS: dict[str, Command] = {
    "init": Command(
        "agentledger.cli.ledger:init_command",
        "Create a ledger at PATH (default: $AGENTLEDGER_DIR or ./.agentledger).",
    ),
    "import": Command(
        "agentledger.cli.importing:import_command",
        "Import existing runs: run directories, or trace files of other tools (--format).",
    ),
    "run": Command(
        "agentledger.cli.run:run_command",
        "Run an agent over SUITE (a directory of scenarios, or one scenario).",
    ),
    "judge": Command(
        "agentledger.cli.judging:judge_command",
        "Score every matching run that this judge has not scored yet.",
    ),
    "review": Command(
        "agentledger.cli.walkthrough:review_command",
        (
            "The review queue: runs whose judges of one pack disagree, runs a judge refused"
            " (self-judging), runs nobody has labelled, and last the runs in which nothing ran,"
            " each with why it is there."
        ),
    ),
    "label": Command(
        "agentledger.cli.labelling:label_command",
        "Label run RUN_ID (an id or a unique prefix): a verdict, criteria, the diagnosis.",
    ),
    "labels": Command(
        "agentledger.cli.label_sets:labels_group",
        "Labels of runs by people and outside sources: import, list, export, split.",
    ),
    "criteria": Command(
        "agentledger.cli.judging:criteria_group",
        "List and show criteria packs (the shipped ones, or a YAML file).",
    ),
    "runs": Command(
        "agentledger.cli.query:runs_command",
        "List runs, newest first, filtered by identity fields.",
    ),
    "show": Command(
        "agentledger.cli.query:show_command",
        "Show one run: identity, summary and files.",
    ),
    "sql": Command(
        "agentledger.cli.query:sql_command",
        "Run a read-only SQL query against the index (anything that writes is refused).",
    ),
    "export": Command(
        "agentledger.cli.query:export_command",
        (
            "Export the index (run_index.json, CSV, JSON lines), the runs as OpenTelemetry spans,"
            " or runs, scores and trace steps as Parquet tables, optionally filtered."
        ),
    ),
    "verify": Command(
        "agentledger.cli.integrity:verify_command",
        (
            "Check every record against the journal, the journal's hash chain, every run's files "
            "against its manifest, and every index column against the records (all, or RUN_IDS)."
        ),
    ),
    "gc": Command(
        "agentledger.cli.integrity:gc_command",
        (
            "Remove the staging debris of writers that died, and index the sealed runs and the "
            "scores the index missed (a writer killed between writing a record and indexing it)."
        ),
    ),
    "lab": Command(
        "agentledger.cli.labs:lab_group",
        "Real fault labs: hosts as network namespaces, services, owners, a fault and probes.",
    ),
    "outcome": Command(
        "agentledger.cli.outcome:outcome_command",
        (
            "Measure what each run's remediation really does: apply it in a fresh lab with the "
            "same fault and record fixed, durable, collateral and verified (and a label of source"
            " lab)."
        ),
    ),
    "reindex": Command(
        "agentledger.cli.integrity:reindex_command",
        "Rebuild the index from the sealed runs and scores (the files are the truth).",
    ),
    "checkpoint": Command(
        "agentledger.cli.integrity:checkpoint_command",
        "Print the head of the ledger's journal (entry count and hash), to keep elsewhere.",
    ),
    "schema": Command(
        "agentledger.cli.ledger:schema_command",
        "Print the JSON Schema of a record or file format (metadata, scenario, policy, ...).",
    ),
    "demo": Command(
        "agentledger.cli.demo:demo_command",
        "A guided tour: backfill the sample runs, judge them, report the findings, run an agent.",
    ),
    "doctor": Command(
        "agentledger.cli.doctor:doctor_command",
        "Check what each feature needs: the gate's sandbox, labs, screenshots, extras.",
    ),
    "exec": Command(
        "agentledger.cli.shell:exec_command",
        (
            "Run COMMAND through the gated shell: classify it, decide by the policy, run it or "
            "not, and log it to the run's shell_audit.jsonl either way."
        ),
    ),
    "report": Command(
        "agentledger.cli.report:report_command",
        "Findings across runs: verdicts, criteria, gap, drift, compare, or all of them.",
    ),
    "suites": Command(
        "agentledger.cli.suites:suites_group",
        "Fixture suites: frozen inputs and properties that must hold, run on every change.",
    ),
    "guard": Command(
        "agentledger.cli.guard:guard_command",
        (
            "Check a model's OUTPUT (a file, or - for stdin, the default) against the properties "
            "of an expect.json before its tool call runs: exit 0 to let it run, 1 to reject it."
        ),
    ),
    "decisions": Command(
        "agentledger.cli.decisions:decisions_group",
        "Decision records: what a gate tested, the rule, the outcome and why (oldest first).",
    ),
    "sentinel": Command(
        "agentledger.cli.sentinel:sentinel_group",
        "Sentinel suites: a fixed set of scenarios with pass criteria, for model migrations.",
    ),
    "variant": Command(
        "agentledger.cli.variant:variant_group",
        "Accept or reject a prompt variant (a prompt addon) by its spec's rule, with a record.",
    ),
    "agreement": Command(
        "agentledger.cli.agreement:agreement_command",
        "How far source A agrees with source B (the reference) on the runs both rated.",
    ),
    "migrate-backend": Command(
        "agentledger.cli.migrate:migrate_backend_command",
        "Copy the ledger to a new ledger at DEST on other backends, and verify the copy.",
    ),
    "serve": Command(
        "agentledger.cli.serve:serve_command",
        "Browse the ledger's runs and evidence in a browser; compare runs; label them.",
    ),
    "collect": Command(
        "agentledger.cli.collect:collect_command",
        (
            "Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, "
            "gzip) and seal each trace as a run, as `import --format otel` would."
        ),
    ),
}
"""Command name -> where its click command is, and the summary `--help` lists it with
(tests/test_cli_help.py holds each summary to the command's own)."""


ALIASES: dict[str, str] = {"fixtures": "suites"}
"""Old command name -> its command now. An alias runs the command exactly as its new name
does (CI scripts call the old names); `--help` lists only the new name."""
