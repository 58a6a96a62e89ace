"""What the gate decided of a command (`CommandDecision`) and what became of it (`GateResult`)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agentledger.runner.shell_gate.netreaders import NetworkGrant
    from agentledger.shell.classifier import Classification

__all__ = ["CommandDecision", "GateResult"]


class CommandDecision:
    """The gate's decision on a command: its classification, and allowed, denied, prompt
    (the policy asks a person; `Gate.run` turns it into approved or denied) or approved.
    `network` is the network reader that gets the host's network in the sandbox, if any."""

    __slots__ = (
        "classification",
        "command",
        "decided_by",
        "decision",
        "host",
        "network",
        "reason",
    )

    def __init__(
        self, classification: Classification, decision: str, decided_by: str, reason: str
    ) -> None:
        self.command = classification.command
        self.classification = classification
        self.decision = decision
        self.decided_by = decided_by
        self.reason = reason
        self.network: NetworkGrant | None = None
        self.host: str | None = None
        """The lab host the command runs in (None: not in a lab)."""

    @property
    def allowed(self) -> bool:
        """True when the command runs (allowed or approved)."""
        return self.decision in ("allowed", "approved")

    def as_dict(self) -> dict[str, Any]:
        """The decision as printed by `agentledger exec --batch`."""
        return {
            "command": self.command,
            "classification": self.classification.kind,
            "decision": self.decision,
            "decided_by": self.decided_by,
            "reason": self.reason,
            "parts": [part.as_dict() for part in self.classification.parts],
        }

    def __repr__(self) -> str:
        return f"CommandDecision({self.command!r}, {self.decision!r}, {self.reason!r})"


class GateResult:
    """What happened to a command: the decision and, when it ran, its exit code and output.

    `stdout` and `stderr` are the output: all of it up to `spool.HEAD_BYTES` (1 MiB), else
    its head, a marker and its tail (the log keeps less, redacted; its sha256 covers all);
    `event` is the line appended to the audit log, as a dict.
    """

    __slots__ = ("decision", "duration_ms", "event", "exit_code", "stderr", "stdout", "timed_out")

    def __init__(
        self,
        decision: CommandDecision,
        event: dict[str, Any],
        exit_code: int | None = None,
        stdout: bytes = b"",
        stderr: bytes = b"",
        *,
        duration_ms: float | None = None,
        timed_out: bool = False,
    ) -> None:
        self.decision = decision
        self.event = event
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr
        self.duration_ms = duration_ms
        self.timed_out = timed_out

    @property
    def ran(self) -> bool:
        """True when the command was run."""
        return self.exit_code is not None

    @property
    def denied(self) -> bool:
        """True when the gate refused the command (it did not run)."""
        return self.event.get("decision") == "denied"

    @property
    def reason(self) -> str:
        """Why the gate decided as it did."""
        return str(self.event.get("reason") or "")

    @property
    def output(self) -> str:
        """stdout as text (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"GateResult({self.decision!r}, exit_code={self.exit_code!r})"
