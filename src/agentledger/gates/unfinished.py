"""Runs that did not end: interrupted, failed, timed out, or never started.

Such a run says nothing about the prompt or the model under test (the agent was stopped, or
never got to work), so no gate counts it as done: `variant run` and `sentinel run` make new
ones, and an evaluation leaves it out, saying so, or reports the runs it lacks.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentledger.store.index import IndexedRun

__all__ = ["UNFINISHED_STATUSES", "is_unfinished", "unfinished_note"]

UNFINISHED_STATUSES = frozenset({"interrupted", "failed", "timeout", "setup-failed", "not-started"})
"""`exit_status` values of a run that did not end as the agent meant it to."""


def is_unfinished(run: IndexedRun) -> bool:
    """Whether `run` was interrupted, failed, timed out or never started."""
    return run.exit_status in UNFINISHED_STATUSES


def unfinished_note(runs: Iterable[IndexedRun]) -> str | None:
    """A note naming the unfinished runs left out of a selection, or None when there are none."""
    left = sorted(runs, key=lambda run: run.run_id)
    if not left:
        return None
    listed = ", ".join(f"{run.run_id} ({run.exit_status})" for run in left)
    return (
        f"{len(left)} run(s) did not end (interrupted, failed or timed out) and are not "
        f"counted: {listed}"
    )
