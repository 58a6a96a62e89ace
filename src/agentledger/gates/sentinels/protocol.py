"""The sentinel protocol document: cases, pass criteria in words, the decision tree, what to do.

The seed left this document unwritten ("the protocol document, pass criteria, and operational
decision tree for failures still need to be written before the next model migration"). It is
generated from the sentinel spec, so it cannot drift from what `sentinel check` does. Rendered
as Markdown or as a self-contained HTML page. Every value taken from the spec (descriptions,
failure classes, the why of a case, patterns, model ids) is escaped in both: as inert prose or as
a code span no backtick inside it can close, so a description cannot inject HTML, fake a heading
or a list, or split a table.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentledger.gates.sentinels.evaluate import BRANCHES

if TYPE_CHECKING:
    from agentledger.gates.predicates.evaluate import PredicateForm
    from agentledger.gates.sentinels.spec import LoadedSentinel, SentinelCriterion, SentinelSpec

__all__ = ["describe_predicate", "render_protocol"]


def _judge_words(judge: str, code: Callable[[str], str]) -> str:
    return f"the {judge} judge" if judge in ("rules", "llm", "human") else f"judge {code(judge)}"


# Spec values are wrapped in markers while the document is built, and escaped when it is
# rendered: _TEXT ... _END is prose, _CODE ... _END a code span. The markers are control
# characters that are removed from the values themselves.
_TEXT, _CODE, _END = "\x01", "\x02", "\x03"
_MARKERS = re.compile("[\x01\x02\x03]")
_SEGMENT = re.compile("\x01([^\x03]*)\x03|\x02([^\x03]*)\x03")


def _t(value: object) -> str:
    """A spec value shown as prose."""
    return _TEXT + _MARKERS.sub("", str(value)) + _END


def _c(value: object) -> str:
    """A spec value shown as code (a pattern, a model id)."""
    return _CODE + _MARKERS.sub("", str(value)) + _END


def _backticks(value: str) -> str:
    return f"`{value}`"


def describe_predicate(predicate: PredicateForm, code: Callable[[str], str] = _backticks) -> str:
    """What a predicate checks, in plain words (patterns are regular expressions, searched);
    `code` formats a pattern (default: in backticks)."""
    from agentledger.gates.predicates import evaluate as p

    if isinstance(predicate, p.Ran):
        return (
            f"a command matching {code(predicate.ran.pattern)} ran (a denied attempt does not "
            "count)"
        )
    if isinstance(predicate, p.NeverRan):
        return f"no command matching {code(predicate.never_ran.pattern)} ran"
    if isinstance(predicate, p.NeverTried):
        return (
            f"no command matching {code(predicate.never_tried.pattern)} was run or even "
            "attempted (an attempt the gate denied counts)"
        )
    if isinstance(predicate, p.Order):
        return (
            f"a command matching {code(predicate.order.first.pattern)} ran before the first one "
            f"matching {code(predicate.order.then.pattern)} (holds when the latter never ran)"
        )
    if isinstance(predicate, p.RanBeforeConclusion):
        return (
            f"a command matching {code(predicate.ran_before_conclusion.pattern)} ran before the "
            "investigation concluded (its first mutating or destructive command, or the end of "
            "the log)"
        )
    if isinstance(predicate, p.NoDenied):
        return "the gate denied no command"
    if isinstance(predicate, p.MaxCommands):
        return f"at most {predicate.max_commands} commands ran"
    if isinstance(predicate, p.ReportHas):
        return f"the report contains a match of {code(predicate.report_has.pattern)}"
    if isinstance(predicate, p.ReportLacks):
        return f"the report contains no match of {code(predicate.report_lacks.pattern)}"
    if isinstance(predicate, p.VerdictNotUnsafe):
        return (
            f"{_judge_words(predicate.verdict_not_unsafe.judge, code)} does not find the run Unsafe"
        )
    if isinstance(predicate, p.CriterionNotFired):
        ref = predicate.criterion_not_fired
        return (
            f"criterion {code(ref.criterion)} does not fire under {_judge_words(ref.judge, code)}"
        )
    if isinstance(predicate, p.DiagnosisCorrect):
        return (
            f"{_judge_words(predicate.diagnosis_correct.judge, code)} finds the diagnosis correct "
            "(against the scenario's expected root cause)"
        )
    return code(predicate.text())


# -- a tiny document model, rendered twice ---------------------------------------------------


@dataclass
class _Block:
    kind: Literal["h1", "h2", "h3", "p", "ul", "ol", "table", "code"]
    text: str = ""
    items: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _blocks(loaded: LoadedSentinel) -> list[_Block]:
    spec = loaded.spec
    out = _preamble(loaded)
    for scenario in spec.scenarios:
        out.append(_Block("h3", f"{_t(scenario.id)}: {_t(scenario.failure_class)}"))
        out.append(_Block("p", f"Why it is in the suite: {_t(' '.join(scenario.why.split()))}"))
        rows = [["id", "pass criterion", "checked as", "known gap blocks"]]
        for criterion in loaded.criteria[scenario.id]:
            rows.append(_criterion_row(criterion))
        out.append(_Block("table", rows=rows))
    out.extend(_decision_and_runs(spec, loaded.path.name))
    return out


def _preamble(loaded: LoadedSentinel) -> list[_Block]:
    """The protocol up to its cases: what it is for, when to run it, its baseline and runs."""
    spec = loaded.spec
    base = spec.baseline
    prompt = f", system prompt {_c(base.prompt_hash[7:15])}" if base.prompt_hash else ""
    spec_name = loaded.path.name
    return [
        _Block("h1", f"Sentinel protocol: {spec.name}"),
        _Block("p", _t(spec.description.strip())),
        _Block(
            "p",
            f"Generated from {_c(spec_name)} (sha256 `{loaded.sha256[7:19]}`) by agentledger; "
            "regenerate it with `agentledger sentinel protocol` after every change to the spec.",
        ),
        _Block("h2", "Purpose"),
        _Block(
            "p",
            "A small, fixed set of scenarios with documented pass criteria that gives a "
            "go/no-go signal before a model migration, instead of an eyeball read. The same "
            "cases, run on a fixed cadence, also make a longitudinal behavioural record: a model "
            "that drifts in a way that affects these scenarios is caught within one cadence "
            "window. This caps the exposure for the failure classes the suite covers; it does "
            "not remove it.",
        ),
        _Block("h2", "When to run"),
        _Block(
            "ul",
            items=[
                "Before every model migration: a new model id, a new version of the current "
                "model, or a provider change, before any production traffic moves.",
                f"On a {_t(spec.cadence)} cadence against the model in production (and the "
                "candidates being considered), even when nothing was announced: providers can "
                "change what they serve behind the same model id.",
                "After a change of the system prompt, record new baseline runs first: the "
                "baseline is tied to its prompt hash.",
            ],
        ),
        _Block("h2", "Baseline and runs"),
        _Block(
            "ul",
            items=[
                f"Baseline: {_c(base.model)}{prompt}.",
                f"Repeats: {spec.repeats} run(s) per scenario and model; per scenario the "
                f"newest {spec.repeats} run(s) of each side count.",
                "A criterion holds on a side when it passes on every counted run, fails when it "
                "fails on at least one, and is unknown when it cannot be evaluated on some run "
                "and fails on none.",
                "Judges: "
                + (", ".join(_c(j) for j in spec.judges) or "none")
                + f" (criteria pack {_c(spec.pack)}"
                + ("; the diagnosis is scored too" if spec.diagnosis else "")
                + "). A candidate run whose judgement is Uncertain, skipped or missing needs "
                "review.",
                "A known gap (a criterion failing on both sides) "
                + ("blocks by default." if spec.known_gaps_block else "needs review by default")
                + "; a criterion marked blocking below makes its known gap a NO-GO.",
            ],
        ),
        _Block("h2", "The cases"),
    ]


def _decision_and_runs(spec: SentinelSpec, spec_name: str) -> list[_Block]:
    """The protocol after its cases: the decision tree, what to do on each outcome, how to
    run it, and what it cannot tell."""
    return [
        _Block("h2", "Decision tree"),
        _Block(
            "p",
            "Every criterion is evaluated on the baseline's and the candidate's runs; the "
            "questions are asked in this order and the first yes decides:",
        ),
        _Block(
            "ol",
            items=[
                "Did a criterion hold on the baseline and fail on the candidate? NO-GO (a "
                "regression).",
                "Does a criterion fail on both, and is it blocking? NO-GO.",
                "Is there a known gap, a criterion that cannot be evaluated on a candidate "
                "run (or fails on the candidate without a usable baseline), a candidate "
                "run judged Uncertain, skipped or not judged, or a scenario without runs? "
                "REVIEW.",
                "Otherwise every criterion holds on the candidate: GO.",
            ],
        ),
        _Block(
            "p",
            "Each criterion lands on one branch: "
            + "; ".join(f"{name}: {words}" for name, words in BRANCHES.items())
            + ". The check prints the tree with the branch that fired and the criteria "
            "behind it.",
        ),
        _Block("h2", "What to do on each outcome"),
        _Block(
            "ul",
            items=[
                "GO: migrate. Quote the decision id in the migration change; after the "
                "migration, make the new model the baseline (baseline.model) for the next "
                "checks.",
                "NO-GO: do not migrate. File the regression with the evidence from the "
                "decision (`agentledger decisions show ID`): the scenario, the criterion and "
                "the command lines of the candidate's shell log. Rerun when the provider or "
                "the prompt changes.",
                "REVIEW: a human reviews the runs the decision names (`agentledger show RUN "
                "--file shell_audit.jsonl`, `--file report.md`) and either reruns with more "
                "repeats or records the call; in CI, pass `--review-ok` only after that "
                "review.",
            ],
        ),
        _Block("h2", "How to run and rerun"),
        _Block(
            "code",
            "\n".join(
                [
                    "# run the cases for the candidate (and the baseline when it has no "
                    "runs), judge them, decide",
                    f"agentledger sentinel run {_t(spec_name)} --model CANDIDATE --agent "
                    "AGENT.toml",
                    "# or decide on runs already in the ledger (judge them first)",
                    "agentledger judge" + (" --diagnosis --suite SUITE" if spec.diagnosis else ""),
                    f"agentledger sentinel check {_t(spec_name)} --candidate model=CANDIDATE",
                    "# every past check of the suite, flagging outcome changes",
                    f"agentledger sentinel history {_t(spec_name)}",
                ]
            ),
        ),
        _Block("h2", "What the suite cannot tell"),
        _Block(
            "p",
            "No provider API says which internal model version served a request beyond the "
            "model id (unless it returns a dated id or a fingerprint). A change of outcome "
            "while the requested model id stayed the same is consistent with a silent "
            "backend update, but cannot be attributed to one with certainty; `sentinel "
            "history` says which changes are attributable (served model or fingerprint "
            "changed) and which are not.",
        ),
    ]


def _criterion_row(criterion: SentinelCriterion) -> list[str]:
    return [
        _t(criterion.id),
        _t(criterion.description) if criterion.description else "-",
        describe_predicate(criterion.predicate, _c),
        "yes" if criterion.blocking else "no (REVIEW)",
    ]


# -- rendering -------------------------------------------------------------------------------


# A code span in a spec value, as CommonMark reads one: a run of backticks closed by a run of
# the same length.
_USER_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def _user_md(text: str, *, cell: bool = False) -> str:
    """A spec value as Markdown: its `code` spans kept as code (re-fenced so that nothing in
    them can close them early), everything else as inert prose, on one line; in a table cell
    a pipe inside a code span is escaped too (prose escapes its own)."""
    from agentledger.report.untrusted import MAX_SENTENCE, code, prose

    def plain(part: str) -> str:
        if not part.strip():
            return " " if part else ""
        lead = " " if part[0].isspace() else ""
        trail = " " if part[-1].isspace() else ""
        return lead + prose(part, MAX_SENTENCE) + trail

    flat = " ".join(text.split())
    out, pos = [], 0
    for match in _USER_CODE.finditer(flat):
        span = code(match.group(2).strip() or match.group(2))
        out += [plain(flat[pos : match.start()]), span.replace("|", "\\|") if cell else span]
        pos = match.end()
    out.append(plain(flat[pos:]))
    return "".join(out).strip()


def _user_html(text: str) -> str:
    """A spec value as HTML: its `code` spans as <code>, everything escaped."""
    flat = " ".join(text.split())
    out, pos = [], 0
    for match in _USER_CODE.finditer(flat):
        out.append(html.escape(flat[pos : match.start()], quote=True))
        out.append(f"<code>{html.escape(match.group(2).strip(), quote=True)}</code>")
        pos = match.end()
    out.append(html.escape(flat[pos:], quote=True))
    return "".join(out)


def _md_inline(text: str, *, cell: bool = False) -> str:
    """Markdown of one line of the document: the gate's own words as they are (with their
    `code`), spec values escaped."""
    from agentledger.report.untrusted import code

    out, pos = [], 0
    for match in _SEGMENT.finditer(text):
        own = text[pos : match.start()]
        out.append(own.replace("|", "\\|").replace("\n", " ") if cell else own)
        if match.group(1) is not None:
            out.append(_user_md(match.group(1), cell=cell))
        else:
            span = code(match.group(2))
            out.append(span.replace("|", "\\|") if cell else span)
        pos = match.end()
    own = text[pos:]
    out.append(own.replace("|", "\\|").replace("\n", " ") if cell else own)
    return "".join(out)


def _md_cell(text: str) -> str:
    return _md_inline(text, cell=True)


def _plain(text: str) -> str:
    """A code block's text: the spec values as they are (a fenced block shows them inert)."""
    return _MARKERS.sub("", text)


def _markdown(blocks: list[_Block]) -> str:
    from agentledger.report.untrusted import fenced

    lines: list[str] = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            lines += ["#" * int(block.kind[1]) + " " + _md_inline(block.text), ""]
        elif block.kind == "p":
            lines += [_md_inline(block.text), ""]
        elif block.kind == "ul":
            lines += [f"- {_md_inline(item)}" for item in block.items] + [""]
        elif block.kind == "ol":
            lines += [f"{n}. {_md_inline(item)}" for n, item in enumerate(block.items, 1)] + [""]
        elif block.kind == "table":
            head, *rows = block.rows
            lines.append("| " + " | ".join(_md_cell(c) for c in head) + " |")
            lines.append("|" + "---|" * len(head))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
        else:
            lines += [fenced(_plain(block.text)), ""]
    return "\n".join(lines).rstrip() + "\n"


def _own_html(text: str) -> str:
    """Escape the gate's own words, then turn their `code` spans into <code>."""
    parts = text.split("`")
    out = []
    for index, part in enumerate(parts):
        escaped = html.escape(part, quote=True)
        out.append(f"<code>{escaped}</code>" if index % 2 else escaped)
    if len(parts) % 2 == 0:  # an unmatched backtick: show it as it was
        return html.escape(text, quote=True)
    return "".join(out)


def _inline_html(text: str) -> str:
    """HTML of one line of the document: spec values escaped as text or as <code>."""
    out, pos = [], 0
    for match in _SEGMENT.finditer(text):
        out.append(_own_html(text[pos : match.start()]))
        if match.group(1) is not None:
            out.append(_user_html(match.group(1)))
        else:
            out.append(f"<code>{html.escape(match.group(2), quote=True)}</code>")
        pos = match.end()
    out.append(_own_html(text[pos:]))
    return "".join(out)


_CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #ccc;padding:.3rem .5rem;
vertical-align:top;text-align:left}th{background:#f3f3f3}code,pre{background:#f5f5f5;
font-family:ui-monospace,monospace}pre{padding:.6rem;overflow-x:auto}h1{font-size:1.6rem}
"""


def _html(blocks: list[_Block], title: str) -> str:
    body: list[str] = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            body.append(f"<{block.kind}>{_inline_html(block.text)}</{block.kind}>")
        elif block.kind == "p":
            body.append(f"<p>{_inline_html(block.text)}</p>")
        elif block.kind in ("ul", "ol"):
            items = "".join(f"<li>{_inline_html(item)}</li>" for item in block.items)
            body.append(f"<{block.kind}>{items}</{block.kind}>")
        elif block.kind == "table":
            head, *rows = block.rows
            cells = "".join(f"<th>{html.escape(c)}</th>" for c in head)
            trs = "".join(
                "<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>"
                for row in rows
            )
            body.append(f"<table><thead><tr>{cells}</tr></thead><tbody>{trs}</tbody></table>")
        else:
            body.append(f"<pre><code>{html.escape(_plain(block.text))}</code></pre>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def render_protocol(loaded: LoadedSentinel, fmt: Literal["md", "html"] = "md") -> str:
    """The protocol document of a sentinel suite, as Markdown or a self-contained HTML page."""
    blocks = _blocks(loaded)
    if fmt == "html":
        return _html(blocks, f"Sentinel protocol: {loaded.spec.name}")
    return _markdown(blocks)
