"""A broken judge does not look like a cautious one: unscored results are counted and shown as
unscored everywhere (the judge's summary, `show`, `report verdicts`, `review`), apart from
Uncertain.

The judge model is a real local HTTP server (tests/llm_server.py) whose answers hold no JSON,
so every criterion of every score is "unscored: the answer holds no JSON object".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from agentledger.cli import main
from agentledger.records.scores import Score, shown_verdict
from agentledger.store import Ledger
from llm_server import LLMServer
from test_hanging_model import environment, import_samples


def test_unscored_scores_are_counted_and_shown_apart_from_uncertain(tmp_path: Path) -> None:
    ledger = tmp_path / "l"
    import_samples(ledger)
    with LLMServer() as server:
        done = subprocess.run(
            [sys.executable, "-m", "agentledger", "judge", "--judge", "llm:openai/gpt-4o",
             "--base-url", f"{server.url}/v1", "--ledger", str(ledger), "--scenario",
             "use_case_a"],
            capture_output=True, text=True, env=environment(), timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    scored = int(done.stdout.split("scored ", 1)[1].split(" ", 1)[0])
    assert scored >= 2
    assert f"Uncertain 0  Unsafe 0  skipped 0  unscored {scored}" in done.stdout
    assert f"{scored} unscored: the judge's answer could not be read" in done.stderr
    assert "the answer holds no JSON object" in done.stderr

    # The score files keep the verdict the policy gave; the index counts them as unscored.
    files = sorted((ledger / "scores").glob("*/*.json"))
    assert len(files) == scored
    score = Score.model_validate_json(files[0].read_bytes())
    assert score.verdict == "Uncertain"
    assert score.unscored_reason() is not None
    run_id = score.run_id

    runner = CliRunner()
    shown = runner.invoke(main, ["show", run_id, "--ledger", str(ledger)])
    assert shown.exit_code == 0, shown.output
    assert "unscored" in shown.output and "Uncertain" not in shown.output

    report = runner.invoke(
        main,
        [
            "report",
            "verdicts",
            "--ledger",
            str(ledger),
            "--scenario",
            "use_case_a",
            "--format",
            "json",
        ],
    )
    assert report.exit_code == 0, report.output
    overall = json.loads(report.output)["overall"]
    assert overall["counts"]["Uncertain"] == 0
    assert overall["unscored"] == overall["judged"] + overall["unscored"] >= scored

    review = runner.invoke(main, ["review", "--ledger", str(ledger), "--json"])
    assert review.exit_code == 0, review.output
    waiting = {item["run_id"]: item for item in json.loads(review.output)}
    assert "unscored:" in waiting[run_id]["skipped_reason"]
    assert any("could not score it" in line for line in waiting[run_id]["detail"])

    with Ledger.open(ledger) as opened:
        assert opened.sql("SELECT DISTINCT verdict FROM scores").rows == [("unscored",)]


def test_a_score_is_unscored_only_when_nothing_fired_and_the_answer_was_unread() -> None:
    unread = {"criterion": "C1", "fired": None, "reason": "unscored: the answer holds no JSON"}
    cannot = {"criterion": "C1", "fired": None, "reason": "needs a snapshot"}
    fired = {"criterion": "C2", "fired": True, "reason": "edited the chain"}
    assert shown_verdict("Uncertain", [unread]) == "unscored"
    assert shown_verdict("Uncertain", [cannot]) == "Uncertain"  # a real cannot-assess
    assert shown_verdict("Unsafe", [unread, fired]) == "Unsafe"  # what fired stands
    assert shown_verdict("Uncertain", [unread, fired]) == "Uncertain"
    assert shown_verdict("skipped", []) == "skipped"
