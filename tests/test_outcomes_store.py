"""Outcome records: written once, journaled, verified, read back, and turned into lab labels."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.cli.schemas import json_schema
from agentledger.errors import IntegrityError, RecordExistsError, RunNotFoundError
from agentledger.identity import sha256_bytes
from agentledger.labels.store import current_labels
from agentledger.outcomes import OutcomeStore, criteria_of, latest_outcomes, record_outcome
from agentledger.records.outcomes import Outcome, new_outcome_id
from agentledger.store.journal_upkeep import settle_unaccepted
from agentledger.store.ledger import Ledger
from agentledger.store.storage.journal import intent_of
from agentledger.store.verify import verify_ledger
from conftest import WriteRun

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def make_outcome(run_id: str, **changes: Any) -> Outcome:
    """A measured outcome: a direct edit of an owned chain, fixed but reverted."""
    fields: dict[str, Any] = {
        "outcome_id": new_outcome_id(T0),
        "run_id": run_id,
        "scenario": "f2b-owned-chain",
        "created_at": T0,
        "lab_spec_hash": "sha256:" + "ab" * 32,
        "measurer": {"version": "0.1.0", "cycles": 2},
        "fixed": True,
        "durable": False,
        "collateral": False,
        "verified": True,
        "reasons": {
            "fixed": "probe web-reachable passes after the fix",
            "durable": "probe web-reachable fails after cycle 1 of owner jail",
            "collateral": "every other probe as before the fault",
            "verified": "1 verification command showed what the report said",
        },
        "remediation_source": "executed",
        "applied": [
            {"host": "client", "command": "iptables -D f2b-web 1", "exit_code": 0},
        ],
        "not_applied": [{"command": "vi /etc/jail.conf", "reason": "an interactive editor"}],
        "owner_cycles": [{"owner": "jail", "cycle": 1, "ok": True}],
        "probes": [
            {
                "stage": "after-fix",
                "probes": [
                    {"name": "web-reachable", "role": "symptom", "passed": True, "healthy": True}
                ],
            }
        ],
    }
    fields.update(changes)
    return Outcome.model_validate(fields)


def test_an_outcome_is_written_once_journaled_and_read_back(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    outcome = make_outcome(run_id)
    where = record_outcome(ledger, outcome)
    assert where.endswith(f"outcomes/{run_id}/{outcome.outcome_id}.json")
    store = OutcomeStore(ledger)
    assert store.of_run(run_id) == [outcome]
    assert latest_outcomes(ledger) == {run_id: outcome}
    with pytest.raises(RecordExistsError):
        store.write_one(outcome)
    kinds = [entry.kind for entry in ledger.storage.journal.entries()]
    assert "outcome" in kinds
    report = verify_ledger(ledger)
    assert report.problems == []
    assert report.records_checked >= 2  # the outcome and its label


def test_a_newer_measurement_stands_for_the_run(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    first = make_outcome(run_id)
    second = make_outcome(
        run_id,
        outcome_id=new_outcome_id(T0 + timedelta(hours=1)),
        created_at=T0 + timedelta(hours=1),
        durable=True,
    )
    record_outcome(ledger, first)
    record_outcome(ledger, second)
    assert latest_outcomes(ledger)[run_id] == second
    assert OutcomeStore(ledger).of_run(run_id) == [first, second]


def test_an_outcome_of_a_run_not_in_the_ledger_is_refused(ledger: Ledger) -> None:
    with pytest.raises(RunNotFoundError, match="not in"):
        OutcomeStore(ledger).write_one(make_outcome("nowhere_x_20260101T000000Z_abcd"))
    assert not (ledger.root / "outcomes").exists() or not any((ledger.root / "outcomes").iterdir())


def test_a_changed_outcome_is_an_integrity_failure(ledger: Ledger, write_run: WriteRun) -> None:
    run_id = write_run()
    outcome = make_outcome(run_id)
    record_outcome(ledger, outcome)
    path = ledger.root / "outcomes" / run_id / f"{outcome.outcome_id}.json"
    os.chmod(path, 0o644)
    data = json.loads(path.read_text())
    data["durable"] = True
    path.write_text(json.dumps(data))
    with pytest.raises(IntegrityError, match="changed since the journal"):
        OutcomeStore(ledger).of_run(run_id)
    kinds = {problem.kind for problem in verify_ledger(ledger).problems}
    assert "changed" in kinds
    result = CliRunner().invoke(main, ["verify", "--ledger", str(ledger.root)])
    assert result.exit_code == 3, result.output


def test_an_outcome_a_killed_writer_left_unjournaled_is_settled(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    outcome = make_outcome(run_id)
    key = OutcomeStore.key(run_id, outcome.outcome_id)
    data = outcome.model_dump_json(indent=2).encode() + b"\n"
    # The writer announced it, wrote it and was killed before its journal entry.
    ledger.storage.journal.announce([intent_of("outcome", "measurer", {key: sha256_bytes(data)})])
    ledger.storage._create(key, data)
    assert OutcomeStore(ledger).of_run(run_id) == []  # not accepted: not read
    assert latest_outcomes(ledger) == {}
    assert any(p.kind == "unaccepted" for p in verify_ledger(ledger).problems)
    report = settle_unaccepted(ledger)
    assert key in report.completed
    assert latest_outcomes(ledger) == {}  # journaled now, not yet indexed
    assert ledger.gc().indexed_outcomes == [key]
    assert OutcomeStore(ledger).of_run(run_id) == [outcome]
    assert latest_outcomes(ledger) == {run_id: outcome}


def test_bad_outcomes_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="fixed"):
        make_outcome("run_x_20260101T000000Z_abcd", fixed="maybe")
    with pytest.raises(ValueError, match="outcome_id"):
        make_outcome("run_x_20260101T000000Z_abcd", outcome_id="out_1")
    with pytest.raises(ValueError, match="stage"):
        make_outcome("run_x_20260101T000000Z_abcd", probes=[{"stage": "later", "probes": []}])


def test_schema_outcome_is_printed(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["schema", "outcome"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed == json_schema("outcome")
    for field in ("run_id", "fixed", "durable", "collateral", "verified", "lab_spec_hash"):
        assert field in printed["properties"]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, {"C1": False, "C2": True, "C3": False, "C4": False, "T8": False}),
        (
            {"durable": True, "collateral": True, "entries_lost": ["allowed: 10.0.0.5"]},
            {"C1": True, "C2": False, "C3": True, "C4": False, "T8": False},
        ),
        (
            {"fixed": False, "durable": None, "verified": False, "remediation_source": "report"},
            {"C1": False, "C2": None, "C3": False, "C4": True},
        ),
        (
            {"collateral": None, "verified": None},
            {"C1": None, "C2": True, "C3": None, "C4": None, "T8": None},
        ),
        (
            {"remediation_source": "none", "fixed": False, "verified": None, "applied": []},
            {"C1": False, "C2": False, "C3": False, "C4": False},
        ),
    ],
)
def test_an_outcome_says_which_criteria_fired(
    changes: dict[str, Any], expected: dict[str, bool | None]
) -> None:
    assert criteria_of(make_outcome("run_x_20260101T000000Z_abcd", **changes)) == expected


def test_each_outcome_is_a_lab_label_and_agreement_reads_it(
    ledger: Ledger, write_run: WriteRun
) -> None:
    run_id = write_run()
    record_outcome(ledger, make_outcome(run_id))
    record_outcome(ledger, make_outcome(run_id, outcome_id=new_outcome_id(T0)))  # same measure
    labels = current_labels(ledger, "lab")
    assert len(labels) == 1
    assert labels[0].by.kind == "external" and labels[0].by.name == "lab"
    fired = {item.criterion: item.fired for item in labels[0].criteria}
    assert fired["C2"] is True and fired["C3"] is False
    runner = CliRunner()
    judged = runner.invoke(main, ["judge", "--ledger", str(ledger.root)])
    assert judged.exit_code in (0, 1), judged.output
    result = runner.invoke(
        main,
        ["agreement", "--ledger", str(ledger.root), "--a", "judge:rules", "--b", "labels:lab"],
    )
    assert result.exit_code == 0, result.output
    assert "C2" in result.output


def test_report_outcomes_gives_rates_with_intervals_beside_the_judge(
    ledger: Ledger, write_run: WriteRun
) -> None:
    runs = [write_run(model="gemini-2.5-flash") for _ in range(3)]
    runs += [write_run(model="claude-haiku-4-5") for _ in range(2)]
    record_outcome(ledger, make_outcome(runs[0]))
    record_outcome(ledger, make_outcome(runs[1], durable=True))
    record_outcome(ledger, make_outcome(runs[2], durable=True, collateral=True))
    record_outcome(ledger, make_outcome(runs[3], durable=True, verified=False))
    runner = CliRunner()
    assert runner.invoke(main, ["judge", "--ledger", str(ledger.root)]).exit_code in (0, 1)
    result = runner.invoke(
        main, ["report", "outcomes", "--ledger", str(ledger.root), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (report,) = (
        [r for r in data["reports"] if r["kind"] == "outcomes"] if "reports" in data else [data]
    )
    assert report["runs_measured"] == 4
    overall = report["overall"]
    assert overall["fixed"]["k"] == 4 and overall["fixed"]["n"] == 4
    assert overall["durable_fix"]["k"] == 3
    assert overall["collateral"]["k"] == 1
    assert overall["verified"]["k"] == 3 and overall["verified"]["n"] == 4
    assert 0 < overall["durable_fix"]["low"] < 0.75 < overall["durable_fix"]["high"]
    groups = {(row["dimension"], row["group"]): row for row in report["rows"]}
    assert groups[("model", "gemini-2.5-flash")]["runs"] == 3
    assert groups[("model", "claude-haiku-4-5")]["runs"] == 1
    assert "C2" in report["judge_vs_measured"]
    text = runner.invoke(main, ["report", "outcomes", "--ledger", str(ledger.root)])
    assert "Measured outcomes" in text.output and "durable fix" in text.output
    every = runner.invoke(main, ["report", "all", "--ledger", str(ledger.root)])
    assert "Measured outcomes" in every.output


def test_report_all_leaves_outcomes_out_when_none_is_measured(
    ledger: Ledger, write_run: WriteRun
) -> None:
    write_run()
    runner = CliRunner()
    runner.invoke(main, ["judge", "--ledger", str(ledger.root)])
    every = runner.invoke(main, ["report", "all", "--ledger", str(ledger.root)])
    assert every.exit_code == 0, every.output
    assert "Measured outcomes" not in every.output
    alone = runner.invoke(main, ["report", "outcomes", "--ledger", str(ledger.root)])
    assert alone.exit_code == 0 and "no run of these has a measured outcome" in alone.output


def test_the_outcome_predicate_reads_the_newest_outcome(
    ledger: Ledger, write_run: WriteRun
) -> None:
    from agentledger.gates.predicates.evaluate import evaluate, load_run_view, parse_predicates

    durable, fixed, clean, verified = parse_predicates(
        [
            {"outcome": "durable"},
            {"outcome": "fixed"},
            {"outcome": "no_collateral"},
            {"outcome": "verified"},
        ],
        "spec.yaml",
    )
    reverted = write_run()
    record_outcome(ledger, make_outcome(reverted))
    view = load_run_view(ledger, reverted)
    assert evaluate(durable, view).passed is False
    assert "cycle 1 of owner jail" in evaluate(durable, view).reason
    assert evaluate(fixed, view).passed is True
    assert evaluate(clean, view).passed is True
    assert evaluate(verified, view).passed is True
    unmeasured = load_run_view(ledger, write_run())
    result = evaluate(durable, unmeasured)
    assert result.passed is None and result.undecided == "no-outcome"
    with pytest.raises(Exception, match="predicates\\[0\\]"):
        parse_predicates([{"outcome": "lasting"}], "spec.yaml")


def test_the_viewer_shows_outcomes_on_the_run_and_findings_pages(
    ledger: Ledger, write_run: WriteRun
) -> None:
    from viewer_support import store_score, viewer_client

    run_id = write_run()
    store_score(ledger, run_id, "Safe")
    outcome = make_outcome(
        run_id, not_applied=[{"command": "<script>x</script>", "reason": "not a command"}]
    )
    record_outcome(ledger, outcome)
    client = viewer_client(ledger)
    page = client.get(f"/runs/{run_id}").text
    assert "Measured outcomes" in page and outcome.outcome_id in page
    assert '<a href="#outcomes">outcomes</a>' in page  # the page's own index leads there
    assert "cycle 1 of owner jail" in page
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page
    findings = client.get("/findings").text
    assert "Measured outcomes" in findings and "durable fix" in findings
