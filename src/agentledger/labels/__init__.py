"""Labels: what people and outside sources say of runs, kept beside the judges' scores.

The record is `agentledger.records.labels.Label`; this package writes and reads labels
(`store`), brings them in from files and data sets (`tabular`, `external`) and builds the
review queue (`queue`). It sits below `importers` and `judges` so that both can use it.
"""

from agentledger.labels.store import (
    HUMAN,
    LabelStore,
    current_labels,
    label_row,
    labels_for_agreement,
    labels_of_run,
    parse_source_spec,
    reindex_labels,
)

__all__ = [
    "HUMAN",
    "LabelStore",
    "current_labels",
    "label_row",
    "labels_for_agreement",
    "labels_of_run",
    "parse_source_spec",
    "reindex_labels",
]
