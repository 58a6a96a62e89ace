"""decision.md: a decision record as a document people read (and diff) six months later.

Everything that came from an agent (quotes of its commands and report, reasons that repeat
them) is untrusted: it is shown as inline code or escaped prose, on one line, so that no quote
can close a table, open a link, inject HTML or fake a heading.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentledger.gates.decisions import Decision, DecisionItem
    from agentledger.gates.predicates.evaluate import PredicateResult

__all__ = ["code", "fenced", "prose", "render_markdown"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u2028\u2029]")
_SPACE = re.compile(r"\s+")
_MARKDOWN = re.compile(r"([\\`*\[\]|~])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_BLOCK_START = re.compile(r"^(?:[#=+-]|\d+(?=[.)]))")
_BACKTICKS = re.compile(r"`+")
MAX_INLINE = 500
"""Quotes and reasons longer than this are cut ('...')."""
MAX_SENTENCE = 4000
"""The gate's own sentences (rule, reasoning, summaries) are cut only beyond this."""

_STATUS = {True: "pass", False: "FAIL", None: "cannot tell"}
_MODEL_STATUS = {"passed": "passed", "failed": "FAILED", "unknown": "unknown"}


def _one_line(text: str, limit: int = MAX_INLINE) -> str:
    flat = _SPACE.sub(" ", _CONTROL.sub(" ", text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def prose(text: str, limit: int = MAX_INLINE) -> str:
    """`text` on one line (cut at `limit` characters), inert as Markdown: HTML and Markdown
    punctuation escaped."""
    flat = _one_line(text, limit)
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    flat = _MARKDOWN.sub(lambda match: "\\" + match.group(), flat)
    return _BLOCK_START.sub(_inert_start, flat, count=1)


def _inert_start(match: re.Match[str]) -> str:
    """A leading '#', '-', '+', '=' or '1.' would start a heading or a list: escape it."""
    found = match.group()
    return found + "\\" if found[0].isdigit() else "\\" + found


def code(text: str) -> str:
    """`text` on one line as an inline code span that no backtick inside it can close."""
    flat = _one_line(text)
    if not flat:
        return "` `"
    longest = max((len(run) for run in _BACKTICKS.findall(flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def fenced(text: str, info: str = "") -> str:
    """`text` as a fenced block whose fence is longer than any backtick run inside it."""
    clean = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\t", "    ")).rstrip("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(clean)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{clean}\n{fence}"


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
