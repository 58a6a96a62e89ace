"""The labelling walk-through in a real terminal (a pty driven by pexpect): `label RUN_ID` with
no flags, and `review --next`, show the run and ask."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from agentledger.labels import current_labels, labels_of_run
from agentledger.store import Ledger
from conftest import WriteRun
from test_labels_cli import score

pexpect = pytest.importorskip("pexpect")

REPORT = "# Report\nRoot cause: fail2ban chain.\nFix: flushed f2b-sshd \x1b[31mRED\x1b[0m\n"


def spawn(ledger: Ledger, *args: str, **options: object) -> object:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env |= {"NO_COLOR": "1", "TERM": "dumb"}  # plain text to match; still a terminal
    script = str(Path(sys.executable).parent / "agentledger")
    return pexpect.spawn(
        script,
        [*args, "--ledger", str(ledger.root)],
        env=env,
        timeout=60,
        encoding="utf-8",
        dimensions=(50, 200),
        **options,
    )


def finish(child: object) -> int:
    child.expect(pexpect.EOF)  # type: ignore[attr-defined]
    child.close()  # type: ignore[attr-defined]
    return child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus  # type: ignore[attr-defined]


@pytest.fixture
def scored_run(ledger: Ledger, write_run: WriteRun) -> str:
    run_id = write_run(report=REPORT)
    score(ledger, run_id, "rules", "Unsafe")
    return run_id


def test_the_walk_through_shows_the_run_and_asks(ledger: Ledger, scored_run: str) -> None:
    child = spawn(ledger, "label", scored_run, "--by", "alice")
    child.expect(r"Verdict \(s safe, u unsafe, x uncertain, Enter skip, q quit\): ")
    shown = child.before
    assert f"run {scored_run}" in shown
    assert "Root cause: fail2ban chain." in shown
    assert "\\x1b[31mRED" in shown and "\x1b[31mRED" not in shown  # agent text made inert
    assert "$ tc qdisc show dev eth0" in shown  # the trace's commands
    assert "rules-000000000005 (rules): Unsafe" in shown
    assert "C1 fired: listed first" in shown and "C2 did not fire" in shown
    child.sendline("u")  # one letter each
    child.expect(r"C1 fired\? \(y yes, n no, \? unknown, Enter skip, q quit\): ")
    child.sendline("y")
    child.expect(r"C2 fired\? .*: ")
    child.sendline("no")  # or the word
    child.expect(r"Diagnosis \(c correct, i incorrect, Enter skip, q quit\): ")
    child.sendline("i")
    child.expect(r"Reason \(optional\): ")  # an empty default is not shown as "()"
    child.sendline("flushed a chain fail2ban owns")
    child.expect(r"Save this label as alice\? \[y/n\] \(y\): ")
    child.sendline("")
    child.expect(f"Labelled {scored_run} by alice: Unsafe, C1=yes, C2=no, diagnosis incorrect")
    assert finish(child) == 0
    (label,) = labels_of_run(ledger, scored_run)
    assert label.reason == "flushed a chain fail2ban owns" and label.diagnosis_correct is False


def test_a_refused_answer_is_asked_again_and_skipping_everything_saves_nothing(
    ledger: Ledger, scored_run: str
) -> None:
    child = spawn(ledger, "label", scored_run, "--by", "bob")
    child.expect(r"Verdict .*: ")
    child.sendline("perhaps")
    child.expect(r"Please answer with one of: s safe, u unsafe, x uncertain, Enter skip, q quit\.")
    child.expect(r"Verdict .*: ")
    child.sendline("")
    for _ in range(3):  # C1, C2, diagnosis
        child.expect(r"\? .*: |Diagnosis .*: ")
        child.sendline("")
    child.expect(r"Reason \(optional\).*: ")
    child.sendline("")
    child.expect("No label saved.")
    assert finish(child) == 0
    assert labels_of_run(ledger, scored_run) == []


def test_ctrl_c_at_a_prompt_saves_nothing(ledger: Ledger, scored_run: str) -> None:
    child = spawn(ledger, "label", scored_run, "--by", "bob")
    child.expect(r"Verdict .*: ")
    child.sendintr()  # type: ignore[attr-defined]
    child.expect("no label saved")
    assert finish(child) == 130
    assert labels_of_run(ledger, scored_run) == []


def _ignore_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_ctrl_c_at_a_prompt_stops_a_process_started_with_ctrl_c_ignored(
    ledger: Ledger, scored_run: str
) -> None:
    # A shell script's background job starts with SIGINT ignored (inherited through exec, and
    # Python leaves it so): at a prompt a person's Ctrl-C stops it all the same.
    child = spawn(ledger, "label", scored_run, "--by", "bob", preexec_fn=_ignore_ctrl_c)
    child.expect(r"Verdict .*: ")
    child.sendintr()  # type: ignore[attr-defined]
    child.expect("no label saved")
    assert finish(child) == 130
    assert labels_of_run(ledger, scored_run) == []


def test_review_next_opens_the_first_run_of_the_queue(ledger: Ledger, write_run: WriteRun) -> None:
    unscored = write_run(model="claude-haiku-4-5")
    refused = write_run(model="gemini-2.5-flash")
    score(ledger, refused, "llm", "skipped", skipped_reason="self-judging refused", criteria=[])
    child = spawn(ledger, "review", "--next", "--by", "carol")
    child.expect(f"Next in the queue \\(refused; 2 waiting\\): {refused}")
    # No judge assessed a criterion: the criteria are asked as one line.
    child.expect(r"Verdict .*: ")
    child.sendline("s")
    child.expect(r"Criteria \(C1=yes;C2=no, empty for none\): ")
    child.sendline("C1=maybe")
    child.expect("fired 'maybe' is not valid")
    child.expect(r"Criteria .*: ")
    child.sendline("C1=no")
    child.expect(r"Diagnosis .*: ")
    child.sendline("")
    child.expect(r"Reason .*: ")
    child.sendline("")
    child.expect(r"Save this label as carol\? .*: ")
    child.sendline("y")
    child.expect(f"Labelled {refused} by carol: Safe, C1=no")
    # The labelled run left the queue: the unlabelled one is next, in the same session.
    child.expect(f"Next in the queue \\(unlabelled; 1 waiting\\): {unscored}")
    child.expect(r"Verdict .*: ")
    child.sendline("q")
    child.expect("Stopped: 1 labelled in this session.")
    assert finish(child) == 0
    assert [label.run_id for label in current_labels(ledger, "human")] == [refused]
    # Ctrl-C stops it too; what was saved stays.
    child = spawn(ledger, "review", "--next", "--by", "carol")
    child.expect(f"Next in the queue \\(unlabelled; 1 waiting\\): {unscored}")
    child.expect(r"Verdict .*: ")
    child.sendintr()  # type: ignore[attr-defined]
    assert finish(child) == 130
    assert [label.run_id for label in current_labels(ledger, "human")] == [refused]


def test_review_next_asks_only_the_chosen_criteria_of_the_chosen_runs(
    ledger: Ledger, write_run: WriteRun
) -> None:
    other = write_run(model="gemini-2.5-flash", report=REPORT)
    score(ledger, other, "rules", "Unsafe")
    mine = write_run(model="claude-haiku-4-5", report=REPORT)
    score(ledger, mine, "rules", "Unsafe")
    child = spawn(
        ledger, "review", "--next", "--by", "dan", "--model", "claude-haiku-4-5",
        "--criteria", "C2",
    )  # fmt: skip
    child.expect(f"Next in the queue \\(unlabelled; 1 waiting\\): {mine}")
    child.expect(r"Verdict .*: ")
    child.sendline("x")
    child.expect(r"(C\d) fired\? .*: ")
    assert child.match.group(1) == "C2"  # type: ignore[attr-defined]
    child.sendline("?")
    child.expect(r"Diagnosis .*: ")
    child.sendline("c")
    child.expect(r"Reason .*: ")
    child.sendline("")
    child.expect(r"Save this label as dan\? .*: ")
    child.sendline("y")
    child.expect(f"Labelled {mine} by dan: Uncertain, C2=unknown, diagnosis correct")
    child.expect(r"Nothing more waits for review \(1 labelled in this session\)\.")
    assert finish(child) == 0
    assert [label.run_id for label in current_labels(ledger, "human")] == [mine]
