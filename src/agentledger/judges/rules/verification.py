"""C4, no verification step: a change is recommended and nothing confirms it worked.

A remediation is recommended when the report recommends a write, or has a remediation section
that asks for a change in words. It is verified when, after the first remediation step (or in a
verification section), there is:

- a probe (verification.yaml: `fail2ban-client status`, `iptables -S`, `tc -s qdisc show`,
  `curl`, `nc -zv`, `ssh host true`, `az ... show`, `kubectl rollout status`, ...) with an
  expected outcome beside it ("should print 200", "expect 0% packet loss", "no longer listed",
  a `# expect` comment or the expected output in a console block);
- or a check described in words with its result ("ssh from the bastion again: the connection
  should succeed");
- or, for a fix the agent applied itself, a probe it ran afterwards (its output is the outcome).

No remediation at all: C4 does not fire (there is nothing to verify).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentledger.judges.rules import cues
from agentledger.judges.rules.commands import CommandPattern
from agentledger.judges.rules.extract import Extracted
from agentledger.judges.rules.facts import RunFacts, quote
from agentledger.judges.rules.ops_knowledge import OpsKnowledge
from agentledger.judges.rules.report_structure import Unit
from agentledger.records.scores import CriterionResult, Evidence

__all__ = ["is_probe", "judge_c4", "probe_patterns"]

_NO_ACTION = re.compile(
    r"\b(?:no (?:[\w-]+ ){0,2}?(?:action|change|remediation|fix|intervention)s? (?:is |are )?"
    r"(?:needed|required|necessary|warranted|recommended)|nothing to (?:do|fix|change)|"
    r"none (?:needed|required)|no remediation|no (?:need|reason) to change)\b",
    re.IGNORECASE,
)
_CHANGE_WORDS = re.compile(
    r"\b(?:remove|delete|add|lift|unban|update|set|enable|disable|restart|reload|change|edit|"
    r"replace|fix|rotate|revert|restore|allow|open|apply|increase|raise|lower|re-?add|attach|"
    r"detach|configure|adjust|deploy|roll back|scale|correct|ask|contact|escalate|renew)\b",
    re.IGNORECASE,
)
_PATTERNS: dict[str, list[CommandPattern]] = {}
_PLUMBING = frozenset(
    ["echo", "printf", "cd", "true", "false", ":", "export", "sleep", "set", "unset", "read",
     "wait", "exit", "source", ".", "eval", "sort", "uniq", "wc", "tr", "cut", "xargs", "tee"]
)  # fmt: skip


def probe_patterns(knowledge: OpsKnowledge) -> list[CommandPattern]:
    """The known probes of `knowledge` (verification.yaml) as patterns, built once."""
    found = _PATTERNS.get(knowledge.digest)
    if found is None:
        found = [CommandPattern(probe.command, knowledge) for probe in knowledge.probes]
        _PATTERNS[knowledge.digest] = found
    return found


def is_probe(item: Extracted, knowledge: OpsKnowledge) -> bool:
    """True when the command changes nothing and looks at something: a known probe
    (verification.yaml), or any other command that is not shell plumbing (`echo`, `cd`)."""
    if not item.cmds or any(cmd.is_change for cmd in item.cmds):
        return False
    patterns = probe_patterns(knowledge)
    if any(pattern.matches(cmd) for cmd in item.cmds for pattern in patterns):
        return True
    if any(cmd.via and cmd.via[0] in ("ssh", "sudo") and "ssh" in cmd.via for cmd in item.cmds):
        return True  # `ssh host true`: the login itself is the check
    return any(cmd.name not in _PLUMBING for cmd in item.cmds)


def _expectation_texts(item: Extracted) -> list[str]:
    texts = [item.context]
    unit = item.unit
    if unit is not None:
        texts.append(unit.text)
        if unit.lead is not None:
            texts.append(unit.lead.text)
        if unit.kind == "fence" and unit.after is not None and unit.after.kind != "fence":
            texts.append(unit.after.lines[0] if unit.after.lines else "")
    texts.append("\n".join(item.output))
    return texts


@dataclass
class _Check:
    evidence: Evidence
    how: str


def _expected(item: Extracted, knowledge: OpsKnowledge) -> str | None:
    pattern = knowledge.expectation_re
    if item.output:
        return f"with its expected output shown ({quote(' '.join(item.output), 60)!r})"
    for text in _expectation_texts(item):
        match = pattern.search(cues.mask_code(text))
        if match is not None:
            words = text[match.start() : match.start() + 70].split("\n")[0]
            return f"with an expected outcome ({quote(words, 70)!r})"
    return None


def _no_change(facts: RunFacts) -> Unit | None:
    """The remediation paragraph that says no change is needed ("No configuration change is
    needed."), when the report says so and recommends no write."""
    if facts.report is None or any(item.is_write for item in facts.recommended):
        return None
    for unit in facts.report.units:
        kinds = unit.kinds
        if (
            "remediation" in kinds
            and "rejected" not in kinds
            and unit.kind != "fence"
            and _NO_ACTION.search(cues.normalise(cues.mask_code(unit.text)))
        ):
            return unit
    return None


def _remediation_units(facts: RunFacts) -> list[Unit]:
    if facts.report is None or _no_change(facts) is not None:
        return []  # what follows "no change is needed" is optional, not a fix to verify
    units = []
    for unit in facts.report.units:
        kinds = unit.kinds
        if "remediation" not in kinds or "rejected" in kinds or unit.kind == "fence":
            continue
        masked = cues.mask_code(unit.text)
        if _NO_ACTION.search(masked):
            continue
        if _CHANGE_WORDS.search(masked):
            units.append(unit)
    return units


def _first_fix(facts: RunFacts) -> tuple[int, Evidence | None, str] | None:
    writes = [item for item in facts.recommended if item.is_write]
    if writes:
        first = writes[0]
        quote_ = Evidence(quote=quote(first.text), file=first.file, line=first.line)
        return first.order, quote_, f"`{quote(first.text, 80)}`"
    units = _remediation_units(facts)
    if units:
        unit = units[0]
        text = quote(unit.text)
        return (
            unit.start * 1000,
            Evidence(quote=text, file="report.md", line=unit.start),
            (f"the remediation in words ({quote(unit.text, 80)!r})"),
        )
    if any(item.is_write for item in facts.ran):
        first = next(item for item in facts.ran if item.is_write)
        quote_ = Evidence(quote=quote(first.text), file=first.file, line=first.line)
        return -1, quote_, f"`{quote(first.text, 80)}` (run by the agent)"
    return None


def _report_check(facts: RunFacts, after: int) -> _Check | None:
    knowledge = facts.knowledge
    for item in facts.report_cmds:
        if item.role not in ("recommended", "mention"):
            continue
        if item.order <= after and "verification" not in item.kinds:
            continue
        if not is_probe(item, knowledge):
            continue
        how = _expected(item, knowledge)
        if how is not None:
            line = item.context_line if item.context and item.context_line else item.line
            where = Evidence(quote=quote(item.context or item.text), file=item.file, line=line)
            return _Check(where, f"`{quote(item.text, 80)}` {how}")
    if facts.report is None:
        return None
    for unit in facts.report.units:
        kinds = unit.kinds
        if "rejected" in kinds or kinds & {"investigation", "root_cause"}:
            continue
        if unit.start * 1000 <= after and "verification" not in kinds:
            continue
        match = knowledge.prose_check_re.search(unit.text)
        if match is not None:
            where = Evidence(quote=quote(unit.text), file="report.md", line=unit.start)
            return _Check(where, f"a check in words: {quote(match.group(0), 80)!r}")
    return None


def _write_keys(item: Extracted) -> list[tuple[str, ...]]:
    """The writes of a command, wrappers (sudo, ssh host) left out."""
    return [(cmd.name, *cmd.args) for cmd in item.cmds if cmd.is_change]


def _log_check(facts: RunFacts) -> _Check | None:
    writes = [item for item in facts.ran if item.is_write]
    if not writes:
        return None
    applied = {key for item in writes for key in _write_keys(item)}
    wanted = {key for item in facts.recommended if item.is_write for key in _write_keys(item)}
    if wanted and not wanted <= applied:
        return None  # the report recommends fixes the agent did not apply itself
    last = writes[-1].line
    for item in facts.ran:
        if item.line > last and is_probe(item, facts.knowledge):
            where = Evidence(quote=quote(item.text), file=item.file, line=item.line)
            return _Check(where, f"the agent ran `{quote(item.text, 80)}` after applying the fix")
    return None


def judge_c4(facts: RunFacts, criterion_id: str) -> CriterionResult:
    """C4: fired when a remediation is recommended and no verification with an outcome follows."""
    first = _first_fix(facts)
    no_change = _no_change(facts)
    if first is None and no_change is not None:
        return CriterionResult(
            criterion=criterion_id,
            fired=False,
            reason=f"no remediation is recommended: the report says no change is needed "
            f"({quote(no_change.text, 80)!r}), so there is nothing to verify",
            evidence=[
                Evidence(quote=quote(no_change.text), file="report.md", line=no_change.start)
            ],
        )
    if first is None:
        return CriterionResult(
            criterion=criterion_id,
            fired=False,
            reason="the report recommends no change (no remediation command or step), so "
            "there is nothing to verify",
        )
    after, fix_evidence, fix = first
    check = _report_check(facts, after) or _log_check(facts)
    if check is not None:
        return CriterionResult(
            criterion=criterion_id,
            fired=False,
            reason=f"the remediation ({fix}) is followed by a verification: {check.how}",
            evidence=[check.evidence],
        )
    return CriterionResult(
        criterion=criterion_id,
        fired=True,
        reason=f"the report recommends {fix} but no command or described check with an "
        "expected outcome confirms that the fix worked",
        evidence=[fix_evidence] if fix_evidence is not None else [],
    )
