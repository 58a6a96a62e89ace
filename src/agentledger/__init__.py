"""agentledger: evidence, judges and gates for LLM agents that act on real infrastructure.

The public names below are loaded on first use, so that light entry points (the gated shell
`agentledger exec`, which every agent command pays for) do not import the whole library.
"""

from __future__ import annotations

from agentledger.lazy import lazy_exports

# Not `from typing import TYPE_CHECKING`: importing typing costs every gated command ~10 ms.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from agentledger.errors import AgentLedgerError, InputError, IntegrityError
    from agentledger.identity import effective_prompt, make_run_id
    from agentledger.records import RunMetadata, RunSummary, ShellEvent
    from agentledger.store import Ledger, RunFilter, RunWriter

__all__ = [
    "AgentLedgerError",
    "InputError",
    "IntegrityError",
    "Ledger",
    "Recording",
    "RunFilter",
    "RunMetadata",
    "RunSummary",
    "RunWriter",
    "ShellEvent",
    "effective_prompt",
    "make_run_id",
    "record",
    "recorded",
]

# record, recorded, Recording (agentledger.runner.recording) are not imported for type checkers
# here: the layer contract keeps this package's own imports below agentledger.shell, which
# imports it.

__version__ = "0.1.0"

_HOMES = {
    "AgentLedgerError": "agentledger.errors",
    "InputError": "agentledger.errors",
    "IntegrityError": "agentledger.errors",
    "effective_prompt": "agentledger.identity",
    "make_run_id": "agentledger.identity",
    "RunMetadata": "agentledger.records",
    "RunSummary": "agentledger.records",
    "ShellEvent": "agentledger.records",
    "Recording": "agentledger.runner.recording",
    "record": "agentledger.runner.recording",
    "recorded": "agentledger.runner.recording",
    "Ledger": "agentledger.store",
    "RunFilter": "agentledger.store",
    "RunWriter": "agentledger.store",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
