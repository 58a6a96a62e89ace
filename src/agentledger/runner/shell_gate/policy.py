"""The gate policy file (YAML): what the gated shell lets an agent run.

`Policy` is the file format (print its schema with `agentledger schema policy`). It is
validated once per file content and cached; the gate applies it as `rules.PolicyRules`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from agentledger.errors import RecordError
from agentledger.records import Record, parse_record_data
from agentledger.runner.shell_gate.redact import check_pattern
from agentledger.shell.knowledge import normalize_entries
from agentledger.shell.validated_cache import parse_yaml

__all__ = ["Action", "Mode", "Policy", "SandboxSetting", "validate_policy"]

Mode = Literal["investigate", "remediate"]
Action = Literal["deny", "prompt", "allow"]
SandboxSetting = Literal["on", "off"]


class Policy(Record):
    """A gate policy: the mode, allow and deny patterns, and what to do with each class."""

    mode: Mode = Field(
        default="investigate",
        description=(
            "investigate: read-only commands only; remediate: mutating and destructive "
            "commands are handled by on_mutating and on_destructive."
        ),
    )
    allow: list[str] = Field(
        default_factory=list,
        description=(
            "Patterns for commands the policy vouches for, matched against each simple command "
            "(the whole of it): a glob (`*` matches anything), or a regular expression after "
            "`re:`. An unknown command that matches runs; in remediate mode a mutating or "
            "destructive one runs without asking."
        ),
    )
    deny: list[str] = Field(
        default_factory=list,
        description=(
            "Patterns for commands never to run, whatever their class: a glob matched against "
            "the whole line and each simple command, or `re:` and a regular expression searched "
            "for in them. Deny wins over allow."
        ),
    )
    on_mutating: Action = Field(
        default="deny",
        description="Remediate mode: what to do with a mutating command. Always deny in CI.",
    )
    on_destructive: Action = Field(
        default="deny",
        description="Remediate mode: what to do with a destructive command. Always deny in CI.",
    )
    on_unknown: Action | None = Field(
        default=None,
        description=(
            "What to do with a command the gate cannot classify; default deny in investigate "
            "mode, prompt in remediate mode. A prompt is a denial in CI."
        ),
    )
    sandbox: SandboxSetting = Field(
        default="on",
        description=(
            "on: commands allowed as read-only (every command, in investigate mode) run in a "
            "sandbox (bubblewrap) where the filesystem is read-only, and investigate mode "
            "refuses to run without it; off: the classifier alone decides (every event "
            "records it)."
        ),
    )
    prompt_timeout: float = Field(
        default=300.0,
        gt=0,
        description="Seconds to wait for an answer at the prompt before refusing.",
    )
    timeout: float = Field(
        default=120.0, gt=0, description="Seconds a command may run before it is killed."
    )
    max_output_bytes: int = Field(
        default=65536,
        ge=256,
        description="Bytes of stdout and of stderr kept in the log (the hashes cover all).",
    )
    redact: list[str] = Field(
        default_factory=list,
        description=(
            "Extra regular expressions for secrets; the group named `secret`, else the first "
            "group, else the whole match is replaced by [REDACTED]."
        ),
    )
    knowledge: list[str] = Field(
        default_factory=list,
        description=(
            "Extra command knowledge files (the format of the packaged commands.yaml), "
            "relative to this policy file; later files replace earlier entries."
        ),
    )
    commands: dict[str, Any] = Field(
        default_factory=dict,
        description="Command knowledge entries (name -> class or entry) that replace the others.",
    )
    description: str | None = Field(default=None, description="What this policy is for.")

    @field_validator("sandbox", mode="before")
    @classmethod
    def _sandbox(cls, value: object) -> object:
        # YAML 1.1 reads a bare on / off as a boolean.
        if value is True:
            return "on"
        if value is False:
            return "off"
        return value

    @field_validator("allow", "deny")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        for index, pattern in enumerate(patterns):
            if not pattern.strip():
                raise ValueError(f"pattern {index} is empty")
            if pattern.startswith("re:"):
                problem = check_pattern(pattern[3:])
                if problem:
                    raise ValueError(f"pattern {index} ({pattern!r}) is {problem}")
        return patterns

    @field_validator("redact")
    @classmethod
    def _redact(cls, patterns: list[str]) -> list[str]:
        for index, pattern in enumerate(patterns):
            problem = check_pattern(pattern)
            if problem or not pattern:
                raise ValueError(f"pattern {index} ({pattern!r}) is {problem or 'empty'}")
        return patterns


def validate_policy(raw: bytes, source: str) -> dict[str, Any]:
    """Validate a policy file's bytes; the plain data the gate applies (see PolicyRules)."""
    data = parse_yaml(raw, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RecordError(
            source, f"expected a mapping of policy settings, found {type(data).__name__}"
        )
    policy = parse_record_data(Policy, data, source)
    result = policy.model_dump(mode="json")
    result["commands"] = normalize_entries(policy.commands, source)
    return result
