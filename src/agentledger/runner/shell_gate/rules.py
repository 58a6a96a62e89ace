"""A policy as the gate applies it, and `decide`: from a classification to allowed or denied.

`load_policy` reads a policy file through the cache (validating it with `policy.Policy` the
first time), so a gated command pays neither for YAML nor for pydantic.
"""

from __future__ import annotations

import os

from agentledger.shell.knowledge import (
    DESTRUCTIVE,
    MUTATING,
    PACKAGED,
    READ_ONLY,
    UNKNOWN,
    Knowledge,
    glob_match,
    load_knowledge,
)
from agentledger.shell.validated_cache import load_cached

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Sequence
    from typing import Any

    from agentledger.runner.shell_gate.policy import Policy
    from agentledger.shell.classifier import Classification, Part

__all__ = ["DEFAULT_POLICY", "PolicyRules", "Verdict", "decide", "load_policy"]

DEFAULT_POLICY = os.path.join(PACKAGED, "policies", "default.yaml")
"""The packaged investigate-only policy, used when no policy is given."""


class _Pattern:
    """An allow or deny pattern: a glob over the whole text, or ``re:`` and a regex."""

    __slots__ = ("_regex", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._regex: re.Pattern[str] | None = None

    def _compiled(self) -> re.Pattern[str]:
        if self._regex is None:
            import re

            self._regex = re.compile(self.text[3:])
        return self._regex

    def whole(self, value: str) -> bool:
        """Allow: the pattern matches the whole of `value`."""
        if self.text.startswith("re:"):
            return self._compiled().fullmatch(value) is not None
        return glob_match(self.text, value)

    def anywhere(self, value: str) -> bool:
        """Deny: a regex found anywhere in `value`, or a glob matching the whole of it."""
        if self.text.startswith("re:"):
            return self._compiled().search(value) is not None
        return glob_match(self.text, value)


class PolicyRules:
    """A validated policy, ready to apply; see `policy.Policy` for what each field means."""

    __slots__ = (
        "_knowledge",
        "allow",
        "commands",
        "deny",
        "knowledge_files",
        "max_output_bytes",
        "mode",
        "on_destructive",
        "on_mutating",
        "on_unknown",
        "prompt_timeout",
        "redact",
        "sandbox",
        "source",
        "timeout",
    )

    def __init__(self, data: dict[str, Any], source: str | None = None) -> None:
        self.source = source
        self.mode: str = data.get("mode", "investigate")
        self.allow = [_Pattern(text) for text in data.get("allow", ())]
        self.deny = [_Pattern(text) for text in data.get("deny", ())]
        self.on_mutating: str = data.get("on_mutating", "deny")
        self.on_destructive: str = data.get("on_destructive", "deny")
        unknown = data.get("on_unknown")
        self.on_unknown: str = unknown or ("deny" if self.mode == "investigate" else "prompt")
        self.timeout: float = float(data.get("timeout", 120.0))
        self.sandbox: str = data.get("sandbox", "on")
        self.prompt_timeout: float = float(data.get("prompt_timeout", 300.0))
        self.max_output_bytes: int = int(data.get("max_output_bytes", 65536))
        self.redact: list[str] = list(data.get("redact", ()))
        base = os.path.dirname(os.path.abspath(source)) if source else os.getcwd()
        self.knowledge_files = [os.path.join(base, name) for name in data.get("knowledge", ())]
        self.commands: dict[str, Any] = data.get("commands", {})
        self._knowledge: Knowledge | None = None

    @classmethod
    def from_policy(cls, policy: Policy, source: str | None = None) -> PolicyRules:
        """The rules of an already validated Policy model."""
        from agentledger.shell.knowledge import normalize_entries

        data = policy.model_dump(mode="json")
        data["commands"] = normalize_entries(policy.commands, source or "<policy>")
        return cls(data, source)

    @property
    def name(self) -> str:
        """How the log names this policy: its file, or ``default``."""
        if self.source is None:
            return "<memory>"
        if os.path.abspath(self.source) == DEFAULT_POLICY:
            return "default"
        return self.source

    def knowledge(self) -> Knowledge:
        """The command knowledge this policy classifies with (packaged + its own)."""
        if self._knowledge is None:
            self._knowledge = load_knowledge(self.knowledge_files, self.commands)
        return self._knowledge

    def denied_by(self, line: str, commands: list[str]) -> str | None:
        """The deny pattern that matches the line or one of its simple commands."""
        for pattern in self.deny:
            if pattern.anywhere(line) or any(pattern.anywhere(text) for text in commands):
                return pattern.text
        return None

    def allowed_by(self, command: str) -> str | None:
        """The allow pattern that matches the whole simple command."""
        for pattern in self.allow:
            if pattern.whole(command):
                return pattern.text
        return None


def load_policy(path: str | os.PathLike[str] | None = None) -> PolicyRules:
    """The policy in the YAML file at `path` (the packaged default when None).

    A file that does not parse or validate raises RecordError naming it and the field.
    """
    source = os.fspath(path) if path is not None else DEFAULT_POLICY
    return PolicyRules(load_cached(source, "policy", _build), source)


def _build(raw: bytes, source: str) -> dict[str, Any]:
    from agentledger.runner.shell_gate.policy import validate_policy

    return validate_policy(raw, source)


class Verdict:
    """What the policy says about a classified command: allowed, denied, or prompt (ask)."""

    __slots__ = ("decided_by", "decision", "reason")

    def __init__(self, decision: str, decided_by: str, reason: str) -> None:
        self.decision = decision
        self.decided_by = decided_by
        self.reason = reason


def decide(rules: PolicyRules, classification: Classification, *, ci: bool) -> Verdict:
    """Apply `rules` to `classification`; in CI nothing mutating runs and no one is asked."""
    parts = classification.parts
    hit = rules.denied_by(classification.command, [part.command for part in parts])
    if hit is not None:
        return Verdict("denied", "policy", f"matches the deny pattern {hit!r}")
    asks: list[str] = []
    vouched: list[str] = []
    setting: list[str] | None = None  # the variables the line sets, once a pattern matches
    for part in parts:
        kind = part.kind
        if kind == READ_ONLY:
            continue
        pattern = rules.allowed_by(part.command)
        if kind in (MUTATING, DESTRUCTIVE) and rules.mode == "investigate":
            return Verdict(
                "denied", "policy", f"investigate mode runs read-only commands only: {part.reason}"
            )
        unvouched = ""
        if pattern is not None and part.loose:
            # `systemctl reload x${IFS}--root=/tmp` matches `systemctl reload *` as text;
            # bash runs other words than the text shows.
            unvouched = f" (the allow pattern {pattern!r} does not vouch for it: {part.loose})"
            pattern = None
        if pattern is not None:
            if setting is None:
                setting = line_sets_variables(classification.command, rules.knowledge())
            if setting:
                # `HOME=/x cmd`, `env K=v cmd`, `export K=v; cmd`: the tool may load or run
                # what the variable names; the pattern vouched for the command, not for that.
                unvouched = (
                    f" (the allow pattern {pattern!r} does not vouch for it: the line sets "
                    f"variables the command may read: {', '.join(setting)})"
                )
                pattern = None
        if pattern is not None:
            action, why = "allow", f"{part.command} matches the allow pattern {pattern!r}"
        elif kind == UNKNOWN:
            action, why = rules.on_unknown, f"on_unknown is {rules.on_unknown}: {part.reason}"
        elif kind == MUTATING:
            action, why = rules.on_mutating, f"on_mutating is {rules.on_mutating}: {part.reason}"
        else:
            action = rules.on_destructive
            why = f"on_destructive is {rules.on_destructive}: {part.reason}"
        why += unvouched
        if action == "deny":
            return Verdict("denied", "policy", why)
        if ci and kind in (MUTATING, DESTRUCTIVE):
            return Verdict("denied", "ci", f"{kind} commands never run in CI: {part.reason}")
        if action == "prompt":
            asks.append(why)
        else:
            vouched.append(why)
    if asks:
        if ci:
            return Verdict("denied", "ci", f"no one to ask in CI: {'; '.join(asks)}")
        return Verdict("prompt", "policy", "; ".join(asks))
    if not parts:
        return Verdict("allowed", "policy", "nothing to run")
    riders = _riders(rules, parts) if vouched else []
    if riders:
        # A line runs as one: the part vouched for takes the others out of the sandbox too.
        why = (
            f"{'; '.join(vouched)}; the line runs outside the sandbox as a whole, and with it "
            f"{', '.join(riders)}, which alone would run in it: asking for the whole line"
        )
        if ci:
            return Verdict("denied", "ci", f"no one to ask in CI: {why}")
        return Verdict("prompt", "policy", why)
    reason = f"{classification.kind}: " + "; ".join(
        dict.fromkeys(vouched or [part.reason for part in parts])
    )
    return Verdict("allowed", "policy", reason)


def _riders(rules: PolicyRules, parts: Sequence[Part]) -> list[str]:
    """The read-only parts of a remediate-mode line that another part takes out of the
    sandbox (none when the policy runs nothing sandboxed)."""
    if rules.mode != "remediate" or rules.sandbox == "off":
        return []
    return [part.command for part in parts if part.kind == READ_ONLY]


_ASSIGNING = frozenset(
    ["export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray",
     "getopts", "unset", "set", "let", "source", ".", "eval", "printf"]
)  # fmt: skip
"""Builtins that set or unset shell variables (exported ones reach later commands);
`printf` only with `-v`."""


def line_sets_variables(line: str, knowledge: Knowledge) -> list[str]:
    """The variables `line` sets or unsets anywhere (`NAME=v cmd`, `NAME=v`, `env NAME=v`,
    `env -i`, `export`, `read NAME`, `for NAME in`), or the builtins that do; empty if none.
    An allow pattern never vouches for a command on such a line (issue 33, remediate)."""
    import re

    from agentledger.shell.classification import CommandVisitor
    from agentledger.shell.classifier import walk

    name_value = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
    found: dict[str, None] = {}

    class _Setting(CommandVisitor):
        def assigns(self, name: str, via: tuple[str, ...]) -> None:
            found[name] = None

        def command(self, words, via, text, kind, reason):  # type: ignore[no-untyped-def]
            values = [word.value for word in words]
            first = (values[0] or "").rsplit("/", 1)[-1]
            if first in _ASSIGNING and (first != "printf" or "-v" in values):
                found[first] = None
            if first in ("env", "sudo", "doas"):  # `env K=v cmd`, `sudo K=v cmd`, `env -i cmd`
                for value in values[1:]:
                    if value is None or name_value.match(value):
                        found[(value or "?").partition("=")[0]] = None
                    elif first == "env" and value.startswith("-"):
                        found[f"env {value}"] = None

    walk(line, _Setting(), knowledge)
    return list(found)
