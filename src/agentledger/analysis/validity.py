"""Judge validity: how far each judge agrees with the human labels it was not developed on.

Every finding rests on a judge's verdicts. `judge_validity` grades each judge's verdict
against ``labels:human`` on the **test** part of the newest split of the human labels (see
`agentledger.analysis.agreement`), and says plainly when it cannot: no labels yet, no held-out
split yet, no run in common, or a judge developed against those very labels. `check_line` is
the short line every report that rests on a judge carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentledger.analysis.agreement import LeakageError, Source, agreement_report, resolve_source
from agentledger.analysis.kappa import KappaResult
from agentledger.errors import InputError
from agentledger.labels.split import SplitStore
from agentledger.labels.store import HUMAN
from agentledger.records.splits import Split
from agentledger.store.index import RunFilter

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["JudgeCheck", "JudgeValidityReport", "check_judges", "judge_validity"]

MAX_JUDGES = 10
"""The validity section grades the newest judges of the selected runs, this many at most."""


@dataclass(frozen=True)
class JudgeCheck:
    """One judge against the held-out human labels: the verdict kappa, or why there is none."""

    judge_id: str
    judge_kind: str
    result: KappaResult | None
    status: str

    def line(self) -> str:
        """One short line for a finding that rests on this judge."""
        if self.result is None:
            return f"Judge {self.judge_id} is not checked against human labels: {self.status}."
        if self.result.kappa is None:
            return f"Judge {self.judge_id} against human labels: kappa undefined ({self.status})."
        shown = f"{self.result.kappa:.2f}"
        if self.result.interval is not None:
            low, high = self.result.interval
            shown += f" [{low:.2f}, {high:.2f}]"
        return f"Judge {self.judge_id} against human labels: verdict kappa {shown} ({self.status})."

    def to_json(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "judge_kind": self.judge_kind,
            "status": self.status,
            "verdict": self.result.to_json() if self.result else None,
        }


@dataclass
class JudgeValidityReport:
    """Every judge of the selected runs graded against the held-out human labels."""

    labelled: int
    split: Split | None
    entries: list[JudgeCheck] = field(default_factory=list)
    kind: str = "judge-validity"
    external: dict[str, int] = field(default_factory=dict)
    """Runs labelled by each outside source (not people): compared with `agreement`, not here."""

    def basis(self) -> str:
        if not self.labelled:
            return "No run has a human label yet." + self._external()
        return self._basis_labelled()

    def _external(self) -> str:
        """What the outside label sources hold, and how to compare a judge with them."""
        if not self.external:
            return ""
        held = ", ".join(f"{name} ({runs} runs)" for name, runs in sorted(self.external.items()))
        name = min(self.external)
        return (
            f" Labels from outside sources: {held}; they grade no judge here (compare with "
            f"`agentledger agreement --a judge:rules --b labels:{name}`)."
        )

    def _basis_labelled(self) -> str:
        words = f"{self.labelled} run(s) have a human label"
        if self.split is None:
            return words + "; no split holds any out yet."
        return (
            words
            + f"; graded on the test part of {self.split.split_id} ({len(self.split.test)} run(s))."
        )

    def summary(self) -> str:
        if not self.entries:
            return "No judge scored the selected runs."
        checked = [entry for entry in self.entries if entry.result is not None]
        if not self.labelled:
            if self.external:
                return (
                    "No human labels yet: no judge's verdicts have been checked against a person's."
                )
            return "No labels yet: no judge's verdicts have been checked against a person's."
        return (
            f"{len(checked)} of {len(self.entries)} judge(s) checked against held-out human labels."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "human_labelled_runs": self.labelled,
            "external_labelled_runs": dict(sorted(self.external.items())),
            "split_id": self.split.split_id if self.split else None,
            "judges": [entry.to_json() for entry in self.entries],
        }


def _human(ledger: Ledger) -> Source | None:
    try:
        return resolve_source(ledger, f"labels:{HUMAN}", RunFilter())
    except InputError:
        return None


def check_judges(
    ledger: Ledger, judges: Sequence[tuple[str, str]], run_filter: RunFilter
) -> JudgeValidityReport:
    """Grade each (judge id, kind) against labels:human on the newest human split's test part."""
    human = _human(ledger)
    split = SplitStore(ledger).newest(HUMAN) if human is not None else None
    report = JudgeValidityReport(len(human.position) if human else 0, split)
    if human is None:
        for label in ledger.index.current_label_results("external"):
            report.external[label.source_name] = report.external.get(label.source_name, 0) + 1
    for judge_id, kind in judges:
        if human is None:
            status = "no human labels yet" if report.external else "no labels yet"
            report.entries.append(JudgeCheck(judge_id, kind, None, status))
            continue
        if split is None:
            report.entries.append(
                JudgeCheck(
                    judge_id,
                    kind,
                    None,
                    "no held-out split of the human labels yet "
                    "(`agentledger labels split --source human`)",
                )
            )
            continue
        try:
            agreement = agreement_report(
                ledger, f"judge:{judge_id}", human, run_filter, split="test"
            )
        except LeakageError:
            status = "developed against these labels; not graded on them"
            report.entries.append(JudgeCheck(judge_id, kind, None, status))
            continue
        except InputError:
            status = f"no run in common with the test part of {split.split_id}"
            report.entries.append(JudgeCheck(judge_id, kind, None, status))
            continue
        verdict = agreement.comparisons[0].result
        status = f"{verdict.n} held-out run(s) of {split.split_id}"
        report.entries.append(JudgeCheck(judge_id, kind, verdict, status))
    return report


def judge_validity(ledger: Ledger, run_filter: RunFilter) -> JudgeValidityReport:
    """The newest judges of the runs `run_filter` selects, each graded (see `check_judges`)."""
    tallies = ledger.index.judges_of(run_filter)[:MAX_JUDGES]
    return check_judges(ledger, [(t.judge_id, t.kind) for t in tallies], run_filter)
