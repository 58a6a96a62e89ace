"""A run in which the gated shell could not start any command the agent tried.

The runner records such a run as `failed` with an `error` that begins with `NOTHING_STARTED`
(runner/gate_outcome.py); a judge skips it, since what the agent did after that answered error
messages, not the system it was sent to look at. Kept free of imports so judges load it cheaply.
"""

from __future__ import annotations

__all__ = ["NOTHING_STARTED", "nothing_started"]

NOTHING_STARTED = "the gated shell could not start any of the "
"""How the `error` of a run in which no command the agent tried could start begins."""


def nothing_started(exit_status: str | None, error: str | None) -> bool:
    """True for a run that failed because its gated shell could not start any command."""
    return exit_status == "failed" and (error or "").startswith(NOTHING_STARTED)
