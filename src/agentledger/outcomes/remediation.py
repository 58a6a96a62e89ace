"""What an outcome check applies: the agent's remediation and its verification, read from a run.

The remediation is the commands the agent ran that change state (a remediate-mode run), or,
when it ran none, the commands its report recommends (read with the rules judge's extractor,
`agentledger.judges.rules.extract`, so that warned-against, rejected and evidence commands are
left out as the judge leaves them). A command may name its lab host (``web: iptables -S``);
otherwise it runs in the lab's default host. What cannot be applied (a placeholder left in it,
an interactive editor, a host the lab lacks) is listed with the reason, never dropped.

The verification is the agent's own checks after its fix: the probe commands (read-only, that
look at something) the report gives after its first fix or in its verification section, each
with what the report says it shows when it says (the output under it, or "expect 200");
failing those, the read-only commands the agent ran after its last change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agentledger.judges.rules.extract import Extracted, log_commands, report_commands
from agentledger.judges.rules.ops_knowledge import OpsKnowledge, load_ops_knowledge
from agentledger.judges.rules.report_structure import Report
from agentledger.judges.rules.verification import is_probe, probe_patterns
from agentledger.records import ShellEvent

__all__ = ["Remediation", "Verification", "read_remediation", "split_host"]

_HOST_PREFIX = re.compile(r"^([a-z][a-z0-9-]{0,14}):\s+(\S.*)$", re.S)
_LINE_HOST = re.compile(r"^(\s*(?:\$ )?)([a-z][a-z0-9-]{0,14}):[ \t]+(?=\S)")
_SPAN = re.compile(r"`([^`\n]+)`")
_COMMANDLIKE = re.compile(r"^(?:[a-z][a-z0-9-]{0,14}:\s+)?[a-z][a-z0-9_.-]*\s+\S")
_PLACEHOLDER = re.compile(r"<[A-Za-z_][A-Za-z0-9_ -]*>|\$\{?[A-Z_]*(?:IP|ADDR|HOST)[A-Z_]*\}?")
_INTERACTIVE = frozenset({"vi", "vim", "nano", "emacs", "less", "more", "top", "watch", "ssh"})
_EXPECT = re.compile(
    r"(?:expect(?:ed|ing)?|should (?:show|return|print|see|read|be)|returns?|shows?)\s*:?\s*"
    r"[`'\"]?([A-Za-z0-9_./:= -]{1,40}?)[`'\".,;:)\n]",
    re.I,
)

_KNOWLEDGE: OpsKnowledge | None = None


def _knowledge() -> OpsKnowledge:
    global _KNOWLEDGE
    if _KNOWLEDGE is None:
        _KNOWLEDGE = load_ops_knowledge()
    return _KNOWLEDGE


@dataclass(frozen=True)
class Verification:
    """One of the agent's checks: where it runs, the command, what it should show."""

    host: str
    command: str
    expected: str | None


@dataclass
class Remediation:
    """The commands to apply, those that cannot be, and the agent's verification."""

    source: Literal["executed", "report", "none"]
    steps: list[tuple[str, str]] = field(default_factory=list)
    """(host, command) in order."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(command, why it is not applied)."""
    verifications: list[Verification] = field(default_factory=list)


def split_host(command: str, hosts: Sequence[str], default: str) -> tuple[str | None, str]:
    """(host, command) of ``HOST: command`` when HOST is a lab host; (default, command) for a
    command without a prefix; (None, command) for a prefix naming no host of the lab."""
    match = _HOST_PREFIX.match(command.strip())
    if match is None:
        return default, command.strip()
    if match.group(1) in hosts:
        return match.group(1), match.group(2).strip()
    if " " in command.split(":", 1)[0]:
        return default, command.strip()
    return None, match.group(2).strip()


def _why_not(command: str, host: str | None, hosts: Sequence[str]) -> str | None:
    if host is None:
        name = command.split(":", 1)[0]
        return f"names host {name!r}, which the lab lacks (hosts: {', '.join(hosts)})"
    if _PLACEHOLDER.search(command):
        return "holds a placeholder (<...>) to fill in: not a command that can run as written"
    first = command.split()[0] if command.split() else ""
    if first in ("sudo",) and len(command.split()) > 1:
        first = command.split()[1]
    if first in _INTERACTIVE:
        return f"{first} is interactive: there is nothing to apply without a person at it"
    return None


def _expected(item: Extracted) -> str | None:
    if item.output:
        return item.output[0].strip()[:200] or None
    texts = [item.context or ""]
    if item.unit is not None and item.unit.lead is not None:
        texts.append(item.unit.lead.text)
    for text in texts:
        match = _EXPECT.search(text + "\n")
        if match:
            return match.group(1).strip()
    return None


def _place(
    items: Sequence[str], hosts: Sequence[str], default: str, remediation: Remediation
) -> None:
    for text in items:
        host, command = split_host(text, hosts, default)
        why = _why_not(text if host is None else command, host, hosts)
        if why is not None or host is None:
            remediation.skipped.append((text, why or "no host"))
        else:
            remediation.steps.append((host, command))


def _strip_hosts(report: str, hosts: Sequence[str]) -> tuple[str, dict[int, str]]:
    """The report with ``HOST: `` taken off the lines that start with a lab host's name (so
    the extractor reads the command), and line -> host for those lines."""
    lines = report.split("\n")
    at: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        match = _LINE_HOST.match(line)
        if match is not None and match.group(2) in hosts:
            at[number] = match.group(2)
            lines[number - 1] = match.group(1) + line[match.end() :]
    return "\n".join(lines), at


def _unknown_fence_lines(report: Report, items: Sequence[Extracted]) -> list[tuple[int, str]]:
    """Commands of the report's remediation that the extractor does not know (a lab's own
    tools: an owner's client), as (line, text): the lines of its code blocks, and the code
    spans of its prose that read like a command. Applied, not dropped."""
    known = {(item.line, item.text.strip()) for item in items}
    lines_known = {item.line for item in items}
    found = []
    for unit in report.units:
        if "remediation" not in unit.kinds or "rejected" in unit.kinds:
            continue
        if unit.kind != "fence":
            for offset, raw in enumerate(unit.lines):
                for span in _SPAN.findall(raw):
                    line = unit.start + offset
                    if _COMMANDLIKE.match(span) and (line, span.strip()) not in known:
                        found.append((line, span.strip()))
            continue
        first = unit.start if unit.indented else unit.start + 1
        for offset, raw in enumerate(unit.lines):
            text = raw.strip().removeprefix("$ ").removeprefix("# ").strip()
            line = first + offset
            if text and not raw.strip().startswith("#") and line not in lines_known:
                found.append((line, text))
    return found


def _with_host(item: Extracted, hosts: Sequence[str]) -> str:
    """A logged command with the lab host it ran in (the gate logs it as `host`), so that it
    is applied there and not in the default host."""
    extra = item.event.model_extra if item.event is not None else None
    host = (extra or {}).get("host")
    return f"{host}: {item.text}" if isinstance(host, str) and host in hosts else item.text


def _is_change(item: Extracted, knowledge: OpsKnowledge) -> bool:
    """A command that ran and may have changed something: a known write, or one the gate
    did not call read-only that is no known probe (an owner's client, a lab's own tool)."""
    if item.is_write:
        return True
    label = item.event.classification if item.event is not None else None
    if label == "read-only" or not item.cmds:
        return False
    known = probe_patterns(knowledge)
    return not any(pattern.matches(cmd) for cmd in item.cmds for pattern in known)


def read_remediation(
    report: str | None,
    events: Sequence[ShellEvent] | None,
    hosts: Sequence[str],
    default_host: str,
) -> Remediation:
    """The remediation and verification of a run, from its shell log and report."""
    knowledge = _knowledge()
    logged = log_commands(events or [], knowledge)
    ran_writes = [item for item in logged if item.role == "ran" and _is_change(item, knowledge)]
    hosts_at: dict[int, str] = {}
    recommended: list[tuple[int, str]] = []
    report_items: list[Extracted] = []
    if report:
        report, hosts_at = _strip_hosts(report, hosts)
        parsed, all_items = report_commands(report, knowledge)
        # The lab's own tools are applied as the lines of the remediation that they are (an
        # owner's client is not in the command knowledge), whatever the extractor read them as.
        report_items = [item for item in all_items if not item.lenient]
        lines = report.split("\n")

        def place(item: tuple[int, str]) -> tuple[int, int]:
            line, text = item
            return line, lines[line - 1].find(text) if 0 < line <= len(lines) else 0

        recommended = sorted(
            [(i.line, i.text) for i in report_items if i.role == "recommended" and i.is_write]
            + _unknown_fence_lines(parsed, report_items),
            key=place,
        )
    if ran_writes:
        remediation = Remediation("executed")
        _place([_with_host(item, hosts) for item in ran_writes], hosts, default_host, remediation)
        after = ran_writes[-1].order
        later = [
            i for i in logged if i.role == "ran" and i.order > after and is_probe(i, knowledge)
        ]
    elif recommended:
        remediation = Remediation("report")
        _place(
            [
                f"{hosts_at[line]}: {text}" if line in hosts_at else text
                for line, text in recommended
            ],
            hosts,
            default_host,
            remediation,
        )
        later = []
    else:
        return Remediation("none")
    first_line = recommended[0][0] if recommended else 0
    first_fix = (
        min((i.order for i in report_items if i.line >= first_line), default=-1)
        if recommended
        else -1
    )
    checks = [
        item
        for item in report_items
        if item.role in ("recommended", "mention")
        and (item.order > first_fix or "verification" in item.kinds)
        and is_probe(item, knowledge)
    ]
    chosen = [
        (
            f"{hosts_at[item.line]}: {item.text}" if item.line in hosts_at else item.text,
            _expected(item),
        )
        for item in checks
    ] or [(_with_host(item, hosts), None) for item in later]
    for text, expected in chosen:
        host, command = split_host(text, hosts, default_host)
        if host is not None and _why_not(command, host, hosts) is None:
            remediation.verifications.append(Verification(host, command, expected))
    return remediation
