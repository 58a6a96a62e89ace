"""One stored run as predicates read it: identity, the shell log with each event's line number in
shell_audit.jsonl, the report, and the run's scores by judge id.

The files are read through `agentledger.store.evidence`, as the judges read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.judges.scores import run_scores
from agentledger.outcomes import latest_outcomes
from agentledger.records import RunMetadata
from agentledger.records.outcomes import Outcome
from agentledger.records.scores import SCORES_DIR, Score
from agentledger.store.evidence import LoggedCommand, RunEvidence, TraceLog, load_run_evidence
from agentledger.store.writer import REPORT

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger
    from agentledger.store.storage import StorageBackend

__all__ = ["RunView", "load_run_view"]


@dataclass
class RunView:
    """One stored run loaded for predicates: identity, shell log with line numbers, report, scores.

    `events` is None when the run has no (readable) shell log, `report` None when it has no
    report.md; `log_problem` says why the log is missing. `scores` maps judge id -> the newest
    score of that judge.
    """

    run_id: str
    metadata: RunMetadata
    events: list[LoggedCommand] | None
    report: str | None
    scores: dict[str, Score] = field(default_factory=dict)
    log_problem: str | None = None
    files: frozenset[str] = frozenset()
    """The run's artifact names (from its manifest)."""
    storage: StorageBackend | None = None
    """Where the run's scores are stored (to cite the line of a score that a predicate read)."""
    evidence: RunEvidence | None = field(default=None, repr=False)
    """The run's files, for what is read only when a predicate asks (the trace)."""
    outcome: Outcome | None = None
    """The run's newest measured outcome (lab scenarios), if any."""
    _report_lines: list[str] | None = field(default=None, repr=False)
    _report_starts: list[int] | None = field(default=None, repr=False)
    _score_lines: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @property
    def report_lines(self) -> list[str]:
        """The report split on newlines (line n is `report_lines[n - 1]`)."""
        if self._report_lines is None:
            self._report_lines = (self.report or "").split("\n")
        return self._report_lines

    @property
    def report_line_starts(self) -> list[int]:
        """The offset in `report` where each line starts (for line numbers of matches)."""
        if self._report_starts is None:
            text = self.report or ""
            self._report_starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
        return self._report_starts

    @property
    def trace(self) -> TraceLog:
        """The run's trace (trace.jsonl), read on first use; no steps, and why, without one."""
        if self.evidence is None:
            return TraceLog(None, "the run has no trace (trace.jsonl)")
        return self.evidence.trace

    @property
    def ran(self) -> list[LoggedCommand]:
        """The commands that actually ran (not denied), in log order."""
        return [item for item in self.events or () if item.ran]

    def score_file(self, judge_id: str) -> str:
        """Where the score of `judge_id` is stored, relative to the ledger."""
        return f"{SCORES_DIR}/{self.run_id}/{judge_id}.json"

    def score_line(self, judge_id: str, needle: str, depth: int = 1) -> int | None:
        """The 1-based line of the score file that starts with `needle` at nesting `depth`
        (scores are written as JSON indented by two); None when not found."""
        lines = self._score_lines.get(judge_id)
        if lines is None:
            lines = []
            if self.storage is not None:
                try:
                    raw = self.storage.get(self.score_file(judge_id))
                except (InputError, OSError):
                    raw = b""
                lines = raw.decode("utf-8", "replace").split("\n")
            self._score_lines[judge_id] = lines
        prefix = " " * (2 * depth) + needle
        for number, text in enumerate(lines, start=1):
            if text.startswith(prefix):
                return number
        return None


def load_run_view(ledger: Ledger, run_id: str) -> RunView:
    """Read what predicates need of run `run_id` (an exact id; see `Ledger.resolve`).

    A shell log that cannot be parsed is treated like a missing one (predicates on it say
    None, with the problem); a broken metadata.json is an error.
    """
    evidence = load_run_evidence(ledger, run_id)
    log = evidence.shell_log
    events = list(log.commands) if log.commands is not None else None
    report = evidence.text(REPORT)
    if report is not None:
        # CRLF is one line break (as an editor counts it): `$` must match before it
        report = report.replace("\r\n", "\n")
    scores: dict[str, Score] = {}
    # In the journal's order (`run_scores`), so the dict's last score is the newest.
    for score in run_scores(ledger, run_id):
        scores[score.judge_id] = score
    outcome = latest_outcomes(ledger, [run_id]).get(run_id)
    return RunView(
        run_id=run_id,
        metadata=evidence.metadata,
        events=events,
        report=report,
        scores=scores,
        log_problem=log.problem,
        files=evidence.files,
        storage=ledger.storage,
        evidence=evidence,
        outcome=outcome,
    )
