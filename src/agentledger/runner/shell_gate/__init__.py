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

from agentledger.lazy import lazy_exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentledger.runner.shell_gate.ask import Answer
    from agentledger.runner.shell_gate.decision import CommandDecision, GateResult
    from agentledger.runner.shell_gate.gate import AUDIT_FILE, Gate
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
    "CommandDecision",
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
    "AUDIT_FILE": "agentledger.runner.shell_gate.gate",
    "Answer": "agentledger.runner.shell_gate.ask",
    "Classification": "agentledger.shell.classifier",
    "CommandDecision": "agentledger.runner.shell_gate.decision",
    "Gate": "agentledger.runner.shell_gate.gate",
    "GateResult": "agentledger.runner.shell_gate.decision",
    "Knowledge": "agentledger.shell.knowledge",
    "Part": "agentledger.shell.classifier",
    "Policy": "agentledger.runner.shell_gate.policy",
    "PolicyRules": "agentledger.runner.shell_gate.rules",
    "Redactor": "agentledger.runner.shell_gate.redact",
    "Sandbox": "agentledger.runner.shell_gate.sandbox",
    "SandboxUnavailableError": "agentledger.runner.shell_gate.unavailable",
    "classify": "agentledger.shell.classifier",
    "load_knowledge": "agentledger.shell.knowledge",
    "load_policy": "agentledger.runner.shell_gate.rules",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
