"""Which stored runs a sentinel check counts: the candidate filter, the baseline filter, and
the newest `repeats` runs per scenario."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from agentledger.errors import InputError
from agentledger.gates.sentinels.spec import LoadedSentinel
from agentledger.gates.unfinished import is_unfinished
from agentledger.store.index import IndexedRun, RunFilter

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "SENTINEL_KINDS",
    "baseline_filter",
    "candidate_filter",
    "latest_runs",
]

SENTINEL_KINDS: tuple[str, ...] = ("agent", "sentinel")
"""The run kinds a sentinel check counts: investigations, and the runs `sentinel run` made
(fixture executions and the runs a variant gate made are not evidence of a migration)."""

_FILTER_KEYS = "model, prompt-hash (or prompt), since, until, variant, served, commit, tag:K=V"


def candidate_filter(text: str, *, default_prompt_hash: str | None = None) -> RunFilter:
    """The runs of the candidate: ``model=X`` plus optional ``prompt-hash=``, ``since=``,
    ``until=``, ``variant=``, ``served=``, ``commit=``, ``tag:K=V`` (or ``tag=K=V``), joined
    by commas. Exactly one model. Without a prompt hash, the baseline's is used."""
    from agentledger.analysis.compare import parse_group
    from agentledger.records.filters import parse_moment

    since: datetime | None = None
    until: datetime | None = None
    rest: list[str] = []
    has_prompt = False
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or not key or not value.strip():
            raise InputError(
                f"--candidate {text!r}: {part!r} is not KEY=VALUE (keys: {_FILTER_KEYS})"
            )
        if key in ("since", "until"):
            try:
                moment = parse_moment(value)
            except ValueError as exc:
                raise InputError(f"--candidate {text!r}: {key}: {exc}") from None
            if key == "since":
                since = moment
            else:
                until = moment
        elif key in ("prompt-hash", "prompt_hash", "prompt"):
            has_prompt = True
            rest.append(f"prompt={value.strip()}")
        elif key == "tag":
            tag_key, tag_sep, tag_value = value.partition("=")
            if not tag_sep or not tag_key.strip():
                raise InputError(f"--candidate {text!r}: tag needs tag=KEY=VALUE or tag:KEY=VALUE")
            rest.append(f"tag:{tag_key.strip()}={tag_value}")
        elif key == "scenario":
            raise InputError(
                f"--candidate {text!r}: the scenarios are the suite's; filter on model, prompt, "
                "dates, tags"
            )
        elif key in ("model", "variant", "served", "commit") or key.startswith("tag:"):
            rest.append(f"{key}={value.strip()}")
        else:
            raise InputError(f"--candidate {text!r}: unknown key {key!r} (keys: {_FILTER_KEYS})")
    run_filter = parse_group(",".join(rest)) if rest else RunFilter()
    if len(run_filter.models) != 1:
        raise InputError(
            f"--candidate {text!r}: name exactly one candidate model (model=X); "
            f"keys: {_FILTER_KEYS}"
        )
    if not has_prompt and default_prompt_hash is not None:
        run_filter = replace(run_filter, prompt_hash=default_prompt_hash)
    return replace(run_filter, since=since, until=until, kinds=SENTINEL_KINDS)


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
