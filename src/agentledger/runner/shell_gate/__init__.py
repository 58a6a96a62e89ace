"""The gated shell: classify a command (with `agentledger.shell`), decide by a policy, run it or
not, and log it either way.

    >>> from agentledger.runner.shell_gate import Gate, load_policy
    >>> gate = Gate(load_policy(None), "run/shell_audit.jsonl")
    >>> gate.decide("iptables -F").decision
    'denied'

Every command an agent runs pays this package's start-up, so nothing heavy is imported here or
on the way to running a command: names load on first use, and the policy and command knowledge
are read from a cache once they have been validated (see `agentledger.shell.validated_cache`).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentledger.runner.shell_gate.ask import Answer
    from agentledger.runner.shell_gate.gate import AUDIT_FILE, Decision, Gate, GateResult
    from agentledger.runner.shell_gate.policy import Policy
    from agentledger.runner.shell_gate.redact import Redactor
    from agentledger.runner.shell_gate.rules import PolicyRules, load_policy
    from agentledger.runner.shell_gate.sandbox import Sandbox
    from agentledger.runner.shell_gate.unavailable import SandboxUnavailableError
    from agentledger.shell.classifier import Classification, Part, classify
    from agentledger.shell.knowledge import Knowledge, load_knowledge

__all__ = [
    "AUDIT_FILE",
    "Answer",
    "Classification",
    "Decision",
    "Gate",
    "GateResult",
    "Knowledge",
    "Part",
    "Policy",
    "PolicyRules",
    "Redactor",
    "Sandbox",
    "SandboxUnavailableError",
    "classify",
    "load_knowledge",
    "load_policy",
]

_HOMES = {
    "AUDIT_FILE": "gate",
    "Answer": "ask",
    "Classification": "agentledger.shell.classifier",
    "Decision": "gate",
    "Gate": "gate",
    "GateResult": "gate",
    "Knowledge": "agentledger.shell.knowledge",
    "Part": "agentledger.shell.classifier",
    "Policy": "policy",
    "PolicyRules": "rules",
    "Redactor": "redact",
    "Sandbox": "sandbox",
    "SandboxUnavailableError": "unavailable",
    "classify": "agentledger.shell.classifier",
    "load_knowledge": "agentledger.shell.knowledge",
    "load_policy": "rules",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = home if home.startswith("agentledger.") else f"{__name__}.{home}"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
