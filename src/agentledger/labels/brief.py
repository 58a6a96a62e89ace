"""A label source's labels in brief, for comparing them over many runs.

`agentledger agreement` needs of each label only who gave it, its verdict and its criteria;
reading those from the index's columns, rather than parsing every label's JSON, keeps it fast
over 100,000 runs. Which label counts is what `labels_for_agreement` says: per run, the newest
current label of the source.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.labels.store import HUMAN, parse_source_spec
from agentledger.store.index import LabelResult

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["label_results_for_agreement"]


def label_results_for_agreement(ledger: Ledger, source_spec: str) -> dict[str, LabelResult]:
    """run_id -> the label `source_spec` (``labels:NAME``, ``labels:human``) stands by, in brief.
    InputError when the source has labelled nothing."""
    name = parse_source_spec(source_spec)
    if name == HUMAN:
        rows = ledger.index.current_label_results(source_kind="person")
    else:
        rows = ledger.index.current_label_results(source_name=name)
    # Rows come by run, oldest first: the last of each run is its newest.
    chosen = dict(zip(map(operator.attrgetter("run_id"), rows), rows, strict=True))
    if not chosen:
        sources = sorted({row.source_name for row in ledger.index.current_label_results()})
        known = ", ".join(sources) if sources else "none yet"
        raise InputError(
            f"{source_spec}: no labels from this source in {ledger.root} (sources: {known})"
        )
    return chosen
