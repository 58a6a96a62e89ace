"""One read model of a stored run (store.evidence): the judges and the trace predicates read
the same shell log the same way."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentledger.errors import TamperedError
from agentledger.gates.predicates.evaluate import load_run_view
from agentledger.judges.inputs import load_judge_input
from agentledger.records import RunMetadata
from agentledger.store import Ledger
from agentledger.store.evidence import load_run_evidence


def seal(ledger: Ledger, run_id: str, log: bytes | None, report: str = "# Report\n") -> str:
    metadata = RunMetadata(
        run_id=run_id,
        scenario="use_case_m",
        model="claude-haiku-4-5",
        system_prompt_hash="sha256:" + "a" * 64,
        started_at=datetime(2026, 3, 20, 14, 0, tzinfo=UTC),
    )
    with ledger.new_run(metadata) as run:
        run.add_text("report.md", report)
        if log is not None:
            run.add_bytes("shell_audit.jsonl", log)
        run.add_text("snapshot.txt", "iptables -S\n")
    return run_id


EVENTS = [
    {"command": "tc qdisc show dev eth0", "decision": "allowed"},
    {"command": "tc qdisc del dev eth0 root", "decision": "denied"},
]


def test_judges_and_predicates_see_the_same_events_on_the_same_lines(ledger: Ledger) -> None:
    raw = ("\n" + json.dumps(EVENTS[0]) + "\n\n" + json.dumps(EVENTS[1]) + "\n").encode()
    run_id = seal(ledger, "r_same", raw, report="# Report\r\nline two\r\n")
    evidence = load_run_evidence(ledger, run_id)
    assert [(c.line, c.command, c.ran) for c in evidence.shell_log.commands or ()] == [
        (2, "tc qdisc show dev eth0", True),
        (4, "tc qdisc del dev eth0 root", False),
    ]
    judge = load_judge_input(ledger, run_id)
    view = load_run_view(ledger, run_id)
    assert judge.events is not None and view.events is not None
    assert judge.events == [item.event for item in view.events]
    assert judge.events == evidence.shell_log.events
    assert judge.snapshot == ("snapshot.txt", "iptables -S\n")
    assert view.files == evidence.files
    # Each reader keeps its own view of the text: predicates count CRLF as one line break.
    assert view.report == "# Report\nline two\n"
    assert judge.report == "# Report\r\nline two\r\n"


def test_a_log_damaged_after_sealing_is_refused_by_every_reader(ledger: Ledger) -> None:
    """A log damaged after sealing is not the run's evidence: every reader refuses it naming
    the file (verify lists it), never reads it as a log nor crashes on it."""
    run_id = seal(ledger, "r_broken", (json.dumps(EVENTS[0]) + "\n").encode())
    path = Path(ledger.storage.locate(run_id, "shell_audit.jsonl"))
    path.chmod(0o644)
    path.write_bytes(b'{"command": "ls"}\nnot json\n')
    readers = (
        lambda: load_run_evidence(ledger, run_id).shell_log,
        lambda: load_judge_input(ledger, run_id),
        lambda: load_run_view(ledger, run_id),
    )
    for read in readers:
        with pytest.raises(TamperedError, match=r"shell_audit\.jsonl of run r_broken does not"):
            read()


def test_a_run_without_a_log_says_so(ledger: Ledger) -> None:
    run_id = seal(ledger, "r_none", None)
    assert load_run_evidence(ledger, run_id).shell_log.problem == (
        "the run has no shell log (shell_audit.jsonl)"
    )
    assert load_judge_input(ledger, run_id).has("shell_audit") is False
    assert load_run_view(ledger, run_id).events is None
