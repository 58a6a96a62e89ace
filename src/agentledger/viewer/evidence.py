"""What the run page shows of a run's evidence, and where each firing's evidence stands in it.

A judge's evidence names a file and a line (`records.scores.Evidence`); this module puts a
`Cite` on that line of the shown file (the report, the reasoning, the shell log, a trace step,
the snapshot), so that the page highlights it in place and links the firing to it. Evidence
without a line is placed on the first line that holds its quote. Anchors are built from the
section's own name and a number, never from the text of a record. Of the trace and the shell
log, only the part a page shows and the rows evidence stands on are parsed (`viewer.paged`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from agentledger.errors import RecordError
from agentledger.records import SHELL_LOG, ShellEvent, parse_lines
from agentledger.records.scores import Evidence, Score
from agentledger.records.trace import TRACE, TraceStep, parse_trace_lines
from agentledger.store.evidence import LoggedCommand, RunEvidence
from agentledger.store.writer import SHELL_AUDIT
from agentledger.viewer.paged import PagedRows, json_text

__all__ = [
    "MAX_SHOWN_BYTES",
    "ROWS_PER_PART",
    "Cite",
    "EvidenceView",
    "Line",
    "ShellRow",
    "StepRow",
    "TextView",
    "evidence_view",
]

MAX_SHOWN_BYTES = 2_000_000
"""A text longer than this is shown cut, with a link to the whole file."""
ROWS_PER_PART = 500
"""Trace steps (and shell log commands) a run page shows at once: a run of 100,000 steps is
200 parts (`?part=N`), each page a bounded size, not one page of tens of megabytes."""

Row = TypeVar("Row")
Section = Literal["report", "reasoning", "shell", "step", "snapshot"]


@dataclass(frozen=True)
class Cite:
    """One criterion's evidence on one shown line or step."""

    judge_id: str
    criterion: str
    fired: bool | None
    quote: str
    anchor: str
    """The id of the line or step it stands on (``report-L12``, ``step-4``)."""


@dataclass
class Line:
    number: int
    text: str
    cites: list[Cite] = field(default_factory=list)


@dataclass
class TextView:
    """A text artifact shown line by line, with its anchor prefix and whether it was cut."""

    name: str
    section: Section
    lines: list[Line]
    cut: bool = False

    def anchor(self, number: int) -> str:
        return f"{self.section}-L{number}"


@dataclass
class ShellRow:
    """One line of the shell log: the command, the gate's decision, its output folded."""

    command: LoggedCommand
    cites: list[Cite] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"shell-L{self.command.line}"


@dataclass
class StepRow:
    """One trace step as the timeline shows it."""

    step: TraceStep
    line: int
    """Its 1-based line in trace.jsonl (what a judge cites)."""
    cites: list[Cite] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"step-{self.step.index}"

    @property
    def observation(self) -> bool:
        """An output, a result or a file read: shown folded."""
        return self.step.kind in ("command_output", "tool_result", "file_read")


@dataclass
class EvidenceView:
    """Everything the run page shows of a run's files, with the judges' evidence placed.

    The trace and the shell log are `PagedRows`: of a long one, only the part shown and the
    rows evidence stands on are parsed (`evidence_view`)."""

    report: TextView | None
    reasoning: TextView | None
    snapshot: TextView | None
    shell: PagedRows[ShellRow] | None
    shell_problem: str | None
    steps: PagedRows[StepRow] | None
    trace_problem: str | None
    placed: dict[tuple[str, str, int], str] = field(default_factory=dict)
    """(judge id, criterion, position of the evidence) -> the anchor it was placed on."""
    part: int = 1
    """Which part of a long trace and shell log the page shows (`ROWS_PER_PART` each)."""
    shown_steps: list[StepRow] = field(default_factory=list)
    """The trace steps of the part shown (or of the rows asked for: `evidence_view`)."""
    shown_shell: list[ShellRow] = field(default_factory=list)
    """The shell log's commands of the part shown (or of the rows asked for)."""

    def anchor_of(self, judge_id: str, criterion: str, position: int) -> str | None:
        return self.placed.get((judge_id, criterion, position))

    @property
    def parts(self) -> int:
        longest = max(len(self.steps or ()), len(self.shell or ()), 1)
        return -(-longest // ROWS_PER_PART)

    @property
    def first_shown(self) -> int:
        """The position of the part's first step and command."""
        return (self.part - 1) * ROWS_PER_PART

    def href(self, anchor: str) -> str:
        """The link to an anchor: on this page, or on the part of it that shows its step or
        command."""
        at = self._parts_of_anchors().get(anchor)
        return f"#{anchor}" if at is None or at == self.part else f"?part={at}#{anchor}"

    def _parts_of_anchors(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for rows in (self.steps, self.shell):
            for position, row in rows.parsed_rows() if rows is not None else ():
                if row.cites:
                    found[row.anchor] = position // ROWS_PER_PART + 1
        return found


def _lines(text: str) -> list[Line]:
    return [Line(number, line) for number, line in enumerate(text.split("\n"), start=1)]


def _text_view(evidence: RunEvidence, name: str | None, section: Section) -> TextView | None:
    if name is None:
        return None
    raw = evidence.read(name)
    if raw is None:
        return None
    cut = len(raw) > MAX_SHOWN_BYTES
    text = raw[:MAX_SHOWN_BYTES].decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    return TextView(name, section, _lines(text), cut)


def _step_rows(lines: Sequence[tuple[int, bytes]], first: int) -> list[StepRow]:
    steps = parse_trace_lines(lines, TRACE, first)
    return [StepRow(step, number) for step, (number, _line) in zip(steps, lines, strict=True)]


def _shell_rows(lines: Sequence[tuple[int, bytes]], _first: int) -> list[ShellRow]:
    events = parse_lines(lines, ShellEvent, SHELL_LOG, SHELL_AUDIT)
    return [
        ShellRow(LoggedCommand(number, event))
        for event, (number, _line) in zip(events, lines, strict=True)
    ]


def _needle(quote: str) -> str:
    """The part of a quote to look for: without the '...' a shortened quote ends with."""
    return quote.strip().removesuffix("...").removesuffix("…").strip()


def _find_line(lines: Sequence[Line], quote: str) -> Line | None:
    needle = _needle(quote)
    if not needle:
        return None
    for line in lines:
        if needle in line.text:
            return line
    first = needle.split("\n", 1)[0].strip()
    if first and first != needle:
        for line in lines:
            if first in line.text:
                return line
    return None


class _Placer:
    def __init__(self, view: EvidenceView) -> None:
        self.view = view
        self.texts: dict[str, TextView] = {
            text.name: text for text in (view.report, view.reasoning, view.snapshot) if text
        }

    def place(self, score: Score) -> None:
        for result in score.criteria:
            for position, item in enumerate(result.evidence):
                anchor = self._place_one(score.judge_id, result.criterion, result.fired, item)
                if anchor is not None:
                    self.view.placed[(score.judge_id, result.criterion, position)] = anchor

    def _place_one(
        self, judge_id: str, criterion: str, fired: bool | None, item: Evidence
    ) -> str | None:
        def cite(anchor: str) -> Cite:
            return Cite(judge_id, criterion, fired, item.quote, anchor)

        text = self.texts.get(item.file)
        if text is None and item.file.startswith("snapshot") and self.view.snapshot:
            text = self.view.snapshot
        if text is not None:
            line = (
                text.lines[item.line - 1]
                if item.line is not None and item.line <= len(text.lines)
                else _find_line(text.lines, item.quote)
            )
            if line is None:
                return None
            anchor = text.anchor(line.number)
            line.cites.append(cite(anchor))
            if fired:
                self._same_command(item.quote, cite)
            return anchor
        if item.file == SHELL_AUDIT and self.view.shell is not None:
            row = self._shell_row(item)
            if row is None:
                return None
            row.cites.append(cite(row.anchor))
            self._also_on_step(row, cite)
            return row.anchor
        if item.file == TRACE and self.view.steps is not None:
            found = self._step_row(self.view.steps, item)
            if found is None:
                return None
            found.cites.append(cite(found.anchor))
            return found.anchor
        return None

    @staticmethod
    def _step_row(steps: PagedRows[StepRow], item: Evidence) -> StepRow | None:
        """The step on the evidence's line, else the first whose command or text holds its
        quote."""
        position = steps.position_of_line(item.line) if item.line is not None else None
        if position is not None:
            return steps.at(position)
        needle = _needle(item.quote)
        return next(
            (row for _, row in steps.containing(json_text(needle)) if needle in _said(row)), None
        )

    def _shell_row(self, item: Evidence) -> ShellRow | None:
        rows = self.view.shell
        assert rows is not None
        position = rows.position_of_line(item.line) if item.line is not None else None
        if position is not None:
            return rows.at(position)
        needle = _needle(item.quote)
        return next(
            (row for _, row in rows.containing(json_text(needle)) if needle in row.command.command),
            None,
        )

    def _same_command(self, quote: str, cite: Callable[[str], Cite]) -> None:
        """A firing that quotes a command from the report also marks where the agent ran (or
        tried) that very command: its shell log line and its trace step."""
        needle = _needle(quote).strip("`").strip()
        if not needle or self.view.shell is None:
            return
        for _, row in self.view.shell.containing(json_text(needle)):
            if row.command.command.strip() == needle:
                row.cites.append(cite(row.anchor))
                self._also_on_step(row, cite)

    def _also_on_step(self, row: ShellRow, cite: Callable[[str], Cite]) -> None:
        """A command the shell log cites is also marked on the trace's step of that command."""
        if not self.view.steps:
            return
        command = row.command.command
        # As trace.jsonl's writers spell the field (compact JSON): only command steps hold it.
        field = b'"command":"' + json_text(command) + b'"'
        for _, step in self.view.steps.containing(field):
            if step.step.kind == "command" and step.step.command == command:
                step.cites.append(cite(step.anchor))
                return


def _said(row: StepRow) -> str:
    step = row.step
    parts = [step.command or "", step.content.text if step.content else ""]
    return "\n".join(part for part in parts if part)


def _paged(
    evidence: RunEvidence,
    name: str,
    parse: Callable[[Sequence[tuple[int, bytes]], int], list[Row]],
    problems: dict[str, str],
) -> PagedRows[Row] | None:
    if name in problems:
        return None
    raw = evidence.read(name)
    return None if raw is None else PagedRows(raw, parse)


def _view(
    evidence: RunEvidence, scores: Sequence[Score], part: int, rows: int, problems: dict[str, str]
) -> EvidenceView:
    view = EvidenceView(
        report=_text_view(evidence, "report.md", "report"),
        reasoning=_text_view(evidence, "audit.md", "reasoning"),
        snapshot=_text_view(evidence, evidence.snapshot_name, "snapshot"),
        shell=_paged(evidence, SHELL_AUDIT, _shell_rows, problems),
        shell_problem=problems.get(SHELL_AUDIT),
        steps=_paged(evidence, TRACE, _step_rows, problems),
        trace_problem=problems.get(TRACE),
    )
    placer = _Placer(view)
    for score in scores:
        placer.place(score)
    view.part = min(part, view.parts)
    if view.steps is not None:
        view.shown_steps = view.steps.rows(view.first_shown, rows)
    if view.shell is not None:
        view.shown_shell = view.shell.rows(view.first_shown, rows)
    return view


def evidence_view(
    evidence: RunEvidence, scores: Iterable[Score], part: int = 1, *, rows: int = ROWS_PER_PART
) -> EvidenceView:
    """The run's shown files, with every score's evidence placed on them; of a long trace and
    shell log, `rows` rows from the start of `part` (past the last: the last), and only those
    and the rows evidence stands on are parsed.

    A trace or shell log with a bad line read here counts as missing, with the problem said
    (the page is built again without it)."""
    scores = list(scores)
    problems: dict[str, str] = {}
    while True:
        try:
            return _view(evidence, scores, part, rows, problems)
        except RecordError as exc:
            name = exc.source if exc.source in (TRACE, SHELL_AUDIT) else None
            if name is None or name in problems:
                raise
            what = "trace" if name == TRACE else "shell log"
            problems[name] = f"the {what} cannot be read ({exc})"
