"""The judge's prompt: a versioned jinja template, and the run's data wrapped so it cannot escape.

Every artifact of the run (the scenario prompt, the report, the shell log, the snapshot, the
expected root cause) is placed between tags that carry a nonce, ``<report-NONCE>`` ...
``</report-NONCE>``. Inside the data:

- every occurrence of the nonce is replaced by ``[nonce]``, so the real closing tag cannot
  appear in it;
- a ``<`` (or a look-alike: fullwidth, angle quotation marks, angle brackets, ...) before a
  reserved tag name (also written with look-alike letters) becomes ``&lt;`` (or
  ``&#x...;``), so no fake tag reads as one.

The nonce is the hash of the run's data and the template, so the same run gives the same prompt
(and the response cache answers it), while the author of the data cannot know it in advance.
Long artifacts are shortened, keeping their head and tail, with a marker that carries the nonce.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import StrictUndefined, TemplateError, meta
from jinja2.sandbox import SandboxedEnvironment

from agentledger.errors import InputError
from agentledger.identity import canonical_json, sha256_bytes
from agentledger.judges.base import CriteriaPack, Criterion, JudgeInput
from agentledger.judges.llm.quotes import Document
from agentledger.judges.llm.steps import TRACE_LIMITS, RenderedTrace, TraceLimits, render_trace
from agentledger.records import ShellEvent
from agentledger.records.trace import TRACE, TraceStep, steps_from_shell_log

if TYPE_CHECKING:
    from agentledger.judges.llm.examples import FewShotExample

__all__ = [
    "DEFAULT_TEMPLATE",
    "LIMITS",
    "RESERVED_TAGS",
    "TEMPLATE_DIR",
    "Artifact",
    "JudgePrompt",
    "JudgeTemplate",
    "Limits",
    "neutralise",
    "render_prompt",
    "render_shell_log",
    "shipped_templates",
]

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "data" / "judge_templates"
DEFAULT_TEMPLATE = "remediation-v1"
RESERVED_TAGS = (
    "report",
    "shell-log",
    "snapshot",
    "scenario-prompt",
    "expected-root-cause",
    "trace-steps",
)
"""The tag names the prompt uses for data; escaped wherever they follow a ``<`` in the data."""


@dataclass(frozen=True)
class Limits:
    """Characters of each artifact shown to the model; longer ones keep their head and tail."""

    report: int = 40_000
    shell_log: int = 30_000
    command_output: int = 2_000
    """Per stdout or stderr of one command, before the whole log's limit."""
    snapshot: int = 20_000
    scenario_prompt: int = 6_000
    expected: int = 4_000


LIMITS = Limits()

# A "<" or a character that reads like one, and letters that read like Latin ones.
_OPENERS = "<\uff1c\ufe64\u2039\u3008\u27e8\u276e\u02c2\u2329\u1438\u226a\u00ab\u276c\u2770"
_LOOKALIKES = str.maketrans(
    {
        "\u0430": "a",
        "\u0435": "e",
        "\u043e": "o",
        "\u0440": "p",
        "\u0441": "c",
        "\u0455": "s",
        "\u0456": "i",
        "\u0445": "x",
        "\u0443": "y",
        "\u0442": "t",
        "\u043d": "h",
        "\u043a": "k",
        "\u03bf": "o",
        "\u03c1": "p",
        "\u03b5": "e",
        "\u03c4": "t",
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00ad": "",
        "\u200b": "",
        "\u200c": "",
        "\u200d": "",
        "\u2060": "",
        "\ufeff": "",
    }
)
_INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
_TAG_START = re.compile(rf"[{_OPENERS}](?=([\s/\u2044\u2215\uff0f{_INVISIBLE}]*)(\S{{1,40}}))")
_RESERVED_SKELETONS = tuple(name.replace("-", "") for name in RESERVED_TAGS)


def _skeleton(word: str) -> str:
    folded = unicodedata.normalize("NFKC", word).translate(_LOOKALIKES).casefold()
    return re.sub(r"[^a-z]", "", folded)


def neutralise(text: str, nonce: str) -> str:
    """`text` with the nonce removed and every tag-like use of a reserved name escaped."""
    text = re.sub(re.escape(nonce), "[nonce]", text, flags=re.IGNORECASE)

    def escape(match: re.Match[str]) -> str:
        if not _skeleton(match.group(2)).startswith(_RESERVED_SKELETONS):
            return match.group(0)
        opener = match.group(0)
        return "&lt;" if opener == "<" else f"&#x{ord(opener):x};"

    return _TAG_START.sub(escape, text)


def _shorten(text: str, limit: int, nonce: str, what: str) -> tuple[str, int]:
    """`text` cut to about `limit` characters (2/3 head, 1/3 tail, at line ends) with a marker."""
    if len(text) <= limit:
        return text, 0
    head_end = limit * 2 // 3
    newline = text.rfind("\n", max(0, head_end - 400), head_end)
    head_end = newline if newline != -1 else head_end
    tail_start = len(text) - (limit - head_end)
    newline = text.find("\n", tail_start, tail_start + 400)
    tail_start = newline + 1 if newline != -1 else tail_start
    cut = tail_start - head_end
    marker = f"\n[cut-{nonce}: {cut:,} characters of {what} are not shown here]\n"
    return text[:head_end] + marker + text[tail_start:], cut


@dataclass(frozen=True)
class Artifact:
    """One piece of the run as the model sees it: its tags and its neutralised text."""

    key: str
    """report, shell_log, snapshot, scenario_prompt or expected."""
    title: str
    file: str
    """The file evidence from it names (report.md, shell_audit.jsonl, ...)."""
    tag: str
    text: str
    """Neutralised, and shortened when long."""
    cut: int = 0
    """Characters not shown (0: shown whole)."""

    @property
    def open(self) -> str:
        """The opening delimiter."""
        return f"<{self.tag}>"

    @property
    def close(self) -> str:
        """The closing delimiter."""
        return f"</{self.tag}>"

    @property
    def block(self) -> str:
        """The delimited data, as placed in the prompt."""
        return f"{self.open}\n{self.text.rstrip()}\n{self.close}"


@dataclass(frozen=True)
class JudgePrompt:
    """A rendered prompt, and what is needed to read the answer to it."""

    system: str
    user: str
    nonce: str
    criteria: tuple[Criterion, ...]
    """The criteria asked about (those whose requirements the run meets)."""
    diagnosis: bool
    """True when the diagnosis is asked about."""
    artifacts: tuple[Artifact, ...]
    documents: dict[str, Document] = field(default_factory=dict)
    """What evidence may be quoted from, by file name, in full."""
    trace: RenderedTrace | None = None
    """The trace as shown, with each step's full block (templates that show the trace)."""
    trace_stored: bool = False
    """True when the trace is the run's trace.jsonl; False when made from its shell log."""


@dataclass(frozen=True)
class JudgeTemplate:
    """A prompt template: a name, its text, and its hash (part of the judge's id)."""

    name: str
    text: str

    @property
    def sha256(self) -> str:
        """sha256 of the template's text."""
        return sha256_bytes(self.text.encode("utf-8"))

    @classmethod
    def load(cls, name_or_path: str | Path = DEFAULT_TEMPLATE) -> JudgeTemplate:
        """A shipped template by name, or a template file (InputError when neither)."""
        shipped = shipped_templates()
        if isinstance(name_or_path, str) and name_or_path in shipped:
            path, name = shipped[name_or_path], name_or_path
        else:
            path = Path(name_or_path)
            name = path.stem
            if not path.is_file():
                raise InputError(
                    f"no judge template {str(name_or_path)!r}: not a file, and not a shipped "
                    f"template ({', '.join(shipped)})"
                )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"judge template {path}: cannot be read: {exc}") from None
        template = cls(name, text)
        _ = template.compiled  # parsed now, so a bad template fails before any run
        return template

    @cached_property
    def compiled(self) -> Any:
        """The jinja template; InputError when it does not parse or lacks a block."""
        environment = SandboxedEnvironment(
            undefined=StrictUndefined,
            autoescape=False,  # a prompt, not HTML: the data is neutralised beforehand
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )
        try:
            compiled = environment.from_string(self.text)
        except TemplateError as exc:
            raise InputError(f"judge template {self.name!r} does not parse: {exc}") from None
        missing = [block for block in ("system", "user") if block not in compiled.blocks]
        if missing:
            raise InputError(
                f"judge template {self.name!r} has no {{% block {missing[0]} %}}: "
                "a template needs a system block and a user block"
            )
        return compiled

    @cached_property
    def shows_trace(self) -> bool:
        """True when the template places the run's trace (uses the variable `trace`)."""
        environment = SandboxedEnvironment()
        return "trace" in meta.find_undeclared_variables(environment.parse(self.text))

    def render(self, context: dict[str, Any]) -> tuple[str, str]:
        """The system and user messages for `context`."""
        compiled = self.compiled
        try:
            bound = compiled.new_context(context)
            system = "".join(compiled.blocks["system"](bound)).strip()
            user = "".join(compiled.blocks["user"](bound)).strip()
        except TemplateError as exc:
            raise InputError(f"judge template {self.name!r} failed to render: {exc}") from None
        return system, user


def shipped_templates() -> dict[str, Path]:
    """The templates that come with agentledger, by name."""
    return {path.stem: path for path in sorted(TEMPLATE_DIR.glob("*.jinja"))}


def _event_header(number: int, event: ShellEvent) -> str:
    decision = event.decision or ("denied" if event.denied else "-")
    if event.denied and event.reason:
        decision += f" ({event.reason})"
    ran = "not run" if event.exit_code is None else f"exit {event.exit_code}"
    if event.timed_out:
        ran += ", timed out"
    return f"L{number} [{decision}, {ran}] $ "


def _indented(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def render_shell_log(
    events: list[ShellEvent], *, nonce: str | None = None, limits: Limits | None = None
) -> tuple[str, list[int], list[int]]:
    """The log compactly, one block per command; with the offsets and jsonl line of each block.

    With a nonce, data is neutralised and each output shortened to the limits (what the model
    sees); without, it is the full text that evidence is checked against.
    """
    parts: list[str] = []
    starts: list[int] = []
    numbers: list[int] = []
    offset = 0

    def clean(text: str) -> str:
        return neutralise(text, nonce) if nonce else text

    for number, event in enumerate(events, start=1):
        command = clean(event.command).replace("\n", "\n    ")
        lines = [clean(_event_header(number, event)) + command]
        for stream in ("stdout", "stderr"):
            output = getattr(event, stream)
            if output and output.strip():
                shown = clean(output.rstrip("\n"))
                if nonce and limits:
                    shown, _ = _shorten(
                        shown, limits.command_output, nonce, f"this {stream} (line {number})"
                    )
                lines.append(f"  {stream}:\n" + _indented(shown, "    "))
        block = "\n".join(lines) + "\n"
        starts.append(offset)
        numbers.append(number)
        parts.append(block)
        offset += len(block)
    return "".join(parts), starts, numbers


def _nonce(
    run: JudgeInput,
    template: JudgeTemplate,
    diagnosis: bool,
    trace: Sequence[TraceStep] | None = None,
) -> str:
    data: dict[str, Any] = {
        "report": run.report,
        "events": [event.model_dump(mode="json") for event in run.events or []],
        "snapshot": list(run.snapshot) if run.snapshot else None,
        "prompt": run.prompt,
        "expected": run.expected.root_cause if run.expected and diagnosis else None,
        "template": template.sha256,
    }
    if trace is not None:  # only for templates that show it: other prompts stay as they were
        data["trace"] = [step.model_dump(mode="json", exclude_none=True) for step in trace]
    return sha256_bytes(canonical_json(data)).removeprefix("sha256:")[:16]


def _artifact(
    key: str, title: str, file: str, text: str, limit: int, nonce: str, tag: str
) -> Artifact:
    shown, cut = _shorten(neutralise(text, nonce), limit, nonce, file)
    return Artifact(key, title, file, f"{tag}-{nonce}", shown, cut)


def render_prompt(
    pack: CriteriaPack,
    criteria: list[Criterion],
    run: JudgeInput,
    template: JudgeTemplate,
    *,
    diagnosis: bool,
    limits: Limits = LIMITS,
    examples: Sequence[FewShotExample] = (),
    trace_limits: TraceLimits = TRACE_LIMITS,
) -> JudgePrompt:
    """The prompt asking about `criteria` (and the diagnosis) of `run`.

    `examples` (labelled runs of a split's dev part) come first, each as its own delimited
    report; what the label says is in the title, outside the data, written by agentledger."""
    steps, stored = _trace_of(run) if template.shows_trace else (None, False)
    nonce = _nonce(run, template, diagnosis, steps)
    artifacts = _example_artifacts(examples, limits, nonce)
    own, documents, missing = _run_artifacts(run, limits, nonce, diagnosis=diagnosis)
    artifacts += own
    trace_artifact: Artifact | None = None
    rendered: RenderedTrace | None = None
    if steps is not None:
        rendered = render_trace(steps, lambda text: neutralise(text, nonce), nonce, trace_limits)
        trace_artifact = _trace_artifact(rendered, stored, nonce)
    elif template.shows_trace:
        missing.append(TRACE)
    system, user = template.render(
        {
            "pack": pack,
            "criteria": criteria,
            "criterion_ids": [criterion.id for criterion in criteria],
            "diagnosis": diagnosis,
            "artifacts": artifacts,
            "missing": missing,
            "nonce": nonce,
            "any_cut": any(artifact.cut for artifact in artifacts)
            or bool(trace_artifact and trace_artifact.cut),
            "trace": trace_artifact,
            "trace_stored": stored,
            "trace_windowed": bool(trace_artifact and trace_artifact.cut),
        }
    )
    return JudgePrompt(
        system=system,
        user=user,
        nonce=nonce,
        criteria=tuple(criteria),
        diagnosis=diagnosis,
        artifacts=tuple(artifacts) + ((trace_artifact,) if trace_artifact else ()),
        documents=documents,
        trace=rendered,
        trace_stored=stored,
    )


def _run_artifacts(
    run: JudgeInput, limits: Limits, nonce: str, *, diagnosis: bool
) -> tuple[list[Artifact], dict[str, Document], list[str]]:
    """The run's own artifacts, each delimited and cut to its limit (the task, the report, the
    shell log, the snapshot, and for a diagnosis the expected root cause); the documents a
    quote may cite, by name; and the names of those the run lacks."""
    artifacts: list[Artifact] = []
    documents: dict[str, Document] = {}
    missing: list[str] = []
    if run.prompt and run.prompt.strip():
        artifacts.append(
            _artifact(
                "scenario_prompt",
                "The task the agent was given",
                "PROMPT.txt",
                run.prompt,
                limits.scenario_prompt,
                nonce,
                "scenario-prompt",
            )
        )
        documents["PROMPT.txt"] = Document.of_text("PROMPT.txt", run.prompt)
    if run.has("report") and run.report is not None:
        artifacts.append(
            _artifact(
                "report",
                "The agent's report",
                "report.md",
                run.report,
                limits.report,
                nonce,
                "report",
            )
        )
        documents["report.md"] = Document.of_text("report.md", run.report)
    else:
        missing.append("report.md")
    if run.events is not None:
        artifacts.append(_shell_log(run.events, limits, nonce))
        full, starts, numbers = render_shell_log(run.events)
        documents["shell_audit.jsonl"] = Document(
            "shell_audit.jsonl", full, tuple(starts) or (0,), tuple(numbers) or (1,)
        )
    else:
        missing.append("shell_audit.jsonl")
    if run.snapshot is not None:
        name, snapshot = run.snapshot
        artifacts.append(
            _artifact(
                "snapshot",
                "A snapshot of the infrastructure taken for this run",
                name,
                snapshot,
                limits.snapshot,
                nonce,
                "snapshot",
            )
        )
        documents[name] = Document.of_text(name, snapshot)
    else:
        missing.append("snapshot")
    if diagnosis and run.expected is not None:
        artifacts.append(
            _artifact(
                "expected",
                "The expected root cause, from the scenario (not written by the agent)",
                "scenario.yaml",
                run.expected.root_cause,
                limits.expected,
                nonce,
                "expected-root-cause",
            )
        )
    return artifacts, documents, missing


def _example_artifacts(
    examples: Sequence[FewShotExample], limits: Limits, nonce: str
) -> list[Artifact]:
    """The report of each labelled example, what its label says in the title."""
    return [
        _artifact(
            f"example_{number}",
            f"Example {number}, another run (not the one to judge), which a person "
            f"{example.label_words()}. Its report",
            f"example-{number}/report.md",
            example.report,
            limits.report,
            nonce,
            f"example-{number}",
        )
        for number, example in enumerate(examples, start=1)
    ]


def _shell_log(events: list[ShellEvent], limits: Limits, nonce: str) -> Artifact:
    """The commands the agent ran, as the judge reads them (shortened past the limit)."""
    shown_log, _, _ = render_shell_log(events, nonce=nonce, limits=limits)
    if not events:
        shown_log = "(the agent ran no commands)"
    text, cut = _shorten(shown_log.rstrip("\n"), limits.shell_log, nonce, "shell_audit.jsonl")
    return Artifact(
        "shell_log",
        "The commands the agent ran (Ln is line n of the file)",
        "shell_audit.jsonl",
        f"shell-log-{nonce}",
        text,
        cut,
    )


def _trace_artifact(rendered: RenderedTrace, stored: bool, nonce: str) -> Artifact:
    """The run's steps as shown; what a window left out counted as cut."""
    shown = rendered.text.rstrip("\n") or "(the trace holds no steps)"
    whole = sum(len(document.text) for document in rendered.steps.values())
    left_out = max(0, whole - len(shown)) if rendered.windowed else 0
    return Artifact(
        "trace",
        "The run's steps, in order (Sn is step n)",
        TRACE if stored else "trace (made from shell_audit.jsonl, PROMPT.txt and report.md)",
        f"trace-steps-{nonce}",
        shown,
        left_out,
    )


def _trace_of(run: JudgeInput) -> tuple[Sequence[TraceStep] | None, bool]:
    """The run's trace, or one made from its shell log, prompt and report; and which it is."""
    if run.trace is not None:
        return run.trace, True
    if run.events is None:
        return None, False
    report = run.report if run.has("report") else None
    return steps_from_shell_log(run.prompt, run.events, report), False
