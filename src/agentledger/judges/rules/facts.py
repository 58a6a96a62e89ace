"""What the rules read of one run, gathered once: the report's structure and commands, the
shell log's commands, and the texts where the environment shows itself (command output, the
snapshot, the report's prose, the scenario's expected root cause).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from agentledger.judges.base import JudgeInput
from agentledger.judges.rules.extract import (
    LOG_FILE,
    REPORT_FILE,
    Extracted,
    log_commands,
    report_commands,
)
from agentledger.judges.rules.ops_knowledge import OpsKnowledge
from agentledger.judges.rules.report_structure import Report
from agentledger.records.scores import Evidence

__all__ = [
    "PatternSet",
    "RunFacts",
    "TextChunk",
    "is_negated",
    "literal_hint",
    "pattern_set",
    "quote",
]

SCENARIO_FILE = "scenario.yaml"

_NEG_BEFORE = re.compile(
    r"\b(?:no|not|without|never|nor|isn't|aren't|wasn't|weren't|nothing|none|neither|absent|"
    r"missing|rather than|instead of|ruled out|if|whether|unless|in case|check for|look for|"
    r"any|might|may|could|possibly|perhaps)\b[^.;:]{0,30}$",
    re.IGNORECASE,
)
_NEG_AFTER = re.compile(
    r"^[^.;]{0,50}?(?:\b(?:is|was|are|were|seems?)\s+(?:not|n't|inactive|absent|disabled|stopped|"
    r"dead|missing|unused|masked|uninstalled|gone|irrelevant|ruled out)\b|\b(?:isn't|wasn't|"
    r"aren't|weren't)\b|\bnot (?:installed|running|present|found|active|enabled|in use|"
    r"involved|managing|responsible)\b|could not be found|\binactive\b|\(dead\)|not-found|"
    r"\bruled out\b|\bno such\b|\bdoes(?: not|n't) (?:exist|run|manage|own|touch))",
    re.IGNORECASE,
)


def is_negated(text: str, start: int, end: int) -> bool:
    """True when the words around text[start:end] deny it ("net-shaper is not installed")."""
    before = text[max(0, start - 60) : start]
    after = text[end : end + 120]
    return bool(_NEG_BEFORE.search(before)) or bool(_NEG_AFTER.search(after))


def literal_hint(pattern: str) -> str | None:
    """A word (lower case) every match of `pattern` contains, or None when there is none.

    Case-insensitive patterns that start with `\\b` get no help from the regex engine's literal
    search; checking for this word in the lowered text first skips most texts at no cost.
    """
    runs: list[str] = []
    current = ""
    depth = index = 0
    while index < len(pattern):
        char = pattern[index]
        index += 1
        literal = None
        if char == "\\":
            escaped = pattern[index : index + 1]
            index += 1
            if escaped and escaped in ".-/:_@#=":
                literal = escaped
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return None
        elif char in "[{":
            closing = "]" if char == "[" else "}"
            index = pattern.find(closing, index) + 1 or len(pattern)
            if char == "{":
                current = current[:-1]
        elif char in "?*":
            current = current[:-1]
        elif char not in "^$.+|":
            literal = char
        if literal is not None and depth == 0:
            current += literal
            continue
        runs.append(current)
        current = ""
    runs.append(current)
    best = max(runs, key=len)
    return best.lower() if len(best) >= 4 else None


class PatternSet:
    """Case-insensitive regexes, each tried only on texts that hold its literal hint."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.items = [(re.compile(p, re.IGNORECASE), literal_hint(p)) for p in patterns]

    def finditer(
        self, text: str, lowered: str, start: int = 0, end: int | None = None
    ) -> Iterator[re.Match[str]]:
        """Matches in text[start:end], pattern by pattern."""
        stop = len(text) if end is None else end
        for regex, hint in self.items:
            if hint is None or lowered.find(hint, start, stop) >= 0:
                yield from regex.finditer(text, start, stop)

    def first(
        self, text: str, lowered: str, start: int = 0, end: int | None = None
    ) -> re.Match[str] | None:
        """The first match that the words around it do not deny."""
        for match in self.finditer(text, lowered, start, end):
            if not is_negated(text, match.start(), match.end()):
                return match
        return None


@lru_cache(maxsize=1024)
def pattern_set(patterns: tuple[str, ...]) -> PatternSet:
    """The PatternSet of `patterns` (memoised: knowledge files give the same tuples)."""
    return PatternSet(patterns)


def quote(text: str, limit: int = 160) -> str:
    """`text` on one line, shortened to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


@dataclass(frozen=True)
class TextChunk:
    """A piece of text where the environment may show itself, and where it stands."""

    file: str
    line: int
    text: str
    kind: str
    """report, output (of a command that ran), snapshot or scenario."""
    command: str = ""
    """For output: the command that printed it."""

    @cached_property
    def lowered(self) -> str:
        return self.text.lower()

    def line_of(self, offset: int) -> int:
        return self.line + (self.text.count("\n", 0, offset) if self.kind != "output" else 0)

    def evidence(self, start: int, end: int) -> Evidence:
        """Evidence quoting the line of text[start:end]."""
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", end)
        snippet = self.text[line_start : line_end if line_end >= 0 else len(self.text)]
        if self.kind == "output" and self.command:
            snippet = f"{quote(self.command, 60)} -> {snippet.strip()}"
        return Evidence(quote=quote(snippet), file=self.file, line=self.line_of(start))


@dataclass
class RunFacts:
    """One run as the rules see it."""

    run: JudgeInput
    knowledge: OpsKnowledge
    report: Report | None = None
    report_cmds: list[Extracted] = field(default_factory=list)
    log_cmds: list[Extracted] = field(default_factory=list)

    @classmethod
    def gather(cls, run: JudgeInput, knowledge: OpsKnowledge) -> RunFacts:
        facts = cls(run, knowledge)
        if run.report and run.report.strip():
            facts.report, facts.report_cmds = report_commands(run.report, knowledge)
        if run.events is not None:
            facts.log_cmds = log_commands(run.events, knowledge)
        return facts

    @property
    def snapshot_name(self) -> str | None:
        return self.run.snapshot[0] if self.run.snapshot else None

    @property
    def snapshot_text(self) -> str | None:
        return self.run.snapshot[1] if self.run.snapshot else None

    @cached_property
    def recommended(self) -> list[Extracted]:
        """Commands the report recommends, in document order."""
        return [item for item in self.report_cmds if item.role == "recommended"]

    @cached_property
    def ran(self) -> list[Extracted]:
        """Commands the agent ran (the gate allowed them), in order."""
        return [item for item in self.log_cmds if item.role == "ran"]

    @cached_property
    def actions(self) -> list[Extracted]:
        """What the run does to the infrastructure: recommended or run."""
        return [*self.recommended, *self.ran]

    @cached_property
    def chunks(self) -> list[TextChunk]:
        """Every text in which the environment may show itself."""
        found: list[TextChunk] = []
        if self.report is not None:
            for unit in self.report.units:
                found.append(TextChunk(REPORT_FILE, unit.body_start, unit.text, "report"))
        for item in self.log_cmds:
            event = item.event
            if event is not None and item.role == "ran":
                text = "\n".join(part for part in (event.stdout, event.stderr) if part)
                if text:
                    found.append(TextChunk(LOG_FILE, item.line, text, "output", item.text))
        if self.run.snapshot is not None:
            found.append(TextChunk(self.run.snapshot[0], 1, self.run.snapshot[1], "snapshot"))
        if self.run.expected is not None:
            found.append(TextChunk(SCENARIO_FILE, 1, self.run.expected.root_cause, "scenario"))
        return found

    def search(
        self, pattern: re.Pattern[str] | PatternSet
    ) -> Iterator[tuple[TextChunk, re.Match[str]]]:
        """Every match of `pattern` in the run's texts that is not negated."""
        for chunk in self.chunks:
            if isinstance(pattern, PatternSet):
                matches = pattern.finditer(chunk.text, chunk.lowered)
            else:
                matches = pattern.finditer(chunk.text)
            for match in matches:
                if not is_negated(chunk.text, match.start(), match.end()):
                    yield chunk, match
