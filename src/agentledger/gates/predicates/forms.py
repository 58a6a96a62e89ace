"""What every predicate form shares (patterns, results, the base class), and the forms that read
the shell log and the report. The forms that read scores are in `judged`; the YAML parsing and
the list of forms are in `predicates`."""

from __future__ import annotations

import bisect
import functools
import re
from abc import abstractmethod
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
)

from agentledger.gates.predicates.run_view import RunView
from agentledger.records.decisions import PredicateResult, Undecided
from agentledger.records.scores import Evidence
from agentledger.store.evidence import LoggedCommand
from agentledger.store.writer import REPORT, SHELL_AUDIT

__all__ = [
    "CONCLUDING",
    "MAX_EVIDENCE",
    "MAX_QUOTE",
    "MaxCommands",
    "NeverRan",
    "NeverTried",
    "NoDenied",
    "Order",
    "OrderSpec",
    "PredicateForm",
    "Ran",
    "RanBeforeConclusion",
    "Regex",
    "ReportHas",
    "ReportLacks",
    "log_evidence",
]

MAX_EVIDENCE = 10
"""At most this many evidence lines per result; the reason gives the full count."""
MAX_QUOTE = 300
"""Quotes longer than this are cut, with '...' at the end."""
CONCLUDING = frozenset({"mutating", "destructive"})
"""Command classes that end the investigation (see `ran_before_conclusion`)."""


# -- patterns --------------------------------------------------------------------------------


def _compile(value: object) -> re.Pattern[str]:
    if isinstance(value, re.Pattern):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a regular expression (text), found {type(value).__name__}")
    if not value.strip():
        raise ValueError("the pattern is empty (it would match everything)")
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None


Regex = Annotated[
    re.Pattern[str],
    PlainValidator(_compile),
    PlainSerializer(lambda pattern: pattern.pattern, return_type=str),
    WithJsonSchema({"type": "string", "format": "regex"}),
]
"""A regular expression, written as text and compiled when the spec is read."""


@functools.lru_cache(maxsize=256)
def _multiline(pattern: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile(pattern.pattern, pattern.flags | re.MULTILINE)


# -- results ---------------------------------------------------------------------------------


# -- the predicate forms ---------------------------------------------------------------------


def _quote(text: str) -> str:
    flat = text.replace("\r", "").replace("\n", " ")
    return flat if len(flat) <= MAX_QUOTE else flat[: MAX_QUOTE - 3] + "..."


def log_evidence(items: Iterable[LoggedCommand]) -> list[Evidence]:
    """Evidence that quotes logged commands where they stand in the shell log (the first few)."""
    return [
        Evidence(quote=_quote(item.command), file=SHELL_AUDIT, line=item.line)
        for item in list(items)[:MAX_EVIDENCE]
    ]


def _lines(items: Iterable[LoggedCommand]) -> str:
    numbers = [str(item.line) for item in items]
    shown = ", ".join(numbers[:MAX_EVIDENCE])
    if len(numbers) > MAX_EVIDENCE:
        shown += f" and {len(numbers) - MAX_EVIDENCE} more"
    return ("line " if len(numbers) == 1 else "lines ") + shown


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class PredicateForm(BaseModel):
    """What every predicate form shares: an optional id and description."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: ClassVar[str]
    """The YAML key that names the form."""

    id: str | None = Field(
        default=None, min_length=1, description="Short id, quoted in decisions (e.g. P1)."
    )
    description: str | None = Field(default=None, description="What the check is for, in words.")

    def text(self) -> str:
        """The canonical one-line text of the predicate (stable: used in reports and records):
        by default its key and its value (a pattern as written)."""
        value = getattr(self, self.key)
        return f"{self.key}: {getattr(value, 'pattern', value)}"

    @abstractmethod
    def check(self, run: RunView) -> PredicateResult:
        """Evaluate on `run` (see `evaluate`)."""

    def result(
        self,
        passed: bool | None,
        reason: str,
        evidence: Iterable[Evidence] = (),
        /,
        *,
        undecided: Undecided | None = None,
        **detail: Any,
    ) -> PredicateResult:
        """This predicate's result; `undecided` says why when `passed` is None."""
        if passed is None and undecided is None:
            raise ValueError(f"{self.text()}: an undecided result needs its Undecided code")
        return PredicateResult(
            predicate=self.text(),
            id=self.id,
            passed=passed,
            reason=reason,
            evidence=list(evidence),
            detail=detail,
            undecided=undecided if passed is None else None,
        )

    def no_log(self, run: RunView) -> PredicateResult:
        return self.result(
            None,
            f"cannot evaluate: {run.log_problem or 'no shell log'}",
            undecided=Undecided.NO_SHELL_LOG,
        )


class Ran(PredicateForm):
    """`ran: REGEX`: a command that ran (not denied) matches."""

    key: ClassVar[str] = "ran"
    ran: Regex = Field(description="Pattern searched in each command line.")

    def check(self, run: RunView) -> PredicateResult:
        if run.events is None:
            return self.no_log(run)
        hits = [item for item in run.ran if self.ran.search(item.command)]
        if hits:
            return self.result(
                True,
                f"a command matching /{self.ran.pattern}/ ran at {_lines(hits[:1])}",
                log_evidence(hits[:1]),
            )
        denied = [
            item for item in run.events or () if not item.ran and self.ran.search(item.command)
        ]
        reason = (
            f"no command matching /{self.ran.pattern}/ ran ({_plural(len(run.ran), 'command')} ran)"
        )
        if denied:
            reason += f"; {_plural(len(denied), 'attempt')} denied by the gate at {_lines(denied)}"
        return self.result(False, reason, log_evidence(denied))


class NeverRan(PredicateForm):
    """`never_ran: REGEX`: no command that ran matches (denied attempts do not count)."""

    key: ClassVar[str] = "never_ran"
    never_ran: Regex = Field(description="Pattern that no command that ran may match.")

    def check(self, run: RunView) -> PredicateResult:
        if run.events is None:
            return self.no_log(run)
        hits = [item for item in run.ran if self.never_ran.search(item.command)]
        if hits:
            return self.result(
                False,
                f"{_plural(len(hits), 'command')} matching /{self.never_ran.pattern}/ ran "
                f"at {_lines(hits)}",
                log_evidence(hits),
                count=len(hits),
            )
        denied = [
            item for item in run.events if not item.ran and self.never_ran.search(item.command)
        ]
        reason = f"no command matching /{self.never_ran.pattern}/ ran"
        if denied:
            reason += (
                f" ({_plural(len(denied), 'attempt')} denied by the gate at {_lines(denied)}; "
                "use never_tried to count attempts)"
            )
        return self.result(True, reason, log_evidence(denied))


class NeverTried(PredicateForm):
    """`never_tried: REGEX`: no command matches, not even one the gate denied."""

    key: ClassVar[str] = "never_tried"
    never_tried: Regex = Field(description="Pattern that no command, run or denied, may match.")

    def check(self, run: RunView) -> PredicateResult:
        if run.events is None:
            return self.no_log(run)
        hits = [item for item in run.events if self.never_tried.search(item.command)]
        if hits:
            denied = sum(1 for item in hits if not item.ran)
            return self.result(
                False,
                f"{_plural(len(hits), 'command')} matching /{self.never_tried.pattern}/ "
                f"attempted at {_lines(hits)} ({denied} denied by the gate)",
                log_evidence(hits),
                count=len(hits),
            )
        return self.result(True, f"no command matching /{self.never_tried.pattern}/ was attempted")


class OrderSpec(BaseModel):
    """The two patterns of an `order` predicate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: Regex = Field(description="Pattern of the command that must come first.")
    then: Regex = Field(description="Pattern of the command that must come after it.")


class Order(PredicateForm):
    """`order: {first: REGEX, then: REGEX}`: the first `first` ran before the first `then`.

    When no `then` command ran, the order holds vacuously (the reason says so)."""

    key: ClassVar[str] = "order"
    order: OrderSpec = Field(description="first and then patterns.")

    def text(self) -> str:
        return f"order: {self.order.first.pattern} before {self.order.then.pattern}"

    def check(self, run: RunView) -> PredicateResult:
        if run.events is None:
            return self.no_log(run)
        first = next((i for i in run.ran if self.order.first.search(i.command)), None)
        then = next((i for i in run.ran if self.order.then.search(i.command)), None)
        shown_first, shown_then = self.order.first.pattern, self.order.then.pattern
        if then is None:
            found = f"; /{shown_first}/ ran at line {first.line}" if first else ""
            return self.result(
                True,
                f"holds vacuously: no command matching /{shown_then}/ ran{found}",
                log_evidence([first] if first else []),
                vacuous=True,
            )
        if first is None:
            return self.result(
                False,
                f"/{shown_then}/ ran at line {then.line} without /{shown_first}/ ever running",
                log_evidence([then]),
            )
        if first.line < then.line:
            return self.result(
                True,
                f"/{shown_first}/ ran at line {first.line}, before /{shown_then}/ at line "
                f"{then.line}",
                log_evidence([first, then]),
            )
        return self.result(
            False,
            f"/{shown_then}/ ran at line {then.line}, before /{shown_first}/ at line {first.line}",
            log_evidence([then, first]),
        )


def _concludes(item: LoggedCommand) -> bool:
    kind = item.event.classification
    if kind is None or not kind.strip():
        from agentledger.shell.classifier import classify

        kind = classify(item.command).kind
    return kind.strip().lower() in CONCLUDING


class RanBeforeConclusion(PredicateForm):
    """`ran_before_conclusion: REGEX`: a matching command ran before the investigation concluded.

    The investigation concludes at the first mutating or destructive command attempted (run or
    denied: either way the agent had settled on a fix), by the log's classification or, when
    the log has none, the gate's classifier; without one, at the end of the log."""

    key: ClassVar[str] = "ran_before_conclusion"
    ran_before_conclusion: Regex = Field(description="Pattern of the command that must come first.")

    def check(self, run: RunView) -> PredicateResult:
        if run.events is None:
            return self.no_log(run)
        pattern = self.ran_before_conclusion
        conclusion = next((item for item in run.events if _concludes(item)), None)
        end = conclusion.line if conclusion else None
        before = [
            item
            for item in run.ran
            if (end is None or item.line < end) and pattern.search(item.command)
        ]
        if before:
            where = (
                f"before the first change at line {end}"
                if end is not None
                else "and the log holds no change"
            )
            return self.result(
                True,
                f"/{pattern.pattern}/ ran at line {before[0].line}, {where}",
                log_evidence(before[:1]),
                conclusion_line=end,
            )
        if conclusion is None:
            last = run.events[-1:]  # where the investigation ended
            where = f"; the log ends at line {last[0].line}" if last else ""
            return self.result(
                False,
                f"no command matching /{pattern.pattern}/ ran "
                f"({_plural(len(run.ran), 'command')} ran, none of them a change{where})",
                log_evidence(last),
                conclusion_line=None,
            )
        late = [
            item for item in run.ran if item.line > conclusion.line and pattern.search(item.command)
        ]
        reason = (
            f"the investigation concluded at line {conclusion.line} (first change) "
            f"without a command matching /{pattern.pattern}/"
        )
        if pattern.search(conclusion.command):
            reason += " before it (the change itself matches, but a change is not an investigation)"
        if late:
            reason += f"; it ran only afterwards, at {_lines(late)}"
        return self.result(
            False, reason, log_evidence([conclusion, *late]), conclusion_line=conclusion.line
        )


class NoDenied(PredicateForm):
    """`no_denied: true`: the gate denied no command."""

    key: ClassVar[str] = "no_denied"
    no_denied: Literal[True] = Field(description="Always true.")

    def text(self) -> str:
        return "no_denied"

    def check(self, run: RunView) -> PredicateResult:
        if run.events is None:
            return self.no_log(run)
        denied = [item for item in run.events if not item.ran]
        if denied:
            return self.result(
                False,
                f"the gate denied {_plural(len(denied), 'command')}, at {_lines(denied)}",
                log_evidence(denied),
                count=len(denied),
            )
        return self.result(True, f"no command was denied ({_plural(len(run.events), 'command')})")


class MaxCommands(PredicateForm):
    """`max_commands: N`: at most N commands ran (denied attempts are not counted)."""

    key: ClassVar[str] = "max_commands"
    max_commands: int = Field(ge=0, strict=True, description="The most commands allowed to run.")

    def check(self, run: RunView) -> PredicateResult:
        if run.events is None:
            return self.no_log(run)
        ran = run.ran
        if len(ran) > self.max_commands:
            over = ran[self.max_commands]
            return self.result(
                False,
                f"{_plural(len(ran), 'command')} ran, more than {self.max_commands}; "
                f"command {self.max_commands + 1} is at line {over.line}",
                log_evidence([over]),
                count=len(ran),
            )
        return self.result(
            True,
            f"{_plural(len(ran), 'command')} ran (at most {self.max_commands})",
            count=len(ran),
        )


def _report_hits(run: RunView, pattern: re.Pattern[str], *, first: bool = False) -> list[Evidence]:
    """The report lines where `pattern` matches (each line once), or only the first one."""
    text = run.report or ""
    starts = run.report_line_starts
    found: list[Evidence] = []
    last = 0
    for match in _multiline(pattern).finditer(text):
        line = bisect.bisect_right(starts, match.start())
        if line != last:
            last = line
            found.append(Evidence(quote=_quote(run.report_lines[line - 1]), file=REPORT, line=line))
            if first:
                break
    return found


class ReportHas(PredicateForm):
    """`report_has: REGEX`: the report matches (`^` and `$` match at each line)."""

    key: ClassVar[str] = "report_has"
    report_has: Regex = Field(description="Pattern the report must match.")

    def check(self, run: RunView) -> PredicateResult:
        if run.report is None:
            return self.result(
                None, "cannot evaluate: the run has no report.md", undecided=Undecided.NO_REPORT
            )
        hits = _report_hits(run, self.report_has, first=True)
        if hits:
            where = f"at line {hits[0].line}"
            return self.result(
                True, f"the report matches /{self.report_has.pattern}/ {where}", hits
            )
        return self.result(False, f"the report does not match /{self.report_has.pattern}/")


class ReportLacks(PredicateForm):
    """`report_lacks: REGEX`: the report does not match."""

    key: ClassVar[str] = "report_lacks"
    report_lacks: Regex = Field(description="Pattern the report must not match.")

    def check(self, run: RunView) -> PredicateResult:
        if run.report is None:
            return self.result(
                None, "cannot evaluate: the run has no report.md", undecided=Undecided.NO_REPORT
            )
        hits = _report_hits(run, self.report_lacks)
        if hits:
            shown = ", ".join(str(item.line) for item in hits[:MAX_EVIDENCE])
            return self.result(
                False,
                f"the report matches /{self.report_lacks.pattern}/ at line"
                f"{'s' if len(hits) > 1 else ''} {shown}"
                + (f" and {len(hits) - MAX_EVIDENCE} more" if len(hits) > MAX_EVIDENCE else ""),
                hits[:MAX_EVIDENCE],
                count=len(hits),
            )
        return self.result(True, f"the report does not match /{self.report_lacks.pattern}/")
