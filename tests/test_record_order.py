"""The newest record of every kind is the one the journal accepted last, never the one whose
file claims the latest time.

A score, an outcome and a decision dated 2099, each written through the library as a writer
of this ledger would (announced, journaled, indexed: nothing for `gc` or `verify` to refuse),
are followed by real ones written later: `report verdicts`, its `--judge` over several judges,
the `judged` predicates of gates, a sentinel's judge references, the newest outcome, the newest
decision and the viewer's run page all stand by the later ones, before a reindex and after.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.gates.decisions import DecisionStore, indexed_decisions
from agentledger.gates.predicates.run_view import load_run_view
from agentledger.gates.sentinels.evaluate import judge_verdicts
from agentledger.judges.scores import ScoreStore
from agentledger.outcomes import latest_outcomes, record_outcome
from agentledger.records.outcomes import new_outcome_id
from agentledger.records.scores import JudgeInfo, Score
from agentledger.store import Ledger, RunFilter, verify_ledger
from journal_records import make_decision
from many_runs import write_runs
from test_outcomes_store import make_outcome
from test_predicates import one
from viewer_support import viewer_client

FUTURE = datetime(2099, 1, 1, tzinfo=UTC)
DATED_JUDGE = "rules-209900000000"


pytestmark = pytest.mark.slow


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A ledger of two runs, each scored Safe by a judge whose scores are dated 2099 (through
    the library), then scored for real by the rules judge (Uncertain, on these runs)."""
    write_runs(tmp_path / "source", 2)
    root = tmp_path / "ledger"
    assert cli("init", str(root))[0] == 0
    assert cli("import", "--ledger", str(root), str(tmp_path / "source"))[0] == 0
    with Ledger.open(root) as ledger:
        dated = [
            Score(
                run_id=run_id,
                judge_id=DATED_JUDGE,
                judge=JudgeInfo(
                    kind="rules", pack="remediation-safety", pack_version="1", pack_digest="x"
                ),
                identity={"kind": "rules"},
                verdict="Safe",
                criteria=[],
                created_at=FUTURE,
            )
            for run_id in sorted(ledger.storage.run_ids())
        ]
        ScoreStore(ledger).write(dated)
    code, output = cli("judge", "--ledger", str(root))
    assert code == 0, output
    yield root


def real_judge(root: Path) -> str:
    (judge_id,) = {p.stem for p in (root / "scores").rglob("*.json")} - {DATED_JUDGE}
    return judge_id


def test_reports_and_gates_stand_by_the_score_accepted_last(root: Path) -> None:
    real = real_judge(root)
    for rebuild in (False, True):
        if rebuild:
            assert cli("reindex", "--ledger", str(root))[0] == 0
        code, output = cli("report", "verdicts", "--ledger", str(root))
        assert code == 0, output
        assert f"scores by {real} (the most recent judge" in output
        assert "0 Safe" in output and "2 Uncertain" in output
        # Both judges at once: each run's newest score among them is the real one.
        code, output = cli("report", "verdicts", "--ledger", str(root), "--judge", "rules")
        assert code == 0, output
        assert "0 Safe" in output and "2 Uncertain" in output, output
        with Ledger.open(root) as ledger:
            run_id = sorted(ledger.storage.run_ids())[0]
            result = one("- verdict_not_unsafe: {judge: rules}", load_run_view(ledger, run_id))
            assert result.detail["judge_id"] == real and "newest of 2" in result.reason
            assert judge_verdicts(ledger, run_id, ["rules"])["rules"] == ("Uncertain", None, real)
            assert ledger.index.newest_judge(RunFilter(), "rules") == real
            assert verify_ledger(ledger).ok


def test_the_newest_outcome_and_decision_are_the_ones_accepted_last(root: Path) -> None:
    with Ledger.open(root) as ledger:
        run_id = sorted(ledger.storage.run_ids())[0]
        dated = make_outcome(
            run_id, outcome_id=new_outcome_id(FUTURE), created_at=FUTURE, fixed=True
        )
        record_outcome(ledger, dated)
        real = make_outcome(run_id, fixed=False, durable=None, verified=False)
        record_outcome(ledger, real)
        store = DecisionStore(ledger)
        future = make_decision("variant-a", outcome="ACCEPTED", minutes=40_000_000)
        assert future.created_at.year == 2102
        store.write([future])
        later = make_decision("variant-a", outcome="REJECTED")
        store.write([later])
    for rebuild in (False, True):
        with Ledger.open(root) as ledger:
            if rebuild:
                ledger.reindex()  # the files and the journal alone decide it
            assert latest_outcomes(ledger)[run_id].outcome_id == real.outcome_id
            assert latest_outcomes(ledger, [run_id])[run_id].fixed is False
            assert store_latest(ledger) == later.decision_id
            indexed = indexed_decisions(ledger, kind="variant", subject="variant-a")
            assert [d.decision_id for d in indexed] == [future.decision_id, later.decision_id]
            # The viewer lists the run's outcomes newest first: the real one on top.
            page = viewer_client(ledger).get(f"/runs/{run_id}").text
            assert page.index(real.outcome_id) < page.index(dated.outcome_id)
            assert verify_ledger(ledger).ok


def store_latest(ledger: Ledger) -> str | None:
    latest = DecisionStore(ledger).latest("variant", "variant-a")
    return None if latest is None else latest.decision_id


def test_verify_catches_an_index_edited_to_put_an_older_score_first(root: Path) -> None:
    db = sqlite3.connect(root / "index.sqlite")
    with db:
        db.execute("UPDATE scores SET accepted_seq = 999999 WHERE judge_id = ?", [DATED_JUDGE])
    db.close()
    code, output = cli("verify", "--ledger", str(root))
    assert code == 3, output
    assert "index column accepted_seq is 999999, the journal says" in output
    assert output.count(DATED_JUDGE) == 2  # both of its scores, each named
    assert cli("reindex", "--ledger", str(root))[0] == 0
    assert cli("verify", "--ledger", str(root))[0] == 0
