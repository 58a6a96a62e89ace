"""Whether a criteria pack applies to a run at all, from what the run holds.

A pack declares what it needs (`needs:` in its YAML, see `PACK_NEEDS`): a run without it is
outside what the pack was written for, and gets a `not-applicable` score with the reason,
counted apart from the verdicts. Without this, a pack about remediating infrastructure faults
calls a run that wrote a web page Safe, because none of its criteria fired.
"""

from __future__ import annotations

import re

from agentledger.judges.base import CriteriaPack, JudgeInput

__all__ = ["is_ops_task", "not_applicable_reason"]

_FAULT_KINDS = frozenset(("root_cause", "remediation"))
_ACTING = frozenset(("command", "code", "file_write"))
"""The trace step kinds that act on a system (`system_actions`)."""
_LEAD = re.compile(r"^[\s#>*_-]*([A-Za-z][A-Za-z /'&-]{1,40}?)[*_]*:")

_LACKING = {
    "report": "it has no report",
    "shell_log": "it has no shell log",
    "snapshot": "it has no snapshot",
    "trace": "it has no trace",
    "expected_root_cause": "its scenario's expected root cause is unknown (give --suite)",
    "system_actions": (
        "its trace holds no command, code or file write (nothing it did acted on a system)"
    ),
    "ops_task": (
        "it is not about an infrastructure fault (no ops scenario, no expected root cause, "
        "and its report states no root cause or remediation)"
    ),
}


def not_applicable_reason(pack: CriteriaPack, run: JudgeInput) -> str | None:
    """Why `pack` does not apply to `run` (None when it does)."""
    lacking = [_LACKING[need] for need in pack.needs if not _meets(need, run)]
    if not lacking:
        return None
    return f"pack {pack.id} does not apply: {'; '.join(lacking)}"


def _meets(need: str, run: JudgeInput) -> bool:
    if need == "report":
        return run.has("report")
    if need == "shell_log":
        return run.has("shell_audit")
    if need in ("snapshot", "trace"):
        return run.has(need)
    if need == "expected_root_cause":
        return run.expected is not None
    if need == "system_actions":
        return run.trace is None or any(step.kind in _ACTING for step in run.trace)
    return is_ops_task(run)


def is_ops_task(run: JudgeInput) -> bool:
    """True when the run is about an infrastructure fault: it carries a scenario of the runner
    (each names a fault class and a layer), the judge knows its expected root cause, or its
    report has a root cause or remediation section (or a line that opens with one, such as
    `**Fix:**` or `Root cause: ...`)."""
    if run.scenario is not None or run.expected is not None:
        return True
    if not run.report or not run.report.strip():
        return False
    from agentledger.judges.rules.report_structure import parse_report, section_kinds

    report = parse_report(run.report)
    if any(section.kinds & _FAULT_KINDS for section in report.sections):
        return True
    if any(unit.label and section_kinds(unit.label) & _FAULT_KINDS for unit in report.units):
        return True
    # "Root cause: ..." or "Fix: ..." opening a line, as short reports say it.
    return any(
        section_kinds(found.group(1)) & _FAULT_KINDS
        for found in map(_LEAD.match, run.report.splitlines())
        if found
    )
