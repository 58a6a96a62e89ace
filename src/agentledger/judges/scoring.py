"""Scoring stored runs: every matching run not yet scored by this judge id, once.

Re-running costs nothing: a run that already has a score under the judge id is skipped. A run
made by the judge model's own family is not sent to it: it gets a `skipped` score with the
reason, and lands in the human review queue (`agentledger review`). A run of a kind the
judge's pack does not apply to (a fixture execution, for the remediation-safety pack) gets no
score at all, so no verdict, Safe least of all: it is listed in `not_applicable` with the reason.
A run of a kind it judges but without what the pack needs (`needs:`, e.g. an infrastructure
fault for remediation-safety) gets a `not-applicable` score with the reason: counted apart,
and not looked at again by the same judge.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from agentledger.errors import RecordError, RecordExistsError, TamperedError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.judges.applicability import (
    not_applicable_before_loading,
    not_applicable_reason,
)
from agentledger.judges.base import (
    CriteriaPack,
    ExpectedDiagnosis,
    Judge,
    JudgeInput,
    JudgeOutcome,
)
from agentledger.judges.inputs import judge_input_of
from agentledger.judges.scores import ScoreStore
from agentledger.judges.verdict import VerdictPolicy
from agentledger.records.limits import check_storable
from agentledger.records.scores import NOT_APPLICABLE, UNSCORED, JudgeInfo, Score
from agentledger.runner.nothing_started import nothing_started
from agentledger.store.evidence import load_run_evidence
from agentledger.store.index import RunFilter
from agentledger.store.interrupts import deferred_interrupt
from agentledger.store.journal_upkeep import accept_records
from agentledger.store.ledger import Ledger
from agentledger.store.reindex import stored_score_rows

__all__ = [
    "RunsToJudge",
    "ScoringReport",
    "SelfJudgingCheck",
    "runs_to_judge",
    "score_identity",
    "score_runs",
]

SelfJudgingCheck = Callable[[JudgeInput, Judge], str | None]
"""Returns the reason a run must not go to this judge (same model family), or None."""


def score_identity(judge: Judge, policy: VerdictPolicy) -> tuple[str, dict[str, Any]]:
    """The judge id of scores made by `judge` under `policy`, and what it is a hash of."""
    identity = {**judge.identity(), "policy": policy.model_dump(mode="json")}
    digest = sha256_bytes(canonical_json(identity)).removeprefix("sha256:")
    return f"{judge.id.rsplit('-', 1)[0]}-{digest[:12]}", identity


@dataclass
class ScoringReport:
    """What one `judge` invocation did."""

    judge_id: str
    scored: list[Score] = field(default_factory=list)
    already_scored: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    tampered: list[str] = field(default_factory=list)
    """Of `failed`, the runs left unjudged because an artifact (or the manifest) changed
    since sealing (TamperedError): an integrity failure, not a judge's."""
    not_applicable: list[tuple[str, str]] = field(default_factory=list)
    """(run id, reason) of the runs whose kind the pack does not judge: left unscored."""
    interrupted: bool = False
    """Ctrl-C stopped the scoring: `scored` holds what was written before it."""
    not_reached: int = 0
    """Runs left unscored because of the interrupt (the next invocation scores them)."""
    scored_elsewhere: int = 0
    """Runs another invocation of the same judge scored while this one ran: skipped."""
    indexed_late: int = 0
    """Scores of this judge whose files existed but which the index lacked (a judge killed
    between writing a score and indexing it): indexed now, counted in `already_scored`."""

    def verdicts(self) -> Counter[str]:
        """How many of the new scores have each verdict; an unscored score (the judge's
        answer could not be read) counts as ``unscored``, not as its Uncertain verdict."""
        return Counter(
            UNSCORED if score.unscored_reason() else score.verdict for score in self.scored
        )

    def fired(self) -> Counter[str]:
        """On how many of the newly scored runs each criterion fired."""
        return Counter(criterion for score in self.scored for criterion in score.fired())

    def coverage(self) -> list[tuple[str, int, int, str | None]]:
        """Per criterion of the new scores that carry criteria: (criterion, runs it could
        tell, runs judged, the first reason it could not tell, with how many other reasons
        there were: one scenario's reason is not taken for all), in the pack's order."""
        judged = [score for score in self.scored if score.criteria]
        order: dict[str, list[Any]] = {}
        for score in judged:
            for result in score.criteria:
                entry = order.setdefault(result.criterion, [0, {}])
                if result.fired is not None:
                    entry[0] += 1
                else:
                    entry[1].setdefault(result.reason, None)  # first seen first
        found = []
        for name, (told, reasons) in order.items():
            why = next(iter(reasons), None)
            if len(reasons) > 1:
                why = (
                    f"{why} (and {len(reasons) - 1} other reason(s): "
                    "`agentledger show RUN` says each)"
                )
            found.append((name, told, len(judged), why))
        return found

    def diagnoses(self) -> Counter[bool | None]:
        """Diagnosis results of the new scores: True correct, False incorrect, None unknown."""
        return Counter(score.diagnosis.correct for score in self.scored if score.diagnosis)


@dataclass(frozen=True)
class RunsToJudge:
    """The runs a judge invocation takes, and the kinds it took them from."""

    run_ids: list[str]
    kinds: tuple[str, ...]
    kinds_by_default: bool
    """True when the filter named no kind, so the kinds are those the pack judges."""
    left_out: dict[str, int]
    """Runs the filter matched whose kind the pack does not judge, by kind (default only)."""


def runs_to_judge(ledger: Ledger, run_filter: RunFilter, pack: CriteriaPack) -> RunsToJudge:
    """The runs matching `run_filter`; without kinds in it, only those of the kinds `pack`
    judges (the others are counted, not taken). Named kinds are taken as asked: a run the pack
    does not judge is then reported by `score_runs` as not applicable."""
    if run_filter.kinds:
        runs = ledger.runs(run_filter)
        return RunsToJudge([run.run_id for run in runs], run_filter.kinds, False, {})
    kinds = tuple(pack.applies_to)
    every = ledger.index.count_by(run_filter, "kind")
    left_out = {str(kind): n for kind, n in every.items() if kind not in kinds}
    runs = ledger.runs(replace(run_filter, kinds=kinds))
    return RunsToJudge([run.run_id for run in runs], kinds, True, left_out)


NOT_APPLICABLE_BATCH = 256
"""How many not-applicable scores are written together (a Ctrl-C or a kill loses at most these,
and they are made again in a moment)."""


def _info(judge: Judge) -> JudgeInfo:
    identity = judge.identity()
    return JudgeInfo(
        kind=judge.kind,
        model=judge.model,
        provider=identity.get("provider"),
        pack=judge.pack.id,
        pack_version=judge.pack.version,
        pack_digest=judge.pack.digest(),
    )


def _not_applicable(
    judge: Judge, judge_id: str, identity: dict[str, Any], run_id: str, why: str
) -> Score:
    return Score(
        run_id=run_id,
        judge_id=judge_id,
        judge=_info(judge),
        identity=identity,
        verdict=NOT_APPLICABLE,
        skipped_reason=why,
    )


def _score(
    judge: Judge,
    judge_id: str,
    identity: dict[str, Any],
    policy: VerdictPolicy,
    run: JudgeInput,
    self_judging: SelfJudgingCheck | None,
) -> Score:
    outside = not_applicable_reason(judge.pack, run)
    if outside is not None:
        return _not_applicable(judge, judge_id, identity, run.run_id, outside)
    refusal = self_judging(run, judge) if self_judging is not None else None
    ended = run.summary
    if refusal is None and ended is not None and nothing_started(ended.exit_status, ended.error):
        refusal = f"nothing ran: {ended.error}"
    if refusal is not None:
        return Score(
            run_id=run.run_id,
            judge_id=judge_id,
            judge=_info(judge),
            identity=identity,
            verdict="skipped",
            skipped_reason=refusal,
        )
    outcome: JudgeOutcome = judge.judge(run)
    return Score(
        run_id=run.run_id,
        judge_id=judge_id,
        judge=_info(judge),
        identity=identity,
        verdict=policy.verdict(judge.pack, outcome.criteria),
        criteria=outcome.criteria,
        diagnosis=outcome.diagnosis,
        usage=outcome.usage,
    )


def _index_missing(
    ledger: Ledger, store: ScoreStore, judge_id: str, run_ids: Sequence[str], todo: list[str]
) -> tuple[int, set[str]]:
    """Index this judge's score files the index lacks, first settling those a killed writer
    left without a journal entry; (how many were indexed, the runs whose score was removed
    for not checking out: to be scored again)."""
    try:
        indexed = ledger.index.score_keys()
    except NotImplementedError:
        return 0, set()
    waiting = set(todo)
    keys = [
        store.key(run_id, judge_id)
        for run_id in run_ids
        if run_id not in waiting and (run_id, judge_id) not in indexed
    ]
    if not keys:
        return 0, set()
    removed: set[str] = set()
    accepted = ledger.storage.journal.accepted()
    unjournaled = [key for key in keys if key not in accepted]
    if unjournaled:
        # Their writer died between the score and its entry (one still writing holds the
        # journal lock, which this takes, until its entry is appended): settled as gc would.
        _done, dropped = accept_records(ledger, unjournaled)
        removed = {key.split("/")[1] for key, _why in dropped}
    problems: list[tuple[str, str]] = []
    # Only a journaled score can be checked against what the journal accepted.
    rows = list(stored_score_rows(ledger, problems, keys))
    if problems:
        where, why = problems[0]
        raise RecordError(where, f"a score of this judge cannot be indexed: {why}")
    added, left_out = ledger.index.add_scores_each(rows)
    if left_out:
        where, why = left_out[0]
        raise RecordError(where, why)
    return added, removed


@dataclass
class _Landing:
    """Writes a judge invocation's scores as they are made, each on its own (a crash loses
    none already made), except the not-applicable ones: they cost nothing to make again, so
    they are written together (one journal batch, one flush), NOT_APPLICABLE_BATCH at most."""

    store: ScoreStore
    judge_id: str
    report: ScoringReport
    total: int
    progress: Callable[[int, int | None], None] | None
    done: int = 0
    waiting: list[Score] = field(default_factory=list)

    def land(self, score: Score | None) -> None:
        self.done += 1
        if score is not None and score.verdict == NOT_APPLICABLE:
            self.waiting.append(score)
        elif score is not None:
            self.write([score])
        if self.done == self.total or len(self.waiting) >= NOT_APPLICABLE_BATCH:
            self.flush()
        if self.progress is not None:
            self.progress(self.done, self.total)

    def flush(self) -> None:
        if self.waiting:
            scores, self.waiting = self.waiting, []
            self.write(scores)

    def write(self, scores: list[Score]) -> None:
        with deferred_interrupt():  # the files and their index rows land together
            try:
                self.store.write(scores)  # written, then indexed
            except RecordExistsError:
                if len(scores) > 1:  # one was written elsewhere: the others one by one
                    for score in scores:
                        if self.store.exists(score.run_id, self.judge_id):
                            self.report.scored_elsewhere += 1
                        else:
                            self.write([score])
                    return
                # Written by another invocation of this judge in the meantime: its score
                # stands, and is the one the index keeps.
                self.report.scored_elsewhere += 1
            else:
                self.report.scored.extend(scores)


def score_runs(
    ledger: Ledger,
    judge: Judge,
    run_ids: Sequence[str],
    *,
    policy: VerdictPolicy | None = None,
    expectations: dict[str, ExpectedDiagnosis] | None = None,
    self_judging: SelfJudgingCheck | None = None,
    concurrency: int = 1,
    progress: Callable[[int, int | None], None] | None = None,
) -> ScoringReport:
    """Score every run of `run_ids` that this judge id has not scored yet.

    Scores are written as they are made (a crash loses nothing already scored) and indexed.
    A run whose judging raises is reported in `failed` and left unscored, so the next
    invocation tries it again.
    """
    policy = policy or VerdictPolicy()
    judge_id, identity = score_identity(judge, policy)
    store = ScoreStore(ledger)
    report = ScoringReport(judge_id=judge_id)
    scored = store.scored(run_ids, judge_id)
    todo = [run_id for run_id in run_ids if run_id not in scored]
    if len(todo) < len(run_ids):
        report.indexed_late, removed = _index_missing(ledger, store, judge_id, run_ids, todo)
        todo = [run_id for run_id in run_ids if run_id not in scored or run_id in removed]
    report.already_scored = len(run_ids) - len(todo)
    lock = threading.Lock()
    landing = _Landing(store, judge_id, report, len(todo), progress)
    with_trace = judge.reads_trace()
    if progress is not None:
        progress(0, len(todo))

    def one(run_id: str) -> Score | None:
        try:
            if store.exists(run_id, judge_id):
                # Another invocation of this judge scored it since this one started.
                with lock:
                    report.scored_elsewhere += 1
                return None
            evidence = load_run_evidence(ledger, run_id)
            reason = judge.pack.not_applicable(evidence.metadata.kind)
            if reason is not None:
                with lock:
                    report.not_applicable.append((run_id, reason))
                return None
            # Outside the pack by what costs nothing to read: no shell log or trace parsed.
            outside = not_applicable_before_loading(judge.pack, evidence, expectations)
            if outside is not None:
                return _not_applicable(judge, judge_id, identity, run_id, outside)
            run = judge_input_of(evidence, expectations, with_trace=with_trace)
            score = _score(judge, judge_id, identity, policy, run, self_judging)
            # A value the index cannot take (a model reporting absurd usage) fails this run
            # here, before anything is written.
            check_storable(score, f"the score of run {run_id} by {judge_id}")
            return score
        except Exception as exc:  # one bad run must not stop the others; it is reported
            if judge.cancel.is_set():
                return None  # stopped by the interrupt, not a failure of this run
            with lock:
                report.failed.append((run_id, f"{type(exc).__name__}: {exc}"))
                if isinstance(exc, TamperedError):
                    report.tampered.append(run_id)
            return None

    # Ctrl-C ends the scoring where it is: every score written so far is whole (written, then
    # indexed), work not started is dropped, and the report says how far it got.
    pool = ThreadPoolExecutor(max_workers=concurrency) if concurrency > 1 else None
    try:
        if pool is None:
            for run_id in todo:
                landing.land(one(run_id))
        else:
            for score in pool.map(one, todo):
                landing.land(score)
    except KeyboardInterrupt:
        judge.cancel.set()
        report.interrupted = True
        report.not_reached = len(todo) - landing.done
    finally:
        if pool is not None:
            pool.shutdown(wait=not report.interrupted, cancel_futures=True)
        landing.flush()  # the not-applicable scores made before an interrupt are kept too
    return report
