"""Outcomes in the index: written through the record store, indexed on both engines, read by
reports, the viewer and the `outcome:` predicate from the index, rebuilt by `reindex`, and the
ones a killed measurer left unindexed indexed by `gc`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.outcomes import OutcomeStore, latest_outcomes, record_outcome
from agentledger.records.outcomes import new_outcome_id
from agentledger.store.ledger import Ledger
from agentledger.store.record_kinds import OutcomeRecords
from conftest import make_metadata
from test_outcomes_store import T0, make_outcome


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    """A ledger on each index engine (PostgreSQL: a real server, a new database)."""
    index = request.getfixturevalue("pg_url") if request.param == "postgresql" else "sqlite"
    with Ledger.init(tmp_path / "ledger", index=index) as opened:
        yield opened


def _run(ledger: Ledger, n: int, model: str = "mock-careful") -> str:
    run_id = f"lab_f2b_chain_{model}_20261201T10000{n}Z_abc{n:03d}"
    with ledger.new_run(make_metadata(run_id, scenario="lab_f2b_chain", model=model)) as run:
        run.add_text("report.md", "# Report\n\n## Remediation\n\n`jailctl unban 10.0.0.2`\n")
    return run_id


def test_the_index_holds_each_runs_outcomes_and_its_newest(engine_ledger: Ledger) -> None:
    ledger = engine_ledger
    one, two = _run(ledger, 1), _run(ledger, 2, "mock-hasty")
    first = make_outcome(one)
    again = make_outcome(
        one,
        outcome_id=new_outcome_id(T0 + timedelta(hours=1)),
        created_at=T0 + timedelta(hours=1),
        durable=True,
    )
    other = make_outcome(two, fixed=False, durable=None, verified=None)
    # Written out of time order: the journal's order decides, not the times the files give.
    for outcome in (again, first, other):
        record_outcome(ledger, outcome)
    index = ledger.index
    assert index.outcome_ids() == {first.outcome_id, again.outcome_id, other.outcome_id}
    assert [json.loads(raw)["outcome_id"] for raw in index.outcomes([one])] == [
        again.outcome_id,
        first.outcome_id,
    ]
    assert latest_outcomes(ledger) == {one: first, two: other}
    assert latest_outcomes(ledger, [two]) == {two: other}
    assert latest_outcomes(ledger, []) == {}
    assert OutcomeStore(ledger).of_run(one) == [again, first]
    # A row is the record's: nulls stay null, and indexing it again changes nothing.
    store = OutcomeStore(ledger)
    index.add_outcomes(
        [store.row(other, store.seq_of(other, ledger.storage.journal.accepted_at()))]
    )
    assert index.outcomes([two], latest=True) == [other.model_dump_json()]


def test_reports_read_the_index_and_reindex_rebuilds_it(engine_ledger: Ledger) -> None:
    ledger = engine_ledger
    runs = [_run(ledger, n, "mock-careful" if n % 2 else "mock-hasty") for n in range(4)]
    for n, run_id in enumerate(runs):
        record_outcome(ledger, make_outcome(run_id, durable=n % 2 == 1))
    runner = CliRunner()
    where = ["--ledger", str(ledger.root)]
    shown = runner.invoke(main, ["report", "outcomes", *where, "--format", "json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["runs_measured"] == 4
    # The index is what reports read: emptied, they see no outcome, though the files remain.
    assert ledger.index.rebuild_outcomes([]) == 0
    assert latest_outcomes(ledger) == {}
    empty = runner.invoke(main, ["report", "outcomes", *where])
    assert "no run of these has a measured outcome" in empty.output
    rebuilt = runner.invoke(main, ["reindex", *where])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "4 outcomes" in rebuilt.output
    again = runner.invoke(main, ["report", "outcomes", *where, "--format", "json"])
    report = json.loads(again.output)
    assert report["runs_measured"] == 4 and report["overall"]["durable_fix"]["k"] == 2


def test_a_measurer_killed_before_indexing_is_finished_by_gc(engine_ledger: Ledger) -> None:
    ledger = engine_ledger
    run_id = _run(ledger, 1)
    outcome = make_outcome(run_id)
    store = OutcomeRecords(ledger)
    store.write([outcome])
    key = store.key_of(outcome)
    ledger.index.rebuild_outcomes([])  # as if killed between journaling and indexing
    assert latest_outcomes(ledger) == {}
    result = CliRunner().invoke(main, ["gc", "--ledger", str(ledger.root)])
    assert result.exit_code == 0, result.output
    assert f"indexed outcome {key}" in result.output and "1 outcome(s) indexed" in result.output
    assert latest_outcomes(ledger) == {run_id: outcome}


def test_reindex_reports_an_outcome_it_cannot_read(ledger: Ledger) -> None:
    run_id = _run(ledger, 1)
    outcome = make_outcome(run_id)
    record_outcome(ledger, outcome)
    path = ledger.root / "outcomes" / run_id / f"{outcome.outcome_id}.json"
    path.chmod(0o644)
    data = json.loads(path.read_text())
    data["durable"] = True
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["reindex", "--ledger", str(ledger.root)])
    assert result.exit_code == 3, result.output
    assert "skipped outcome" in result.output and "changed since" in result.output
    with Ledger.open(ledger.root) as reopened:
        assert latest_outcomes(reopened) == {}


def test_an_index_from_before_outcomes_were_indexed_is_filled_when_opened(
    ledger: Ledger,
) -> None:
    """Upgrading: the outcomes measured before m014 are indexed when the ledger opens."""
    run_id = _run(ledger, 1)
    outcome = make_outcome(run_id)
    record_outcome(ledger, outcome)
    root = ledger.root
    ledger.close()
    db = sqlite3.connect(root / "index.sqlite")
    db.execute("DROP TABLE outcomes")
    # As m013 left it: without outcomes, and without the order m015 added to other records.
    db.execute("DELETE FROM _migrations WHERE name IN ('m014_outcomes', 'm015_record_order')")
    db.execute("DROP INDEX scores_chosen")
    for table in ("scores", "decisions"):
        db.execute(f"ALTER TABLE {table} DROP COLUMN accepted_seq")
    db.execute(
        "CREATE INDEX scores_chosen ON scores (run_id, judge_id, verdict, diagnosis, "
        "created_at, kind, criteria_packed)"
    )
    db.commit()
    db.close()
    with Ledger.open(root) as upgraded:
        assert latest_outcomes(upgraded) == {run_id: outcome}
    with Ledger.open(root) as again:  # filled once: a later open finds nothing to do
        assert again.index.upgraded_by == ()
