"""decision.md: a decision record as a document people read (and diff) six months later.

Everything that came from an agent (quotes of its commands and report, reasons that repeat
them) is untrusted: it is shown as inline code or escaped prose (`agentledger.report.untrusted`),
on one line, so that no quote can close a table, open a link, inject HTML or fake a heading.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from agentledger.report.untrusted import MAX_SENTENCE, code, fenced, prose

if TYPE_CHECKING:
    from agentledger.records.decisions import Decision, DecisionItem, PredicateResult

__all__ = ["render_markdown"]

_STATUS = {True: "pass", False: "FAIL", None: "cannot tell"}
_MODEL_STATUS = {"passed": "passed", "failed": "FAILED", "unknown": "unknown"}


def _cell(text: str | None) -> str:
    return prose(text) if text else "-"


def _name(text: str) -> str:
    """An identifier (model, scenario) in a table cell: code, with pipes escaped for GFM."""
    return code(text).replace("|", "\\|")


def _evidence_lines(result: PredicateResult) -> list[str]:
    lines = []
    for item in result.evidence:
        where = f"{item.file}:{item.line}" if item.line is not None else item.file
        lines.append(f"    - {code(where)} {code(item.quote)}")
    return lines


def _result_lines(result: PredicateResult) -> list[str]:
    label = f" [{prose(result.id)}]" if result.id else ""
    run = f" on run {code(result.run_id)}" if result.run_id else ""
    status = _STATUS[result.passed]
    head = f"- **{status}** {code(result.predicate)}{label}{run}: {prose(result.reason)}"
    return [head, *_evidence_lines(result)]


def _item_title(item: DecisionItem) -> str:
    role = f" ({prose(item.role)})" if item.role else ""
    return f"### {code(item.model)} on {code(item.scenario)}{role}: {_STATUS[item.passed]}"


def _tested_lines(decision: Decision) -> list[str]:
    tested = decision.tested
    lines = []
    if decision.spec is not None:
        lines.append(f"- Spec: {code(decision.spec.path)} ({code(decision.spec.sha256)})")
    if tested.addon is not None:
        where = f", from {code(tested.addon.path)}" if tested.addon.path else ""
        lines.append(f"- Addon: {prose(tested.addon.name)} ({code(tested.addon.sha256)}){where}")
    for role, digest in tested.prompt_hashes.items():
        lines.append(f"- System prompt ({prose(role)}): {code(digest)}")
    if tested.baseline:
        lines.append(f"- Baseline: {prose(tested.baseline)}")
    if tested.candidate:
        lines.append(f"- Candidate: {prose(tested.candidate)}")
    for title, values in (
        ("Models", tested.models),
        ("Scenarios", tested.scenarios),
        ("Judges", tested.judge_ids),
    ):
        if values:
            lines.append(f"- {title}: " + ", ".join(code(value) for value in values))
    if tested.repeats:
        lines.append(f"- Repeats: {tested.repeats}")
    if tested.run_ids:
        lines.append(f"- Runs ({len(tested.run_ids)}):")
        lines.extend(f"    - {code(run_id)}" for run_id in tested.run_ids)
    return lines or ["Nothing recorded."]


def render_markdown(decision: Decision) -> str:
    """decision.md: outcome, rule, reasoning, per-model record, what was tested, the evidence."""
    created = decision.created_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    out = [
        f"# {decision.outcome}: {decision.kind} {prose(decision.subject)}",
        "",
        f"- Decision: {code(decision.decision_id)}",
        f"- Decided: {created}",
        f"- Outcome: **{decision.outcome}**",
    ]
    if decision.supersedes:
        out.append(f"- Supersedes: {code(decision.supersedes)} (which stays on record)")
    out += ["", "## Rule", "", prose(decision.rule, MAX_SENTENCE), "", "## Reasoning", ""]
    out += [f"- {prose(sentence, MAX_SENTENCE)}" for sentence in decision.reasoning] or [
        "No reasoning given."
    ]
    if decision.models:
        out += ["", "## Per-model compliance", "", "| Model | Status | Summary |", "|---|---|---|"]
        for model, record in decision.models.items():
            status = _MODEL_STATUS[record.status]
            summary = prose(record.summary, MAX_SENTENCE)
            out.append(f"| {_name(model)} | {status} | {summary} |")
    out += ["", "## What was tested", "", *_tested_lines(decision)]
    if decision.results:
        out += [
            "",
            "## Results",
            "",
            "| Model | Scenario | Role | Runs | Result | Summary |",
            "|---|---|---|---|---|---|",
        ]
        for item in decision.results:
            out.append(
                f"| {_name(item.model)} | {_name(item.scenario)} | {_cell(item.role)} | "
                f"{len(item.run_ids)} | {_STATUS[item.passed]} | {_cell(item.summary)} |"
            )
        for item in decision.results:
            out += ["", _item_title(item), ""]
            if item.run_ids:
                out.append("Runs: " + ", ".join(code(run_id) for run_id in item.run_ids))
                out.append("")
            for result in item.results:
                out += _result_lines(result)
            if not item.results:
                out.append("No predicate results.")
    if decision.extra:
        extra = json.dumps(decision.extra, indent=2, ensure_ascii=False, default=str)
        out += ["", "## Details", "", fenced(extra, "json")]
    if decision.spec is not None:
        out += ["", "## Spec", "", f"{code(decision.spec.path)}:", "", fenced(decision.spec.text)]
    return "\n".join(out) + "\n"
