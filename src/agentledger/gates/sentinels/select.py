"""Which stored runs a sentinel check counts: the candidate filter, the baseline filter, and
the newest `repeats` runs per scenario."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.gates.sentinels.spec import LoadedSentinel
from agentledger.gates.unfinished import is_unfinished
from agentledger.records.filters import (
    SELECTION_KEYS,
    RunFilter,
    describe_keys,
    parse_run_selection,
)
from agentledger.store.index import IndexedRun

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "CANDIDATE_KEYS",
    "SENTINEL_KINDS",
    "baseline_filter",
    "candidate_filter",
    "latest_runs",
]

SENTINEL_KINDS: tuple[str, ...] = ("agent", "sentinel")
"""The run kinds a sentinel check counts: investigations, and the runs `sentinel run` made
(fixture executions and the runs a variant gate made are not evidence of a migration)."""

CANDIDATE_KEYS: tuple[str, ...] = tuple(
    key for key in SELECTION_KEYS if key not in ("scenario", "kind")
)
"""The keys of --candidate: the run-filter grammar without the two the suite decides."""
_REFUSED = {
    "scenario": "the scenarios are the suite's; filter on model, prompt, dates, tags",
    "kind": f"a sentinel counts {' and '.join(SENTINEL_KINDS)} runs",
}


def candidate_filter(text: str, *, default_prompt_hash: str | None = None) -> RunFilter:
    """The runs of the candidate, in the run-filter grammar (`parse_run_selection`):
    ``model=X`` plus optional ``prompt=`` (or ``prompt-hash=``), ``since=``, ``until=``,
    ``variant=``, ``served=``, ``commit=``, ``tag:K=V`` (or ``tag=K=V``), joined by commas.
    Exactly one model. Without a prompt hash, the baseline's is used."""
    run_filter = parse_run_selection(
        text, what="--candidate", keys=CANDIDATE_KEYS, refused=_REFUSED
    )
    if len(run_filter.models) != 1:
        raise InputError(
            f"--candidate {text!r}: name exactly one candidate model (model=X); "
            f"keys: {describe_keys(CANDIDATE_KEYS)}"
        )
    if run_filter.prompt_hash is None and default_prompt_hash is not None:
        run_filter = replace(run_filter, prompt_hash=default_prompt_hash)
    return replace(run_filter, kinds=SENTINEL_KINDS)


def baseline_filter(loaded: LoadedSentinel) -> RunFilter:
    """The baseline runs: the baseline model on the baseline prompt hash, if one is given."""
    baseline = loaded.spec.baseline
    return RunFilter(
        models=(baseline.model,), prompt_hash=baseline.prompt_hash, kinds=SENTINEL_KINDS
    )


def latest_runs(
    ledger: Ledger,
    run_filter: RunFilter,
    scenarios: Sequence[str],
    repeats: int,
    *,
    exclude: frozenset[str] = frozenset(),
    prompt_hashes: frozenset[str] | None = None,
) -> dict[str, list[IndexedRun]]:
    """Per scenario, the newest `repeats` runs matching the filter (newest first), leaving out
    the run ids in `exclude`, runs that did not end (interrupted, failed, timed out) and, with
    `prompt_hashes`, runs on any other system prompt."""
    runs = ledger.runs(replace(run_filter, scenarios=tuple(scenarios), limit=None))
    chosen: dict[str, list[IndexedRun]] = {scenario: [] for scenario in scenarios}
    for run in runs:  # newest first
        if run.run_id in exclude or is_unfinished(run):
            continue  # an interrupted, failed or timed-out run is never counted as done
        if prompt_hashes is not None and run.system_prompt_hash not in prompt_hashes:
            continue
        if len(chosen[run.scenario]) < repeats:
            chosen[run.scenario].append(run)
    return chosen
