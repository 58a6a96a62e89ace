"""The decision record of a variant evaluation: what was tested, what happened, the rule, why.

Reads a `VariantEvaluation` (agentledger.gates.variants.spec) and builds the `Decision` that
`DecisionStore` writes: the spec and addon with their hashes, the prompt hashes, every run and
judge read, per model and scenario the predicate results with their evidence lines, the
rule's outcome and reasoning in plain sentences, and the per-model compliance record.
"""

from __future__ import annotations

import re

from agentledger.gates.variants.acceptance import CellTally, Statistical, cell_status
from agentledger.gates.variants.spec import LoadedVariant, Role, RunEvaluation, VariantEvaluation
from agentledger.identity import short_hash
from agentledger.records.decisions import (
    AddonRef,
    Decision,
    DecisionItem,
    ModelRecord,
    PredicateResult,
    SpecRef,
    Tested,
    new_decision_id,
)

__all__ = ["build_decision"]

_SHELL_FORMS = ("ran", "never_ran", "never_tried", "order", "ran_before_conclusion", "no_denied")


def _with_log_end(result: PredicateResult, run: RunEvaluation) -> PredicateResult:
    """A failed shell predicate with no line of its own gets the log's last command.

    "No command matching X ran" has nothing to quote; where the log stops (the investigation
    closed) is the line a reader checks next.
    """
    shell = result.predicate.split(":", 1)[0] in _SHELL_FORMS
    if result.passed is not False or result.evidence or not shell or run.log_end is None:
        return result
    return result.model_copy(
        update={
            "reason": f"{result.reason}; the shell log ends at line {run.log_end.line}",
            "evidence": [run.log_end],
            "detail": {**result.detail, "log_end_line": run.log_end.line},
        }
    )


def _label(result: PredicateResult) -> str:
    return result.id or result.predicate


def _evidence_words(result: PredicateResult, limit: int = 2) -> str:
    shown = [
        f"{item.file}:{item.line} `{item.quote}`" if item.line is not None else f"{item.file}"
        for item in result.evidence[:limit]
    ]
    if not shown:
        return ""
    more = len(result.evidence) - limit
    return "; evidence: " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")


MAX_SENTENCES = 12
"""Failures (and undecided results) spelled out in the reasoning; the results hold them all."""


def _capped(sentences: list[str], what: str) -> list[str]:
    if len(sentences) <= MAX_SENTENCES:
        return sentences
    more = len(sentences) - MAX_SENTENCES
    return [*sentences[:MAX_SENTENCES], f"... and {more} more {what} (see the results)."]


def _failure_sentences(evaluation: VariantEvaluation) -> list[str]:
    sentences = []
    for run in evaluation.of("variant"):
        for result in run.results:
            if result.passed is False:
                result = _with_log_end(result, run)
                sentences.append(
                    f"{run.model} failed {_label(result)} on {run.scenario} (run {run.run_id}): "
                    f"{result.reason.rstrip('.')}{_evidence_words(result)}."
                )
    return _capped(sentences, "failed predicate results")


def _unknown_sentences(evaluation: VariantEvaluation) -> list[str]:
    return _capped(
        [
            f"{run.model} on {run.scenario} (run {run.run_id}): {_label(result)} cannot be "
            f"evaluated: {result.reason.removeprefix('cannot evaluate: ').rstrip('.')}."
            for run in evaluation.of("variant")
            for result in run.results
            if result.passed is None
        ],
        "predicate results that cannot be evaluated",
    )


def _cell_words(cell: CellTally, role: Role) -> str:
    if not cell.runs:
        return f"no {role} runs (of {cell.expected} asked for)"
    words = f"{cell.passed} of {cell.runs} {role} run{'s' if cell.runs != 1 else ''} passed"
    if cell.failed:
        words += f", {cell.failed} failed"
    if cell.unknown:
        words += f", {cell.unknown} cannot tell"
    if cell.runs < cell.expected:
        words += f" ({cell.expected - cell.runs} missing)"
    return words


_PASSED = {"passed": True, "failed": False}


def _items(evaluation: VariantEvaluation) -> list[DecisionItem]:
    items = []
    sides: list[tuple[Role, dict[tuple[str, str], CellTally]]] = [
        ("variant", evaluation.variant_cells),
        ("baseline", evaluation.baseline_cells),
    ]
    for role, cells in sides:
        runs = evaluation.of(role)
        for (model, scenario), cell in cells.items():
            mine = [r for r in runs if r.model == model and r.scenario == scenario]
            if role == "baseline" and not mine:
                continue  # no baseline for this cell: nothing to show
            items.append(
                DecisionItem(
                    model=model,
                    scenario=scenario,
                    role=role,
                    run_ids=[r.run_id for r in mine],
                    passed=_PASSED.get(cell_status(cell)),
                    summary=_cell_words(cell, role),
                    results=[_with_log_end(res, r) for r in mine for res in r.results],
                )
            )
    return items


def _model_record(evaluation: VariantEvaluation, model: str) -> ModelRecord:
    status = evaluation.outcome.models.get(model, "unknown")
    variant = [r for r in evaluation.of("variant") if r.model == model]
    baseline = [r for r in evaluation.of("baseline") if r.model == model]
    failed: dict[str, str] = {}
    for run in variant:
        for result in run.results:
            if result.passed is False:
                failed.setdefault(
                    f"{_label(result)} on {run.scenario}",
                    _describe(evaluation.loaded, run.scenario, result),
                )
    passed_runs = sum(1 for r in variant if r.status == "passed")
    parts = [f"{passed_runs} of {len(variant)} variant runs passed"]
    if failed:
        parts.append("failed " + "; ".join(f"{k} ({v})" for k, v in failed.items()))
    if not variant:
        parts = ["no variant runs: not tested"]
    if baseline:
        base_passed = sum(1 for r in baseline if r.status == "passed")
        parts.append(f"baseline {base_passed} of {len(baseline)} passed")
    if isinstance(evaluation.loaded.spec.acceptance, Statistical):
        # the statistical rule judges a model by its pass rate against its baseline's
        words = {
            "passed": "not worse than its baseline",
            "failed": "worse than its baseline",
        }.get(status, "not decided")
    else:
        words = {"passed": "followed the variant", "failed": "did not comply"}.get(
            status, "not decided"
        )
    return ModelRecord(
        status="passed" if status == "passed" else "failed" if status == "failed" else "unknown",
        summary=f"{words}: " + "; ".join(parts),
    )


def _describe(loaded: LoadedVariant, scenario: str, result: PredicateResult) -> str:
    """The predicate's description in the spec (one line), else its canonical text."""
    for predicate in loaded.predicates.get(scenario, ()):
        same = predicate.text() == result.predicate and predicate.id == result.id
        if same and predicate.description:
            return " ".join(predicate.description.split())
    return result.predicate


def _prompt_hashes(evaluation: VariantEvaluation) -> dict[str, str]:
    found: dict[str, str] = {}
    roles: tuple[Role, ...] = ("variant", "baseline")
    for role in roles:
        hashes = list(
            dict.fromkeys(
                r.system_prompt_hash
                for r in evaluation.of(role)
                if r.system_prompt_hash
                and re.match(r"^sha256:[0-9a-f]{8,64}$", r.system_prompt_hash)
            )
        )
        for index, digest in enumerate(hashes, start=1):
            found[role if len(hashes) == 1 else f"{role}-{index}"] = digest
    for index, digest in enumerate(evaluation.selection.base_hashes, start=1):
        found["base" if len(evaluation.selection.base_hashes) == 1 else f"base-{index}"] = digest
    return found


def build_decision(evaluation: VariantEvaluation, *, supersedes: str | None = None) -> Decision:
    """The decision record of an evaluation: what was tested, what happened, the rule, why."""
    loaded, outcome = evaluation.loaded, evaluation.outcome
    spec = loaded.spec
    missing = evaluation.missing("variant")
    reasoning = [
        *outcome.reasoning[:-1],
        *_failure_sentences(evaluation),
        *_unknown_sentences(evaluation),
    ]
    if missing:
        reasoning.append("Missing variant runs: " + "; ".join(missing) + ".")
    reasoning.append(outcome.reasoning[-1])
    for model in spec.models:
        record = [c for (m, _), c in evaluation.baseline_cells.items() if m == model and c.runs]
        if record:
            reasoning.append(
                f"Baseline, {model}: "
                + "; ".join(f"{c.scenario} {_cell_words(c, 'baseline')}" for c in record)
                + "."
            )
    if not evaluation.of("baseline"):
        reasoning.append(f"No baseline runs ({spec.baseline.describe()}) were found.")
    reasoning.append(
        f"Counted {' and '.join(evaluation.selection.kinds)} runs only (fixture executions and "
        "sentinel runs are left out)."
    )
    reasoning += [f"Note: {warning}." for warning in evaluation.selection.warnings]
    judge_ids = list(dict.fromkeys(j for r in evaluation.runs for j in r.judge_ids))
    return Decision(
        decision_id=new_decision_id("variant", spec.name),
        kind="variant",
        subject=spec.name,
        outcome=outcome.outcome,
        rule=outcome.rule,
        reasoning=reasoning,
        spec=SpecRef(path=str(loaded.path), sha256=loaded.sha256, text=loaded.text),
        tested=Tested(
            prompt_hashes=_prompt_hashes(evaluation),
            addon=AddonRef(
                name=loaded.addon_path.stem, sha256=loaded.addon_hash, path=str(loaded.addon_path)
            ),
            baseline=spec.baseline.describe(),
            candidate=(
                f"the base prompt + addon {loaded.addon_path.name} "
                f"({short_hash(loaded.addon_hash)})"
            ),
            models=list(spec.models),
            scenarios=list(spec.scenarios),
            repeats=spec.repeats,
            run_ids=[r.run_id for r in evaluation.runs],
            judge_ids=judge_ids,
        ),
        results=_items(evaluation),
        models={model: _model_record(evaluation, model) for model in spec.models},
        supersedes=supersedes,
        extra={
            "acceptance": spec.acceptance.model_dump(mode="json"),
            "statistics": outcome.stats,
            "model_status": dict(outcome.models),
            "missing": {"variant": missing, "baseline": evaluation.missing("baseline")},
            "warnings": list(evaluation.selection.warnings),
        },
    )
