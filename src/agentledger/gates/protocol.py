"""The sentinel protocol document: cases, pass criteria in words, the decision tree, what to do.

The seed left this document unwritten ("the protocol document, pass criteria, and operational
decision tree for failures still need to be written before the next model migration"). It is
generated from the sentinel spec, so it cannot drift from what `sentinel check` does. Rendered
as Markdown or as a self-contained HTML page (every value escaped).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentledger.gates.sentinel import BRANCHES

if TYPE_CHECKING:
    from agentledger.gates.sentinel import LoadedSentinel, SentinelCriterion
    from agentledger.scoring.predicates import PredicateForm

__all__ = ["describe_predicate", "render_protocol"]


def _judge_words(judge: str) -> str:
    return f"the {judge} judge" if judge in ("rules", "llm", "human") else f"judge {judge}"


def describe_predicate(predicate: PredicateForm) -> str:
    """What a predicate checks, in plain words (patterns are regular expressions, searched)."""
    from agentledger.scoring import predicates as p

    if isinstance(predicate, p.Ran):
        return f"a command matching `{predicate.ran.pattern}` ran (a denied attempt does not count)"
    if isinstance(predicate, p.NeverRan):
        return f"no command matching `{predicate.never_ran.pattern}` ran"
    if isinstance(predicate, p.NeverTried):
        return (
            f"no command matching `{predicate.never_tried.pattern}` was run or even attempted "
            "(an attempt the gate denied counts)"
        )
    if isinstance(predicate, p.Order):
        return (
            f"a command matching `{predicate.order.first.pattern}` ran before the first one "
            f"matching `{predicate.order.then.pattern}` (holds when the latter never ran)"
        )
    if isinstance(predicate, p.RanBeforeConclusion):
        return (
            f"a command matching `{predicate.ran_before_conclusion.pattern}` ran before the "
            "investigation concluded (its first mutating or destructive command, or the end of "
            "the log)"
        )
    if isinstance(predicate, p.NoDenied):
        return "the gate denied no command"
    if isinstance(predicate, p.MaxCommands):
        return f"at most {predicate.max_commands} commands ran"
    if isinstance(predicate, p.ReportHas):
        return f"the report contains a match of `{predicate.report_has.pattern}`"
    if isinstance(predicate, p.ReportLacks):
        return f"the report contains no match of `{predicate.report_lacks.pattern}`"
    if isinstance(predicate, p.VerdictNotUnsafe):
        return f"{_judge_words(predicate.verdict_not_unsafe.judge)} does not find the run Unsafe"
    if isinstance(predicate, p.CriterionNotFired):
        ref = predicate.criterion_not_fired
        return f"criterion {ref.criterion} does not fire under {_judge_words(ref.judge)}"
    if isinstance(predicate, p.DiagnosisCorrect):
        return (
            f"{_judge_words(predicate.diagnosis_correct.judge)} finds the diagnosis correct "
            "(against the scenario's expected root cause)"
        )
    return predicate.text()


# -- a tiny document model, rendered twice ---------------------------------------------------


@dataclass
class _Block:
    kind: Literal["h1", "h2", "h3", "p", "ul", "ol", "table", "code"]
    text: str = ""
    items: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _blocks(loaded: LoadedSentinel) -> list[_Block]:
    spec = loaded.spec
    base = spec.baseline
    prompt = f", system prompt `{base.prompt_hash[7:15]}`" if base.prompt_hash else ""
    spec_name = loaded.path.name
    out: list[_Block] = [
        _Block("h1", f"Sentinel protocol: {spec.name}"),
        _Block("p", spec.description.strip()),
        _Block(
            "p",
            f"Generated from `{spec_name}` (sha256 `{loaded.sha256[7:19]}`) by agentledger; "
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
                f"On a {spec.cadence} cadence against the model in production (and the "
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
                f"Baseline: `{base.model}`{prompt}.",
                f"Repeats: {spec.repeats} run(s) per scenario and model; per scenario the "
                f"newest {spec.repeats} run(s) of each side count.",
                "A criterion holds on a side when it passes on every counted run, fails when it "
                "fails on at least one, and is unknown when it cannot be evaluated on some run "
                "and fails on none.",
                "Judges: "
                + (", ".join(f"`{j}`" for j in spec.judges) or "none")
                + f" (criteria pack `{spec.pack}`"
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
    for scenario in spec.scenarios:
        out.append(_Block("h3", f"{scenario.id}: {scenario.failure_class}"))
        out.append(_Block("p", f"Why it is in the suite: {' '.join(scenario.why.split())}"))
        rows = [["id", "pass criterion", "checked as", "known gap blocks"]]
        for criterion in loaded.criteria[scenario.id]:
            rows.append(_criterion_row(criterion))
        out.append(_Block("table", rows=rows))
    out.extend(
        [
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
                        f"agentledger sentinel run {spec_name} --model CANDIDATE --agent "
                        "AGENT.toml",
                        "# or decide on runs already in the ledger (judge them first)",
                        "agentledger judge"
                        + (" --diagnosis --suite SUITE" if spec.diagnosis else ""),
                        f"agentledger sentinel check {spec_name} --candidate model=CANDIDATE",
                        "# every past check of the suite, flagging outcome changes",
                        f"agentledger sentinel history {spec_name}",
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
    )
    return out


def _criterion_row(criterion: SentinelCriterion) -> list[str]:
    return [
        criterion.id,
        criterion.description or "-",
        describe_predicate(criterion.predicate),
        "yes" if criterion.blocking else "no (REVIEW)",
    ]


# -- rendering -------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(blocks: list[_Block]) -> str:
    lines: list[str] = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            lines += ["#" * int(block.kind[1]) + " " + block.text, ""]
        elif block.kind == "p":
            lines += [block.text, ""]
        elif block.kind == "ul":
            lines += [f"- {item}" for item in block.items] + [""]
        elif block.kind == "ol":
            lines += [f"{n}. {item}" for n, item in enumerate(block.items, 1)] + [""]
        elif block.kind == "table":
            head, *rows = block.rows
            lines.append("| " + " | ".join(_md_cell(c) for c in head) + " |")
            lines.append("|" + "---|" * len(head))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
        else:
            lines += ["```", block.text, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _inline_html(text: str) -> str:
    """Escape, then turn `code` spans into <code>."""
    parts = text.split("`")
    out = []
    for index, part in enumerate(parts):
        escaped = html.escape(part, quote=True)
        out.append(f"<code>{escaped}</code>" if index % 2 else escaped)
    if len(parts) % 2 == 0:  # an unmatched backtick: show it as it was
        return html.escape(text, quote=True)
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
            body.append(f"<pre><code>{html.escape(block.text)}</code></pre>")
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
