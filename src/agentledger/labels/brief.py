"""A label source's labels in brief, for comparing them over many runs.

`agentledger agreement` needs of each label only its verdict and its criteria (and, for the
leakage guard, who gave it); reading those from the index's columns, rather than parsing every
label's JSON, keeps it fast over 100,000 runs. Which label counts is what
`labels_for_agreement` says: per run, the newest current label of the source.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.labels.store import HUMAN, parse_source_spec
from agentledger.store.index import LabelResult, Ratings

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = ["label_ratings_for_agreement", "label_results_for_agreement"]


def _selection(source_spec: str) -> dict[str, str]:
    name = parse_source_spec(source_spec)
    return {"source_kind": "person"} if name == HUMAN else {"source_name": name}


def _nothing(ledger: Ledger, source_spec: str) -> InputError:
    sources = sorted({row.source_name for row in ledger.index.current_label_results()})
    known = ", ".join(sources) if sources else "none yet"
    return InputError(
        f"{source_spec}: no labels from this source in {ledger.root} (sources: {known})"
    )


def label_ratings_for_agreement(ledger: Ledger, source_spec: str) -> Ratings:
    """The label `source_spec` (``labels:NAME``, ``labels:human``) stands by on each run, column
    by column (`RunIndex.label_ratings`). InputError when the source has labelled nothing."""
    ratings = ledger.index.label_ratings(**_selection(source_spec))
    if not ratings.run_ids:
        raise _nothing(ledger, source_spec)
    return ratings


def label_results_for_agreement(ledger: Ledger, source_spec: str) -> dict[str, LabelResult]:
    """run_id -> the label `source_spec` stands by, in brief (who gave it included).
    InputError when the source has labelled nothing."""
    rows = ledger.index.current_label_results(**_selection(source_spec))
    # Rows come by run, oldest first: the last of each run is its newest.
    chosen = dict(zip(map(operator.attrgetter("run_id"), rows), rows, strict=True))
    if not chosen:
        raise _nothing(ledger, source_spec)
    return chosen
