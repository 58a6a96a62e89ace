"""Sentinel history: every past check of a suite, and outcome changes under the same model id
(a change nothing recorded explains is flagged as consistent with a silent backend update)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from agentledger.gates.sentinels.evaluate import NOT_REPORTED

if TYPE_CHECKING:
    from agentledger.records.decisions import Decision

__all__ = [
    "SILENT_UPDATE",
    "HistoryEntry",
    "HistoryFlag",
    "history_entry",
    "sentinel_history",
]

SILENT_UPDATE = "consistent with a silent backend update (cannot be attributed with certainty)"
"""The words for an outcome change that nothing recorded explains."""


@dataclass(frozen=True)
class HistoryEntry:
    """One past sentinel check, as the history shows it."""

    decision_id: str
    decided_at: str
    runs_at: str | None
    """When the newest candidate run started: the moment the behaviour was observed."""
    candidate_model: str
    outcome: str
    failing: tuple[str, ...]
    served: tuple[str, ...]
    prompt_hashes: tuple[str, ...]
    spec_sha256: str | None
    missing: tuple[str, ...] = ()
    """Scenarios that had fewer runs than the spec's repeats (either side), in words."""
    candidate_runs: tuple[str, ...] = ()
    """The candidate run ids the check counted."""
    baseline_runs: tuple[str, ...] = ()
    """The baseline run ids the check counted."""


@dataclass(frozen=True)
class HistoryFlag:
    """A change between two consecutive checks of the same candidate model."""

    candidate_model: str
    before: HistoryEntry
    after: HistoryEntry
    attributable: bool
    message: str


def history_entry(decision: Decision) -> HistoryEntry:
    """What the history needs of a sentinel decision (tolerant of records missing extras)."""
    extra = decision.extra or {}

    def strings(key: str) -> tuple[str, ...]:
        value = extra.get(key) or ()
        return tuple(str(item) for item in value) if isinstance(value, list | tuple) else ()

    spec = decision.spec
    spec_sha = spec.get("sha256") if isinstance(spec, dict) else getattr(spec, "sha256", None)
    return HistoryEntry(
        decision_id=decision.decision_id,
        decided_at=decision.created_at.isoformat(),
        runs_at=extra.get("latest_run_at"),
        candidate_model=str(extra.get("candidate_model") or "?"),
        outcome=decision.outcome,
        failing=_failing(decision) if decision.results else strings("failing_criteria"),
        served=strings("served_models"),
        prompt_hashes=strings("candidate_prompt_hashes"),
        spec_sha256=spec_sha,
        missing=strings("missing"),
        candidate_runs=_run_ids(decision, "candidate"),
        baseline_runs=_run_ids(decision, "baseline"),
    )


def _run_ids(decision: Decision, role: str) -> tuple[str, ...]:
    return tuple(sorted({run for item in decision.results if item.role == role
                         for run in item.run_ids}))  # fmt: skip


def _failing(decision: Decision) -> tuple[str, ...]:
    """'scenario/criterion' of the criteria that failed on a candidate run, read from the
    record's results (records written before `failing_criteria` meant exactly that also listed
    criteria that had no candidate runs)."""
    failing = [
        f"{item.scenario}/{result.id}"
        for item in decision.results
        if item.role == "candidate"
        for result in item.results
        if result.passed is False and result.id
    ]
    return tuple(dict.fromkeys(failing))


def _known(served: tuple[str, ...]) -> set[str]:
    return {item for item in served if item != NOT_REPORTED}


def _flag(model: str, before: HistoryEntry, after: HistoryEntry) -> HistoryFlag | None:
    served_changed = bool(_known(before.served) or _known(after.served)) and set(
        before.served
    ) != set(after.served)
    changed = before.outcome != after.outcome
    if not changed and not served_changed:
        return None
    what = f"{before.outcome} -> {after.outcome}" if changed else f"still {after.outcome}"
    served_words = f"served {', '.join(before.served) or '?'} -> {', '.join(after.served) or '?'}"
    if served_changed:
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the served model changed ({served_words}); the change is attributable to "
            "what the provider served",
        )  # fmt: skip
    if set(before.prompt_hashes) != set(after.prompt_hashes):
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the system prompt changed ({', '.join(h[7:15] for h in before.prompt_hashes)}"
            f" -> {', '.join(h[7:15] for h in after.prompt_hashes)}); attributable to the prompt",
        )  # fmt: skip
    if before.spec_sha256 and after.spec_sha256 and before.spec_sha256 != after.spec_sha256:
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the sentinel spec changed between the checks; compare the criteria first",
        )  # fmt: skip
    if changed and (before.missing or after.missing):
        lacking = "; ".join(
            f"{label} check: {', '.join(entry.missing)}"
            for label, entry in (("earlier", before), ("later", after))
            if entry.missing
        )
        return HistoryFlag(
            model, before, after, True,
            f"{what}: runs were missing ({lacking}); attributable to the runs counted, not a "
            "change of behaviour observed on the same cases",
        )  # fmt: skip
    if changed and before.candidate_runs and before.candidate_runs == after.candidate_runs:
        return HistoryFlag(
            model, before, after, True,
            f"{what}: the same candidate runs were checked again; attributable to the check "
            "(its baseline runs or the judges' scores), not to the model",
        )  # fmt: skip
    served = ", ".join(after.served) or NOT_REPORTED
    baseline = (
        "; the baseline runs differ between the checks too: compare them"
        if before.baseline_runs and before.baseline_runs != after.baseline_runs
        else ""
    )
    return HistoryFlag(
        model, before, after, False,
        f"{what} while the requested model id stayed {model} (served: {served}), same prompt, "
        f"same spec: {SILENT_UPDATE}{baseline}",
    )  # fmt: skip


def sentinel_history(
    decisions: Sequence[Decision],
) -> tuple[dict[str, list[HistoryEntry]], list[HistoryFlag]]:
    """Past checks per candidate model, in the order the behaviour was observed (the newest
    candidate run, else the decision time), and the changes between consecutive checks."""
    groups: dict[str, list[HistoryEntry]] = defaultdict(list)
    for decision in decisions:
        entry = history_entry(decision)
        groups[entry.candidate_model].append(entry)
    flags: list[HistoryFlag] = []
    for model, entries in groups.items():
        entries.sort(key=lambda e: (e.runs_at or e.decided_at, e.decided_at))
        for before, after in pairwise(entries):
            flag = _flag(model, before, after)
            if flag is not None:
                flags.append(flag)
    return dict(sorted(groups.items())), flags
