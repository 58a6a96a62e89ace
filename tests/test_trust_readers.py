"""What readers take on trust, checked: a label split is a journaled record (one planted or
edited is never chosen), a run's artifact changed since sealing is never judged or shown,
and `verify` holds every indexed record's journal position to the journal, for every kind.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.errors import IntegrityError
from agentledger.gates.decisions import DecisionStore
from agentledger.identity import sha256_bytes
from agentledger.importers import import_runs
from agentledger.labels.split import SplitStore
from agentledger.outcomes import record_outcome
from agentledger.records.splits import Split
from agentledger.store import Ledger, verify_ledger
from agentledger.store.writer import record_bytes
from journal_records import make_decision
from test_outcomes_store import make_outcome
from test_planted_records import plant, problems, scored
from viewer_support import viewer_client

__all__ = ["scored"]


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def make_split(root: Path, seed: str) -> Split:
    code, output = cli(
        "labels", "split", "--ledger", str(root), "--source", "human", "--seed", seed, "--json"
    )
    assert code == 0, output
    return Split.model_validate_json(output)


# -- splits --------------------------------------------------------------------------------


def test_a_planted_split_is_never_chosen_and_gc_quarantines_it(scored: Path) -> None:
    real = make_split(scored, "s1")
    # A split of the attacker's own, dated 2099, at its own id: the newest by its file's time.
    forged = real.model_copy(update={"seed": "evil", "split_id": "split_0badc0ffee00"})
    forged_json = json.loads(record_bytes(forged))
    forged_json["created_at"] = "2099-01-01T00:00:00Z"
    key = "splits/split_0badc0ffee00.json"
    plant(scored, key, forged_json)
    assert ("unannounced", key) in problems(scored)
    with Ledger.open(scored) as ledger:
        assert SplitStore(ledger).newest("human") == real
        assert [key for key, _place in ledger.gc().quarantined] == [key]
        assert SplitStore(ledger).newest("human") == real
    assert {kind for kind, _key in problems(scored)} == {"quarantined"}


def test_an_edited_split_is_caught_and_never_read(scored: Path) -> None:
    real = make_split(scored, "s1")
    path = scored / "splits" / f"{real.split_id}.json"
    os.chmod(path, 0o644)
    edited = json.loads(path.read_text())
    edited["dev"], edited["test"] = edited["test"], edited["dev"]
    path.write_text(json.dumps(edited))
    assert ("changed", f"splits/{real.split_id}.json") in problems(scored)
    with Ledger.open(scored) as ledger, pytest.raises(IntegrityError, match="changed since"):
        SplitStore(ledger).newest("human")


def test_the_newest_split_is_the_journal_s_not_the_file_s(scored: Path) -> None:
    first = make_split(scored, "s1")
    second = make_split(scored, "s2")
    with Ledger.open(scored) as ledger:
        assert SplitStore(ledger).newest("human") == second
        assert [split.split_id for split in SplitStore(ledger).all()] == [
            first.split_id,
            second.split_id,
        ]
        entries = [e for e in ledger.storage.journal.entries() if e.kind == "split"]
        assert [e.id for e in entries] == [first.split_id, second.split_id]
    assert problems(scored) == []


# -- artifacts read against the manifest ---------------------------------------------------


def tamper(root: Path, run_id: str, name: str, text: bytes) -> None:
    path = root / "runs" / run_id / name
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o644)
    path.write_bytes(text)


@pytest.mark.parametrize("name", ["report.md", "shell_audit.jsonl", "metadata.json"])
def test_a_tampered_artifact_is_not_judged(scored: Path, name: str) -> None:
    with Ledger.open(scored) as ledger:
        new = sorted(import_runs(ledger, [scored.parent / "later"]).imported)
    assert len(new) == 2
    original = (scored / "runs" / new[0] / name).read_bytes()
    tamper(scored, new[0], name, original.replace(b"e", b"E", 1) + b"\n")
    code, output = cli("judge", "--ledger", str(scored))
    assert code == 3, output
    assert f"{new[0]}: TamperedError: {name} of run {new[0]} does not match" in output
    with Ledger.open(scored) as ledger:
        judged = {run_id for run_id in new if ledger.index.scores_of(run_id)}
    assert judged == {new[1]}  # the other run is judged; the tampered one is left unscored


def test_the_viewer_shows_a_warning_and_no_byte_of_a_tampered_file(scored: Path) -> None:
    run_id = sorted(p.name for p in (scored / "runs").iterdir())[0]
    tamper(scored, run_id, "report.md", b"# All is well\nplanted words\n")
    with Ledger.open(scored) as ledger:
        client = viewer_client(ledger)
        for url in (f"/runs/{run_id}/files/report.md", f"/runs/{run_id}"):
            response = client.get(url)
            assert response.status_code == 409, url
            assert "Tampered evidence" in response.text
            assert "planted words" not in response.text
        # The other files of the run are still served: they are what was sealed.
        assert client.get(f"/runs/{run_id}/files/shell_audit.jsonl").status_code == 200


def test_show_trace_and_file_refuse_a_run_whose_manifest_the_journal_never_accepted(
    scored: Path,
) -> None:
    run_id = sorted(p.name for p in (scored / "runs").iterdir())[0]
    manifest = scored / "runs" / run_id / "MANIFEST.json"
    tamper(scored, run_id, "report.md", b"rewritten\n")
    # The manifest rewritten to match the edit: the journal still holds the sealed one.
    value = json.loads(manifest.read_text())
    value["files"]["report.md"] = {"sha256": sha256_bytes(b"rewritten\n"), "size": 10}
    os.chmod(manifest, 0o644)
    manifest.write_text(json.dumps(value))
    code, output = cli("show", "--ledger", str(scored), run_id, "--file", "report.md")
    assert code == 3 and "not the one the journal accepted" in output
    assert "rewritten" not in output


# -- journal positions of every kind ---------------------------------------------------------


def test_verify_holds_every_kind_s_position_to_the_journal(scored: Path) -> None:
    run_id = sorted(p.name for p in (scored / "runs").iterdir())[0]
    with Ledger.open(scored) as ledger:
        decision = make_decision("variant-a", outcome="REJECTED")
        DecisionStore(ledger).write([decision])
        record_outcome(ledger, make_outcome(run_id))
    assert problems(scored) == []
    db = sqlite3.connect(scored / "index.sqlite")
    with db:
        db.execute("UPDATE decisions SET accepted_seq = accepted_seq + 100")
        db.execute("UPDATE outcomes SET accepted_seq = NULL")
        db.execute("UPDATE scores SET accepted_seq = NULL")
    db.close()
    found = set(problems(scored))
    assert ("index-mismatch", f"decisions/{decision.decision_id}/decision.json") in found
    assert {kind for kind, _key in found} == {"index-mismatch", "unpositioned"}
    assert sum(kind == "unpositioned" for kind, _key in found) == 4  # 3 scores, 1 outcome
    with Ledger.open(scored) as ledger:
        report = verify_ledger(ledger)
        detail = next(p.detail for p in report.problems if p.kind == "unpositioned")
        assert "falls back to the time written in its file" in detail
        assert ledger.gc().repositioned == 4
    assert problems(scored) == []
