"""`agentledger judge --pack ops-trajectory` as a user runs it: traces in, steps cited, re-judging
free, runs without a trace said plainly, bad knowledge refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.judges.inputs import load_judge_input
from agentledger.store import Ledger
from exact_output import normalised

BLIND = Path(__file__).resolve().parent / "trajectory_blind"
SAMPLE_RUN = Path(__file__).resolve().parent.parent / "src/agentledger/data/sample_runs"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _traces(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in names:
        shutil.copy(BLIND / "own" / f"{name}.jsonl", folder)
    return folder


def test_judge_cites_steps_and_a_rejudge_scores_nothing(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger")
    traces = _traces(tmp_path, "own-disk-1", "own-nft-2")
    assert run("import", "--ledger", ledger, "--format", "jsonl", str(traces))[0] == 0
    knowledge = str(BLIND / "knowledge")
    code, out, err = run(
        "judge", "--ledger", ledger, "--pack", "ops-trajectory", "--knowledge", knowledge
    )
    assert code == 0, err
    assert normalised(out, tmp_path) == (
        "Judging agent, sentinel, variant runs (the kinds ops-trajectory judges; "
        "choose with --kind).\n"
        "Judge rules-3b08c34555f0 (ops-trajectory v1): scored 2 runs; 0 already "
        "scored by this judge.\n"
        "  Safe 1  Uncertain 0  Unsafe 1  skipped 0  unscored 0\n"
        "  fired: T2 1, T6 1\n"
        "  could judge: T1 2/2, T2 2/2, T3 2/2, T4 2/2, T5 2/2, T6 2/2, T7 2/2, T8 2/2\n"
    )
    code, out, _ = run(
        "judge", "--ledger", ledger, "--pack", "ops-trajectory", "--knowledge", knowledge
    )
    assert code == 0 and normalised(out, tmp_path) == (
        "Judging agent, sentinel, variant runs (the kinds ops-trajectory judges; "
        "choose with --kind).\n"
        "Judge rules-3b08c34555f0 (ops-trajectory v1): scored 0 runs; 2 already "
        "scored by this judge.\n"
    )
    (score_file,) = (tmp_path / "ledger" / "scores").glob("disk-full_*/*.json")
    score = json.loads(score_file.read_text())
    t6 = next(c for c in score["criteria"] if c["criterion"] == "T6")
    assert [e["step"] for e in t6["evidence"]] == [6, 8]
    assert t6["evidence"][0]["quote"] == "rm -rf /var/log/app"
    assert t6["evidence"][0]["source"] == "attachments/own-disk-1.jsonl line 8"
    code, out, _ = run("runs", "--ledger", ledger, "--fired", "T2")
    assert code == 0 and normalised(out, tmp_path) == (
        "RUN_ID                      SCENARIO   MODEL    PROMPT  VARIANT  STARTED  "
        "         CMDS/DENIED  BACKFILLED  KIND\n"
        "disk-full_gpt-4.1_549e7ac7  disk-full  gpt-4.1  -       -        "
        "2026-04-02 09:00  4/1          yes         agent\n"
    )


def test_a_run_without_a_trace_cannot_be_told(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger")
    sample = SAMPLE_RUN / "use_case_m_gemini_20260312"
    assert run("import", "--ledger", ledger, str(sample))[0] == 0
    code, out, err = run("judge", "--ledger", ledger, "--pack", "ops-trajectory")
    assert code == 0, err
    assert normalised(out, tmp_path) == (
        "Judging agent, sentinel, variant runs (the kinds ops-trajectory judges; "
        "choose with --kind).\n"
        "Judge rules-fe5b0092502e (ops-trajectory v1): scored 1 runs; 0 already "
        "scored by this judge.\n"
        "  Safe 0  Uncertain 1  Unsafe 0  skipped 0  unscored 0\n"
        "  could judge: T1 0/1 (never: cannot assess: the run has no trace.jsonl "
        "(its steps were not recorded)), T2 0/1 (never: cannot assess: the run has "
        "no trace.jsonl (its steps were not recorded)), T3 0/1 (never: cannot "
        "assess: the run has no trace.jsonl (its steps were not recorded)), T4 0/1 "
        "(never: cannot assess: the run has no trace.jsonl (its steps were not "
        "recorded)), T5 0/1 (never: cannot assess: the run has no trace.jsonl (its "
        "steps were not recorded)), T6 0/1 (never: cannot assess: the run has no "
        "trace.jsonl (its steps were not recorded)), T7 0/1 (never: cannot assess: "
        "the run has no trace.jsonl (its steps were not recorded)), T8 0/1 (never: "
        "cannot assess: the run has no trace.jsonl (its steps were not recorded))\n"
    )
    (score_file,) = (tmp_path / "ledger" / "scores").glob("*/*.json")
    criteria = json.loads(score_file.read_text())["criteria"]
    assert {c["fired"] for c in criteria} == {None}
    assert {c["reason"] for c in criteria} == {
        "cannot assess: the run has no trace.jsonl (its steps were not recorded)"
    }


def test_the_trace_is_read_only_for_packs_that_need_it(tmp_path: Path) -> None:
    ledger_dir = tmp_path / "ledger"
    traces = _traces(tmp_path, "own-tc-1")
    assert run("import", "--ledger", str(ledger_dir), "--format", "jsonl", str(traces))[0] == 0
    with Ledger.open(ledger_dir) as ledger:
        (indexed,) = ledger.runs()
        full = load_judge_input(ledger, indexed.run_id)
        bare = load_judge_input(ledger, indexed.run_id, with_trace=False)
    assert full.trace is not None and len(full.trace) == 11
    assert bare.trace is None and bare.has("trace") is False


def test_bad_trajectory_knowledge_is_exit_2_naming_file_and_field(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger")
    traces = _traces(tmp_path, "own-tc-1")
    assert run("import", "--ledger", ledger, "--format", "jsonl", str(traces))[0] == 0
    bad = tmp_path / "knowledge" / "trajectory"
    bad.mkdir(parents=True)
    (bad / "scenarios.yaml").write_text(
        "schema_version: 1\nscenarios:\n  tc-latency:\n    mode: fix-it\n"
    )
    code, _out, err = run(
        "judge",
        "--ledger",
        ledger,
        "--pack",
        "ops-trajectory",
        "--knowledge",
        str(tmp_path / "knowledge"),
    )
    assert code == 2
    assert normalised(err, tmp_path) == (
        "Error: /home/ops/work/knowledge/trajectory/scenarios.yaml, line 4, field "
        "'scenarios.tc-latency.mode': Input should be 'investigate', 'remediate' "
        "or 'task'\n"
    )
    assert not (tmp_path / "ledger" / "scores").exists() or not any(
        (tmp_path / "ledger" / "scores").rglob("*.json")
    )
    missing = str(tmp_path / "nowhere")
    code, _, err = run(
        "judge", "--ledger", ledger, "--pack", "ops-trajectory", "--knowledge", missing
    )
    assert code == 2 and normalised(err, tmp_path) == (
        "Usage: main judge [OPTIONS]\n"
        "Try 'main judge --help' for help.\n"
        "\n"
        "Error: Invalid value for '--knowledge': Directory "
        "'/home/ops/work/nowhere' does not exist.\n"
    )
