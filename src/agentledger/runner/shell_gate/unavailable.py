"""The error for a sandbox that cannot be had (its own module: `agentledger.errors` is not
loaded on the way to running a command that needs no error)."""

from __future__ import annotations

from agentledger.errors import InputError

__all__ = ["SandboxUnavailableError"]


class SandboxUnavailableError(InputError):
    """The policy wants the read-only sandbox and it cannot be had here: nothing was run."""
