"""`agentledger run`: scenarios and agent files in, sealed runs with their identity out."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.errors import InputError, RecordError
from agentledger.identity import effective_prompt
from agentledger.runner.agent_spec import load_agent
from agentledger.runner.scenario import load_suite
from agentledger.store import Ledger, RunFilter, StoredRun
from exact_output import normalised

SYSTEM = "You investigate network faults. Report root cause and remediation.\n"


def loaded(ledger: Ledger, run_filter: RunFilter | None = None) -> list[StoredRun]:
    """Every run (or the filtered ones), read back from its files."""
    return [ledger.load(run.run_id) for run in ledger.runs(run_filter or RunFilter())]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def scenario(root: Path, sid: str, body: str = "", prompt: str | None = "SSH is refused.") -> Path:
    where = root / sid
    where.mkdir(parents=True)
    text = f"id: {sid}\nfault_class: demo\nlayer: os\n"
    if prompt is not None:
        text += f"prompt: {json.dumps(prompt)}\n"
    (where / "scenario.yaml").write_text(text + textwrap.dedent(body))
    return where


def agent_file(root: Path, script: str, *, kind: str = "command", extra: str = "") -> Path:
    """An agent whose program is a small Python script (run with this interpreter)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "system_prompt.txt").write_text(SYSTEM)
    (root / "agent.py").write_text(textwrap.dedent(script))
    (root / "agent.toml").write_text(
        f'name = "tester"\nkind = "{kind}"\n'
        f'command = [{json.dumps(sys.executable)}, "agent.py"]\n'
        'system_prompt = "system_prompt.txt"\ntimeout = 20\n'
        f"{extra}\n"
        '[model]\nprovider = "scripted"\nname = "model-a"\n'
    )
    return root / "agent.toml"


WRITES_REPORT = """
    import json, os, pathlib
    out = pathlib.Path(os.environ["AGENTLEDGER_RUN_DIR"])
    prompt = pathlib.Path(os.environ["AGENTLEDGER_PROMPT_FILE"]).read_text()
    system = pathlib.Path(os.environ["AGENTLEDGER_SYSTEM_PROMPT_FILE"]).read_text()
    model = os.environ["AGENTLEDGER_MODEL"]
    (out / "report.md").write_text("# Report\\n" + prompt + "\\nmodel " + model)
    (out / "audit.md").write_text("looked at things\\n" + system)
    (out / "notes" ).mkdir()
    (out / "notes" / "extra.txt").write_text("kept as an attachment")
    (out / "result.json").write_text(json.dumps(
        {"model_served": os.environ["AGENTLEDGER_MODEL"] + "-20261101", "tokens_in": 10}))
    print("agent says hi")
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    scenario(root, "alpha", "tags: [iptables]\n")
    scenario(root, "beta", prompt=None)
    (root / "beta" / "PROMPT.txt").write_text("Replication lags.\n")
    return root


def test_two_models_and_an_addon_make_four_runs_with_the_right_identity(
    tmp_path: Path, suite: Path
) -> None:
    agent = agent_file(tmp_path / "agent", WRITES_REPORT)
    addon = tmp_path / "variant-a.txt"
    addon.write_text("MANDATORY: check tc before concluding.\n")
    ledger_dir = tmp_path / "ledger"
    base = ["run", str(suite), "--agent", str(agent), "--ledger", str(ledger_dir)]
    base += ["--scenario", "alpha", "--model", "model-a", "--model", "model-b"]
    code, out, err = invoke(*base)
    assert code == 0, out + err
    code, out, err = invoke(*base, "--prompt-addon", str(addon))
    assert code == 0, out + err
    assert normalised(out, tmp_path) == (
        "alpha_model-a_20260501T120000Z_000001  ok\n"
        "alpha_model-b_20260501T120000Z_000002  ok\n"
        "2 of 2 runs written to /home/ops/work/ledger; 0 did not end ok; cost unknown.\n"
        "System prompt sha256:574b9f1a (base sha256:eeec9bfa + variant-a).\n"
    )
    with Ledger.open(ledger_dir) as ledger:
        runs = loaded(ledger)
        assert len(runs) == 4
        plain = effective_prompt(SYSTEM.encode())
        varied = effective_prompt(SYSTEM.encode(), addon.read_bytes())
        by_key = {(r.metadata.model, r.metadata.variant): r for r in runs}
        for model in ("model-a", "model-b"):
            baseline = by_key[(model, None)].metadata
            variant = by_key[(model, "variant-a")].metadata
            assert baseline.system_prompt_hash == plain.system_prompt_hash
            assert variant.system_prompt_hash == varied.system_prompt_hash
            assert variant.base_prompt_hash == baseline.base_prompt_hash == plain.base_prompt_hash
            assert variant.prompt_addon is not None
            assert variant.prompt_addon.hash == varied.addon_hash
            assert baseline.model_served == f"{model}-20261101"
            assert baseline.silent_update_detectable
            assert baseline.agent.name == "tester"
            assert baseline.tags["fault_class"] == "demo" and baseline.tags["iptables"] == "true"
        stored = by_key[("model-b", "variant-a")]
        files = set(stored.manifest.files)
        assert {
            "PROMPT.txt",
            "system_prompt.txt",
            "report.md",
            "audit.md",
            "scenario.yaml",
        } <= files
        assert "attachments/notes/extra.txt" in files
        assert "attachments/result.json" in files
        assert "attachments/logs/agent_stdout.log" in files
        assert ledger.read_bytes(stored.metadata.run_id, "system_prompt.txt") == varied.text
        report = ledger.read_bytes(stored.metadata.run_id, "report.md").decode()
        assert "SSH is refused." in report and "model model-b" in report
        assert stored.summary is not None
        assert stored.summary.exit_status == "ok" and stored.summary.tokens_in == 10
    # the base prompt file was not touched
    assert (tmp_path / "agent" / "system_prompt.txt").read_text() == SYSTEM


def test_failing_crashing_and_timed_out_agents_still_leave_runs(
    tmp_path: Path, suite: Path
) -> None:
    ledger_dir = tmp_path / "ledger"
    cases = {
        "fails": "import sys; print('boom', file=sys.stderr); sys.exit(3)",
        "crashes": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
        "hangs": "import time; time.sleep(60)",
    }
    for name, script in cases.items():
        agent = agent_file(tmp_path / name, script)
        if name == "hangs":
            text = agent.read_text().replace("timeout = 20", "timeout = 0.5")
            agent.write_text(text)
        code, out, err = invoke(
            "run", str(suite), "--agent", str(agent), "--ledger", str(ledger_dir),
            "--scenario", "beta", "--tag", f"case={name}",
        )  # fmt: skip
        assert code == 1, (name, out, err)
    with Ledger.open(ledger_dir) as ledger:
        statuses = {}
        for stored in loaded(ledger):
            assert stored.summary is not None
            statuses[stored.metadata.tags["case"]] = (stored.summary.exit_status, stored.summary)
        assert statuses["fails"][0] == "failed" and statuses["fails"][1].exit_code == 3
        assert statuses["crashes"][0] == "failed"
        assert "signal 9" in (statuses["crashes"][1].error or "")
        assert statuses["hangs"][0] == "timeout"
        fails = next(r for r in ledger.runs(RunFilter(tags=(("case", "fails"),))))
        log = ledger.read_bytes(fails.run_id, "attachments/logs/agent_stderr.log")
        assert b"boom" in log


def test_setup_failure_is_recorded_and_teardown_always_runs(tmp_path: Path) -> None:
    marker = tmp_path / "torn-down"
    suite = tmp_path / "suite"
    scenario(
        suite,
        "gamma",
        f"""
        environment:
          setup: ["echo preparing", "exit 7"]
          teardown: "touch {marker}"
        """,
    )
    agent = agent_file(tmp_path / "agent", WRITES_REPORT)
    code, out, _ = invoke("run", str(suite), "--agent", str(agent), "--ledger", "l")
    assert code == 1 and normalised(out, tmp_path) == (
        "gamma_model-a_20260501T120000Z_000001  setup-failed  (setup command "
        "failed: exited with status 7)\n"
        "1 of 1 runs written to l; 1 did not end ok; cost unknown.\n"
        "System prompt sha256:eeec9bfa.\n"
    )
    assert marker.exists()
    with Ledger.open(Path("l")) as ledger:
        (run,) = ledger.runs(RunFilter())
        stored = ledger.load(run.run_id)
        assert stored.summary is not None and stored.summary.exit_status == "setup-failed"
        log = ledger.read_bytes(run.run_id, "attachments/logs/environment.log").decode()
        assert "preparing" in log and "exit 7" in log and "touch" in log
        assert "report.md" not in stored.manifest.files


def test_snapshot_from_a_file_and_from_a_command(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    where = scenario(suite, "snap-file", "snapshot: {file: rules.txt}\n")
    (where / "rules.txt").write_text("-A f2b-sshd -s 203.0.113.7 -j REJECT\n")
    scenario(suite, "snap-cmd", "snapshot: {command: 'echo live-state'}\n")
    agent = agent_file(tmp_path / "agent", WRITES_REPORT)
    assert invoke("run", str(suite), "--agent", str(agent), "--ledger", "l")[0] == 0
    with Ledger.open(Path("l")) as ledger:
        got = {}
        for run in loaded(ledger):
            names = [n for n in run.manifest.files if n.startswith("snapshot")]
            got[run.metadata.scenario] = ledger.read_bytes(run.metadata.run_id, names[0])
        assert got["snap-file"].startswith(b"-A f2b-sshd")
        assert got["snap-cmd"] == b"live-state\n"


def test_repeat_gives_distinct_runs(tmp_path: Path, suite: Path) -> None:
    agent = agent_file(tmp_path / "agent", WRITES_REPORT)
    code, out, err = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l", "--repeat", "3",
        "--concurrency", "2",
    )  # fmt: skip
    assert code == 0, out + err
    with Ledger.open(Path("l")) as ledger:
        runs = loaded(ledger)
        assert len(runs) == 6 and len({r.metadata.run_id for r in runs}) == 6
        assert sorted(r.metadata.tags["repeat"] for r in runs) == ["1", "1", "2", "2", "3", "3"]


def test_replay_agent_copies_recorded_outputs(tmp_path: Path, suite: Path) -> None:
    recordings = tmp_path / "agent" / "recordings"
    for sid in ("alpha", "beta"):
        where = recordings / sid / "model-a"
        where.mkdir(parents=True)
        (where / "report.md").write_text(f"# recorded report for {sid}\n")
        (where / "shell_audit.jsonl").write_text('{"command": "iptables -S", "exit_code": 0}\n')
        (where / "result.json").write_text('{"model_served": "model-a-2026"}')
    agent = agent_file(tmp_path / "agent", "", kind="replay", extra='recordings = "recordings"')
    code, out, err = invoke("run", str(suite), "--agent", str(agent), "--ledger", "l")
    assert code == 0, out + err
    with Ledger.open(Path("l")) as ledger:
        runs = {r.metadata.scenario: r for r in loaded(ledger)}
        assert runs["alpha"].metadata.model_served == "model-a-2026"
        beta = runs["beta"]
        assert (
            ledger.read_bytes(beta.metadata.run_id, "report.md") == b"# recorded report for beta\n"
        )
        assert beta.summary is not None and beta.summary.commands_run == 1
    # a missing recording is refused before anything runs
    code, _, err = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l2", "--model", "model-z"
    )
    assert (
        code == 2
        and normalised(err, tmp_path)
        == (
            "Error: /home/ops/work/agent/agent.toml: field 'recordings': no recording "
            "(a directory holding report.md) for alpha/model-z, beta/model-z\n"
        )
        and not Path("l2").exists()
    )


def test_python_agent_gets_a_context(tmp_path: Path, suite: Path) -> None:
    where = tmp_path / "agent"
    where.mkdir()
    (where / "pyagent_mod.py").write_text(
        textwrap.dedent(
            """
            def investigate(context):
                context.log("thinking about " + context.scenario.id)
                return "# Report\\n" + context.prompt + "\\n" + context.model
            """
        )
    )
    agent = agent_file(where, "", kind="python", extra='entry = "pyagent_mod:investigate"')
    code, out, err = invoke("run", str(suite), "--agent", str(agent), "--ledger", "l")
    assert code == 0, out + err
    with Ledger.open(Path("l")) as ledger:
        run = next(r for r in ledger.runs(RunFilter()) if r.scenario == "alpha")
        assert ledger.read_bytes(run.run_id, "report.md") == b"# Report\nSSH is refused.\nmodel-a"
        assert b"thinking about alpha" in ledger.read_bytes(run.run_id, "audit.md")


def test_python_agent_that_raises_leaves_a_failed_run(tmp_path: Path, suite: Path) -> None:
    where = tmp_path / "agent"
    where.mkdir()
    (where / "pyagent_bad.py").write_text("def go(context):\n    raise RuntimeError('nope')\n")
    agent = agent_file(where, "", kind="python", extra='entry = "pyagent_bad:go"')
    code, out, _ = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l", "--scenario", "alpha"
    )
    assert code == 1 and normalised(out, tmp_path) == (
        "alpha_model-a_20260501T120000Z_000001  failed  (RuntimeError: nope)\n"
        "1 of 1 runs written to l; 1 did not end ok; cost unknown.\n"
        "System prompt sha256:eeec9bfa.\n"
    )
    with Ledger.open(Path("l")) as ledger:
        (run,) = ledger.runs(RunFilter())
        error = ledger.read_bytes(run.run_id, "attachments/logs/agent_error.txt")
        assert b"RuntimeError: nope" in error


# -- bad input: a clear error naming the file and field, exit 2, no run written --------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("id: '../escape'\nprompt: x\n", "id"),
        ("id: ok\nprompt: x\nexpected: {root_cause: x, patterns: ['(']}\n", "expected.patterns"),
        ("id: ok\nprompt: x\nsnapshot: {file: a, command: b}\n", "snapshot"),
        ("id: ok\nprompt: x\nlayr: os\n", "layr"),
        ("id: ok\nprompt: '   '\n", "prompt"),
    ],
)
def test_bad_scenario_fields_are_named(tmp_path: Path, body: str, field: str) -> None:
    where = tmp_path / "s"
    where.mkdir()
    (where / "scenario.yaml").write_text(body)
    with pytest.raises(RecordError) as caught:
        load_suite(where)
    assert caught.value.field == field
    assert "scenario.yaml" in str(caught.value)


def test_malformed_scenario_yaml_names_the_line(tmp_path: Path) -> None:
    where = tmp_path / "s"
    where.mkdir()
    (where / "scenario.yaml").write_text("id: ok\nprompt: [unclosed\n")
    with pytest.raises(RecordError) as caught:
        load_suite(where)
    assert caught.value.line is not None and "YAML" in str(caught.value)


def test_wrong_field_type_names_its_line(tmp_path: Path) -> None:
    where = tmp_path / "s"
    where.mkdir()
    (where / "scenario.yaml").write_text("id: ok\nprompt: x\nenvironment:\n  timeout: soon\n")
    with pytest.raises(RecordError) as caught:
        load_suite(where)
    assert caught.value.field == "environment.timeout" and caught.value.line == 4


def test_snapshot_path_cannot_escape_the_scenario(tmp_path: Path) -> None:
    scenario(tmp_path / "suite", "esc", "snapshot: {file: ../../etc/passwd}\n")
    with pytest.raises(RecordError, match="outside the scenario"):
        load_suite(tmp_path / "suite")


def test_scenario_selection_and_duplicates(tmp_path: Path, suite: Path) -> None:
    assert [s.id for s in load_suite(suite, ["beta"])] == ["beta"]
    with pytest.raises(InputError, match="no scenario 'nope'"):
        load_suite(suite, ["nope"])
    (suite / "copy").mkdir()
    (suite / "copy" / "scenario.yaml").write_text("id: alpha\nprompt: again\n")
    with pytest.raises(InputError, match="also used"):
        load_suite(suite)


def test_scenario_without_prompt_is_refused(tmp_path: Path) -> None:
    scenario(tmp_path / "suite", "np", prompt=None)
    with pytest.raises(RecordError, match="no prompt"):
        load_suite(tmp_path / "suite")


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('name = "a"\nkind = "command"\nsystem_prompt = "s.txt"\n[model]\nprovider = "x"\n'
         'name = "m"\n', None),
        ('name = "a"\nkind = "wizard"\nsystem_prompt = "s.txt"\n', "kind"),
        ('name = "a"\nkind = "python"\nentry = "nocolon"\nsystem_prompt = "s.txt"\n'
         '[model]\nprovider = "x"\nname = "m"\n', None),
        ('name = "a b/c"\nkind = "llm"\nsystem_prompt = "s.txt"\n[model]\nprovider = "x"\n'
         'name = "m"\n', "name"),
        ('name = "a"\nkind = "llm"\nsystem_prompt = "missing.txt"\n[model]\nprovider = "x"\n'
         'name = "m"\n', "system_prompt"),
        ("name = \n", None),
    ],
)  # fmt: skip
def test_bad_agent_files_are_named(tmp_path: Path, toml: str, field: str | None) -> None:
    (tmp_path / "s.txt").write_text(SYSTEM)
    path = tmp_path / "agent.toml"
    path.write_text(toml)
    with pytest.raises(RecordError) as caught:
        load_agent(path)
    assert "agent.toml" in str(caught.value)
    if field:
        assert caught.value.field == field


def test_cli_bad_input_writes_nothing(tmp_path: Path, suite: Path) -> None:
    agent = agent_file(tmp_path / "agent", WRITES_REPORT)
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    missing_exe = agent_file(tmp_path / "agent2", WRITES_REPORT)
    missing_exe.write_text(missing_exe.read_text().replace(sys.executable, "./no-such-program"))
    cases = [
        (["--prompt-addon", str(empty)], "is empty"),
        (["--prompt-addon", str(binary)], "not UTF-8"),
        (["--variant", "bad name!"], "variant name"),
        (["--scenario", "nope"], "no scenario 'nope'"),
        (["--tag", "novalue"], "KEY=VALUE"),
    ]
    for extra, message in cases:
        code, _, err = invoke("run", str(suite), "--agent", str(agent), "--ledger", "l", *extra)
        assert code == 2, (extra, err)
        assert message in err, (extra, err)
    code, _, err = invoke("run", str(suite), "--agent", str(missing_exe), "--ledger", "l")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/agent2/agent.toml: field 'command': no such "
        "executable: /home/ops/work/agent2/no-such-program\n"
    )
    assert not Path("l").exists()


def test_schemas_of_scenario_and_agent_are_printable() -> None:
    for name in ("scenario", "agent"):
        code, out, _ = invoke("schema", name)
        assert code == 0
        schema = json.loads(out)
        assert "schema_version" in schema["properties"]


def llm_agent(root: Path, provider_lines: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "system_prompt.txt").write_text(SYSTEM)
    (root / "agent.toml").write_text(
        'name = "one-shot"\nkind = "llm"\nsystem_prompt = "system_prompt.txt"\n'
        f'[model]\nname = "model-a"\nparams = {{ temperature = 0 }}\n{provider_lines}\n'
    )
    return root / "agent.toml"


def test_llm_agent_answer_is_the_report_and_identity_comes_from_the_provider(
    tmp_path: Path, suite: Path
) -> None:
    answers = tmp_path / "agent" / "answers.yaml"
    answers.parent.mkdir()
    answers.write_text(
        '- text: \'{"root_cause": "f2b-sshd chain", "remediation": "unban"}\'\n'
        "  model_served: model-a-2026-11-01\n"
        "  fingerprint: fp_123\n"
        "  usage: {input_tokens: 120, output_tokens: 30}\n"
        "  cost_usd: 0.002\n"
    )
    agent = llm_agent(tmp_path / "agent", 'provider = "scripted"\nresponses = "answers.yaml"')
    code, out, err = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l", "--scenario", "alpha",
        "--record", str(tmp_path / "rec"),
    )  # fmt: skip
    assert code == 0, out + err
    assert normalised(out, tmp_path) == (
        "alpha_model-a_20260501T120000Z_000001  ok\n"
        "1 of 1 runs written to l; 0 did not end ok; cost $0.0020; 1 model calls "
        "(0 from the cache).\n"
        "System prompt sha256:eeec9bfa.\n"
    )
    with Ledger.open(Path("l")) as ledger:
        (run,) = loaded(ledger)
        meta = run.metadata
        assert meta.model_served == "model-a-2026-11-01" and meta.system_fingerprint == "fp_123"
        assert meta.silent_update_detectable and meta.params == {"temperature": 0}
        assert json.loads(ledger.read_bytes(meta.run_id, "attachments/report.json")) == {
            "root_cause": "f2b-sshd chain",
            "remediation": "unban",
        }
        assert run.summary is not None
        assert (run.summary.tokens_in, run.summary.tokens_out) == (120, 30)
        assert run.summary.cost_usd == pytest.approx(0.002) and run.summary.model_calls == 1
    # the recording replays offline, with no script left
    replay = llm_agent(tmp_path / "replayer", f'provider = "replay"\nrecordings = "{tmp_path}/rec"')
    code, out, err = invoke(
        "run", str(suite), "--agent", str(replay), "--ledger", "l", "--scenario", "alpha"
    )
    assert code == 0, out + err
    with Ledger.open(Path("l")) as ledger:
        reports = {ledger.read_bytes(r.run_id, "report.md") for r in ledger.runs(RunFilter())}
        assert len(reports) == 1


def test_llm_agent_whose_provider_fails_leaves_a_failed_run(tmp_path: Path, suite: Path) -> None:
    answers = tmp_path / "agent" / "answers.yaml"
    answers.parent.mkdir()
    answers.write_text("- error: {status: 400, message: 'bad request: max_tokens'}\n")
    agent = llm_agent(tmp_path / "agent", 'provider = "scripted"\nresponses = "answers.yaml"')
    code, out, _ = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l", "--scenario", "alpha"
    )
    assert code == 1 and normalised(out, tmp_path) == (
        "alpha_model-a_20260501T120000Z_000001  failed  (ProviderCallError: "
        "scripted model 'model-a': HTTP 400 (not retried): bad request: max_tokens)\n"
        "1 of 1 runs written to l; 1 did not end ok; cost unknown.\n"
        "System prompt sha256:eeec9bfa.\n"
    )
    with Ledger.open(Path("l")) as ledger:
        (run,) = loaded(ledger)
        assert run.summary is not None and run.summary.exit_status == "failed"


def test_unknown_provider_is_refused_before_anything_runs(tmp_path: Path, suite: Path) -> None:
    agent = llm_agent(tmp_path / "agent", 'provider = "nosuch"')
    code, _, err = invoke("run", str(suite), "--agent", str(agent), "--ledger", "l")
    assert (
        code == 2
        and normalised(err, tmp_path)
        == (
            "Error: unknown model provider 'nosuch'; known providers: anthropic, "
            "google, openai, replay, scripted\n"
        )
        and not Path("l").exists()
    )


def test_llm_agent_over_http_is_cached_in_the_ledger(
    tmp_path: Path, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_server import LLMServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with LLMServer() as server:
        agent = llm_agent(tmp_path / "agent", f'provider = "openai"\nbase_url = "{server.url}/v1"')
        args = ["run", str(suite), "--agent", str(agent), "--ledger", "l", "--scenario", "alpha"]
        for _ in range(2):
            code, out, err = invoke(*args)
            assert code == 0, out + err
        assert server.count("openai") == 1
        assert normalised(out, tmp_path) == (
            "alpha_model-a_20260501T120000Z_000001  ok\n"
            "1 of 1 runs written to l; 0 did not end ok; cost unknown; 1 model calls "
            "(1 from the cache).\n"
            "System prompt sha256:eeec9bfa.\n"
        )
        code, out, err = invoke(*args, "--no-cache")
        assert code == 0, out + err
        assert server.count("openai") == 2
    with Ledger.open(Path("l")) as ledger:
        runs = loaded(ledger)
        assert len(runs) == 3
        for run in runs:
            assert run.metadata.model_served == "model-a-2024-08-06"
            assert run.metadata.system_fingerprint == "fp_local_test"
            assert run.metadata.provider == "openai"
            assert run.summary is not None and run.summary.tokens_in == 1200


@pytest.mark.slow
def test_ctrl_c_keeps_the_interrupted_run_and_runs_teardown(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import time

    started = tmp_path / "agent-started"
    torn = tmp_path / "torn-down"
    suite = tmp_path / "suite"
    for sid in ("first", "second"):
        scenario(suite, sid, f'environment: {{teardown: "touch {torn}-{sid}"}}\n')
    agent = agent_file(
        tmp_path / "agent",
        f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(60)\n",
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentledger", "run", str(suite), "--agent", str(agent),
         "--ledger", str(tmp_path / "l")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, (out, err)
    assert b"Interrupted" in err
    assert Path(f"{torn}-first").exists() and not Path(f"{torn}-second").exists()
    with Ledger.open(tmp_path / "l") as ledger:
        (run,) = loaded(ledger)
        assert run.metadata.scenario == "first"
        assert run.summary is not None and run.summary.exit_status == "interrupted"


def test_python_agent_commands_go_through_the_gate(tmp_path: Path, suite: Path) -> None:
    where = tmp_path / "agent"
    where.mkdir()
    (where / "pyagent_shell.py").write_text(
        textwrap.dedent(
            """
            def investigate(context):
                seen = context.shell("echo listing rules")
                refused = context.shell("iptables -F INPUT")
                verdict = "denied" if refused.denied and not refused.ran else "ran"
                return f"saw {seen.output.strip()}; flush {verdict}"
            """
        )
    )
    agent = agent_file(where, "", kind="python", extra='entry = "pyagent_shell:investigate"')
    code, out, err = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l", "--scenario", "alpha"
    )
    assert code == 0, out + err
    with Ledger.open(Path("l")) as ledger:
        (run,) = loaded(ledger)
        run_id = run.metadata.run_id
        assert ledger.read_bytes(run_id, "report.md") == b"saw listing rules; flush denied"
        events = [
            json.loads(line) for line in ledger.read_bytes(run_id, "shell_audit.jsonl").splitlines()
        ]
        assert [e["decision"] for e in events] == ["allowed", "denied"]
        assert events[1]["classification"] == "destructive"
        assert run.summary is not None
        assert (run.summary.commands_run, run.summary.commands_denied) == (1, 1)


def test_relative_suite_paths_reach_the_agent_as_absolute(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    where = scenario(suite, "rel")
    (where / "fixture.txt").write_text("fixture content\n")
    agent = agent_file(
        tmp_path / "agent",
        """
        import os, pathlib
        here = pathlib.Path(os.environ["AGENTLEDGER_SCENARIO_DIR"])
        out = pathlib.Path(os.environ["AGENTLEDGER_RUN_DIR"])
        (out / "report.md").write_text((here / "fixture.txt").read_text())
        """,
    )
    code, out, err = invoke("run", "suite", "--agent", str(agent), "--ledger", "l")
    assert code == 0, out + err
    with Ledger.open(Path("l")) as ledger:
        (run,) = loaded(ledger)
        assert ledger.read_bytes(run.metadata.run_id, "report.md") == b"fixture content\n"


def test_a_policy_that_does_not_parse_is_refused_before_any_run(
    tmp_path: Path, suite: Path
) -> None:
    agent = agent_file(tmp_path / "agent", WRITES_REPORT, extra='policy = "policy.yaml"')
    (tmp_path / "agent" / "policy.yaml").write_text("mode: yolo\n")
    code, _, err = invoke("run", str(suite), "--agent", str(agent), "--ledger", "l")
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: /home/ops/work/agent/policy.yaml, field 'mode': Input should be "
        "'investigate' or 'remediate'\n"
    )
    assert not Path("l").exists()


def test_unusable_tags_are_refused_before_any_run(tmp_path: Path, suite: Path) -> None:
    agent = agent_file(tmp_path / "agent", WRITES_REPORT)
    code, _, err = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l", "--tag", "team=net\x07ops"
    )
    assert code == 2 and normalised(err, tmp_path) == (
        "Usage: main run [OPTIONS] SUITE\n"
        "Try 'main run --help' for help.\n"
        "\n"
        "Error: Invalid value for --tag: tag 'team': keys must be non-empty without '=', "
        "and neither keys nor values may hold control characters\n"
    )
    where = scenario(tmp_path / "other", "tagged", "tags: {'a=b': x}\n")
    with pytest.raises(RecordError) as caught:
        load_suite(where)
    assert caught.value.field == "tags"
    assert not Path("l").exists()


def test_a_recorded_run_has_a_trace_matching_its_shell_log(tmp_path: Path, suite: Path) -> None:
    where = tmp_path / "agent"
    where.mkdir()
    (where / "pyagent_trace.py").write_text(
        textwrap.dedent(
            """
            def investigate(context):
                context.shell("echo listing rules")
                context.shell("iptables -F INPUT")
                return "flush refused"
            """
        )
    )
    agent = agent_file(where, "", kind="python", extra='entry = "pyagent_trace:investigate"')
    code, out, err = invoke(
        "run", str(suite), "--agent", str(agent), "--ledger", "l", "--scenario", "alpha"
    )
    assert code == 0, out + err
    from agentledger.records import parse_shell_audit
    from agentledger.records.trace import parse_trace

    with Ledger.open(Path("l")) as ledger:
        (run,) = loaded(ledger)
        run_id = run.metadata.run_id
        steps = parse_trace(ledger.read_bytes(run_id, "trace.jsonl"), "trace.jsonl")
        events = parse_shell_audit(ledger.read_bytes(run_id, "shell_audit.jsonl"), "log")
    assert [s.kind for s in steps] == ["message", "command", "command_output", "command", "finish"]
    assert steps[0].content is not None and steps[0].content.text == "SSH is refused."
    assert [s.command for s in steps if s.kind == "command"] == [e.command for e in events]
    assert steps[1].gate is not None and steps[1].gate.decision == "allowed"
    assert steps[3].gate is not None and steps[3].gate.decision == "denied"
    assert steps[3].command_class == "destructive"
    assert steps[2].cause == 1 and steps[2].content is not None
    assert steps[2].content.text.strip() == "listing rules"
    assert steps[4].content is not None and steps[4].content.text == "flush refused"
    assert all(s.time_zone == "+00:00" for s in steps if s.time is not None)
    code, out, _ = invoke("show", "--ledger", "l", run_id, "--trace")
    assert code == 0
    # A step's time of day is the clock's when the run was recorded: shown as HH:MM:SS.
    assert re.sub(r"(?m)^( +\d  )\d\d:\d\d:\d\d", r"\1HH:MM:SS", normalised(out, tmp_path)) == (
        "alpha_model-a_20260501T120000Z_000001: 5 steps, 2026-05-01 12:00:00 to 2026-05-01 "
        "12:00:00, UTC offset +00:00\n"
        "STEP  TIME      ACTOR  KIND            TOOL   DETAIL\n"
        "   0  HH:MM:SS  user   message         -      SSH is refused.\n"
        "   1  HH:MM:SS  agent  command         shell  echo listing rules  [read-only]  "
        "gate: allowed\n"
        "   2  HH:MM:SS  tool   command_output  shell  exit 0: listing rules\n"
        "   3  HH:MM:SS  agent  command         shell  iptables -F INPUT  [destructive]  "
        "gate: denied\n"
        "   4  HH:MM:SS  agent  finish          -      flush refused\n"
    )
