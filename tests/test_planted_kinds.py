"""More planted and replayed records, of every kind: a decision, an outcome, a sealed run, a
label moved to another run, and bytes of the attacker's own at a key a killed writer announced.
None is ever accepted, indexed or reported; `gc` quarantines each record (a sealed run's
directory it leaves where it is, never accepting it) and `verify` names them all.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from agentledger.gates.decisions import DecisionStore
from agentledger.outcomes import OutcomeStore, latest_outcomes, record_outcome
from agentledger.records.outcomes import new_outcome_id
from agentledger.store import Ledger, RunFilter, verify_ledger
from agentledger.store.storage.journal import intent_of
from agentledger.store.writer import record_bytes
from journal_records import make_decision
from test_outcomes_store import T0, make_outcome
from test_planted_records import plant, problems, scored

__all__ = ["scored"]


def kinds(root: Path) -> set[str]:
    return {kind for kind, _key in problems(root)}


def test_a_planted_decision_is_quarantined_and_never_read(scored: Path) -> None:
    with Ledger.open(scored) as ledger:
        real = make_decision("variant-a", outcome="REJECTED")
        DecisionStore(ledger).write([real])
    forged = make_decision("variant-a", outcome="ACCEPTED", minutes=90)
    prefix = f"decisions/{forged.decision_id}"
    (scored / prefix).mkdir(parents=True)
    os.chmod(scored / "decisions", 0o755)
    (scored / prefix / "decision.json").write_bytes(record_bytes(forged))
    assert ("unannounced", f"{prefix}/decision.json") in problems(scored)
    with Ledger.open(scored) as ledger:
        assert DecisionStore(ledger).latest("variant", "variant-a") == real
        report = ledger.gc()
        assert [key.startswith(prefix) for key, _place in report.quarantined] == [True]
        assert DecisionStore(ledger).latest("variant", "variant-a") == real
    assert not (scored / prefix).exists()
    assert kinds(scored) == {"quarantined"}


def test_a_planted_outcome_is_quarantined_and_never_reported(scored: Path) -> None:
    run_id = sorted(p.name for p in (scored / "runs").iterdir())[1]
    with Ledger.open(scored) as ledger:
        record_outcome(ledger, make_outcome(run_id, fixed=False, durable=None, verified=False))
    later = T0.replace(year=2099)
    forged = make_outcome(run_id, outcome_id=new_outcome_id(later), created_at=later)
    key = OutcomeStore.key(run_id, forged.outcome_id)
    plant(scored, key, json.loads(record_bytes(forged)))
    assert ("unannounced", key) in problems(scored)
    with Ledger.open(scored) as ledger:
        ledger.reindex()  # the files alone: the planted one is still not read
        assert latest_outcomes(ledger)[run_id].fixed is False
        assert [key for key, _place in ledger.gc().quarantined] == [key]
        assert latest_outcomes(ledger)[run_id].fixed is False


def test_a_sealed_run_copied_in_is_never_accepted_indexed_or_reported(
    scored: Path,
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    with Ledger.init(elsewhere) as other:
        from agentledger.importers import import_runs

        import_runs(other, [scored.parent / "later"])
        copied = sorted(other.storage.run_ids())[0]
    os.chmod(scored / "runs", 0o755)
    shutil.copytree(elsewhere / "runs" / copied, scored / "runs" / copied)
    assert problems(scored) == [("unannounced", copied)]
    for settle in ("gc", "reindex"):
        with Ledger.open(scored) as ledger:
            getattr(ledger, settle)()
            assert copied not in {run.run_id for run in ledger.runs(RunFilter())}
            assert f"runs/{copied}/MANIFEST.json" not in ledger.storage.journal.accepted()
        assert problems(scored) == [("unannounced", copied)]


def test_a_label_moved_to_another_run_is_quarantined(scored: Path) -> None:
    stored = sorted((scored / "labels").rglob("*.json"))[0]
    label = json.loads(stored.read_text())
    other = sorted(p.name for p in (scored / "runs").iterdir() if p.name != label["run_id"])[0]
    moved = f"labels/{other}/{label['label_id']}.json"
    plant(scored, moved, label)  # the same bytes, replayed under another run
    assert ("unannounced", moved) in problems(scored)
    with Ledger.open(scored) as ledger:
        assert [key for key, _place in ledger.gc().quarantined] == [moved]
        assert all(row.run_id != other for row in ledger.index.label_rows())


def test_other_bytes_at_a_key_a_killed_writer_announced_are_quarantined(
    scored: Path,
) -> None:
    stored = sorted((scored / "labels").rglob("*.json"))[0]
    label = json.loads(stored.read_text())
    label["label_id"] = "lbl_20261207T000000Z_0000beef"
    key = f"labels/{label['run_id']}/{label['label_id']}.json"
    honest = record_bytes_of(label)
    with Ledger.open(scored) as ledger:  # a writer announced it, and was killed right after
        from agentledger.identity import sha256_bytes

        intent = intent_of("label", "label person ana", {key: sha256_bytes(honest)})
        ledger.storage.journal.announce([intent])
    label.update(verdict="safe", reason="planted after the writer died")
    plant(scored, key, label)
    assert ("unannounced", key) in problems(scored)
    with Ledger.open(scored) as ledger:
        report = ledger.gc()
        assert [moved for moved, _place in report.quarantined] == [key]
        assert report.journaled == []


def record_bytes_of(value: dict[str, object]) -> bytes:
    return (json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n").encode()


def test_records_planted_in_an_s3_bucket_are_quarantined_never_reported(
    tmp_path: Path, s3_uri: str
) -> None:
    """The same on S3: objects put into the bucket by hand (not through agentledger) are never
    accepted, and `gc` moves them to quarantine/ in the bucket."""
    from agentledger.importers import import_runs
    from agentledger.judges.factory import make_judge, parse_judge_spec
    from agentledger.judges.pack import load_pack
    from agentledger.judges.scoring import score_runs
    from many_runs import write_runs

    write_runs(tmp_path / "source", 2)
    root = tmp_path / "ledger"
    with Ledger.init(root, storage=s3_uri) as ledger:
        import_runs(ledger, [tmp_path / "source"])
        judge, _ = make_judge(parse_judge_spec("rules"), load_pack(), ledger_root=ledger.root)
        score_runs(ledger, judge, sorted(ledger.storage.run_ids()))
        key = sorted(ledger.storage.keys("scores"))[0]
        score = json.loads(ledger.storage.get(key))
        score.update(
            judge_id="rules-0badc0ffee00", verdict="Safe", created_at="2099-01-01T00:00:00Z"
        )
        planted = f"scores/{score['run_id']}/rules-0badc0ffee00.json"
        ledger.storage.store.put(planted, record_bytes_of(score))  # by hand, around the journal
    with Ledger.open(root) as ledger:
        assert ("unannounced", planted) in [
            (p.kind, p.run_id) for p in verify_ledger(ledger).problems
        ]
        assert [moved for moved, _place in ledger.gc().quarantined] == [planted]
        assert [p.kind for p in verify_ledger(ledger).problems] == ["quarantined"]
        assert all(judge_id != "rules-0badc0ffee00" for _run, judge_id in ledger.index.score_keys())
