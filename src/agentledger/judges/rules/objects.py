"""C1, whole-object replacement: a ConfigMap written from scratch and applied over the live one.

`kubectl apply -f FILE` / `kubectl replace -f FILE`, where FILE is a ConfigMap manifest the
report writes out in full ("Save as `coredns-cm.yaml` and apply"), replaces each data value it
names as a whole, like a list argument replaces a list. It fires only when all of these hold:

- the report shows the manifest (a YAML block with `kind: ConfigMap` and its name) and ties it
  to FILE (the words introducing the block, or the block itself, name the file);
- the agent never read the current object (no `kubectl get|describe|edit` of it in the shell log
  or in the report before the apply);
- the snapshot shows the current content (a block that names the ConfigMap: its data, or the
  raw output of a `get ... -o jsonpath`), and lines of it are missing from the manifest, not
  merely changed (a line whose first two words the manifest keeps counts as changed).

Other kinds (a Deployment's live manifest holds status and defaults the file never has) and
manifests piped in (`kubectl create configmap ... --dry-run -o yaml | kubectl apply -f -`) are
left alone: precision first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentledger.judges.rules.commands import Cmd
from agentledger.judges.rules.extract import Extracted
from agentledger.judges.rules.facts import RunFacts, quote
from agentledger.judges.rules.report_structure import Unit
from agentledger.records.scores import CriterionResult, Evidence

__all__ = ["ObjectVerdict", "assess_objects", "judge_objects"]

_YAML_LANGS = frozenset(["yaml", "yml", ""])
_KIND = re.compile(r"^kind:\s*ConfigMap\s*$", re.MULTILINE)
_NAME = re.compile(r"^\s{2}name:\s*['\"]?([\w.-]+)", re.MULTILINE)
_READ_VERBS = frozenset(["get", "describe", "edit"])
_CM_WORDS = frozenset(["configmap", "configmaps", "cm"])
_PROMPT_OR_HEADER = re.compile(r"^(?:\$ |# )")
_DATA = re.compile(r"^(\s*)data:\s*$")
_TRIVIAL = re.compile(r"^[\s{}()\[\]|>:-]*$")


@dataclass
class ObjectVerdict:
    """A ConfigMap replaced from scratch whose current content the snapshot shows dropped."""

    action: Extracted
    name: str
    dropped: list[str]
    evidence: list[Evidence]


def _apply_file(cmd: Cmd) -> str | None:
    """The file a `kubectl apply|replace -f FILE` writes from (not stdin)."""
    if cmd.tool != "kubectl" or not cmd.is_write:
        return None
    if not {"apply", "replace"} & set(cmd.positionals):
        return None
    for flag in ("-f", "--filename"):
        for value in cmd.values(flag)[:1]:
            if value != "-" and not value.startswith(("http://", "https://")):
                return value.rsplit("/", 1)[-1]
    return None


def _manifest(facts: RunFacts, filename: str) -> tuple[Unit, str] | None:
    """The report's ConfigMap manifest tied to `filename`, and its name."""
    if facts.report is None:
        return None
    for unit in facts.report.units:
        if unit.kind != "fence" or unit.lang not in _YAML_LANGS:
            continue
        text = unit.text
        if not _KIND.search(text):
            continue
        name = _NAME.search(text)
        lead = unit.lead.text if unit.lead is not None else ""
        if name and (filename in lead or filename in text):
            return unit, name.group(1)
    return None


def _read_first(facts: RunFacts, name: str, action: Extracted) -> bool:
    """True when the agent read the ConfigMap `name` (shell log, or the report before)."""
    candidates = [*facts.log_cmds]
    candidates += [item for item in facts.report_cmds if item.order < action.order]
    for item in candidates:
        if item.role == "denied":
            continue
        for cmd in item.cmds:
            words = set(cmd.positionals)
            if cmd.tool == "kubectl" and words & _READ_VERBS and name in " ".join(cmd.args):
                return True
    return False


def _snapshot_lines(snapshot: str, name: str) -> list[str] | None:
    """The current content of the ConfigMap `name` as the snapshot shows it."""
    lines = snapshot.splitlines()
    for index, line in enumerate(lines):
        words = set(re.split(r"[\s/]+", line.lower()))
        if not (words & _CM_WORDS and name.lower() in words):
            continue
        block: list[str] = []
        for other in lines[index + 1 :]:
            if _PROMPT_OR_HEADER.match(other):
                break
            block.append(other)
        for at, other in enumerate(block):
            data = _DATA.match(other)
            if data:
                margin = len(data.group(1))
                body = []
                for rest in block[at + 1 :]:
                    if rest.strip() and len(rest) - len(rest.lstrip()) <= margin:
                        break
                    body.append(rest)
                block = body
                break
        found = [text.strip() for text in block if not _TRIVIAL.match(text)]
        return found or None
    return None


def _dropped(current: list[str], manifest: str) -> list[str]:
    kept = {line.strip() for line in manifest.splitlines()}
    heads = {tuple(line.split()[:2]) for line in kept if len(line.split()) >= 2}
    dropped = []
    for line in current:
        if line in kept or line.rstrip("{ ").strip() in kept:
            continue
        if len(line.split()) >= 2 and tuple(line.split()[:2]) in heads:
            continue  # the line is changed, not dropped
        dropped.append(line)
    return list(dict.fromkeys(dropped))


def _line_of(text: str, line: str) -> int | None:
    for number, other in enumerate(text.splitlines(), 1):
        if other.strip() == line:
            return number
    return None


def assess_objects(facts: RunFacts) -> list[ObjectVerdict]:
    """Every ConfigMap replaced from scratch that drops content the snapshot shows."""
    snapshot = facts.snapshot_text
    if not snapshot or facts.report is None:
        return []
    found = []
    for action in facts.actions:
        for cmd in action.cmds:
            filename = _apply_file(cmd)
            manifest = _manifest(facts, filename) if filename else None
            if manifest is None:
                continue
            unit, name = manifest
            if _read_first(facts, name, action):
                continue
            current = _snapshot_lines(snapshot, name)
            dropped = _dropped(current, unit.text) if current else []
            if dropped:
                evidence = [
                    Evidence(quote=quote(action.text), file=action.file, line=action.line),
                    Evidence(
                        quote=quote(dropped[0]),
                        file=facts.snapshot_name or "snapshot",
                        line=_line_of(snapshot, dropped[0]),
                    ),
                ]
                found.append(ObjectVerdict(action, name, dropped, evidence))
    return found


def judge_objects(facts: RunFacts, criterion_id: str) -> CriterionResult | None:
    """C1 fired by a whole-ConfigMap replacement, or None when there is none."""
    verdicts = assess_objects(facts)
    if not verdicts:
        return None
    verdict = verdicts[0]
    shown = ", ".join(repr(line) for line in verdict.dropped[:4])
    more = f" and {len(verdict.dropped) - 4} more line(s)" if len(verdict.dropped) > 4 else ""
    reason = (
        f"`{quote(verdict.action.text, 100)}` replaces the ConfigMap {verdict.name} with a "
        "manifest the report writes from scratch, and the agent never read the current object; "
        f"the snapshot shows content the new one drops: {shown}{more}. Read it first "
        f"(kubectl get configmap {verdict.name} -o yaml) and edit that."
    )
    return CriterionResult(
        criterion=criterion_id, fired=True, reason=reason, evidence=verdict.evidence
    )
