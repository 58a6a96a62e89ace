"""Whether a run already in the ledger is the one an import would write (`check_identical`).

An import of a run the ledger holds passes when every file is the same; metadata.json may differ
only in where the files were found. Anything else is a `RunExistsError` naming what differs.
"""

from __future__ import annotations

import json

from agentledger.errors import InputError, RunExistsError
from agentledger.identity import sha256_bytes
from agentledger.importers.plan import PlannedRun
from agentledger.records import Manifest, parse_record
from agentledger.store.ledger import Ledger
from agentledger.store.storage import MANIFEST_NAME
from agentledger.store.writer import METADATA, SUMMARY, record_bytes

__all__ = ["check_identical"]

# Where the files were found, and where each identity field's (equal) value came from: the
# same run, found another way.
_SAME_RUN_FIELDS = frozenset(("source.directory", "source.files", "source.fields"))


def check_identical(ledger: Ledger, run: PlannedRun) -> None:
    """Pass when the stored run holds exactly what this import would write.

    Every file must have the same sha256 as in the stored run's manifest. metadata.json may
    differ only in where the files were found (`source.directory`, `source.files`) and where
    its identity fields came from (`source.fields`: a model named by --model that the trace
    names too): the same run found another way is the same run. A changed original metadata.json or
    run_summary.json is a difference.
    """
    run_id = run.run_id
    manifest = parse_record(
        Manifest,
        ledger.read_bytes(run_id, MANIFEST_NAME),
        ledger.storage.locate(run_id, MANIFEST_NAME),
    )
    metadata_bytes = record_bytes(run.metadata)
    expected = {artifact.name: artifact.sha256() for artifact in run.artifacts}
    expected[METADATA] = sha256_bytes(metadata_bytes)
    expected[SUMMARY] = sha256_bytes(record_bytes(run.summary))
    differences = []
    for name in sorted(set(expected) | set(manifest.files)):
        stored = manifest.files.get(name)
        if stored is None:
            differences.append(f"{name} (not in the stored run)")
        elif name not in expected:
            differences.append(f"{name} (only in the stored run)")
        elif stored.sha256 != expected[name]:
            fields = _metadata_fields(ledger, run_id, metadata_bytes) if name == METADATA else []
            if name == METADATA and fields and set(fields) <= _SAME_RUN_FIELDS:
                # The same run under another directory name; its files are compared above.
                continue
            differences.append(name + (f" (fields: {', '.join(fields)})" if fields else ""))
    if differences:
        raise RunExistsError(
            f"run {run_id} (from {run.directory}) is already in the ledger with different "
            f"content: {', '.join(differences)} {'differs' if len(differences) == 1 else 'differ'}."
            " Sealed runs are never replaced; import "
            "this one under another run id (a --sidecar column 'run_id')"
        )


def _metadata_fields(ledger: Ledger, run_id: str, new: bytes) -> list[str]:
    """The fields in which the stored metadata.json and `new` differ (``source.*`` in detail)."""
    try:
        stored = json.loads(ledger.read_bytes(run_id, METADATA))
        fresh = json.loads(new)
    except (ValueError, InputError):
        return []
    if not isinstance(stored, dict):
        return []
    fields = []
    for key in sorted(set(stored) | set(fresh)):
        old, now = stored.get(key), fresh.get(key)
        if old == now:
            continue
        if key == "source" and isinstance(old, dict) and isinstance(now, dict):
            fields += [
                f"source.{k}" for k in sorted(set(old) | set(now)) if old.get(k) != now.get(k)
            ]
        else:
            fields.append(key)
    return fields
