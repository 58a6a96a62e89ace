"""Runs an import would double: the same trace file already in the ledger as another run.

Importing the same files again is a no-op (same run ids, identical content). Importing them
again under another identity (`--model other-name`, a changed `--scenario`) gives new run
ids, and every run would be in the ledger twice, counted twice by every report. The trace
importers record each file's sha256 (`source.original_sha256`), which is how a doubled run is
told from a new one.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from agentledger.store.index import RunFilter

if TYPE_CHECKING:
    from agentledger.importers.batch import PreparedImport
    from agentledger.store.ledger import Ledger

__all__ = ["doubled_runs"]


def doubled_runs(ledger: Ledger, prepared: PreparedImport) -> list[tuple[str, list[str]]]:
    """For each new run read from a trace file the ledger already holds as other runs:
    (the new run id, the run ids already imported from that file), in the import's order."""
    new = [run for run in prepared.new_runs if run.original]
    if not new:
        return []
    wanted = {run.original for run in new}
    held: dict[str, list[str]] = defaultdict(list)
    for run in ledger.runs(RunFilter(backfilled=True)):
        digest = (run.metadata.get("source") or {}).get("original_sha256")
        if isinstance(digest, str) and digest in wanted:
            held[digest].append(run.run_id)
    return [(run.run_id, held[run.original]) for run in new if run.original in held]
