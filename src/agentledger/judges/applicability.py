"""Whether a criteria pack applies to a run at all, from what the run holds.

A pack declares what it needs (`needs:` in its YAML, see `PACK_NEEDS`): a run without it is
outside what the pack was written for, and gets a `not-applicable` score with the reason,
counted apart from the verdicts. Without this, a pack about remediating infrastructure faults
calls a run that wrote a web page Safe, because none of its criteria fired.

`not_applicable_before_loading` answers first from what costs nothing to read (the manifest's
file names, the metadata, the run's scenario copy, the expected root causes given, and for
`ops_task` the report alone), so a run outside the pack is never made to parse its shell log or
trace: most runs of a data set the pack was not written for are told in a fraction of the time.
`system_actions` is told from the manifest (a run with a shell log, or without a trace, may
apply), the summary (a command run or refused) and, for a trace without a shell log, the trace's
bytes scanned for the kinds that act, without parsing a step: a step kind is written as its JSON
string, so a trace whose bytes hold none of `"command"`, `"code"`, `"file_write"` and no `\\u`
escape of a printable character has no such step. Only a trace the scan cannot rule out waits
for `not_applicable_reason` on the whole input.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agentledger.judges.base import CriteriaPack, ExpectedDiagnosis, JudgeInput
from agentledger.records.trace import TRACE
from agentledger.store.writer import REPORT, SHELL_AUDIT

if TYPE_CHECKING:
    from agentledger.store.evidence import RunEvidence

__all__ = ["is_ops_task", "not_applicable_before_loading", "not_applicable_reason"]

SCENARIO_COPY = "scenario.yaml"
"""The run's copy of its scenario (judges.inputs reads it)."""

_FAULT_KINDS = frozenset(("root_cause", "remediation"))
_ACTING = frozenset(("command", "code", "file_write"))
"""The trace step kinds that act on a system (`system_actions`)."""
_ACTING_BYTES = tuple(f'"{kind}"'.encode() for kind in sorted(_ACTING))
_PRINTABLE_ESCAPE = re.compile(rb"\\u00[2-7][0-9A-Fa-f]")
"""A JSON escape that could spell a letter of a step kind (`"\\u0063ode"`); writers escape
only control characters, so a trace with one is read whole."""
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


def not_applicable_before_loading(
    pack: CriteriaPack,
    evidence: RunEvidence,
    expectations: dict[str, ExpectedDiagnosis] | None = None,
) -> str | None:
    """Why `pack` does not apply to the run of `evidence`, told without parsing its shell log,
    trace or snapshot (None when it may apply: `not_applicable_reason` then decides on the
    whole input). A need this cannot tell yet counts as met here."""
    lacking = [
        _LACKING[need] for need in pack.needs if _meets_early(need, evidence, expectations) is False
    ]
    if not lacking:
        return None
    return f"pack {pack.id} does not apply: {'; '.join(lacking)}"


def _meets_early(
    need: str, evidence: RunEvidence, expectations: dict[str, ExpectedDiagnosis] | None
) -> bool | None:
    """Whether the run meets `need`, from its file names, metadata and (for `ops_task`) its
    report; None when only its heavy files can tell."""
    files = evidence.files
    if need == "report":
        return None if REPORT in files else False
    if need == "shell_log":
        return None if SHELL_AUDIT in files else False
    if need == "snapshot":
        return None if evidence.snapshot_name is not None else False
    if need == "trace":
        return None if TRACE in files else False
    expected_known = SCENARIO_COPY in files or bool(
        expectations and evidence.metadata.scenario in expectations
    )
    if need == "expected_root_cause":
        return None if expected_known else False
    if need == "ops_task":
        if expected_known:
            return None
        return None if report_is_about_a_fault(evidence.text(REPORT)) else False
    if need == "system_actions":
        return _may_have_acted(evidence)
    return None


def _may_have_acted(evidence: RunEvidence) -> bool | None:
    """False when the run's trace surely holds no step that acts on a system (told from the
    manifest, the summary and the trace's bytes, no step parsed); None when it may."""
    if TRACE not in evidence.files or SHELL_AUDIT in evidence.files:
        return None  # no trace: left to the criteria; a shell log: a command step made it
    summary = evidence.summary
    if summary is not None and (summary.commands_run or summary.commands_denied):
        return None
    raw = evidence.read(TRACE)
    if raw is None or any(kind in raw for kind in _ACTING_BYTES):
        return None
    return None if _PRINTABLE_ESCAPE.search(raw) else False


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
    return report_is_about_a_fault(run.report)


def report_is_about_a_fault(text: str | None) -> bool:
    """Whether a report has a root cause or remediation section, or a line that opens with
    one (`**Fix:**`, `Root cause: ...`)."""
    if not text or not text.strip():
        return False
    from agentledger.judges.rules.report_structure import parse_report, section_kinds

    report = parse_report(text)
    if any(section.kinds & _FAULT_KINDS for section in report.sections):
        return True
    if any(unit.label and section_kinds(unit.label) & _FAULT_KINDS for unit in report.units):
        return True
    # "Root cause: ..." or "Fix: ..." opening a line, as short reports say it.
    return any(
        section_kinds(found.group(1)) & _FAULT_KINDS
        for found in map(_LEAD.match, text.splitlines())
        if found
    )
