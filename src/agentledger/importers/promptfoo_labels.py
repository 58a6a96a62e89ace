"""promptfoo's grades, ratings and comments as labels of the runs of its results.

For each result of a promptfoo output file, the run it is (its agentledger provider's run,
or the run `agentledger.importers.promptfoo` made of it) gets:

- a label of source ``promptfoo``: each graded assertion as a criterion ``pf.<metric>`` that
  fired when the assertion failed, the reason promptfoo gave, and the comment if any;
- a label of source ``promptfoo:human`` for a person's rating in promptfoo's viewer (its
  ``human`` assertion): the criterion ``pf.human`` fired when the person failed the output,
  with their comment as the reason.

A result whose run is not in the ledger is left out and said; a label given already (the
same file imported again) is not given twice (`LabelStore.write_new`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentledger.importers.promptfoo import graded, promptfoo_run_id, read_results
from agentledger.importers.run_plan import read_source
from agentledger.importers.trace_runs import trace_files
from agentledger.labels.entry import make_label
from agentledger.records.labels import Label
from agentledger.store.ledger import Ledger

__all__ = ["PromptfooLabels", "promptfoo_labels"]

_REASON_CHARS = 19_000


@dataclass
class PromptfooLabels:
    labels: list[Label] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)


def promptfoo_labels(ledger: Ledger, paths: Sequence[Path]) -> PromptfooLabels:
    """The labels of every result in the promptfoo output files under `paths`."""
    found = PromptfooLabels()
    for path in paths:
        for file, real in trace_files(path, (".json",), "promptfoo results file"):
            results = read_results(read_source(real, found=True), str(file))
            for number, result in enumerate(results):
                where = f"{file.name} results[{number}]"
                run_id = promptfoo_run_id(result, number)
                if run_id is None or not ledger.storage.has_run(run_id):
                    found.left_out.append((where, f"no run {run_id} in the ledger"))
                    continue
                found.labels += _labels_of(result, run_id, where)
    return found


def _labels_of(result: dict[str, Any], run_id: str, where: str) -> list[Label]:
    labels = []
    assertions, human = graded(result)
    grading = result.get("gradingResult")
    comment = grading.get("comment") if isinstance(grading, dict) else None
    if assertions:
        reasons = [f"{criterion}: {reason}" for criterion, passed, reason in assertions if reason]
        if isinstance(comment, str) and comment.strip():
            reasons.append(f"comment: {comment.strip()}")
        labels.append(
            make_label(
                run_id,
                "promptfoo",
                kind="external",
                criteria=[(criterion, not passed) for criterion, passed, _ in assertions],
                reason="\n".join(reasons)[:_REASON_CHARS] or None,
                detail=where,
            )
        )
    if human is not None:
        said = human.get("comment") or comment or human.get("reason")
        labels.append(
            make_label(
                run_id,
                "promptfoo:human",
                kind="external",
                criteria=[("pf.human", not bool(human.get("pass")))],
                reason=str(said)[:_REASON_CHARS] if said else None,
                detail=f"{where}: a rating in promptfoo's viewer",
            )
        )
    return labels
