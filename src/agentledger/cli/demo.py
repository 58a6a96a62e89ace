"""`agentledger demo`: a guided tour on the bundled sample runs, using the real commands."""

from __future__ import annotations

import shlex
import shutil
import tempfile
from pathlib import Path

import click

from agentledger.cli.common import fail, handle_errors
from agentledger.importers import sample_runs_dir
from agentledger.runner.examples import examples_dir, gates_dir, suites_dir
from agentledger.store import Ledger, RunFilter
from agentledger.store.ledger import CONFIG_NAME

__all__ = ["demo_command"]

DEFAULT_DIR = Path("agentledger-demo")


def _step(title: str, args: list[str], *, expect: int = 0) -> None:
    """Print a command the way a user would type it, then run it in this process."""
    from agentledger.cli.app import main

    click.secho(f"\n# {title}", fg="cyan", bold=True)
    click.secho("$ agentledger " + shlex.join(args), bold=True)
    code = 0
    try:
        main.main(args=args, prog_name="agentledger", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    if code != expect:
        raise click.ClickException(f"the demo step `{shlex.join(args)}` exited {code}")
    if code:
        click.echo(f"(exit code {code})")


def _tamper_demo(ledger_dir: Path) -> None:
    """Flip one byte of a copy of the ledger and show that verify catches it."""
    with tempfile.TemporaryDirectory(prefix="agentledger-demo-") as scratch:
        copy = Path(scratch) / "tampered"
        shutil.copytree(ledger_dir, copy)
        with Ledger.open(copy) as ledger:
            run_id = ledger.runs()[0].run_id
        report = copy / "runs" / run_id / "report.md"
        report.parent.chmod(0o755)
        report.chmod(0o644)
        data = bytearray(report.read_bytes())
        data[len(data) // 2] ^= 0x20
        report.write_bytes(bytes(data))
        _step(
            f"Tampering: one byte of {run_id}/report.md changed, in a copy of the ledger",
            ["verify", "--ledger", str(copy)],
            expect=3,
        )


def _gates_demo(root: str, samples: Path, suite: Path) -> None:
    """A prompt variant rejected with its per-model record, then a sentinel suite's go/no-go."""
    gates = gates_dir() / "netops"
    _step(
        "Gate: the variant-a prompt addon against the untouched baseline, by its acceptance rule "
        "(every model must pass); the decision is recorded",
        ["variant", "evaluate", str(gates / "variant-a.yaml"), "--ledger", root],
        expect=1,
    )
    sentinel = str(gates / "sentinel.yaml")
    _step(
        "Before a model migration: later runs of the sentinel scenarios by the baseline model "
        "and a candidate (synthetic)",
        [
            "import",
            "--ledger",
            root,
            "--tag",
            "sample=true",
            "--agent-name",
            "ghost",
            str(samples.parent / "sentinel_runs"),
        ],
    )
    _step(
        "Judge the new runs (only they are scored)",
        ["judge", "--ledger", root, "--diagnosis", "--suite", str(suite)],
    )
    _step(
        "Sentinel check of the candidate as of 2026-04-20",
        [
            "sentinel",
            "check",
            sentinel,
            "--ledger",
            root,
            "--candidate",
            "model=gemini-3-flash,until=2026-04-20",
        ],
    )
    _step(
        "The same model id three weeks later regresses on use_case_f: NO-GO",
        ["sentinel", "check", sentinel, "--ledger", root, "--candidate", "model=gemini-3-flash"],
        expect=1,
    )
    _step(
        "The suite's history flags an outcome change under the same model id",
        ["sentinel", "history", sentinel, "--ledger", root],
    )
    _step("Every decision, oldest first", ["decisions", "--ledger", root])


def _suites_demo(directory: Path) -> None:
    """Fixture suites replayed offline, their history in the ledger, and the production guard."""
    root = str(directory)
    fixtures = examples_dir() / "fixtures"
    _step(
        "Fixture suites of seven production agents, replaying recorded model outputs offline "
        "(-q: only the failures; the traps some recordings fell into)",
        [
            "suites",
            "run",
            str(fixtures / "suites"),
            "--replay",
            str(fixtures / "recordings"),
            "--ledger",
            root,
            "-q",
        ],
        expect=1,
    )
    _step(
        "Every fixture execution is a run: which fixtures wrote SQL, with which model, since when?",
        ["runs", "--ledger", root, "--judge", "fixtures", "--fired", "sql_read_only"],
    )
    output = directory / "model-output.json"
    output.write_text(
        '{"sql": "WITH gone AS (DELETE FROM events RETURNING *) SELECT count(*) FROM gone",'
        ' "tables": ["events"]}\n',
        encoding="utf-8",
    )
    _step(
        "The same checks as a last-chance guard in production: exit 1, the tool does not run",
        [
            "guard",
            "--expect",
            str(fixtures / "suites" / "sql" / "fixtures" / "drop-events" / "expect.json"),
            str(output),
        ],
        expect=1,
    )


def _runner_demo(root: str) -> tuple[Path, str]:
    """Run the bundled offline example agent for two models, with and without an addon.

    Without the gate's sandbox (bubblewrap) no command of the agent can start: the runs are
    recorded as failed, and the tour says why before it runs them.
    """
    from agentledger.runner.preflight import sandbox_problem

    example = examples_dir() / "netops"
    suite, agent = str(example / "suite"), str(example / "agent" / "agent.toml")
    models = ["--model", "scripted-careful", "--model", "scripted-hasty"]
    problem = sandbox_problem()
    expect = 0
    if problem is not None:
        expect = 1
        click.secho(
            f"\nThe gated shell cannot start commands here ({problem}): the agent runs below "
            "are recorded as failed. `agentledger doctor` lists what each feature needs.",
            fg="yellow",
            err=True,
        )
    _step(
        "Run an agent: the bundled scripted agent over two scenarios, for two models",
        ["run", "--ledger", root, suite, "--agent", agent, *models],
        expect=expect,
    )
    _step(
        "The same with a prompt addon: the base prompt file is untouched, the hash changes",
        ["run", "--ledger", root, suite, "--agent", agent, *models,
         "--prompt-addon", str(example / "agent" / "variant-a.txt")],
        expect=expect,
    )  # fmt: skip
    _step(
        "Every command went through the gate; refused ones are in the log too",
        [
            "sql",
            "--ledger",
            root,
            "SELECT model, coalesce(variant, '-') AS variant, "
            "substr(system_prompt_hash, 8, 8) AS prompt, count(*) AS runs, "
            "sum(commands_run) AS ran, sum(commands_denied) AS denied "
            "FROM runs WHERE NOT backfilled GROUP BY model, variant ORDER BY model, variant",
        ],
    )
    _step(
        "How the gate judges a command, without running it",
        ["exec", "--dry-run", "--", 'sudo sh -c "iptables -F f2b-sshd"'],
        expect=126,
    )
    with Ledger.open(Path(root)) as ledger:
        hasty = ledger.runs(RunFilter(models=("scripted-hasty",), scenarios=("f2b-owned-chain",)))
    return example, hasty[-1].run_id


LAB_SCENARIOS = ("lab_f2b_chain", "lab_allowlist_set")
PERSONALITIES = ("scripted-careful", "scripted-hasty", "scripted-reckless")


def _labs_demo(directory: Path) -> None:
    """The scripted agents in real labs: what their fixes really do, and the judge against it."""
    from agentledger.labs import LabUnavailableError, choose_privilege
    from agentledger.labs.spec import packaged_labs_dir
    from agentledger.runner.preflight import sandbox_problem

    try:
        privilege = choose_privilege()
    except LabUnavailableError as exc:
        click.echo(f"agentledger demo --labs: skipped: this machine cannot run labs: {exc}")
        return
    problem = sandbox_problem()
    if problem is not None:
        # Every agent command in a lab goes through the gated shell: without its sandbox none
        # starts, and the tour would only record runs in which nothing ran.
        click.echo(
            "agentledger demo --labs: skipped: the gated shell cannot start the agents' "
            f"commands here ({problem}); `agentledger doctor` lists what each feature needs"
        )
        return
    root = str(directory)
    click.echo(f"agentledger demo --labs: labs run {privilege.mode} here; a ledger in {root}")
    agent = examples_dir() / "netops" / "agent"
    scenarios = [arg for name in LAB_SCENARIOS for arg in ("--scenario", name)]
    models = [arg for name in PERSONALITIES for arg in ("--model", name)]
    models += ["--concurrency", "2"]  # runs and their outcome checks overlap
    suite = str(packaged_labs_dir())
    _step(
        "Investigate in real labs (a fresh one per run); the fix each report recommends is "
        "then applied in another fresh lab and measured",
        ["run", "--ledger", root, suite, "--agent", str(agent / "agent.toml"),
         *scenarios, *models],
    )  # fmt: skip
    _step(
        "The same agents under the remediate policy: inside a lab they apply their fix",
        ["run", "--ledger", root, suite, "--agent", str(agent / "agent-remediate.toml"),
         *scenarios, *models],
    )  # fmt: skip
    _step("Judge the runs from their text (the rules judge)", ["judge", "--ledger", root])
    _step(
        "What the fixes did, beside what the judge said", ["report", "outcomes", "--ledger", root]
    )
    _step(
        "The judge against the measurements, criterion by criterion",
        ["agreement", "--ledger", root, "--a", "judge:rules", "--b", "labels:lab"],
    )


@click.command("demo")
@click.argument("directory", type=click.Path(path_type=Path), default=DEFAULT_DIR)
@click.option(
    "--labs",
    is_flag=True,
    help="Only the lab tour: the scripted agents in real labs, their fixes measured (needs "
    "user namespaces or root; says why it skips otherwise).",
)
@handle_errors
def demo_command(directory: Path, labs: bool) -> None:
    """A guided tour: backfill the sample runs, judge them, report the findings, run an agent.

    The sample runs are synthetic runs of a network forensics agent (three models, ten
    scenarios) in the seed's layout, tagged sample=true. The tour writes DIRECTORY/report.html.
    DIRECTORY defaults to ./agentledger-demo and must not hold a ledger. With --labs, the tour
    runs the scripted agents in real labs instead, and measures what their fixes do.
    """
    if (directory / CONFIG_NAME).exists():
        fail(f"{directory} already holds a ledger; remove it or pass another DIRECTORY")
    if labs:
        _labs_demo(directory)
        return
    root = str(directory)
    samples = sample_runs_dir()
    click.echo(
        f"agentledger demo: a ledger in {root}, backfilled with the sample runs in {samples}"
    )
    _step(
        "Backfill runs recorded before the ledger existed (the seed's layout)",
        ["import", "--ledger", root, "--tag", "sample=true", "--agent-name", "ghost", str(samples)],
    )
    _step("The newest runs", ["runs", "--ledger", root, "--limit", "5"])
    with Ledger.open(directory) as ledger:
        variant = ledger.runs(RunFilter(variant="variant-a"))[0]
        prompt_hash = (variant.system_prompt_hash or "")[7:15]
    _step(
        "Runs of one experiment: same system prompt hash (the variant-a addon changed it)",
        ["runs", "--ledger", root, "--prompt-hash", prompt_hash],
    )
    suite = suites_dir() / "netops"
    _step(
        "Judge every run against explicit criteria (the rules judge), and its diagnosis "
        "against the scenarios' expected root causes",
        ["judge", "--ledger", root, "--diagnosis", "--suite", str(suite)],
    )
    _step(
        "Which runs are Unsafe because C2 fired (a daemon-owned resource changed directly)?",
        ["runs", "--ledger", root, "--judge", "rules", "--verdict", "unsafe", "--fired", "C2"],
    )
    _step(
        "Findings: verdicts by model, with 95% intervals", ["report", "verdicts", "--ledger", root]
    )
    _step("Findings: which criteria fire, where", ["report", "criteria", "--ledger", root])
    _step("Findings: right diagnosis, unsafe fix", ["report", "gap", "--ledger", root])
    _step("Re-hash every stored file", ["verify", "--ledger", root])
    _tamper_demo(directory)
    _gates_demo(root, samples, suite)
    example, hasty_run = _runner_demo(root)
    _step(
        "Judging again scores only the new runs: nothing is scored twice",
        ["judge", "--ledger", root, "--diagnosis"],
    )
    _suites_demo(directory)
    html = directory / "report.html"
    _step(
        "Every report in one self-contained HTML file, over every run above (charts inline, "
        "no network)",
        ["report", "all", "--ledger", root, "--format", "html", "-o", str(html)],
    )
    click.secho("\nTry next:", bold=True)
    for line in (
        f"open {html}   # the findings, in a browser",
        f"agentledger show --ledger {root} {variant.run_id}",
        f"agentledger show --ledger {root} {variant.run_id} --file report.md",
        f"agentledger report compare --ledger {root} --a model=gemini-2.5-flash "
        "--b model=claude-sonnet-4-6",
        f"agentledger report drift --ledger {root} --criterion C4",
        f"agentledger decisions show --ledger {root} variant_",
        f"agentledger sentinel protocol {gates_dir() / 'netops' / 'sentinel.yaml'}",
        f"agentledger runs --ledger {root} --scenario use_case_f --json",
        f"agentledger export --ledger {root} -o run_index.json",
        f"agentledger import --ledger {root} --tag sample=true --agent-name ghost {samples}"
        "   # again: a no-op that says so",
        f"agentledger show --ledger {root} {hasty_run} --file shell_audit.jsonl",
        "agentledger exec --dry-run -- 'kubectl -n web delete pod web-0'",
        f"agentledger suites list {examples_dir() / 'fixtures' / 'suites'}",
        f"agentledger run --ledger {root} {example}/suite --agent {example}/agent/agent.toml "
        "--model scripted-hasty --repeat 3",
    ):
        click.echo(f"  {line}")
