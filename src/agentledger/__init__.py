"""agentledger: evidence, judges and gates for LLM agents that act on real infrastructure."""

from agentledger.errors import AgentLedgerError, InputError, IntegrityError
from agentledger.identity import effective_prompt, make_run_id
from agentledger.records import RunMetadata, RunSummary, ShellEvent
from agentledger.store import Ledger, RunFilter, RunWriter

__all__ = [
    "AgentLedgerError",
    "InputError",
    "IntegrityError",
    "Ledger",
    "RunFilter",
    "RunMetadata",
    "RunSummary",
    "RunWriter",
    "ShellEvent",
    "effective_prompt",
    "make_run_id",
]

__version__ = "0.1.0"
