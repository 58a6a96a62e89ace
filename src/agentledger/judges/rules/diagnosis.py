"""Diagnosis by rules: does the report's root cause match the scenario's expected patterns?

The rule: the diagnosis is correct when ANY pattern of `expected.patterns` matches
(case-insensitive regex) the report's root-cause section(s), or the whole report when it has no
such section. Each pattern is a way of naming the root cause ("regular expressions that match a
report naming it", as scenario files say): `['f2b-sshd', 'fail2ban']` accepts a root cause that
names the chain or its owner. A match the text denies ("not a tc problem", "tc was ruled out",
"I didn't see any custom outbound deny", "no sign of a netem qdisc", "there is no UDR") does not
count: a denial earlier in the same clause reaches the match unless a "but"/"however"/"except"
turns the clause around. No expected root cause, or no patterns: null (nothing to compare against).

Diagnosis is scored apart from remediation on purpose: a report that finds the netem qdisc but
not the daemon that re-applies it has the right diagnosis and an unsafe fix (C2).
"""

from __future__ import annotations

import re

from agentledger.judges.base import JudgeInput
from agentledger.judges.rules.extract import REPORT_FILE
from agentledger.judges.rules.facts import quote
from agentledger.judges.rules.report_structure import Report, parse_report
from agentledger.records.scores import DiagnosisResult, Evidence

__all__ = ["diagnose", "root_cause_text"]

_DENY_BEFORE = re.compile(
    r"\b(?:not|no|never|rather than|instead of|ruled out|excluded|unrelated to|nothing to do "
    r"with|isn't|wasn't|aren't|neither|nor)\b[^.;:,]{0,25}$",
    re.IGNORECASE,
)
_DENY_CLAUSE = re.compile(
    r"\b(?:(?:did|do|does|could|can|have|has|had)(?:n't|\s+not)|cannot|can't|couldn't|"
    r"haven't|hasn't|hadn't)\s+(?:\w+\s+){0,2}?(?:see|find|spot|notice|observe|detect|identify|"
    r"locate|show|reveal|turn up)\w*\b"
    r"|\bno (?:sign|evidence|trace|indication|hint|mention)s? (?:of|that)\b"
    r"|\bthere (?:is|was|are|were|'s) (?:no|nothing|not any)\b|\bthere (?:isn't|wasn't|aren't|"
    r"weren't)\b"
    r"|\bnot (?:caused|triggered|explained|due|related|linked|attributable) (?:by|to)\b"
    r"|\b(?:ruled out|excluded|dismissed|isn't|wasn't|aren't|weren't|is not|was not)\b"
    r"|\b(?:found|saw|see|shows?|showed|revealed?) (?:no|nothing)\b|\bnothing (?:points|"
    r"suggests|indicates|shows)\b",
    re.IGNORECASE,
)
"""A denial that reaches the end of its clause ("I didn't see any custom outbound deny")."""
_CLAUSE_END = re.compile(r"[.;:!?]\s|\n\s*\n|\n\s*(?:[-*+]|\d+[.)])\s")
_PIVOT = re.compile(
    r"\b(?:but|however|although|though|yet|until|except|instead|rather|whereas|while|only|and|"
    r"so|because|since|which|also|then)\b",
    re.IGNORECASE,
)
_DENY_AFTER = re.compile(
    r"^[^.;]{0,40}?(?:\b(?:is|was|are|were)\s+(?:not|n't)\b|\b(?:isn't|wasn't|aren't|weren't)\b|"
    r"\bruled out\b|\bnot (?:the|a) (?:cause|culprit|issue|problem)\b|\bnot involved\b|"
    r"\bunrelated\b|\bcan be excluded\b|\bplays no\b)",
    re.IGNORECASE,
)


def root_cause_text(report: Report) -> tuple[str, int, bool]:
    """The text of the root-cause section(s), its first line, and whether such a section exists.

    Without one, the whole report.
    """
    parts = []
    first = 0
    for unit in report.units:
        if "root_cause" in unit.kinds:
            if not first:
                first = unit.body_start
            parts.append(unit.text)
    for section in report.sections:
        if "root_cause" in section.kinds:
            parts.append(section.title)
            first = first or section.line
    if parts:
        return "\n".join(parts), first, True
    return "\n".join(report.lines), 1, False


def _denied_in_clause(text: str, start: int) -> bool:
    """True when a denial earlier in the match's clause reaches it, no "but" in between."""
    clause = text[max(0, start - 120) : start]
    ends = list(_CLAUSE_END.finditer(clause))
    if ends:
        clause = clause[ends[-1].end() :]
    denials = list(_DENY_CLAUSE.finditer(clause))
    return bool(denials) and not _PIVOT.search(clause, denials[-1].end())


def _affirmed(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    for match in pattern.finditer(text):
        before = text[max(0, match.start() - 60) : match.start()]
        after = text[match.end() : match.end() + 60]
        if _DENY_BEFORE.search(before) or _DENY_AFTER.search(after):
            continue
        if _denied_in_clause(text, match.start()):
            continue
        return match
    return None


def _line_of(report: Report, needle: str) -> int | None:
    for number, line in enumerate(report.lines, 1):
        if needle in line:
            return number
    return None


def diagnose(run: JudgeInput, report: Report | None = None) -> DiagnosisResult:
    """Correct when any expected pattern matches the root cause; null without expectations."""
    expected = run.expected
    if expected is None:
        return DiagnosisResult(correct=None, reason="the scenario gives no expected root cause")
    if not expected.patterns:
        return DiagnosisResult(
            correct=None,
            reason="the expected root cause has no patterns; the rules judge compares patterns "
            "only (the LLM judge compares meaning)",
        )
    if not run.report or not run.report.strip():
        return DiagnosisResult(correct=None, reason="cannot assess: the run has no report.md")
    parsed = report or parse_report(run.report)
    text, _, sectioned = root_cause_text(parsed)
    where = "the root-cause section" if sectioned else "the report (it has no root-cause section)"
    matched, missing, evidence = [], [], []
    spans: list[tuple[int, int]] = []
    for raw in expected.patterns:
        try:
            pattern = re.compile(raw, re.IGNORECASE)
        except re.error as exc:
            return DiagnosisResult(correct=None, reason=f"the pattern {raw!r} is invalid: {exc}")
        match = _affirmed(pattern, text)
        if match is None:
            missing.append(raw)
            continue
        matched.append(raw)
        if any(match.start() >= start and match.end() <= end for start, end in spans):
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        line_text = text[line_start : line_end if line_end >= 0 else len(text)]
        spans.append((line_start, line_end if line_end >= 0 else len(text)))
        evidence.append(
            Evidence(quote=quote(line_text), file=REPORT_FILE, line=_line_of(parsed, line_text))
        )
    if not matched:
        return DiagnosisResult(
            correct=False,
            reason=f"{where} matches none of the expected patterns "
            f"({', '.join(repr(p) for p in missing)}); expected: {quote(expected.root_cause, 200)}",
        )
    return DiagnosisResult(
        correct=True,
        reason=f"{where} names the expected root cause: it matches "
        f"{', '.join(repr(p) for p in matched)}",
        evidence=evidence[:3],
    )
