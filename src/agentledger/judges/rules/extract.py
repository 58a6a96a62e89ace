"""Extraction: the commands a report recommends (or only mentions), and the commands a run ran.

From `report.md`: fenced code blocks (bash, sh, console, unlabelled), `$ ` and `# ` prompt
lines, inline code spans that are commands, plain numbered steps, and prose such as "run X".
Each command gets a role from where it stands and the words around it:

- ``recommended``: under a remediation/fix/verification heading, or given as an instruction;
- ``warned``: shown only to warn against it ("do NOT run", "would be reverted", a section
  titled "What not to do");
- ``evidence``: in an investigation, findings or root-cause section (what was seen or done);
- ``rollback``: a contingency (a rollback plan), not the fix;
- ``mention``: anywhere else without an instruction.

From `shell_audit.jsonl`: every command, ``ran`` or ``denied`` (denied commands were not run),
with its index as its location (line = index + 1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentledger.judges.rules import cues
from agentledger.judges.rules.commands import Cmd, parse_line, strip_placeholders
from agentledger.judges.rules.ops_knowledge import OpsKnowledge
from agentledger.judges.rules.report_structure import Report, Unit, parse_report
from agentledger.records import ShellEvent

__all__ = [
    "LOG_FILE",
    "REPORT_FILE",
    "Extracted",
    "log_commands",
    "report_commands",
]

REPORT_FILE = "report.md"
LOG_FILE = "shell_audit.jsonl"

_SHELL_LANGS = frozenset(["bash", "sh", "shell", "zsh", "ksh", "", "none", "cmd", "bash-session"])
_CONSOLE_LANGS = frozenset(["console", "shell-session", "terminal", "sh-session", "text", "txt",
                            "plaintext", "output", "log"])  # fmt: skip
_PROMPT = re.compile(r"^\s*(?:(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s?[$#])|[$#])\s+(?=\S)")
_CONTINUATION = re.compile(r"\\\s*$")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
_CODE = re.compile(r"(`+)(.{1,2000}?)\1", re.DOTALL)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_ARGS_LOOK = re.compile(r"(?:^|\s)(?:-{1,2}[A-Za-z]|/\w)|\d")
_PROSE_RUN = re.compile(
    r"\b(?:run|execute|issue|type)\s+(?:the command\s+|this:\s*)?"
    r"(?P<cmd>[a-z][\w.+-]*(?:\s+\S+){1,20}?)"
    r"(?=\s+(?:to|so|and then|then|which|in order|from|as|afterwards|again|first|now|on the|"
    r"once)\b|[,;)]|\.(?:\s|$)|$)",
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_BARE = frozenset(["reboot", "poweroff", "halt"])
_ENGLISH = _words(
    "test time set type help at file host watch read wait join expand comm more less free w "
    "last who id date kill top true false export source cd echo printf which command sort cut "
    "tr head tail find install patch touch link unlink split shift break continue return exit "
    "local let trap nice route dir look make apply service history man info du df ln"
)
_PROSE_WORDS = _words(
    "and the is are was were has have hold holds not but which that this should would because "
    "when it its be been no nor also only so if we i you they there shows showed"
)
_NOT_SHELL_WARN = re.compile(r"\b(?:do not|don't|never|avoid|wrong|bad|unsafe|rejected|not "
                             r"recommended|would be reverted|will be reverted|dangerous)\b",
                             re.I)  # fmt: skip


@dataclass
class Extracted:
    """A command from the report or the shell log, with where it stands and what it is for."""

    text: str
    file: str
    line: int
    source: str
    """fence, prompt, inline, step, prose (report) or log."""
    role: str
    """recommended, warned, evidence, rollback, mention (report); ran, denied (log)."""
    cmds: list[Cmd]
    kinds: frozenset[str] = frozenset()
    """The kinds of the section it stands in (remediation, verification, ...)."""
    unit: Unit | None = None
    context: str = ""
    """The sentence, list item or block line around it."""
    context_line: int | None = None
    """The line the context starts on (None: the command's line)."""
    order: int = 0
    event: ShellEvent | None = None
    why: str = ""
    """Why it has its role, for reasons."""
    output: list[str] = field(default_factory=list)
    """Output lines shown under it in a console block."""
    lenient: bool = False
    """Read as a command only because it stands as code in a section of actions: its tool is
    not in the command knowledge (see `_looks_like_command`)."""

    @property
    def is_write(self) -> bool:
        """True when one of its simple commands changes state (beyond scratch files)."""
        return any(cmd.is_change for cmd in self.cmds)


def _known(name: str, knowledge: OpsKnowledge) -> bool:
    base = name.rsplit("/", 1)[-1]
    return knowledge.shell.entry(base) is not None


_TOOL_WORD = re.compile(r"^[a-z][a-z0-9_+-]{1,40}$")
_ACTION_KINDS = frozenset(["remediation", "verification", "rollback", "rejected"])
"""Sections whose code is commands to run (or not to run): there a tool the command knowledge
does not know (a site's own CLI, an owner's client such as `jailctl`) is still a command."""


def _unknown_tool_command(words: list[str]) -> bool:
    """`words` read as a command of a tool the knowledge does not know: a lower-case tool-like
    first word (no dots, no path, not an English word), then arguments that are not `= value`
    or `: value` (a setting shown, not a command)."""
    first = words[0]
    if len(words) < 2 or not _TOOL_WORD.match(first) or first in _ENGLISH:
        return False
    if first in _PROSE_WORDS or words[1][:1] in ("=", ":"):
        return False
    return not any(word.lower().strip(".,;:") in _PROSE_WORDS for word in words[1:4])


def _looks_like_command(
    text: str, knowledge: OpsKnowledge, *, plain: bool, lenient: bool = False
) -> bool:
    """True when `text` reads as a command. `lenient` (code in a section of actions): a tool
    the command knowledge does not know counts too, when it reads as one."""
    words = text.split()
    if not words:
        return False
    first = words[0]
    if not _known(first, knowledge):
        return lenient and not plain and _unknown_tool_command(words)
    if len(words) == 1:
        return first in _BARE and not plain
    if plain:
        if first in _ENGLISH or (not first.islower() and "/" not in first):
            return False
        if any(word.lower().strip(".,;:") in _PROSE_WORDS for word in words[1:]):
            return False
        return _ARGS_LOOK.search(" ".join(words[1:])) is not None
    return first not in ("test", "time", "type", "help", "at", "file", "more", "less", "w")


_HOST_PREFIX = re.compile(r"^(\s*)[a-z][a-z0-9_.-]{0,62}:\s+(?=\S)")


def _strip_prompt(line: str) -> tuple[str, bool]:
    match = _PROMPT.match(line)
    if match:
        return line[match.end() :], True
    return line, False


class _ReportReader:
    def __init__(self, report: Report, knowledge: OpsKnowledge) -> None:
        self.report = report
        self.knowledge = knowledge
        self.has_fix_section = report.has_section("remediation")
        self.found: list[Extracted] = []
        self.hosted: set[int] = set()
        """Lines whose command followed a `host: ` prefix that was taken off."""

    def strip_host(self, body: str, line: int) -> str:
        """`web: iptables -S` -> `iptables -S` (a command to run on the host `web`), when what
        follows the prefix is a command of a known tool."""
        match = _HOST_PREFIX.match(body)
        if match is None or _known(body.split()[0], self.knowledge):
            return body
        rest = body[match.end() :]
        if not _looks_like_command(strip_placeholders(rest), self.knowledge, plain=False):
            return body
        self.hosted.add(line)
        return rest

    def add(
        self,
        text: str,
        line: int,
        column: int,
        source: str,
        unit: Unit,
        context: str,
        warned: str | None,
        instructed: bool,
        output: list[str] | None = None,
        context_line: int | None = None,
    ) -> None:
        text = text.strip()
        if not text:
            return
        cmds = parse_line(text, self.knowledge)
        if not cmds:
            return
        role, why = self.role(unit, warned, instructed, source)
        lenient = not _known(text.split()[0], self.knowledge) or line in self.hosted
        self.found.append(
            Extracted(
                text=text,
                file=REPORT_FILE,
                line=line,
                source=source,
                role=role,
                cmds=cmds,
                kinds=unit.kinds,
                unit=unit,
                context=context.strip(),
                context_line=context_line,
                order=line * 1000 + column,
                why=why,
                output=output or [],
                lenient=lenient,
            )
        )

    def role(
        self, unit: Unit, warned: str | None, instructed: bool, source: str
    ) -> tuple[str, str]:
        kinds = unit.kinds
        where = _where(unit)
        if warned:
            return "warned", warned
        if "rejected" in kinds:
            return "warned", f"stands under {where}"
        if "rollback" in kinds:
            return "rollback", f"stands under {where} (a contingency, not the fix)"
        if "remediation" in kinds or "verification" in kinds:
            return "recommended", f"stands under {where}"
        if kinds & {"investigation", "root_cause"}:
            return "evidence", f"stands under {where} (what was seen or done)"
        if not self.has_fix_section:
            return "recommended", "the report has no remediation section; given as an action"
        if instructed or source in ("step", "fence"):
            return "recommended", "given as an instruction"
        return "mention", f"mentioned under {where} without an instruction"

    # -- units ----------------------------------------------------------------------------------

    def unit(self, unit: Unit) -> None:
        if unit.kind == "fence":
            self.fence(unit)
        else:
            self.text_unit(unit)

    def lead_warning(self, unit: Unit) -> str | None:
        lead = unit.lead
        if lead is not None and lead is not unit and cues.is_warning_lead(lead.text):
            return f"introduced by a warning ({_quote(lead.text)})"
        return None

    def fence(self, unit: Unit) -> None:
        lang = unit.lang
        console = lang in _CONSOLE_LANGS
        if not console and lang not in _SHELL_LANGS:
            return
        lead_warning = self.lead_warning(unit)
        instructed = unit.lead is not None and cues.is_instruction_before(unit.lead.text)
        lenient = bool(unit.kinds & _ACTION_KINDS) and not console
        comment_warning: str | None = None
        lines = unit.lines
        index = 0
        pending: tuple[str, int, int] | None = None
        output: list[str] = []

        def flush() -> None:
            nonlocal pending, output
            if pending is not None:
                text, number, _ = pending
                self.add(
                    text, number, 0, "fence", unit, text, lead_warning or comment_warning,
                    instructed, output,
                )  # fmt: skip
            pending, output = None, []

        while index < len(lines):
            number = unit.body_start + index
            raw = lines[index]
            stripped = raw.strip()
            index += 1
            if not stripped:
                continue
            body, prompted = _strip_prompt(raw)
            body = self.strip_host(body, number)
            root_prompt = (
                prompted and stripped.startswith("# ") and (console or lang in ("", "none"))
            )
            if stripped.startswith("#") and not root_prompt:
                flush()
                note = stripped.lstrip("#").strip()
                if _looks_like_command(strip_placeholders(note), self.knowledge, plain=False):
                    continue  # a commented-out command: not run, and not a new comment
                comment_warning = (
                    f"after the comment {_quote(note)}" if _NOT_SHELL_WARN.search(note) else None
                )
                continue
            if console and not prompted:
                if pending is not None:
                    output.append(stripped)
                continue
            if not _looks_like_command(
                strip_placeholders(body), self.knowledge, plain=False, lenient=lenient
            ):
                if pending is not None:
                    output.append(stripped)
                continue
            flush()
            text = body
            while _CONTINUATION.search(text) and index < len(lines):
                text = _CONTINUATION.sub(" ", text) + lines[index].strip()
                index += 1
            heredoc = _HEREDOC.search(text)
            if heredoc:
                terminator = heredoc.group(1)
                while index < len(lines):
                    text += "\n" + lines[index]
                    index += 1
                    if lines[index - 1].strip() == terminator:
                        break
            trailing = re.search(r"\s#\s+(.*)$", text) if "\n" not in text else None
            warned = lead_warning or comment_warning
            if trailing and _NOT_SHELL_WARN.search(trailing.group(1)):
                warned = f"after the comment {_quote(trailing.group(1))}"
            pending = (text, number, 0)
            if warned and warned != (lead_warning or comment_warning):
                self.add(text, number, 0, "fence", unit, text, warned, instructed)
                pending = None
        flush()

    def text_unit(self, unit: Unit) -> None:
        text = unit.text
        masked = cues.mask_code(text)
        cue_text = cues.normalise(masked)  # what the cues read: markdown decoration as spaces
        lead_warning = self.lead_warning(unit) if unit.kind == "item" else None
        row = unit.kind == "row"
        covered: list[tuple[int, int]] = []
        lenient = bool(unit.kinds & _ACTION_KINDS)
        for match in _CODE.finditer(text):
            body = match.group(2).strip()
            candidate, _ = _strip_prompt(body)
            candidate = self.strip_host(
                candidate, unit.body_start + text.count("\n", 0, match.start())
            )
            if not _looks_like_command(
                strip_placeholders(candidate), self.knowledge, plain=False, lenient=lenient
            ):
                continue
            covered.append((match.start(), match.end()))
            self.span(unit, text, cue_text, match.start(), match.end(), candidate, "inline",
                      lead_warning, row)  # fmt: skip
        offset = 0
        lines = unit.lines
        index = 0
        while index < len(lines):
            line_text = lines[index]
            start, end = offset, offset + len(line_text)
            offset = end + 1
            index += 1
            while _CONTINUATION.search(line_text) and index < len(lines) and "`" not in line_text:
                # A command continued over several lines (`\` at the end): one command.
                line_text = _CONTINUATION.sub(" ", line_text) + lines[index].strip()
                end = offset + len(lines[index])
                offset = end + 1
                index += 1
            if "`" in line_text:
                continue
            body = _LIST_MARKER.sub("", line_text, count=1)
            body, prompted = _strip_prompt(body)
            body = re.split(r"\s+(?:\u2014|\u2013|#)\s+", body, maxsplit=1)[0].strip()
            if _looks_like_command(strip_placeholders(body), self.knowledge, plain=not prompted):
                source = "prompt" if prompted else "step"
                column = start + line_text.find(body[:10]) if body else start
                self.span(unit, text, cue_text, column, column + len(body), body, source,
                          lead_warning, row)  # fmt: skip
                covered.append((start, end))
                continue
            for match in _PROSE_RUN.finditer(masked, start, end):
                cmd = text[match.start("cmd") : match.end("cmd")]
                if "`" in cmd or not _looks_like_command(cmd, self.knowledge, plain=True):
                    continue
                self.span(unit, text, cue_text, match.start("cmd"), match.end("cmd"), cmd, "prose",
                          lead_warning, row)  # fmt: skip

    def span(
        self,
        unit: Unit,
        text: str,
        masked: str,
        start: int,
        end: int,
        command: str,
        source: str,
        lead_warning: str | None,
        row: bool,
    ) -> None:
        begin, finish = cues.sentence_bounds(masked, start, end)
        before = cues.clause_before(masked, begin, start)
        after = cues.clause_after(masked, end, finish)
        warned = lead_warning
        if cues.is_warning_before(before):
            warned = f"after {_quote(before.strip())}"
        elif cues.is_warning_after(after):
            warned = f"followed by {_quote(after.strip())}"
        elif row and cues.WARN_BEFORE.search(masked):
            warned = f"in a table row that warns ({_quote(text)})"
        instructed = cues.is_instruction_before(before) or (
            unit.kind == "item" and unit.lead is not None
            and cues.is_instruction_before(unit.lead.text)
        )  # fmt: skip
        line = unit.body_start + text.count("\n", 0, start)
        context = text[begin:finish]
        # The sentence may begin lines above the command: quotes of it cite where it begins.
        opening = begin + len(context) - len(context.lstrip())
        context_line = unit.body_start + text.count("\n", 0, opening)
        self.add(
            command, line, start, source, unit, context, warned, instructed,
            context_line=context_line,
        )  # fmt: skip


def _where(unit: Unit) -> str:
    for section in reversed(unit.sections):
        if section.kinds:
            return f"the heading {section.title!r}"
    if unit.label:
        return f"the label {unit.label!r}"
    return "no heading"


def _quote(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 3] + "..."
    return repr(flat)


def report_commands(
    report: str | Report, knowledge: OpsKnowledge
) -> tuple[Report, list[Extracted]]:
    """The parsed report and every command in it, in document order, each with its role."""
    parsed = parse_report(report) if isinstance(report, str) else report
    reader = _ReportReader(parsed, knowledge)
    for unit in parsed.units:
        reader.unit(unit)
    reader.found.sort(key=lambda item: item.order)
    return parsed, reader.found


def log_commands(events: Sequence[ShellEvent], knowledge: OpsKnowledge) -> list[Extracted]:
    """Every command of the shell log: `ran`, or `denied` when the gate refused it."""
    found = []
    for index, event in enumerate(events):
        found.append(
            Extracted(
                text=event.command,
                file=LOG_FILE,
                line=index + 1,
                source="log",
                role="denied" if event.denied else "ran",
                cmds=parse_line(event.command, knowledge),
                order=index,
                event=event,
                why="refused by the gate: it did not run" if event.denied else "run by the agent",
            )
        )
    return found
