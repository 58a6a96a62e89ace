"""Importers: bring runs recorded elsewhere into the ledger, one module per foreign format.

`directory` reads runs kept as plain directories (the seed's layout, or any other layout
described with glob patterns); `fields` gathers their identity from every source that states it;
`batch` runs an import, in several processes for large backfills, writing nothing unless every
run is good.
"""

from agentledger.importers.batch import ImportedRun, PreparedImport, import_runs, prepare_import
from agentledger.importers.directory import (
    ARTIFACT_KEYS,
    DEFAULT_NAME_PATTERN,
    DEFAULT_PATTERNS,
    ImportOptions,
    ImportPlan,
    ImportReport,
    PlannedArtifact,
    PlannedRun,
    find_run_dirs,
    plan_import,
    sample_runs_dir,
    write_plan,
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
