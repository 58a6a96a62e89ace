"""Importers: bring runs recorded elsewhere into the ledger, one module per foreign format.

`directory` reads runs kept as plain directories (the seed's layout, or any other layout
described with glob patterns: `layout`), each run checked by `run_plan` into a `plan` that
writes nothing until it is sealed; `identity_fields` gathers their identity from every source
that states it; `batch` runs an import, in several processes for large backfills, writing
nothing unless every run is good.

Trace formats plan runs the same way, one module each behind the seam in `formats`
(`--format`, or detected): `openhands` (trajectory files), `jsonl` (the plain step format) and
`otel` (OTLP JSON spans), all made into runs with a trace.jsonl by `trace_runs`.

`workers` starts the worker processes of a large import before the rest is loaded, so it imports
nothing of agentledger, and the names below load on first use.
"""

from __future__ import annotations

from agentledger.lazy import lazy_exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentledger.importers.batch import ImportedRun, PreparedImport, import_runs, prepare_import
    from agentledger.importers.directory import (
        find_run_dirs,
        plan_import,
        sample_runs_dir,
        write_plan,
    )
    from agentledger.importers.layout import ARTIFACT_KEYS, DEFAULT_NAME_PATTERN, DEFAULT_PATTERNS
    from agentledger.importers.plan import (
        ImportOptions,
        ImportPlan,
        ImportReport,
        PlannedArtifact,
        PlannedRun,
    )

__all__ = [
    "ARTIFACT_KEYS",
    "DEFAULT_NAME_PATTERN",
    "DEFAULT_PATTERNS",
    "ImportOptions",
    "ImportPlan",
    "ImportReport",
    "ImportedRun",
    "PlannedArtifact",
    "PlannedRun",
    "PreparedImport",
    "find_run_dirs",
    "import_runs",
    "plan_import",
    "prepare_import",
    "sample_runs_dir",
    "write_plan",
]

_HOMES = {
    "ImportedRun": "agentledger.importers.batch",
    "PreparedImport": "agentledger.importers.batch",
    "import_runs": "agentledger.importers.batch",
    "prepare_import": "agentledger.importers.batch",
    "ARTIFACT_KEYS": "agentledger.importers.layout",
    "DEFAULT_NAME_PATTERN": "agentledger.importers.layout",
    "DEFAULT_PATTERNS": "agentledger.importers.layout",
    "ImportOptions": "agentledger.importers.plan",
    "ImportPlan": "agentledger.importers.plan",
    "ImportReport": "agentledger.importers.plan",
    "PlannedArtifact": "agentledger.importers.plan",
    "PlannedRun": "agentledger.importers.plan",
    "find_run_dirs": "agentledger.importers.directory",
    "plan_import": "agentledger.importers.directory",
    "sample_runs_dir": "agentledger.importers.directory",
    "write_plan": "agentledger.importers.directory",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
